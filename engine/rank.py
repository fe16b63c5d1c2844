"""BM25 over flat sections, touching only the query's terms (SPEC §5, §13 `match`)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .index import K1, Index

_K1P = K1 + 1


@dataclass(frozen=True, slots=True)
class Scored:
    section: int  # global section number in the index
    score: float
    matched: tuple[str, ...]  # query terms present, in query order


@dataclass(frozen=True, slots=True)
class Ranking:
    total: int  # every matching section
    best: list[Scored]  # the first `limit` of them (all, without a limit), best first


def idf(index: Index, term: str) -> float:
    df = index.df(term)
    return math.log(1 + (index.n - df + 0.5) / (df + 0.5))


def rank(
    index: Index,
    terms: Sequence[str],
    *,
    match_any: bool = False,
    prefix_last: bool = False,
    limit: int | None = None,
) -> Ranking:
    """The matching sections, best first (ties: concept_id, then line_start): how many
    there are, and the first `limit` of them.

    With `prefix_last`, the last term matches any indexed term it is a prefix of, each
    expansion scored as its own term (as-you-type symbol search).
    """
    # groups[i]: the indexed terms that stand for query term i (one, or its expansions)
    groups = [[t] for t in terms]
    if prefix_last and terms:
        groups[-1] = index.expand(terms[-1])
    need = len(groups)
    if match_any:
        present = [g for g in range(need) if any(index.where(t) for t in groups[g])]
    else:
        present = list(range(need))
        if not all(any(index.where(t) for t in group) for group in groups):
            return Ranking(0, [])  # some term is nowhere: nothing can hold all of them
    pre = index.denominators()
    scores = [0.0] * index.n
    masks = [0] * index.n
    touched: list[int] = []
    for gi in present:
        bit = 1 << gi
        for term in groups[gi]:
            weight = idf(index, term)
            for block, base, lo, hi in index.where(term):
                for s, tf in zip(block.p_sec[lo:hi], block.p_tf[lo:hi], strict=True):
                    g = base + s
                    # The formula exactly as SPEC §5 writes it (the length part evaluated
                    # once per index, in the same order): scores are part of the output,
                    # and a different rounding could reorder equal scores.
                    scores[g] += weight * tf * _K1P / (tf + pre[g])
                    mask = masks[g]
                    if not mask:
                        touched.append(g)
                    masks[g] = mask | bit
    if match_any:
        found = touched
    else:
        full = (1 << need) - 1
        found = [g for g in touched if masks[g] == full]
    total = len(found)
    chosen = found
    if limit is not None and total > limit:
        chosen = _cut(found, scores, masks, limit, match_any)

    def key(g: int) -> tuple:
        base = (-scores[g], *index.concept_and_line(g))
        return (-masks[g].bit_count(), *base) if match_any else base

    chosen = sorted(chosen, key=key)
    if limit is not None:
        chosen = chosen[:limit]
    best = [
        Scored(g, scores[g], tuple(t for i, t in enumerate(terms) if masks[g] >> i & 1))
        for g in chosen
    ]
    return Ranking(total, best)


def _cut(
    found: list[int], scores: list[float], masks: list[int], limit: int, match_any: bool
) -> list[int]:
    """The sections that can be among the best `limit`, with far fewer than all of them to
    sort: the order starts with (distinct terms,) score, so every section ranked above the
    limit-th one on that prefix is in, and those equal to it on the prefix are kept to be
    ordered by the rest of the key."""
    if limit <= 0:
        return []
    if match_any:
        coarse = [(-masks[g].bit_count(), -scores[g]) for g in found]
        cut = heapq.nsmallest(limit, coarse)[-1]
        return [g for g, c in zip(found, coarse, strict=True) if c <= cut]
    lowest = heapq.nlargest(limit, (scores[g] for g in found))[-1]
    return [g for g in found if scores[g] >= lowest]
