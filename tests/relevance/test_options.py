"""SPEC §13 relevance options: defaults are the contract, and each option does what it says."""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import snowballstemmer
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from needs import corpus

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.answer.snippets import MAX_SPANS, fold, snippet
from citeline.engine.text.analysis import AnalysisOptions, analyse
from citeline.engine.text.terms import Tokenizer, query_terms
from citeline.engine.text.unicode_tables import CJK_RANGES

DEFAULTS = {
    "match": "all",
    "context": "section",
    "cjk": "runs",
    "stemming": "none",
    "identifiers": "whole",
    "structure": "raw",
}
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "match": ("all", "any"),
    "context": ("section", "outline"),
    "cjk": ("runs", "bigrams"),
    "stemming": ("none", "english"),
    "identifiers": ("whole", "split"),
    "structure": ("raw", "fields"),
}
ALL_COMBINATIONS = [
    dict(zip(OPTION_VALUES, values, strict=True))
    for values in itertools.product(*OPTION_VALUES.values())
]
TOKENIZERS = [
    Tokenizer(c, s, i)
    for c in ("runs", "bigrams")
    for s in ("none", "english")
    for i in ("whole", "split")
]
STEM = snowballstemmer.stemmer("english")

TMP_FILES = {
    "guide.md": "---\ntitle: Gateway guide\n---\nIntro runs here.\n# Running the gateway\n"
    "The gateway runs fast; run it often.\n## 配置网关\napisix网关 supports 限流 and 熔断.\n"
    "### Notes\nA note on running.\n",
    "other.md": "# Other\nNothing about gateways, but a run and runs.\n数据库 网关 数据\n",
}


def spans_text(text: str, spans: list[dict[str, int]]) -> list[str]:
    raw = text.encode("utf-8")
    return [raw[s["start"] : s["end"]].decode("utf-8") for s in spans]


# -- defaults are the contract -------------------------------------------------------------


def explicit_defaults_identical(bundle: Path, query: str) -> None:
    engine = Engine()
    plain = engine.search(engine.call(bundle), {"query": query, "limit": 50})
    for extra in (DEFAULTS, {**DEFAULTS, "profile": "contract"}, {"profile": "contract"}):
        given_ = engine.search(engine.call(bundle), {"query": query, "limit": 50, **extra})
        assert "options" not in given_
        assert encode(given_) == encode(plain)


@pytest.mark.parametrize("query", ["gateway", "run runs", "网关", "apisix网关", "running"])
def test_defaults_given_explicitly_are_the_contract_tmp(make_bundle: Any, query: str) -> None:
    explicit_defaults_identical(make_bundle(TMP_FILES), query)


@pytest.mark.corpus
@pytest.mark.parametrize("query", ["限流", "插件", "upstream", "apisix 网关", "jwt-auth 配置"])
def test_defaults_given_explicitly_are_the_contract_apisix(query: str) -> None:
    explicit_defaults_identical(corpus("apisix-zh"), query)


@pytest.mark.parametrize("option", list(OPTION_VALUES))
def test_options_echoed_when_not_default(make_bundle: Any, option: str) -> None:
    bundle = make_bundle(TMP_FILES)
    value = OPTION_VALUES[option][1]
    res = Engine().search(Call(bundle, Settings()), {"query": "gateway", option: value})
    assert res["options"] == {"profile": "contract", **DEFAULTS, option: value}


def test_profile_recall_echo_and_expansion(make_bundle: Any) -> None:
    bundle = make_bundle(TMP_FILES)
    engine = Engine()
    res = engine.search(engine.call(bundle), {"query": "gateway", "profile": "recall"})
    recall = {
        "match": "any",
        "context": "outline",
        "cjk": "bigrams",
        "stemming": "english",
        "identifiers": "split",
        "structure": "fields",
    }
    assert res["options"] == {"profile": "recall", **recall}
    spelled = engine.search(engine.call(bundle), {"query": "gateway", **recall})
    assert spelled["hits"] == res["hits"]
    # an explicit option overrides the profile's
    narrowed = engine.search(
        engine.call(bundle), {"query": "gateway", "profile": "recall", "match": "all"}
    )
    assert narrowed["options"]["match"] == "all"


# -- snippets and spans follow the active tokenisation -------------------------------------


