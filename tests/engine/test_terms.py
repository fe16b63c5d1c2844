"""Tokenising documents and queries (SPEC §4)."""

from __future__ import annotations

import unicodedata

import pytest

from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.text import terms
from citeline.engine.text.terms import (
    MAX_QUERY_TERMS,
    MAX_TERM_CODEPOINTS,
    Tokenizer,
    check_term_limits,
    query_terms,
)

TOK = Tokenizer()


def hit_paths(bundle, query: str) -> list[str]:
    return [h["path"] for h in Engine().search(Call(bundle, Settings()), {"query": query})["hits"]]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("foo_bar-baz", ["foo", "bar", "baz"]),  # Pc and Pd separate
        ("don't", ["don", "t"]),
        ("v1.2.3", ["v1", "2", "3"]),
        ("e\u0301te\u0301", ["été"]),  # NFD folded to NFC; marks stay in the run
        ("Straße", ["strasse"]),  # full case folding
        ("ΣΊΣΥΦΟΣ", ["σίσυφοσ"]),
        ("İstanbul", ["i\u0307stanbul"]),  # dotted capital I folds to i + U+0307
        ("Ｖｅｒ １２３", ["ｖｅｒ", "１２３"]),  # fullwidth: case-folded, not NFKC'd
        ("安装APISIX网关", ["安装apisix网关"]),  # CJK runs are single tokens
        ("安装 网关。配置", ["安装", "网关", "配置"]),
        ("emoji😀split", ["emoji", "split"]),
        ("𝐀𝐁 math", ["𝐀𝐁", "math"]),  # astral letters (no case folding for them)
        ("", []),
        ("!!! ---", []),
    ],
)
def test_tokens(text: str, tokens: list[str]) -> None:
    assert TOK.tokens(text) == tokens


def test_tokens_are_nfc_and_casefolded() -> None:
    for token in TOK.tokens("ÅNGSTRÖM Ａｂｃ ǅemal ﬁne"):
        assert token == unicodedata.normalize("NFC", token.casefold())


def test_located_offsets_point_into_original_text() -> None:
    text = "ab Straße Cafe\u0301 x"
    located = list(TOK.located(text))
    assert located == [("ab", 0, 2), ("strasse", 3, 9), ("café", 10, 15), ("x", 16, 17)]
    for _, start, end in located:
        assert text[start:end].strip() == text[start:end]


def test_query_terms_deduplicated_first_occurrence_first() -> None:
    assert query_terms("b a B A c b") == ("b", "a", "c")
    assert query_terms("Straße STRASSE") == ("strasse",)


def test_nfd_document_matches_nfc_query(make_bundle) -> None:
    nfd = unicodedata.normalize("NFD", "# Café crème\nnaïve résumé\n")
    assert nfd != unicodedata.normalize("NFC", nfd)
    bundle = make_bundle({"a.md": nfd})
    res = Engine().search(Call(bundle, Settings()), {"query": "CAFÉ résumé"})
    (hit,) = res["hits"]
    assert res["terms"] == ["café", "résumé"]
    # spans cover the NFD spelling in the snippet
    raw = hit["snippet"].encode()
    covered = [raw[s["start"] : s["end"]].decode() for s in hit["match_spans"]]
    assert covered == [unicodedata.normalize("NFD", "Café"), unicodedata.normalize("NFD", "résumé")]


def test_nfc_document_matches_nfd_query(make_bundle) -> None:
    bundle = make_bundle({"a.md": "Café\n"})
    assert hit_paths(bundle, unicodedata.normalize("NFD", "café")) == ["a.md"]


def test_sharp_s_and_ss(make_bundle) -> None:
    bundle = make_bundle({"de.md": "Die Straße ist lang\n", "en.md": "STRASSE sign\n"})
    assert sorted(hit_paths(bundle, "strasse")) == ["de.md", "en.md"]
    assert sorted(hit_paths(bundle, "Straße")) == ["de.md", "en.md"]
    assert hit_paths(bundle, "sign") == ["en.md"]


def test_dotted_capital_i(make_bundle) -> None:
    bundle = make_bundle({"tr.md": "İstanbul guide\n", "en.md": "istanbul plain\n"})
    # İ folds to "i̇" (with U+0307): the same spelling matches, a plain i does not.
    assert hit_paths(bundle, "İSTANBUL") == ["tr.md"]
    assert hit_paths(bundle, "i\u0307stanbul") == ["tr.md"]
    assert hit_paths(bundle, "istanbul") == ["en.md"]


