"""SPEC §13 `match=any` ranking (engine/rank/scoring.py): BM25 scaled by a coordination factor."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.engine import Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.rank.rank import rank
from citeline.engine.rank.scoring import (
    LUCENE_CLASSIC,
    MATCH_ANY,
    STOP_WORDS,
    chains,
    coordination,
    final_score,
    heading_bonus,
    plan,
    rescore_bounded,
    stop_terms,
)
from citeline.engine.text.terms import QueryTerms, Tokenizer, query_terms

BIGRAMS = Tokenizer(cjk="bigrams")


def test_query_terms_know_their_chains() -> None:
    terms = query_terms("负载均衡 算法 jwt", BIGRAMS)
    assert terms == ("负载", "载均", "均衡", "算法", "jwt")  # equal to the plain tuple
    assert isinstance(terms, QueryTerms)
    assert terms.chains == (3, 3, 3, 1, 1)
    assert chains(terms) == [3, 3, 3, 1, 1]
    # a chain never crosses the space between two typed words, even when they overlap
    assert query_terms("网关 关键", BIGRAMS).chains == (1, 1)
    # a bigram repeated later counts in the chain where it first occurs
    assert query_terms("负载均衡 负载", BIGRAMS).chains == (3, 3, 3)
    # the contract and other tokenisations have no chains
    assert query_terms("负载均衡 x").chains == (1, 1)


def test_bare_strings_read_chains_from_overlaps() -> None:
    assert chains(["负载", "载均", "均衡", "算法", "法则"]) == [3, 3, 3, 2, 2]
    assert chains(["a", "负载", "b"]) == [1, 1, 1]
    assert chains(["x", "负载", "载均"]) == [1, 2, 2]
    # terms that know their chains are not read again: two typed words that overlap
    assert chains(query_terms("网关 关键", BIGRAMS)) == [1, 1]
    assert chains(["网关", "关键"]) == [2, 2]


def test_plan_weights_chains_and_stop_words() -> None:
    terms = QueryTerms(["how", "do", "负载", "载均", "均衡", "zebra"], [1, 1, 3, 3, 3, 1])
    idfs = [1.0, 2.0, 3.0, 3.0, 6.0, 4.0]
    p = plan(terms, idfs)
    assert p.multipliers == (1.0, 1.0, 1 / 3, 1 / 3, 1 / 3, 1.0)
    # stop words weigh 0 in the factor; a term's weight is idf × multiplier
    assert p.weights == (0.0, 0.0, 1.0, 1.0, 2.0, 4.0)
    assert p.total == 8.0
    assert coordination(0b000011, p) == 0.0  # only "how do": nothing of the query's weight
    assert coordination(0b100000, p) == 0.5
    assert coordination(0b111111, p) == 1.0
    counted = plan(terms, idfs, replace(MATCH_ANY, stop_words=False))
    assert counted.weights[:2] == (1.0, 2.0)
    flat = plan(terms, idfs, replace(MATCH_ANY, chains=False, idf_weighted=False))
    assert flat.multipliers == (1.0,) * 6 and flat.weights == (0.0, 0.0, 1.0, 1.0, 1.0, 1.0)


def test_a_query_of_stop_words_only_counts_them() -> None:
    p = plan(("how", "do", "i"), [1.0, 1.0, 2.0])
    assert p.weights == (1.0, 1.0, 2.0)
    assert coordination(0b100, p) == 0.5


def test_stop_weight_scales_stop_words_in_the_bm25_sum_only() -> None:
    """A measured proposal (docs/relevance.md, "Third round"): stop words counting less in
    the BM25 sum. Off by default; when on, it leaves the factor's weights alone."""
    terms = QueryTerms(["how", "负载", "载均", "zebra"], [1, 2, 2, 1])
    idfs = [1.0, 3.0, 3.0, 4.0]
    assert plan(terms, idfs).multipliers == (1.0, 0.5, 0.5, 1.0)
    half = plan(terms, idfs, replace(MATCH_ANY, stop_weight=0.5))
    assert half.multipliers == (0.5, 0.5, 0.5, 1.0)
    assert half.weights == plan(terms, idfs).weights == (0.0, 1.5, 1.5, 4.0)
    assert plan(terms, idfs, replace(MATCH_ANY, stop_weight=0.0)).multipliers[0] == 0.0
    # a query of stop words only keeps them whole: there is nothing else to rank by
    assert plan(("how", "do"), [1.0, 2.0], replace(MATCH_ANY, stop_weight=0.0)).multipliers == (
        1.0,
        1.0,
    )
    # with stop words counted as ordinary words, there are none to scale
    counted = replace(MATCH_ANY, stop_words=False, stop_weight=0.0)
    assert plan(terms, idfs, counted).multipliers == (1.0, 0.5, 0.5, 1.0)


