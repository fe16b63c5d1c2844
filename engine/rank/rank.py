"""BM25 over flat sections, touching only the query's terms (SPEC §5, §13 `match`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..index.index import K1, B, Index
from ..text.terms import Tokenizer
from .naming import Names
from .scoring import (
    AS_YOU_TYPE,
    MATCH_ANY,
    AnyScoring,
    AsYouType,
    QueryPlan,
    factor,
    heading_bonus,
    plan,
    rescore_bounded,
    rescore_sorted,
    stop_bits,
)
from .stems import Stemmed, stemmed

if TYPE_CHECKING:  # numpy is imported by the first ranking (engine/index/postings.py: why)
    import numpy as np


@dataclass(frozen=True, slots=True)
class Scored:
    section: int  # global section number in the index
    score: float
    matched: tuple[str, ...]  # query terms present, in query order


@dataclass(frozen=True, slots=True)
class Ranking:
    total: int  # every matching section
    best: list[Scored]  # the first `limit` of them (all, without a limit), best first


def idf(index: Index | Stemmed, term: str) -> float:
    return idf_of(index.n, index.df(term))


def idf_of(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


# The length part of BM25 per section, per index and (k1, b): §5's and match=any's.
def _denominators(index: Index, k1: float, b: float) -> np.ndarray:
    """k1·(1 − b + b·len/avglen) of every section, once per index and (k1, b), each
    evaluated as §5's formula writes it (a different rounding could reorder equal scores)."""

    def make() -> np.ndarray:
        import numpy as np

        avglen = index.avglen
        return np.array(
            [
                k1 * (1 - b + b * length / avglen)
                for block in index.blocks
                for length in block.sec_length
            ],
            dtype=np.float64,
        )

    return index.derived.get(("rank.denominators", k1, b), make)


def _navigation(index: Index) -> np.ndarray | None:
    """Whether each section is a navigation section (an index analysed with
    structure=fields marks them); None when none is."""

    def make() -> np.ndarray | None:
        import numpy as np

        flags = np.array([f for block in index.blocks for f in block.sec_nav], dtype=bool)
        return flags if flags.any() else None

    return index.derived.get("rank.navigation", make)


