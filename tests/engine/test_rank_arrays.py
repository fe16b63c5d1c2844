"""The ranking's array arithmetic (engine/index/postings.py, engine/rank/rank.py `_add`) gives
exactly
the floats of SPEC §5's formula evaluated posting by posting, as a plain loop over the
blocks' own arrays does: same sections, same scores to the last bit (scores are part of
the output, and a different rounding could reorder equal ones), on real documentation."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from citeline.engine import Engine
from citeline.engine.index.index import K1, B, Index
from citeline.engine.index.postings import merge
from citeline.engine.rank.rank import _add, rank
from citeline.engine.rank.scoring import MATCH_ANY, AnyScoring, factor, plan
from citeline.engine.rank.stems import Stemmed, stemmed
from citeline.engine.text.options import AnalysisOptions
from citeline.engine.text.terms import Tokenizer, query_terms
from tests.needs import corpus

QUERIES = ["get-childitem", "execution policy", "how do I list files", "remote session", "the"]


@pytest.fixture(scope="module")
def real_index() -> Index:
    root = corpus("powershell-docs")
    engine = Engine()
    idx = engine.index(
        engine.capture(engine.call(root)), AnalysisOptions(Tokenizer("bigrams")), bundle=root
    )
    assert len(idx.blocks) > 1
    return idx


def loop_postings(source: Index | Stemmed, term: str) -> dict[int, int]:
    """A term's tf per global section, read block by block; a stem's words summed."""
    index = source.index if isinstance(source, Stemmed) else source
    words = source.words(term) if isinstance(source, Stemmed) else [term]
    tf: dict[int, int] = {}
    for block, base in zip(index.blocks, index.bases, strict=True):
        for word in words:
            span = block.find(word)
            if span is None:
                continue
            lo, hi = span
            for s, count in zip(block.p_sec[lo:hi], block.p_tf[lo:hi], strict=True):
                tf[base + s] = tf.get(base + s, 0) + count
    return tf


def loop_add(
    source: Index | Stemmed,
    terms: list[str],
    groups: list[list[str]],
    match_any: bool,
    scoring: AnyScoring,
    boosts: list[float] | None,
) -> dict[int, tuple[float, int]]:
    """SPEC §5 (and §13 under match_any), one posting at a time: section → (score, mask)."""
    index = source.index if isinstance(source, Stemmed) else source
    n, avglen = index.n, index.avglen
    lengths = [length for block in index.blocks for length in block.sec_length]
    k1, b = (scoring.k1, scoring.b) if match_any else (K1, B)
    pre = [k1 * (1 - b + b * length / avglen) for length in lengths]

    def idf(df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    # each query term as (its tf per section, its df): one term, or the prefix's group
    per_term: list[list[tuple[dict[int, float], int]]] = []
    for gi, group in enumerate(groups):
        if boosts is not None and gi == len(groups) - 1:
            summed: dict[int, float] = {}
            df = 0
            for term, boost in zip(group, boosts, strict=True):
                tf = loop_postings(source, term)
                df = max(df, len(tf))
                for g, count in tf.items():
                    summed[g] = summed.get(g, 0.0) + boost * count
            per_term.append([(summed, df)])
        else:
            per_term.append([(tf, len(tf)) for tf in (loop_postings(source, t) for t in group)])
    idfs = [max((idf(df) for _, df in parts), default=0.0) for parts in per_term]
    query = plan(terms, idfs, scoring) if match_any else None
    scores: dict[int, float] = {}
    masks: dict[int, int] = {}
    for gi, parts in enumerate(per_term):
        for tf, df in parts:
            weight = idfs[gi] if len(parts) == 1 else idf(df)
            if query is not None:
                weight *= query.multipliers[gi]
            for g, count in tf.items():
                scores[g] = scores.get(g, 0.0) + weight * count * (k1 + 1) / (count + pre[g])
                masks[g] = masks.get(g, 0) | 1 << gi
    if query is not None:
        for g in scores:
            scores[g] *= factor(masks[g], query)
    return {g: (scores[g], masks[g]) for g in scores}


def array_add(
    source: Index | Stemmed,
    terms: list[str],
    groups: list[list[str]],
    match_any: bool,
    scoring: AnyScoring,
    boosts: list[float] | None,
) -> dict[int, tuple[float, int]]:
    n = source.n
    scores, masks = np.zeros(n), np.zeros(n, np.int64)
    touched, _ = _add(source, terms, groups, match_any, scoring, scores, masks, boosts)
    return {g: (float(scores[g]), int(masks[g])) for g in touched.tolist()}


@pytest.mark.parametrize("stems", [False, True], ids=["words", "stems"])
@pytest.mark.parametrize("match_any", [False, True], ids=["all", "any"])
def test_array_scores_are_the_loop_s_to_the_last_bit(
    real_index: Index, stems: bool, match_any: bool
) -> None:
    source: Index | Stemmed = stemmed(real_index) if stems else real_index
    tokenizer = Tokenizer("bigrams", "english" if stems else "none")
    compared = 0
    for query in QUERIES:
        terms = list(query_terms(query, tokenizer))
        groups = [[t] for t in terms]
        want = loop_add(source, terms, groups, match_any, MATCH_ANY, None)
        got = array_add(source, terms, groups, match_any, MATCH_ANY, None)
        assert got == want, query
        compared += len(got)
    assert compared > 1000  # the queries do hit the corpus


@pytest.mark.parametrize("stems", [False, True], ids=["words", "stems"])
def test_a_grouped_prefix_sums_as_the_loop_does(real_index: Index, stems: bool) -> None:
    source: Index | Stemmed = stemmed(real_index) if stems else real_index
    for prefix in ["s", "pro", "get"]:
        terms = ["remote", prefix]
        expansions = source.expand(prefix)
        assert len(expansions) > 3
        groups = [["remote"], expansions]
        boosts = [1.0 if t == prefix else 0.25 for t in expansions]
        want = loop_add(source, terms, groups, True, MATCH_ANY, boosts)
        assert array_add(source, terms, groups, True, MATCH_ANY, boosts) == want
        # scored apart (AsYouType.grouped off): each expansion its own idf
        apart = loop_add(source, terms, groups, True, MATCH_ANY, None)
        assert array_add(source, terms, groups, True, MATCH_ANY, None) == apart != want


def test_stem_postings_are_their_words_summed(real_index: Index) -> None:
    view = stemmed(real_index)
    for stem in ["run", "process", "session", "execut", "nothing-there"]:
        got = view.postings(stem)
        want = loop_postings(view, stem)
        assert dict(zip(got.secs.tolist(), got.tfs.tolist(), strict=True)) == want
        assert got.secs.tolist() == sorted(want) and got.df == len(want)
    assert view.df("run") > 0
    assert merge([]).df == 0


def test_rank_reports_python_numbers_in_the_loop_s_order(real_index: Index) -> None:
    """What leaves the ranker is plain ints and floats (JSON and repr as before), best
    first by score, then concept_id and line."""
    terms = query_terms("execution policy", Tokenizer("bigrams"))
    scoring = replace(MATCH_ANY, heading=0.0)
    ranked = rank(real_index, terms, match_any=True, limit=50, scoring=scoring)
    assert len(ranked.best) == 50 and ranked.total > 50
    want = loop_add(real_index, list(terms), [[t] for t in terms], True, scoring, None)
    keys = sorted(want, key=lambda g: (-want[g][0], *real_index.concept_and_line(g)))[:50]
    assert [s.section for s in ranked.best] == keys
    for hit in ranked.best:
        assert type(hit.section) is int and type(hit.score) is float
        assert hit.score == want[hit.section][0]


def test_touched_sections_are_found_alike_from_the_postings_or_the_slots(
    real_index: Index,
) -> None:
    """Few postings: the sections are taken from them; many: every slot is scanned. Both
    give the same sections, ascending."""
    from citeline.engine.rank.rank import _nonzero

    n = real_index.n
    for terms in (["chmod"], ["remote", "session"], ["the", "a", "of"]):
        spans = [real_index.postings(t).secs for t in terms]
        dense = np.zeros(n)
        for secs in spans:
            dense[secs] += 1.0
        few = sum(len(s) for s in spans) * 8 < n
        assert terms != ["the", "a", "of"] or not few  # both ways are taken
        assert terms != ["chmod"] or few
        got = _nonzero(dense, spans)
        assert got.tolist() == np.flatnonzero(dense).tolist() and len(got) > 0


def test_numpy_waits_for_the_first_ranking() -> None:
    """The worker processes that build blocks and a server that has not ranked yet do
    without numpy (15 MiB and 50 ms each); the first ranking imports it."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import citeline.engine.index.build, citeline.engine.core, citeline.lsp.server\n"
        "assert 'numpy' not in sys.modules, 'imported with the modules'\n"
        "from citeline.engine.index.postings import empty\n"
        "assert empty().df == 0 and 'numpy' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
