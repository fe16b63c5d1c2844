"""BM25 over flat sections, touching only the query's terms (SPEC §5, §13 `match`)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .analysis import FileAnalysis

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
class Corpus:
    """Collection statistics: N sections, their mean weighted length."""

    docs: Sequence[Doc]
    n: int
    avglen: float

    @classmethod
    def of(cls, docs: Sequence[Doc]) -> Corpus:
        n = sum(len(d.analysis.sections) for d in docs)
        total = sum(d.analysis.total_length for d in docs)
        mean = total / n if n else 0.0
        return cls(docs, n, mean if mean > 0 else 1.0)

    def df(self, term: str) -> int:
        return sum(len(d.analysis.postings.get(term, ())) for d in self.docs)

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
) -> list[Scored]:
    """Every matching section, best first (ties: concept_id, then line_start).

    With `prefix_last`, the last term matches any indexed term it is a prefix of, each
    expansion scored as its own term (as-you-type symbol search).
    """
    # groups[i]: the indexed terms that stand for query term i (one, or its expansions)
    groups = [[t] for t in terms]
    if prefix_last and terms:
        groups[-1] = corpus.expand(terms[-1])
    idf = {t: corpus.idf(t) for group in groups for t in group}
    avglen = corpus.avglen
    scored: list[Scored] = []
    for di, doc in enumerate(corpus.docs):
        postings = doc.analysis.postings
        lists = [[(t, postings[t]) for t in group if t in postings] for group in groups]
        if not match_any and not all(lists):
            continue
        # section -> (score, set of matched group indexes)
        acc: dict[int, list] = {}
        for gi, group_lists in enumerate(lists):
            for term, plist in group_lists:
                weight = idf[term]
                for si, tf in plist:
                    length = doc.analysis.sections[si].length
                    part = weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avglen))
                    slot = acc.get(si)
                    if slot is None:
                        acc[si] = [part, {gi}]
                    else:
                        slot[0] += part
                        slot[1].add(gi)
        need = len(groups)
        for si, (score, hit_groups) in acc.items():
            if match_any or len(hit_groups) == need:
                matched = tuple(terms[g] for g in sorted(hit_groups))
                scored.append(Scored(di, si, score, matched))
    docs = corpus.docs

    def key(s: Scored) -> tuple:
        base = (-s.score, docs[s.doc].concept_id, docs[s.doc].analysis.sections[s.section].first)
        return (-len(s.matched), *base) if match_any else base

    scored.sort(key=key)
    return scored
