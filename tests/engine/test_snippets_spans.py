"""Snippet window (SPEC §6) and match_spans (SPEC §7)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer import snippets
from citeline.engine.answer.snippets import fold, match_spans, snippet
from citeline.engine.text.terms import CONTRACT, Tokenizer, query_terms

TOK = Tokenizer()


def covered(text: str, spans) -> list[str]:
    raw = text.encode("utf-8")
    return [raw[a:b].decode("utf-8") for a, b in spans]


@pytest.mark.parametrize(
    ("prefix_len", "begin"),
    [(0, 0), (79, 0), (80, 0), (81, 1), (200, 120)],
)
def test_snippet_starts_80_code_points_before_first_match(prefix_len: int, begin: int) -> None:
    # "é" is 2 bytes: the lead counts code points, not bytes
    text = ("é" * (prefix_len - 1) + " " if prefix_len else "") + "needle" + " tail" * 200
    assert text.index("needle") == prefix_len
    snip = snippet(text, ["needle"], TOK)
    assert snip.text == text[begin : begin + 512]
    assert len(snip.text) == 512


def test_snippet_at_most_512_code_points_and_to_end() -> None:
    short = "needle and some words"
    assert snippet(short, ["needle"], TOK).text == short
    long = "needle " + "𝒳" * 1000  # astral code points count once
    snip = snippet(long, ["needle"], TOK)
    assert len(snip.text) == 512
    assert snip.text == long[:512]


def test_snippet_runs_to_text_end_when_shorter_than_512_after_begin() -> None:
    text = "x " * 150 + "needle end"
    snip = snippet(text, ["needle"], TOK)
    assert snip.text == text[300 - 80 :]


def test_first_matching_token_of_any_term_decides() -> None:
    text = "a " * 100 + "second " + "b " * 100 + "first"
    snip = snippet(text, ["first", "second"], TOK)
    assert snip.text.startswith(text[200 - 80 : 200 - 80 + 10])
    assert snip.text == text[120:632]


def test_no_matching_token_starts_at_text_start() -> None:
    text = "z " * 400
    assert snippet(text, ["missing"], TOK).text == text[:512]


def test_whole_token_match_for_window() -> None:
    # "needles" is not "needle": the window is decided by the later whole token
    text = "needles " * 30 + "needle"
    snip = snippet(text, ["needle"], TOK)
    assert snip.text == text[240 - 80 :]


def test_engine_snippet_is_verbatim_substring(make_bundle) -> None:
    body = "# Heading\r\n" + "word " * 60 + "\r\n" + "filler " * 20 + "target here\r\nend\r\n"
    bundle = make_bundle({"a.md": body})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "target"})["hits"]
    text = body[: -len("\r\n")]  # the section's text: without the final line ending
    assert hit["snippet"] in text
    start = text.index("target") - 80
    assert hit["snippet"] == text[start : start + 512]
    assert "\r\n" in hit["snippet"]


def test_span_budget_single_term() -> None:
    text = "a " * 150
    spans = match_spans(text, ["a"], TOK)
    assert len(spans) == 100
    assert spans[0] == (0, 1) and spans[-1] == (198, 199)


def test_span_budget_floor_100_over_k() -> None:
    text = " ".join(["a", "b", "c"] * 40)
    spans = match_spans(text, ["a", "b", "c"], TOK)
    words = covered(text, spans)
    assert len(spans) == 3 * 33
    assert words.count("a") == words.count("b") == words.count("c") == 33


def test_span_budget_leftover_not_redistributed() -> None:
    text = "rare " + "a " * 120
    spans = match_spans(text, ["a", "rare"], TOK)
    words = covered(text, spans)
    assert words.count("rare") == 1
    assert words.count("a") == 50
    assert len(spans) == 51


def test_span_budget_at_least_one_with_many_terms() -> None:
    terms = [f"t{i}" for i in range(32)]  # floor(100/32) = 3
    text = " ".join(t for t in terms for _ in range(5))
    words = covered(text, match_spans(text, terms, TOK))
    assert all(words.count(t) == 3 for t in terms)
    assert len(words) == 96


def test_spans_taken_in_document_order() -> None:
    text = " ".join(["x"] * 120)
    spans = match_spans(text, ["x", "y"], TOK)  # budget 50 for x
    assert spans == tuple((2 * i, 2 * i + 1) for i in range(50))


def test_fold_overlap_becomes_union() -> None:
    assert fold([(0, 3), (2, 5)]) == [(0, 5)]
    assert fold([(2, 5), (0, 3)]) == [(0, 5)]
    assert fold([(0, 10), (2, 3)]) == [(0, 10)]
    assert fold([(1, 4), (1, 4)]) == [(1, 4)]
    assert fold([(0, 2), (1, 3), (2, 4)]) == [(0, 4)]


def test_fold_touching_ranges_stay_apart() -> None:
    assert fold([(0, 3), (3, 5)]) == [(0, 3), (3, 5)]
    assert fold([(3, 5), (0, 3), (5, 6)]) == [(0, 3), (3, 5), (5, 6)]


def test_fold_is_idempotent() -> None:
    once = fold([(5, 9), (0, 2), (1, 3), (9, 10), (8, 9)])
    assert once == [(0, 3), (5, 9), (9, 10)]
    assert fold(once) == once


def test_overlapping_bigram_spans_fold_into_union() -> None:
    tok = Tokenizer(cjk="bigrams")
    text = "网关网关"
    terms = query_terms("网关网", tok)
    assert terms == ("网关", "关网")
    spans = match_spans(text, terms, tok)
    assert spans == ((0, len(text.encode())),)


def test_byte_offsets_with_non_ascii() -> None:
    text = "Café über naïve 数据 𝒳über"
    spans = match_spans(text, ["über", "数据"], TOK)
    assert covered(text, spans) == ["über", "数据"]
    assert spans[0] == (len("Café ".encode()), len("Café über".encode()))
    for a, b in spans:
        text.encode()[a:b].decode("utf-8")  # code-point boundaries


def test_byte_offsets_for_case_folded_token() -> None:
    text = "die STRASSE und die Straße"
    spans = match_spans(text, ["strasse"], TOK)
    assert covered(text, spans) == ["STRASSE", "Straße"]


def test_engine_spans_are_byte_offsets_into_snippet(make_bundle) -> None:
    bundle = make_bundle({"ü.md": "# Überblick\nDaten für Größe: größe GRÖSSE\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "größe"})["hits"]
    raw = hit["snippet"].encode()
    words = [raw[s["start"] : s["end"]].decode() for s in hit["match_spans"]]
    assert words == ["Größe", "größe", "GRÖSSE"]
    assert hit["matched_terms"] == ["grösse"]


def test_spans_independent_of_query_word_order(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# Gamma\nalpha beta gamma alpha beta\n"})
    e = Engine()
    one = e.search(e.call(bundle), {"query": "alpha beta gamma"})["hits"][0]
    two = e.search(e.call(bundle), {"query": "gamma ALPHA beta"})["hits"][0]
    assert one["match_spans"] == two["match_spans"]
    assert one["snippet"] == two["snippet"]
    assert len(one["match_spans"]) == 6
    assert two["matched_terms"] == ["gamma", "alpha", "beta"]


def test_title_only_match_has_no_spans(make_bundle) -> None:
    bundle = make_bundle({"a.md": "---\ntitle: Hidden\n---\nvisible text\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "hidden"})["hits"]
    assert hit["snippet"] == "visible text"
    assert hit["match_spans"] == []


# -- the ASCII fast path agrees with tokenising ----------------------------------------------

ASCII_TEXT = st.text(
    alphabet=st.sampled_from(list("abcAB01 _-.\n#`'xyzXYZ")), min_size=0, max_size=700
)
TERMS = st.lists(
    st.one_of(
        st.sampled_from(["a", "ab", "abc", "b", "x", "xyz", "0", "a1", "ss", "é", "日本"]),
        st.text(alphabet="abcxyz01", min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=6,
    unique=True,
)


@settings(max_examples=300, deadline=None)
@given(text=ASCII_TEXT, terms=TERMS, cjk=st.sampled_from(["runs", "bigrams"]))
def test_ascii_fast_path_equals_tokenising(text: str, terms: list[str], cjk: str) -> None:
    """In ASCII text, windows and spans are found with one regex instead of tokenising;
    the result must be what tokenising gives (the fast path turned off)."""
    tokenizer = Tokenizer(cjk=cjk)
    fast = snippet(text, terms, tokenizer)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(snippets, "_fast", lambda _text, _tokenizer: False)
        slow = snippet(text, terms, tokenizer)
    assert fast == slow


def test_ascii_fast_path_is_taken_and_finds_whole_tokens() -> None:
    text = "xpath PATH path2 Path"
    assert snippets._fast(text, CONTRACT)
    assert not snippets._fast(text + "é", CONTRACT)
    assert not snippets._fast(text, Tokenizer(stemming="english"))
    assert match_spans(text, ["path"], CONTRACT) == ((6, 10), (17, 21))
