"""SPEC §13 "Stop words under match=any": a section holding only the query's stop words is
not a hit, and stop words are neither matched terms nor highlighted, unless every term of
the query is a stop word. With every option at its default nothing changes (the contract)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.requests import Relevance
from citeline.engine.rank.rank import rank
from citeline.engine.rank.scoring import MATCH_ANY, query_stops, stop_bits
from citeline.engine.text.terms import Tokenizer, query_terms

RECALL = {"profile": "recall"}
RECALL_RELEVANCE = Relevance.from_mapping(RECALL)
FILES = {
    "limits.md": "# Limits and how to raise them\n\nRaise a limit with a flag.\n",
    # holds "a" and "the" of the queries below, and nothing else of them
    "testing.md": "# Testing\n\nA test is a check of the thing, a story of a run.\n",
    "about.md": "# About\n\nAbout this project.\n",
}


def spans_text(hit: dict[str, Any]) -> list[str]:
    raw = hit["snippet"].encode("utf-8")
    return [raw[s["start"] : s["end"]].decode("utf-8") for s in hit["match_spans"]]


def search(root: Path, query: str, **options: str) -> dict[str, Any]:
    return Engine().search(
        Call(root, Settings()), {"query": query, "limit": 20, **(options or RECALL)}
    )


def test_query_stops_are_the_words_typed() -> None:
    english = Tokenizer(stemming="english")
    assert query_stops(query_terms("raise a limit", english)) == (False, True, False)
    # "doing" stems to the stop word "do"; "owned" to "own", a stop word's stem, but the
    # user did not type a stop word
    terms = query_terms("doing owned files", english)
    assert terms == ("do", "own", "file")
    assert query_stops(terms) == (True, False, False)
    # a stem that a stop word and another word share counts as the other word
    assert query_stops(query_terms("own owned", english)) == (False,)
    # without stemming, the terms are the words
    assert query_stops(query_terms("How do I raise the limit")) == (
        True,
        True,
        True,
        False,
        True,
        False,
    )
    # bare strings are words: "doe" is no stop word, though it is the stem of "does"
    assert query_stops(("doe", "zebra", "the")) == (False, False, True)


def test_stop_bits_leave_a_query_of_stop_words_alone() -> None:
    assert stop_bits(query_terms("raise a limit")) == 0b010
    assert stop_bits(query_terms("how to")) == 0  # every term a stop word: they all count
    assert stop_bits(query_terms("the a")) == 0
    # as-you-type, the last word may be the start of a longer one ("to" → "token")
    assert stop_bits(query_terms("raise to"), prefix_last=True) == 0
    assert stop_bits(query_terms("raise to")) == 0b10
    assert stop_bits(query_terms("the raise to"), prefix_last=True) == 0b001
    assert stop_bits(query_terms("to"), prefix_last=True) == 0


def test_a_section_of_stop_words_only_is_no_hit(make_bundle: Any) -> None:
    root = make_bundle(FILES)
    res = search(root, "raise a limit")
    assert [h["path"] for h in res["hits"]] == ["limits.md"]
    assert res["total"] == 1 and res["truncated"] is False
    (hit,) = res["hits"]
    assert hit["matched_terms"] == ["rais", "limit"]  # stems, without "a"
    assert [w.lower() for w in spans_text(hit)] == ["limits", "raise", "raise", "limit"]
    # the same under match=any alone (no stemming): the terms are the words
    plain = search(root, "raise a limit", match="any")
    assert [h["path"] for h in plain["hits"]] == ["limits.md"]
    assert plain["hits"][0]["matched_terms"] == ["raise", "limit"]
    assert [w.lower() for w in spans_text(plain["hits"][0])] == ["raise", "raise", "limit"]


def test_the_snippet_starts_at_the_first_word_that_is_not_a_stop_word(make_bundle: Any) -> None:
    long = "# Notes\n\n" + "a " * 120 + "\n\nThe gateway routes requests.\n"
    root = make_bundle({"notes.md": long})
    (hit,) = search(root, "a gateway")["hits"]
    assert spans_text(hit) == ["gateway"]
    assert hit["snippet"].index("gateway") == 80  # SPEC §6: 80 code points before it


def test_a_query_of_stop_words_only_finds_and_highlights_them(make_bundle: Any) -> None:
    root = make_bundle(FILES)
    res = search(root, "the a")
    assert {h["path"] for h in res["hits"]} == {"limits.md", "testing.md"}
    testing = next(h for h in res["hits"] if h["path"] == "testing.md")
    assert testing["matched_terms"] == ["the", "a"]
    assert [w.lower() for w in spans_text(testing)] == ["a", "a", "the", "a", "a"]


def test_the_contract_is_unchanged(make_bundle: Any) -> None:
    """match=all requires every term, stop words included, and lists and highlights them
    all (SPEC §4-§7)."""
    root = make_bundle(FILES)
    res = Engine().search(Call(root, Settings()), {"query": "raise a limit"})
    assert "options" not in res
    assert [h["path"] for h in res["hits"]] == ["limits.md"]
    hit = res["hits"][0]
    assert hit["matched_terms"] == ["raise", "a", "limit"]
    assert [w.lower() for w in spans_text(hit)] == ["raise", "raise", "a", "limit", "a"]
    assert Engine().search(Call(root, Settings()), {"query": "a the"})["total"] == 1  # testing.md


def test_before_the_rule_stop_words_made_hits(make_bundle: Any) -> None:
    """What the rule changes, read through the ranker with it switched off (the harness's
    `recall scoring:stop-word hits` row)."""
    root = make_bundle(FILES)
    engine = Engine()
    index = engine.index(engine.capture(engine.call(root)), RECALL_RELEVANCE.analysis)
    terms = query_terms("raise a limit", RECALL_RELEVANCE.tokenizer)
    now = rank(index, terms, match_any=True)
    before = rank(index, terms, match_any=True, scoring=replace(MATCH_ANY, stop_filter=False))
    assert now.total == 1 and before.total == 2
    assert {s.matched for s in before.best} == {("rais", "a", "limit"), ("a",)}
    assert [s.matched for s in now.best] == [("rais", "limit")]
    # the scores of the hits that stay are the same: stop words keep their share of BM25
    kept = next(s for s in before.best if s.section == now.best[0].section)
    assert kept.score == now.best[0].score


def test_symbols_as_you_type_keep_a_last_word_being_typed(make_bundle: Any) -> None:
    root = make_bundle(FILES)
    engine = Engine()
    typing = engine.symbols(engine.call(root), "raise a", relevance=RECALL)
    # "a" is being typed: "about" counts, as any word it starts
    assert {h.path for h in typing} == {"limits.md", "about.md", "testing.md"}
    typed = engine.symbols(engine.call(root), "raise a ", relevance=RECALL)
    assert {h.path for h in typed} == {"limits.md"}
