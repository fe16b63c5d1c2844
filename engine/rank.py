"""BM25 over flat sections, touching only the query's terms (SPEC §5, §13 `match`)."""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .analysis import FileAnalysis
from .scoring import MATCH_ANY, AnyScoring, factor, heading_bonus, plan, rescore_bounded

K1 = 1.2
B = 0.75
MAX_EXPANSIONS = 64  # of the last term when it is matched as a prefix


@dataclass(frozen=True, slots=True)
class Doc:
    """One searchable file as the ranker sees it."""

    concept_id: str
    analysis: FileAnalysis


@dataclass(frozen=True, slots=True)
class Scored:
    doc: int  # index into the docs sequence
    section: int  # index into that doc's sections
    score: float
    matched: tuple[str, ...]  # query terms present, in query order


@dataclass(frozen=True, slots=True)
class Ranking:
    total: int  # every matching section
    best: list[Scored]  # the first `limit` of them (all, without a limit), best first


Postings = tuple[tuple[int, int], ...]
_REMEMBERED = 262_144  # (doc, postings) entries a corpus keeps for terms already looked up


@dataclass(frozen=True, slots=True)
class Corpus:
    """Collection statistics: N sections, their mean weighted length.

    It also remembers, for each term a query has used, which documents contain it: a
    corpus lives as long as its snapshot_revision, and as-you-type queries repeat terms.
    """

    docs: Sequence[Doc]
    n: int
    avglen: float
    _seen: dict[str, dict[int, Postings]] = field(default_factory=dict, compare=False, repr=False)
    _size: list[int] = field(default_factory=lambda: [0], compare=False, repr=False)

    @classmethod
    def of(cls, docs: Sequence[Doc]) -> Corpus:
        n = sum(len(d.analysis.sections) for d in docs)
        total = sum(d.analysis.total_length for d in docs)
        mean = total / n if n else 0.0
        return cls(docs, n, mean if mean > 0 else 1.0)

    def occurrences(self, term: str) -> dict[int, Postings]:
        """doc index -> the term's postings in that doc, for the docs that contain it."""
        found = self._seen.get(term)
        if found is None:
            found = {}
            for di, doc in enumerate(self.docs):
                plist = doc.analysis.postings.get(term)
                if plist is not None:
                    found[di] = plist
            # Bounded: a long-lived server sees many distinct terms. Dict operations are
            # atomic, so concurrent requests at worst look a term up again.
            cost = len(found) + 1
            if self._size[0] + cost > _REMEMBERED:
                self._seen.clear()
                self._size[0] = 0
            self._seen[term] = found
            self._size[0] += cost
        return found

    def df(self, term: str) -> int:
        return sum(map(len, self.occurrences(term).values()))

    def idf(self, term: str) -> float:
        df = self.df(term)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def expand(self, prefix: str) -> list[str]:
        """Indexed terms that start with `prefix` (itself included), most frequent first.

        At most MAX_EXPANSIONS of them: a one-letter prefix would otherwise stand for
        thousands of terms and make every keystroke rank the whole vocabulary.
        """
        found: dict[str, int] = {}
        for d in self.docs:
            vocab = d.analysis.vocab
            postings = d.analysis.postings
            i = bisect.bisect_left(vocab, prefix)
            while i < len(vocab) and vocab[i].startswith(prefix):
                term = vocab[i]
                found[term] = found.get(term, 0) + len(postings[term])
                i += 1
        ranked = sorted(found, key=lambda t: (-found[t], t))[:MAX_EXPANSIONS]
        return sorted(ranked)


