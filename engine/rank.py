"""BM25 over flat sections, touching only the query's terms (SPEC §5, §13 `match`)."""

from __future__ import annotations

import heapq
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from .index import K1, Index
from .scoring import MATCH_ANY, AnyScoring, factor, heading_bonus, plan, rescore_bounded
from .terms import Tokenizer

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


# The length part of BM25 with match=any's k1 and b (engine/scoring.py), per index.
_ANY_DENOMINATORS: weakref.WeakKeyDictionary[Index, tuple[float, float, list[float]]] = (
    weakref.WeakKeyDictionary()
)


def _denominators(index: Index, k1: float, b: float) -> list[float]:
    """k1·(1 − b + b·len/avglen) of every section, once per index and (k1, b)."""
    known = _ANY_DENOMINATORS.get(index)
    if known is not None and known[:2] == (k1, b):
        return known[2]
    avglen = index.avglen
    pre = [
        k1 * (1 - b + b * length / avglen) for block in index.blocks for length in block.sec_length
    ]
    _ANY_DENOMINATORS[index] = (k1, b, pre)
    return pre


# The words of each section's heading, outline and title under a tokenisation, as the
# heading bonus met them: as-you-type queries rescore the same sections again and again.
_NAMED: weakref.WeakKeyDictionary[Index, dict[tuple[Tokenizer, int], frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
_NAMED_KEPT = 8_192  # sections remembered per index (the candidates near the top k)


def _named(index: Index, tokenizer: Tokenizer, g: int) -> frozenset[str]:
    known = _NAMED.get(index)
    if known is None:
        known = _NAMED.setdefault(index, {})
    words = known.get((tokenizer, g))
    if words is None:
        sec = index.section(g)
        words = frozenset(tokenizer.tokens(f"{sec.title}\n{sec.heading}\n{sec.outline}"))
        if len(known) >= _NAMED_KEPT:
            known.clear()
        known[tokenizer, g] = words
    return words


def rank(
    index: Index,
    terms: Sequence[str],
    *,
    match_any: bool = False,
    prefix_last: bool = False,
    limit: int | None = None,
    scoring: AnyScoring = MATCH_ANY,
) -> Ranking:
    """The matching sections, best first (ties: concept_id, then line_start): how many
    there are, and the first `limit` of them.

    With `prefix_last`, the last term matches any indexed term it is a prefix of, each
    expansion scored as its own term (as-you-type symbol search). With `match_any`, the
    score is engine/scoring.py's (SPEC §13); otherwise it is SPEC §5's BM25.
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
    if match_any:
        query = plan(terms, [max((idf(index, t) for t in g), default=0.0) for g in groups], scoring)
        k1p = query.k1 + 1
        pre = _denominators(index, query.k1, query.b)
        multipliers = query.multipliers
    else:
        k1p = _K1P
        pre = index.denominators()
    scores = [0.0] * index.n
    masks = [0] * index.n
    touched: list[int] = []
    for gi in present:
        bit = 1 << gi
        for term in groups[gi]:
            weight = idf(index, term)
            if match_any:
                weight *= multipliers[gi]  # a CJK chain's bigrams share one word's weight
            for block, base, lo, hi in index.where(term):
                for s, tf in zip(block.p_sec[lo:hi], block.p_tf[lo:hi], strict=True):
                    g = base + s
                    # The formula exactly as SPEC §5 writes it (the length part evaluated
                    # once per index, in the same order): scores are part of the output,
                    # and a different rounding could reorder equal scores.
                    scores[g] += weight * tf * k1p / (tf + pre[g])
                    mask = masks[g]
                    if not mask:
                        touched.append(g)
                    masks[g] = mask | bit
    if match_any:
        factors: dict[int, float] = {}  # the coordination factor by mask: few masks
        for g in touched:
            mask = masks[g]
            f = factors.get(mask)
            if f is None:
                f = factors[mask] = factor(mask, query)
            scores[g] *= f  # scoring.final_score(score, mask, query)
        found = touched
    else:
        full = (1 << need) - 1
        found = [g for g in touched if masks[g] == full]
    total = len(found)
    chosen = found
    tokenizer = getattr(terms, "tokenizer", None)  # terms.QueryTerms know theirs
    if match_any and query.heading and tokenizer is not None:

        def with_bonus(e: tuple[float, int]) -> tuple[float, int]:
            score, g = e
            words = _named(index, tokenizer, g)
            held = sum(1 << i for i, group in enumerate(groups) if not words.isdisjoint(group))
            return (score * heading_bonus(held & masks[g], query), g)

        kept = rescore_bounded(
            [(scores[g], g) for g in found], limit, 1 + query.heading, with_bonus
        )
        for score, g in kept:
            scores[g] = score
        chosen = [g for _, g in kept]
    if limit is not None and len(chosen) > limit:
        chosen = _cut(chosen, scores, limit)

    def key(g: int) -> tuple[float, str, int]:
        return (-scores[g], *index.concept_and_line(g))

    chosen = sorted(chosen, key=key)
    if limit is not None:
        chosen = chosen[:limit]
    best = [
        Scored(g, scores[g], tuple(t for i, t in enumerate(terms) if masks[g] >> i & 1))
        for g in chosen
    ]
    return Ranking(total, best)


def _cut(found: list[int], scores: list[float], limit: int) -> list[int]:
    """The sections that can be among the best `limit`, with far fewer than all of them to
    sort: the order starts with the score, so every section scoring above the limit-th one
    is in, and those equal to it are kept to be ordered by the rest of the key."""
    if limit <= 0:
        return []
    lowest = heapq.nlargest(limit, (scores[g] for g in found))[-1]
    return [g for g in found if scores[g] >= lowest]