def test_bigram_query_spans_cover_bigram_bytes(make_bundle: Any) -> None:
    bundle = make_bundle({"a.md": "# 说明\n这里介绍限流插件的配置。\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "限流插件", "cjk": "bigrams"})
    assert res["terms"] == ["限流", "流插", "插件"]
    (hit,) = res["hits"]
    # the three overlapping bigrams fold into one span over their union
    assert spans_text(hit["snippet"], hit["match_spans"]) == ["限流插件"]
    start = hit["snippet"].encode("utf-8").index("限流插件".encode())
    assert hit["match_spans"] == [{"start": start, "end": start + len("限流插件".encode())}]
    # contract tokenisation: the run is one token, the query term does not match
    assert Engine().search(Call(bundle, Settings()), {"query": "限流插件"})["total"] == 0


def test_bigram_mixed_token_and_single_char(make_bundle: Any) -> None:
    bundle = make_bundle({"a.md": "# A\nuse apisix网关 here, 熔 alone\n"})
    engine = Engine()
    res = engine.search(engine.call(bundle), {"query": "网关", "cjk": "bigrams"})
    (hit,) = res["hits"]
    assert spans_text(hit["snippet"], hit["match_spans"]) == ["网关"]
    res = engine.search(engine.call(bundle), {"query": "apisix 熔", "cjk": "bigrams"})
    assert res["terms"] == ["apisix", "熔"]
    (hit,) = res["hits"]
    assert spans_text(hit["snippet"], hit["match_spans"]) == ["apisix", "熔"]


def test_stemmed_query_covers_word_forms(make_bundle: Any) -> None:
    bundle = make_bundle({"a.md": "# Jobs\nIt runs; we run it. Running is over.\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "running", "stemming": "english"})
    assert res["terms"] == ["run"]
    (hit,) = res["hits"]
    assert spans_text(hit["snippet"], hit["match_spans"]) == ["runs", "run", "Running"]
    plain = Engine().search(Call(bundle, Settings()), {"query": "running"})["hits"][0]
    assert plain["match_spans"] == [
        {"start": hit["snippet"].index("Running"), "end": hit["snippet"].index("Running") + 7}
    ]


# -- match=any -----------------------------------------------------------------------------


def test_match_any_orders_by_score_then_concept_id(make_bundle: Any) -> None:
    bundle = make_bundle(
        {
            "a.md": "# zebra zebra\nzebra zebra zebra\n",
            "b.md": "# notes\nzebra and apple " + "filler " * 60 + "\n",
            "c.md": "# apple\napple\n",
            "d.md": "# apple\napple\n",  # ties with c: concept_id decides
            "e.md": "# nothing\nhere\n",
        }
    )
    engine = Engine()
    res = engine.search(engine.call(bundle), {"query": "apple zebra", "match": "any"})
    paths = [h["path"] for h in res["hits"]]
    assert res["total"] == 4 and "e.md" not in paths
    # the reported score is the sort key: it descends, ties by concept_id then line
    keys = [(-h["score"], h["concept_id"], h["line_start"]) for h in res["hits"]]
    assert keys == sorted(keys)
    assert paths.index("c.md") + 1 == paths.index("d.md")
    assert res["hits"][paths.index("c.md")]["score"] == res["hits"][paths.index("d.md")]["score"]
    # matched_terms: the query's terms present, in query order
    assert next(h for h in res["hits"] if h["path"] == "b.md")["matched_terms"] == [
        "apple",
        "zebra",
    ]
    assert next(h for h in res["hits"] if h["path"] == "a.md")["matched_terms"] == ["zebra"]
    # match=all: only b
    assert [
        h["path"] for h in engine.search(engine.call(bundle), {"query": "apple zebra"})["hits"]
    ] == ["b.md"]


def test_match_any_ties_by_line_start(make_bundle: Any) -> None:
    bundle = make_bundle({"a.md": "# kiwi\nx\n# kiwi\nx\n# kiwi\nx\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "kiwi mango", "match": "any"})
    assert [h["line_start"] for h in res["hits"]] == [1, 3, 5]


# -- context=outline -----------------------------------------------------------------------


def outlines(text: str) -> list[tuple[str, str]]:
    a = analyse(text.encode("utf-8"), AnalysisOptions(Tokenizer(), outline=True))
    return [(s.heading, s.outline) for s in a.sections]


def test_outline_of_nested_headings() -> None:
    text = "pre\n# Top\na\n## Mid\nb\n### Low\nc\n## Mid2\nd\n### Low2\ne\n# Top2\nf\n## M3\ng\n"
    got = outlines(text)
    assert got == [
        ("", ""),
        ("Top", ""),
        ("Mid", "Top"),
        ("Low", "Top › Mid"),
        ("Mid2", "Top"),
        ("Low2", "Top › Mid2"),
        ("Top2", ""),
        ("M3", "Top2"),
    ]


def test_outline_with_level_jumps_and_setext() -> None:
    text = "# A *one*\nx\n### C `code`\ny\n## B\nz\n#### D\nw\n\nSetext\n======\nv\n###### F\nu\n"
    assert outlines(text) == [
        ("A one", ""),
        ("C code", "A one"),  # no level-2 heading above: the jump skips it
        ("B", "A one"),  # C (level 3) is not above a level-2 heading
        ("D", "A one › B"),
        ("Setext", ""),  # a new level 1 resets the hierarchy
        ("F", "Setext"),
    ]


def test_outline_counts_in_search_with_weight_two(make_bundle: Any) -> None:
    bundle = make_bundle({"a.md": "# Remoting\nintro\n## Cons\n- slow\n", "b.md": "# x\ny\n"})
    engine = Engine()
    assert engine.search(engine.call(bundle), {"query": "remoting cons"})["total"] == 0
    res = engine.search(engine.call(bundle), {"query": "remoting cons", "context": "outline"})
    (hit,) = res["hits"]
    assert (hit["heading"], hit["line_start"], hit["outline"]) == ("Cons", 3, "Remoting")
    # the outline is not in the section's text: the snippet covers only "Cons"
    assert spans_text(hit["snippet"], hit["match_spans"]) == ["Cons"]
    a = analyse(b"# Remoting\nintro\n## Cons\n- slow\n", AnalysisOptions(outline=True))
    plain = analyse(b"# Remoting\nintro\n## Cons\n- slow\n")
    assert a.sections[1].length == plain.sections[1].length + 2
    assert dict(a.postings["remoting"])[1] == 2


# -- §7 span guarantees under every option combination -------------------------------------

WORDS = ["run", "runs", "Running", "ran", "gateway", "gateways", "数据库", "网关", "数"]
WORDS += ["apisix网关", "カタカナ", "한국어", "々", "x1", "é", "e\u0301", "ß", "ﬁ", "Σ", "𠀀𠀁"]
PIECES = [*WORDS, " ", "\n", "\r\n", ".", ",", "-", "#", "\u3000", "。", "😀"]
# Text decoded from a file never holds a lone surrogate.
CHARS = st.characters(exclude_categories=["Cs"])
text_st = st.lists(
    st.one_of(st.sampled_from(PIECES), CHARS, st.text(CHARS, max_size=3)), max_size=200
).map("".join)
query_st = st.lists(
    st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=4)), min_size=1, max_size=6
)


def is_cjk(ch: str) -> bool:
    return any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES)


def word_runs(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = None
    for i, ch in enumerate(text + " "):
        if i < len(text) and unicodedata.category(ch)[0] in "LNM":
            start = i if start is None else start
        elif start is not None:
            out.append((start, i))
            start = None
    return out


def ref_refine(word: str, tok: Tokenizer) -> list[tuple[str, int, int]]:
    """An independent reading of §13: CJK stretches → bigrams, others whole (stemmed)."""
    finish: Callable[[str], str] = STEM.stemWord if tok.stemming == "english" else (lambda w: w)
    if tok.cjk != "bigrams":
        return [(finish(word), 0, len(word))]
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(word):
        j = i
        cjk = is_cjk(word[i])
        while j < len(word) and is_cjk(word[j]) == cjk:
            j += 1
        if cjk and j - i > 1:
            out.extend((word[k : k + 2], k, k + 2) for k in range(i, j - 1))
        else:
            out.append((word[i:j] if cjk else finish(word[i:j]), i, j))
        i = j
    return out


def ref_parts(run: str) -> list[tuple[int, int]]:
    """An independent reading of §13 `identifiers=split`: cut where a lower-case letter
    meets an upper-case one, before the last capital of an acronym followed by a
    lower-case letter, and on either side of a decimal digit; a mark goes with the
    character before it."""

    def kind(c: str) -> str:
        if unicodedata.category(c) == "Nd":
            return "digit"
        if c.isupper() or c.istitle():
            return "upper"
        if c.islower():
            return "lower"
        return "mark" if unicodedata.category(c).startswith("M") else "other"

    kinds: list[str] = []
    for c in run:
        k = kind(c)
        kinds.append(kinds[-1] if k == "mark" and kinds else k)
    cuts = []
    for i in range(1, len(run)):
        before, here = kinds[i - 1], kinds[i]
        after = kinds[i + 1] if i + 1 < len(run) else ""
        if (
            (before == "digit") != (here == "digit")
            or (before, here) == ("lower", "upper")
            or (before, here, after) == ("upper", "upper", "lower")
        ):
            cuts.append(i)
    return list(pairwise([0, *cuts, len(run)])) if cuts else []


def ref_run(run: str, rs: int, re_: int, tok: Tokenizer, part: bool) -> list[tuple[str, int, int]]:
    out = []
    norm = unicodedata.normalize("NFC", run.casefold())
    words = [(norm[a:b], a) for a, b in word_runs(norm)]
    exact = len(words) == 1 and len(norm) == len(run)
    for w, ws in words:
        for piece, a, b in ref_refine(w, tok):
            if part and tok.cjk == "bigrams" and is_cjk(w[a]):
                continue  # already among the whole token's bigrams
            out.append((piece, rs + ws + a, rs + ws + b) if exact else (piece, rs, re_))
    return out


def ref_occurrences(text: str, tok: Tokenizer) -> list[tuple[str, int, int]]:
    """(token, start, end) code-point ranges: exact when normalising keeps the run as is."""
    out = []
    for rs, re_ in word_runs(text):
        run = text[rs:re_]
        out.extend(ref_run(run, rs, re_, tok, False))
        if tok.identifiers == "split":
            for a, b in ref_parts(run):
                out.extend(ref_run(run[a:b], rs + a, rs + b, tok, True))
    return out


def byte_range(text: str, a: int, b: int) -> tuple[int, int]:
    start = len(text[:a].encode("utf-8"))
    return start, start + len(text[a:b].encode("utf-8"))


def terms_for(words: list[str], tok: Tokenizer) -> tuple[str, ...]:
    query = " ".join(words)
    assume(len(query) <= 512 and any(unicodedata.category(c)[0] in "LN" for c in query))
    terms = query_terms(query, tok)
    assume(terms)
    return terms


@settings(max_examples=150, deadline=None)
@given(text_st, query_st, st.sampled_from(TOKENIZERS))
def test_span_guarantees_under_every_tokenisation(
    text: str, words: list[str], tok: Tokenizer
) -> None:
    terms = terms_for(words, tok)
    snip = snippet(text, terms, tok)
    shown, spans = snip.text, list(snip.spans)
    raw = shown.encode("utf-8")
    assert shown in text and len(shown) <= 512
    assert len(spans) <= MAX_SPANS
    for a, b in spans:
        assert 0 <= a < b <= len(raw)
        raw[:a].decode("utf-8")  # code-point boundaries
        raw[a:b].decode("utf-8")
    for (_, end), (start, _) in pairwise(spans):
        assert end <= start
    assert fold(spans) == spans
    for other in (tuple(reversed(terms)), tuple(sorted(terms))):
        again = snippet(text, other, tok)
        assert again.text == shown and list(again.spans) == spans
    assert snippet(text, terms_for(list(reversed(words)), tok), tok).spans == snip.spans
    # covering, under the active tokenisation (read independently of the engine)
    first: dict[str, tuple[int, int]] = {}
    for piece, a, b in ref_occurrences(shown, tok):
        if piece in terms and piece not in first:
            first[piece] = byte_range(shown, a, b)
    for piece, (a, b) in first.items():
        assert any(s <= a and b <= e for s, e in spans), (piece, (a, b), spans, tok)
    assert bool(spans) == bool(first)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=60).map("".join),
    query_st,
    st.sampled_from(ALL_COMBINATIONS),
)
def test_search_spans_under_every_option_combination(
    tmp_path_factory: pytest.TempPathFactory,
    body: str,
    words: list[str],
    options: dict[str, str],
) -> None:
    query = " ".join(words)
    assume(len(query) <= 512 and any(unicodedata.category(c)[0] in "LN" for c in query))
    tok = Tokenizer(options["cjk"], options["stemming"], options["identifiers"])
    assume(len(set(query_terms(query, Tokenizer()))) <= 32)
    root = tmp_path_factory.mktemp("b")
    (root / "a.md").write_text(f"# Top {words[0]}\n## Sub\n{body}\n# {body[:20]}\n{body}\n")
    engine = Engine(reread=True, hold_bytes=0)
    res = engine.search(engine.call(root), {"query": query, "limit": 100, **options})
    again = engine.search(
        engine.call(root), {"query": " ".join(reversed(words)), "limit": 100, **options}
    )

    def shown(result: dict[str, Any]) -> dict[tuple[str, int], Any]:
        return {
            (h["path"], h["line_start"]): (
                h["snippet"],
                h["match_spans"],
                sorted(h["matched_terms"]),
            )
            for h in result["hits"]
        }

    assert shown(res) == shown(again)  # independent of the order of the query's words
    for hit in res["hits"]:
        text = hit["snippet"]
        raw = text.encode("utf-8")
        spans = [(s["start"], s["end"]) for s in hit["match_spans"]]
        assert len(spans) <= MAX_SPANS
        assert fold(spans) == spans
        for a, b in spans:
            assert 0 <= a < b <= len(raw)
            raw[:a].decode("utf-8")
            raw[a:b].decode("utf-8")
        first: dict[str, tuple[int, int]] = {}
        for piece, a, b in ref_occurrences(text, tok):
            if piece in hit["matched_terms"] and piece not in first:
                first[piece] = byte_range(text, a, b)
        for piece, (a, b) in first.items():
            assert any(s <= a and b <= e for s, e in spans), (piece, spans, options)
        if options["match"] == "all":
            assert hit["matched_terms"] == list(res["terms"])
        assert ("outline" in hit) == (options["context"] == "outline")
    echoed = any(options[k] != DEFAULTS[k] for k in DEFAULTS)
    assert ("options" in res) == echoed