def test_fullwidth_digits(make_bundle) -> None:
    bundle = make_bundle({"fw.md": "Version １２３ here\n", "ascii.md": "Version 123 there\n"})
    assert hit_paths(bundle, "１２３") == ["fw.md"]
    assert hit_paths(bundle, "123") == ["ascii.md"]
    assert hit_paths(bundle, "Ｖｅｒｓｉｏｎ") == []  # fullwidth letters are other tokens


def test_cjk_runs_are_single_tokens(make_bundle) -> None:
    bundle = make_bundle({"zh.md": "# 安装\n如何安装网关\n", "mixed.md": "部署APISIX网关\n"})
    assert hit_paths(bundle, "网关") == []  # inside a longer run: no match
    assert hit_paths(bundle, "如何安装网关") == ["zh.md"]
    assert hit_paths(bundle, "安装") == ["zh.md"]  # the heading run
    assert hit_paths(bundle, "部署apisix网关") == ["mixed.md"]


def test_whole_token_equality_no_prefix_or_stemming(make_bundle) -> None:
    bundle = make_bundle({"a.md": "installation installs\n"})
    assert hit_paths(bundle, "install") == []
    assert hit_paths(bundle, "installs") == ["a.md"]


def test_check_term_limits_term_length() -> None:
    check_term_limits(["x" * MAX_TERM_CODEPOINTS])
    with pytest.raises(CitelineError) as err:
        check_term_limits(["ok", "y" * (MAX_TERM_CODEPOINTS + 1)])
    assert err.value.code == "resource_limit"
    assert err.value.details == {
        "limit": "term_length",
        "value": MAX_TERM_CODEPOINTS + 1,
        "max": MAX_TERM_CODEPOINTS,
    }


def test_check_term_limits_term_count() -> None:
    words = [f"w{i}" for i in range(MAX_QUERY_TERMS)]
    check_term_limits(words)
    with pytest.raises(CitelineError) as err:
        check_term_limits([*words, "extra"])
    assert err.value.code == "resource_limit"
    assert err.value.details["limit"] == "query_terms"
    assert err.value.details["value"] == MAX_QUERY_TERMS + 1


def test_term_limit_counts_distinct_terms() -> None:
    query = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS)) + " W0 w1"
    assert len(query_terms(query)) == MAX_QUERY_TERMS


# -- threads ----------------------------------------------------------------------------------


def test_stemming_is_right_when_threads_stem_at_once() -> None:
    """The server's requests run in threads: a symbol search and a search that arrive
    together both stem under `recall`. A Snowball stemmer keeps its word in the object while
    it works, so one shared between threads mixed their words up (and failed with
    IndexError: string index out of range); each thread must stem with its own."""
    import sys
    import threading

    import snowballstemmer

    words = [f"{stem}{n}ing" for stem in ("connect", "runn", "organiz", "hop") for n in "abcdefgh"]
    words += [w + "ations" for w in words] + [w + "ly" for w in words]
    reference = snowballstemmer.stemmer("english")
    expected = {w: reference.stemWord(w) for w in words}
    failures: list[str] = []
    start = threading.Barrier(6)

    def stem_all(offset: int) -> None:
        start.wait()
        for round_ in range(40):
            terms._WORDS.stems.clear()  # each call reaches the stemmer, not the memo
            for w in words[offset:] + words[:offset]:
                try:
                    got = terms.english_stem(w)
                except IndexError as exc:
                    failures.append(f"{w}: {exc}")
                    return
                if got != expected[w]:
                    failures.append(f"{w}: {got!r} != {expected[w]!r} (round {round_})")
                    return

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=stem_all, args=(i * 7,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
        terms._WORDS.stems.clear()
    assert not failures, failures[:5]


def test_ascii_text_gets_the_same_runs_from_the_small_pattern() -> None:
    """word_re picks a small pattern for ASCII text: it must find exactly the runs of L*, N*
    and M* code points (SPEC §4) that the full class finds, character by character and in
    mixed strings, and only for ASCII text."""
    full = terms._word_full()
    for cp in range(128):
        ch = chr(cp)
        assert bool(terms.word_re(ch).fullmatch(ch)) == bool(full.fullmatch(ch)), repr(ch)
        assert bool(terms.word_re(ch).fullmatch(ch)) == (unicodedata.category(ch)[0] in "LNM")
    every = "".join(map(chr, range(128)))
    sample = f"Get-Help about_Splatting v1.2.3 x86_64 {every} CamelCase99 --flag=on"
    assert terms.word_re(sample).findall(sample) == full.findall(sample)
    assert terms.word_re(sample) is not full and terms.word_re(sample) is not terms._word_bmp()
    assert terms.word_re("café") is terms._word_bmp()
    assert terms.word_re("𝐀") is full