def test_stop_terms_cover_stems() -> None:
    assert {"how", "do", "i", "the"} <= STOP_WORDS
    assert "doe" in stop_terms()  # the English stem of "does"
    assert "zebra" not in stop_terms()


def test_final_score_never_exceeds_the_bm25_sum() -> None:
    p = plan(("apple", "zebra"), [2.0, 3.0])
    assert final_score(10.0, 0b11, p) == 10.0
    partial = final_score(10.0, 0b01, p)
    assert partial == pytest.approx(10.0 * 0.4**MATCH_ANY.exponent) and partial < 10.0
    lucene = plan(("apple", "zebra"), [2.0, 3.0], LUCENE_CLASSIC)
    assert final_score(10.0, 0b01, lucene) == 5.0  # matched ÷ distinct terms
    off = plan(("apple", "zebra"), [2.0, 3.0], replace(MATCH_ANY, exponent=0.0))
    assert final_score(10.0, 0b01, off) == 10.0


FILES = {
    "a.md": "# Zebra\nzebra apple here\n",
    "b.md": "# Notes\nzebra only, and more words to make it longer than the others\n",
    "c.md": "# Apple\napple\n",
    "d.md": "# Other\nnothing\n",
}


def expected_scores(engine: Engine, bundle: Any, query: str) -> dict[str, float]:
    """The §13 score computed from scratch: BM25 parts with match=any's k1 and b, the
    coordination factor over the terms each section holds, the heading bonus over the
    terms its heading holds."""
    idx = engine.prepare(engine.call(bundle), Relevance.from_mapping({"match": "any"}).analysis)
    terms = query_terms(query)
    n = idx.n
    # term frequencies from the index's posting ranges: {term: {section: tf}}
    tfs = {
        t: {
            base + s: tf
            for block, base, lo, hi in idx.where(t)
            for s, tf in zip(block.p_sec[lo:hi], block.p_tf[lo:hi], strict=True)
        }
        for t in terms
    }
    idfs = [math.log(1 + (n - len(tfs[t]) + 0.5) / (len(tfs[t]) + 0.5)) for t in terms]
    p = plan(terms, idfs)
    out = {}
    for g in range(n):
        block, s = idx.locate(g)
        length = block.sec_length[s]
        total, mask = 0.0, 0
        for i, t in enumerate(terms):
            tf = tfs[t].get(g)
            if tf:
                norm = 1 - MATCH_ANY.b + MATCH_ANY.b * length / idx.avglen
                total += idfs[i] * tf * (MATCH_ANY.k1 + 1) / (tf + MATCH_ANY.k1 * norm)
                mask |= 1 << i
        if mask:
            sec = idx.section(g)
            share = sum(w for i, w in enumerate(p.weights) if mask >> i & 1) / p.total
            heading = set(Tokenizer().tokens(sec.heading))
            named = sum(w for t, w in zip(terms, p.weights, strict=True) if t in heading)
            bonus = 1 + MATCH_ANY.heading * named / p.total
            out[sec.path] = total * share**MATCH_ANY.exponent * bonus
    return out