def rank(
    index: Index,
    terms: Sequence[str],
    *,
    match_any: bool = False,
    prefix_last: bool = False,
    limit: int | None = None,
    scoring: AnyScoring = MATCH_ANY,
    as_you_type: AsYouType = AS_YOU_TYPE,
    navigation: float = 1.0,
) -> Ranking:
    """The matching sections, best first (ties: concept_id, then line_start): how many
    there are, and the first `limit` of them.

    With `prefix_last`, the last term matches any indexed term it is a prefix of
    (as-you-type symbol search), scored as `as_you_type` says (engine/rank/scoring.py
    AsYouType: the expansions as one term, the word itself weighing most; a bonus for the
    sections whose name holds the query). With `match_any`, the
    score is engine/rank/scoring.py's (SPEC §13); otherwise it is SPEC §5's BM25. Terms that are
    English stems (terms.QueryTerms under `stemming=english`) are read through
    engine/rank/stems.py; under `match_any` the words as typed then add their own score.
    `navigation`: under `match_any`, what the score of a section the index marks as
    navigation is multiplied by (scoring.navigation_factor).
    """
    import numpy as np

    typed = getattr(terms, "typed", None)
    source: Index | Stemmed = stemmed(index) if typed is not None else index
    # groups[i]: the indexed terms that stand for query term i (one, or its expansions)
    groups = [[t] for t in terms]
    # The weight of each expansion of the last term (None: its terms scored apart).
    boosts: list[float] | None = None
    if prefix_last and terms:
        groups[-1] = source.expand(terms[-1])
        if as_you_type.grouped:
            boosts = [1.0 if t == terms[-1] else as_you_type.expansion for t in groups[-1]]
    need = len(groups)
    if not match_any and not all(any(source.df(t) for t in group) for group in groups):
        return Ranking(0, [])  # some term is nowhere: nothing can hold all of them
    scores = np.zeros(index.n)
    masks = np.zeros(index.n, np.int64)  # bit i: query term i (at most 32 terms)
    nav = _navigation(index) if match_any and navigation != 1.0 else None
    prior = None if nav is None else (nav, navigation)
    touched, query = _add(source, terms, groups, match_any, scoring, scores, masks, boosts, prior)
    tokenizer = getattr(terms, "tokenizer", None)
    parts = [_Part(groups, masks, query, tokenizer, scores, 1.0)]
    if match_any and typed is not None and scoring.typed and not prefix_last:
        # The words as typed, scored alike and added: a section holding a word as it was
        # asked gains over one holding only its variants (every such section holds the
        # stem too, so it is among those touched).
        typed_groups = [[t] for t in typed]
        plain, typed_masks = np.zeros(index.n), np.zeros(index.n, np.int64)
        kept, typed_query = _add(
            index, typed, typed_groups, True, scoring, plain, typed_masks, prior=prior
        )
        parts.append(
            _Part(typed_groups, typed_masks, typed_query, typed.tokenizer, plain, scoring.typed)
        )
        scores = scores.copy()  # the stems' own scores stay in parts[0] for the bonus
        scores[kept] += scoring.typed * plain[kept]
    # Under match_any, the bits of the terms that make a hit and are matched terms: every
    # term but the query's stop words (SPEC §13).
    counted = (1 << need) - 1
    if match_any and scoring.stop_filter:
        counted &= ~stop_bits(terms, prefix_last)
    if match_any:
        every = counted == (1 << need) - 1
        found = touched if every else touched[(masks[touched] & counted) != 0]
    else:
        found = touched[masks[touched] == (1 << need) - 1]
    total = len(found)
    chosen: list[int] | None = None  # (found, as a list, is only made when needed)
    headed = query is not None and query.heading and all(p.tokenizer for p in parts)
    named = as_you_type.named if prefix_last and tokenizer is not None else 0.0
    if headed or named:
        ceiling = (1 + query.heading if headed and query is not None else 1.0) * (1 + named)
        # Two factors each at most their bound give at most the bounds' product, up to a
        # rounding of the product: the margin keeps rescore_bounded exact.
        ceiling *= 1 + 1e-9

        # What each bonus reads: the heading bonus each part's groups (each part has its
        # tokenisation), the naming bonus the query's, which are the first part's.
        if headed:
            readers = [Names(index, p.tokenizer, p.groups) for p in parts if p.tokenizer]
        else:
            assert tokenizer is not None
            readers = [Names(index, tokenizer, groups)]
        # coordination() counts every term when the query's weights sum to 0, so only a
        # query with weight keeps the score of a section named by none of its words.
        skip = not headed or all(p.query is not None and p.query.total > 0 for p in parts)

        if len(readers) == 1:
            # As-you-type's case (one part, or none headed), without the loops over parts
            # and readers: a third of a mid-length prefix's time, and the same floats (a
            # sum of one term is that term).
            reader = readers[0].read
            part = parts[0]

            def with_bonus(e: tuple[float, int]) -> tuple[float, int]:
                _, g = e
                path, name, share = reader(g)
                if skip and not (path or name):
                    return e  # every bonus is exactly 1
                score = part.weight * part.scores[g] * part.bonus(path, g) if headed else scores[g]
                if named:
                    score *= 1 + named * share
                return (float(score), g)
        else:

            def with_bonus(e: tuple[float, int]) -> tuple[float, int]:
                _, g = e
                read = [n.read(g) for n in readers]
                if skip and not any(path or name for path, name, _ in read):
                    return e  # every bonus is exactly 1
                if headed:
                    score = sum(
                        p.weight * p.scores[g] * p.bonus(path, g)
                        for p, (path, _, _) in zip(parts, read, strict=True)
                    )
                else:
                    score = scores[g]
                if named:
                    score *= 1 + named * read[0][2]
                return (float(score), g)

        rescored = None
        entries = found
        if limit is not None and 0 < limit < len(found):
            # Only the sections rescore_bounded keeps (score × ceiling ≥ the limit-th best
            # score) become entries: the limit-th best among them is that same score.
            at = scores[found]
            keep = at * ceiling >= _kth_largest(at, limit)
            entries = found[keep]
            if len(entries) > limit:
                # rescore_bounded's pool on arrays: the same entries in the same order
                # (largest score first, a stable sort's), as pairs only as far as the
                # rescoring reads.
                kept = at[keep]
                order = np.argsort(-kept, kind="stable")
                pool = _pairs(kept[order], entries[order])
                rescored = rescore_sorted(pool, limit, ceiling, with_bonus)
        if rescored is None:
            pairs = list(zip(scores[entries].tolist(), entries.tolist(), strict=True))
            rescored = rescore_bounded(pairs, limit, ceiling, with_bonus)
        chosen = [g for _, g in rescored]
        if chosen:  # one assignment rather than one numpy scalar write per section
            scores[np.array(chosen, np.int64)] = [score for score, _ in rescored]
    if chosen is None:
        if limit is not None and len(found) > limit:
            chosen = _cut(found, scores, limit)
        else:
            chosen = found.tolist()
    elif limit is not None and len(chosen) > limit:
        chosen = _cut(chosen, scores, limit)

    def key(g: int) -> tuple[float, str, int]:
        return (-float(scores[g]), *index.concept_and_line(g))

    chosen = sorted(chosen, key=key)
    if limit is not None:
        chosen = chosen[:limit]
    best = [
        Scored(
            g,
            float(scores[g]),
            tuple(t for i, t in enumerate(terms) if (int(masks[g]) & counted) >> i & 1),
        )
        for g in chosen
    ]
    return Ranking(total, best)