def rank(
    corpus: Corpus,
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
        groups[-1] = corpus.expand(terms[-1])
    where = [[(t, corpus.occurrences(t)) for t in group] for group in groups]
    idf = {t: corpus.idf(t) for group in groups for t in group}
    k1, b = K1, B
    weights = [[idf[t] for t in group] for group in groups]
    factors: dict[int, float] = {}  # coordination factor by mask: few masks, many sections
    if match_any:
        query = plan(terms, [max((idf[t] for t in g), default=0.0) for g in groups], scoring)
        k1, b = query.k1, query.b
        weights = [[w * m for w in ws] for ws, m in zip(weights, query.multipliers, strict=True)]
    # per group: (doc -> postings, the weight its BM25 parts get), for each indexed term
    weighted = [
        [(found, w) for (_t, found), w in zip(group, ws, strict=True)]
        for group, ws in zip(where, weights, strict=True)
    ]
    # Only documents that can match are visited: with match=all, those holding every group.
    per_group = [set().union(*(found.keys() for _t, found in group)) for group in where]
    if not per_group:
        candidates: set[int] = set()
    elif match_any:
        candidates = set().union(*per_group)
    else:
        candidates = set.intersection(*sorted(per_group, key=len))
    avglen = corpus.avglen
    need = len(groups)
    # (score, doc, section, bit mask of the groups matched)
    found_sections: list[tuple[float, int, int, int]] = []
    for di in sorted(candidates):
        sections = corpus.docs[di].analysis.sections
        scores: dict[int, float] = {}
        masks: dict[int, int] = {}
        for gi, group in enumerate(weighted):
            bit = 1 << gi
            for found, weight in group:
                plist = found.get(di)
                if plist is None:
                    continue
                for si, tf in plist:
                    # The formula exactly as SPEC §5 writes it: scores are part of the
                    # output, and a different rounding could reorder equal scores.
                    length = sections[si].length
                    part = weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avglen))
                    if si in scores:
                        scores[si] += part
                        masks[si] |= bit
                    else:
                        scores[si] = part
                        masks[si] = bit
        for si, score in scores.items():
            mask = masks[si]
            if match_any:
                f = factors.get(mask)
                if f is None:
                    f = factors[mask] = factor(mask, query)
                # scoring.final_score(score, mask, query), with the factor remembered
                found_sections.append((score * f, di, si, mask))
            elif mask.bit_count() == need:
                found_sections.append((score, di, si, mask))
    total = len(found_sections)
    chosen = found_sections
    docs = corpus.docs
    tokenizer = getattr(terms, "tokenizer", None)  # terms.QueryTerms know theirs
    if match_any and query.heading and tokenizer is not None:
        titles: dict[int, set[str]] = {}

        def with_bonus(e: tuple[float, int, int, int]) -> tuple[float, int, int, int]:
            score, di, si, mask = e
            analysis = docs[di].analysis
            if di not in titles:
                titles[di] = set(tokenizer.tokens(analysis.title))
            sec = analysis.sections[si]
            words = titles[di].union(tokenizer.tokens(f"{sec.heading}\n{sec.outline}"))
            held = sum(1 << g for g, group in enumerate(groups) if not words.isdisjoint(group))
            return (score * heading_bonus(held & mask, query), di, si, mask)

        chosen = rescore_bounded(found_sections, limit, 1 + query.heading, with_bonus)
    if limit is not None and len(chosen) > limit:
        chosen = _cut(chosen, limit)

    def key(e: tuple[float, int, int, int]) -> tuple[float, str, int]:
        score, di, si, _ = e
        return (-score, docs[di].concept_id, docs[di].analysis.sections[si].first)

    chosen.sort(key=key)
    if limit is not None:
        chosen = chosen[:limit]
    best = [
        Scored(di, si, score, tuple(t for g, t in enumerate(terms) if mask >> g & 1))
        for score, di, si, mask in chosen
    ]
    return Ranking(total, best)


def _cut(found: list[tuple[float, int, int, int]], limit: int) -> list[tuple[float, int, int, int]]:
    """The sections that can be among the best `limit`, with far fewer than all of them to
    sort: the order starts with the score, so every section scoring above the limit-th one
    is in, and those equal to it are kept to be ordered by the rest of the key."""
    if limit <= 0:
        return []
    lowest = heapq.nlargest(limit, (e[0] for e in found))[-1]
    return [e for e in found if e[0] >= lowest]