def test_reported_score_is_the_formula_and_the_sort_key(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    engine = Engine()
    res = engine.search(engine.call(bundle), {"query": "apple zebra", "match": "any"})
    want = expected_scores(engine, bundle, "apple zebra")
    got = {h["path"]: h["score"] for h in res["hits"]}
    assert got.keys() == want.keys() == {"a.md", "b.md", "c.md"}
    for path, value in want.items():
        assert math.isclose(got[path], value, rel_tol=1e-12), path
    assert res["hits"][0]["path"] == "a.md"  # both terms, short section
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_chain_of_bigrams_weighs_as_one_word(make_bundle: Any) -> None:
    # a.md holds a four-character word (three bigrams), b.md a two-character one (one
    # bigram). Summed, the long word's three bigrams each add a BM25 part; as a chain they
    # share one word's weight, a third each.
    bundle = make_bundle({"a.md": "# x\n负载均衡\n", "b.md": "# y\n算法\n", "c.md": "# z\nw\n"})
    engine = Engine()
    idx = engine.prepare(engine.call(bundle), Relevance.from_mapping({"cjk": "bigrams"}).analysis)
    terms = query_terms("负载均衡 算法", BIGRAMS)

    def scores(**change: Any) -> dict[str, float]:
        scoring = replace(MATCH_ANY, exponent=0.0, **change)
        ranked = rank(idx, terms, match_any=True, scoring=scoring)
        return {idx.section(s.section).path: s.score for s in ranked.best}

    chained, summed = scores(), scores(chains=False)
    assert chained.keys() == summed.keys() == {"a.md", "b.md"}
    assert chained["a.md"] == pytest.approx(summed["a.md"] / 3, rel=1e-12)
    assert chained["b.md"] == summed["b.md"]
    # and through the engine, with the coordination factor: the reported scores
    query = {"query": "负载均衡 算法", "match": "any", "cjk": "bigrams"}
    hits = {h["path"]: h["score"] for h in engine.search(engine.call(bundle), query)["hits"]}
    assert hits["a.md"] < summed["a.md"] / 2


def test_ranking_limit_keeps_the_full_order(make_bundle: Any) -> None:
    files = {
        f"n{i}.md": f"# n{i}\n" + "apple " * (i % 4 + 1) + "zebra " * (i % 3) for i in range(30)
    }
    bundle = make_bundle(files)
    engine = Engine()
    full = engine.search(
        engine.call(bundle), {"query": "apple zebra", "match": "any", "limit": 100}
    )
    for limit in (1, 3, 7, 20):
        part = engine.search(
            engine.call(bundle), {"query": "apple zebra", "match": "any", "limit": limit}
        )
        assert part["hits"] == full["hits"][:limit]
        assert part["total"] == full["total"] == 30


def test_heading_bonus() -> None:
    p = plan(("apple", "zebra"), [1.0, 3.0])
    assert heading_bonus(0, p) == 1.0
    assert heading_bonus(0b10, p) == pytest.approx(1 + MATCH_ANY.heading * 0.75)
    assert heading_bonus(0b11, p) == 1 + MATCH_ANY.heading
    off = plan(("apple", "zebra"), [1.0, 3.0], replace(MATCH_ANY, heading=0.0))
    assert heading_bonus(0b11, off) == 1.0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([1.0, 2.0, 2.5, 3.0, 4.0]), st.floats(0, 1)),
        max_size=40,
    ),
    st.integers(0, 12),
    st.sampled_from([1.0, 1.1, 1.5, 2.0]),
)
def test_rescore_bounded_is_exact(
    entries: list[tuple[float, float]], limit: int, ceiling: float
) -> None:
    # (score, id); the rescore multiplies by a factor in [1, ceiling] drawn per entry
    found = [(score, i) for i, (score, _) in enumerate(entries)]
    bonus = {i: 1 + (ceiling - 1) * x for i, (_, x) in enumerate(entries)}

    def rescore(e: tuple[float, int]) -> tuple[float, int]:
        return (e[0] * bonus[e[1]], e[1])

    def best(items: list[tuple[float, int]]) -> list[tuple[float, int]]:
        return sorted(items, key=lambda e: (-e[0], e[1]))[:limit]

    kept = rescore_bounded(found, limit, ceiling, rescore)
    assert best(kept) == best([rescore(e) for e in found])
    assert len(kept) <= len(found)


def test_heading_bonus_in_the_engine_keeps_limits_exact(make_bundle: Any) -> None:
    # some headings name a query word, most do not: the bonus reorders near ties
    files = {
        f"n{i:02}.md": (f"# apple notes {i}\n" if i % 5 == 0 else f"# n{i}\n")
        + "apple " * (i % 4 + 1)
        + "zebra " * (i % 3)
        + "filler " * (i % 7)
        for i in range(40)
    }
    bundle = make_bundle(files)
    engine = Engine()
    request = {"query": "apple zebra", "match": "any"}
    full = engine.search(engine.call(bundle), {**request, "limit": 100})["hits"]
    for limit in (1, 2, 5, 9, 30):
        assert (
            engine.search(engine.call(bundle), {**request, "limit": limit})["hits"] == full[:limit]
        )
    # the bonus is at work: the same ranking without it differs
    idx = engine.prepare(engine.call(bundle))
    terms = query_terms("apple zebra")
    plain = rank(idx, terms, match_any=True, scoring=replace(MATCH_ANY, heading=0.0))
    named = rank(idx, terms, match_any=True)
    before = {s.section: s.score for s in plain.best}
    for s in named.best:
        if idx.section(s.section).heading.startswith("apple"):  # "apple": part of the query
            low = before[s.section]
            assert low < s.score <= low * (1 + MATCH_ANY.heading)
        else:
            assert s.score == before[s.section]