@dataclass(frozen=True, slots=True)
class _Part:
    """One part of a match=any score (the stems, or the words as typed) as the heading
    bonus needs it: the bonus multiplies each part by the share of its own terms found in
    the section's heading, outline and title."""

    groups: list[list[str]]
    masks: np.ndarray
    query: QueryPlan | None
    tokenizer: Tokenizer | None
    scores: np.ndarray
    weight: float

    def bonus(self, held: int, g: int) -> float:
        """`held`: the bits of the groups with a word in section g's heading path."""
        assert self.query is not None
        return heading_bonus(held & int(self.masks[g]), self.query)


def _add(
    source: Index | Stemmed,
    terms: Sequence[str],
    groups: list[list[str]],
    match_any: bool,
    scoring: AnyScoring,
    scores: np.ndarray,
    masks: np.ndarray,
    boosts: list[float] | None = None,
    prior: tuple[np.ndarray, float] | None = None,
) -> tuple[np.ndarray, QueryPlan | None]:
    """Adds each section's score for `terms` to `scores` (and the terms it holds to
    `masks`); under `match_any`, scaled by its coordination factor. Returns the sections
    touched, ascending, and the query's plan (under `match_any`).

    `boosts`: the last group is one term (AsYouType.grouped), its terms' tf summed with
    these weights and its df the largest of theirs. `prior`: (navigation flags, factor), the
    factor applied to the flagged sections' scores after the coordination factor."""
    import numpy as np

    index = source.index if isinstance(source, Stemmed) else source
    query = None
    last = len(groups) - 1
    # Each term's postings are found once, and its df read from them. The grouped last
    # term is summed first, as its df is only known once its terms are read.
    grouped = _grouped_tfs(source, groups[last], boosts) if boosts is not None else None
    apart = groups[:last] if grouped is not None else groups  # scored term by term
    posts = [{t: source.postings(t) for t in g} for g in apart]
    term_idfs = [{t: idf_of(source.n, p.df) for t, p in ps.items()} for ps in posts]
    idfs = [max(d.values(), default=0.0) for d in term_idfs]
    if grouped is not None:
        idfs.append(idf_of(source.n, grouped[2]))
    if match_any:
        query = plan(terms, idfs, scoring)
        k1, b, multipliers = query.k1, query.b, query.multipliers
    else:
        k1, b, multipliers = K1, B, ()
    k1p = k1 + 1
    pre = _denominators(index, k1, b)
    # The formula exactly as SPEC §5 writes it, one array operation per term: numpy does
    # the same IEEE double operations in the same order as a loop over the postings would
    # (weight × tf, × (k1 + 1), ÷ (tf + the length part), added in term order), and the
    # scores are part of the output: a different rounding could reorder equal scores.
    for gi, group in enumerate(apart):
        bit = 1 << gi
        for term in group:
            p = posts[gi][term]
            if not p.df:
                continue
            weight = term_idfs[gi][term]
            if match_any:
                weight *= multipliers[gi]  # a CJK chain's bigrams share one word's weight
            secs, tf = p.secs, p.tfs
            scores[secs] += weight * tf * k1p / (tf + pre[secs])
            masks[secs] |= bit
    if grouped is not None:
        tfs, met, _ = grouped
        weight = idfs[last] * (multipliers[last] if match_any else 1.0)
        tf = tfs[met]
        scores[met] += weight * tf * k1p / (tf + pre[met])
        masks[met] |= 1 << last
    spans = [p.secs for ps in posts for p in ps.values()]
    touched = _nonzero(masks, [*spans, grouped[1]] if grouped is not None else spans)
    if match_any:
        assert query is not None  # (match_any is only ever set with a query)
        held = masks[touched]
        # The coordination factor by mask: few masks, each below 1 << len(groups), so
        # counting them is cheaper than np.unique's sort while they are few.
        present = np.flatnonzero(np.bincount(held)) if len(groups) <= 12 else np.unique(held)
        for mask in present.tolist():
            f = factor(mask, query)
            if f != 1.0:
                at = touched[held == mask]
                scores[at] *= f  # scoring.final_score(score, mask, query)
        if prior is not None:
            flags, by = prior
            at = touched[flags[touched]]
            scores[at] *= by
    return touched, query


def _grouped_tfs(
    source: Index | Stemmed, group: list[str], boosts: list[float]
) -> tuple[np.ndarray, np.ndarray, int]:
    """The terms of `group` as one term: tf = Σ boost × tf of each, per section, summed in
    the group's order; the sections met, ascending; and the group's df, the largest of its
    terms'. (A boost × tf is never 0, so 0 is "not met".)"""
    import numpy as np

    tfs = np.zeros(source.n)
    df = 0
    spans = []
    for term, boost in zip(group, boosts, strict=True):
        p = source.postings(term)
        df = max(df, p.df)
        if p.df:
            tfs[p.secs] += boost * p.tfs
            spans.append(p.secs)
    return tfs, _nonzero(tfs, spans), df


def _nonzero(dense: np.ndarray, spans: list[np.ndarray]) -> np.ndarray:
    """The sections, ascending, where `dense` (one slot per section) is not 0, given that
    those are exactly the sections of `spans`: from the spans when they are few, as scanning
    every section of a large index costs more than the postings (a millisecond at 384k)."""
    import numpy as np

    if sum(len(s) for s in spans) * 8 < len(dense):
        if not spans:
            return np.zeros(0, np.int64)
        # Each span is ascending: a stable sort merges the runs (timsort), several times
        # faster than np.unique's sort at 40k postings; equal neighbours are then dropped.
        merged = np.sort(np.concatenate(spans), kind="stable")
        keep = np.empty(len(merged), bool)
        keep[:1] = True
        np.not_equal(merged[1:], merged[:-1], out=keep[1:])
        return merged[keep]
    return np.flatnonzero(dense)


def _pairs(scores: np.ndarray, sections: np.ndarray) -> Iterator[tuple[float, int]]:
    """(score, section) pairs, converted from the arrays 256 at a time."""
    for i in range(0, len(scores), 256):
        yield from zip(scores[i : i + 256].tolist(), sections[i : i + 256].tolist(), strict=True)


def _cut(found: list[int] | np.ndarray, scores: np.ndarray, limit: int) -> list[int]:
    """The sections that can be among the best `limit`, with far fewer than all of them to
    sort: the order starts with the score, so every section scoring above the limit-th one
    is in, and those equal to it are kept to be ordered by the rest of the key."""
    import numpy as np

    if limit <= 0:
        return []
    at = np.array(found, dtype=np.int64)
    return at[scores[at] >= _kth_largest(scores[at], limit)].tolist()


def _kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of `values` (1 ≤ k ≤ len(values))."""
    import numpy as np

    return float(np.partition(values, len(values) - k)[len(values) - k])
