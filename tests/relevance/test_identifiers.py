"""SPEC §13 `identifiers=split`: identifiers also yield their parts, in every front."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from citeline.cli import cli
from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.answer.requests import CHOICES, RECALL, Relevance, SearchRequest
from citeline.engine.contracts import validate
from citeline.engine.text.terms import Tokenizer, identifier_parts, query_terms
from citeline.lsp.settings import parse_settings
from citeline.mcp_server.tools import tool_list

SPLIT = Tokenizer(identifiers="split")


def parts(word: str) -> list[str]:
    return [word[a:b] for a, b in identifier_parts(word)]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("InlinePrediction", ["Inline", "Prediction"]),
        ("getHTTPResponse", ["get", "HTTP", "Response"]),
        ("utf8", ["utf", "8"]),
        ("ipv6", ["ipv", "6"]),
        ("x86", ["x", "86"]),
        ("PSReadLine", ["PS", "Read", "Line"]),
        ("macOS", ["mac", "OS"]),
        ("ÉcoleNormale", ["École", "Normale"]),
        ("v2Beta", ["v", "2", "Beta"]),
        ("ipv6网关", ["ipv", "6", "网关"]),  # a digit meets a letter, whatever the script
    ],
)
def test_identifier_parts(word: str, expected: list[str]) -> None:
    assert parts(word) == expected


@pytest.mark.parametrize("word", ["hello", "Hello", "HTTP", "Éclair", "网关", "42", "é"])
def test_words_that_are_not_split(word: str) -> None:
    # plain, capitalised and all-caps words, CJK runs and numbers have no inner join
    assert identifier_parts(word) == []


def test_marks_stay_with_their_letter() -> None:
    word = "cafe\u0301Noir"  # a combining acute accent inside the first part
    assert parts(word) == ["cafe\u0301", "Noir"]


def test_tokens_keep_the_whole_and_add_the_parts() -> None:
    assert SPLIT.tokens("InlinePrediction text") == [
        "inlineprediction",
        "inline",
        "prediction",
        "text",
    ]
    # the contract tokenisation is unchanged
    assert Tokenizer().tokens("InlinePrediction text") == ["inlineprediction", "text"]
    located = list(SPLIT.located("see getHTTPResponse"))
    assert located == [
        ("see", 0, 3),
        ("gethttpresponse", 4, 19),
        ("get", 4, 7),
        ("http", 7, 11),
        ("response", 11, 19),
    ]


def test_split_with_bigrams_and_stems() -> None:
    tok = Tokenizer("bigrams", "english", "split")
    # the CJK stretch of a split token is not counted twice: its bigram is the whole's
    assert tok.tokens("ipv6网关") == ["ipv6", "网关", "ipv", "6"]
    assert tok.tokens("InlinePredictions") == ["inlinepredict", "inlin", "predict"]


def test_query_terms_dedupe_whole_and_parts() -> None:
    assert query_terms("InlinePrediction inline", SPLIT) == (
        "inlineprediction",
        "inline",
        "prediction",
    )


FILES = {
    "predict.md": "# Settings\nSet-PSReadLineOption -Colors @{ InlinePrediction = 'Blue' }\n",
    "other.md": "# Inline code\nAn inline span.\n",
    "enc.md": "# Encoding\nSave the file as utf8 with BOM.\n",
}


def test_query_words_find_an_identifier_and_spans_cover_the_part(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    engine = Engine()
    assert engine.search(engine.call(bundle), {"query": "inline prediction"})["total"] == 0
    res = engine.search(engine.call(bundle), {"query": "inline prediction", "identifiers": "split"})
    validate("search.result", res)
    (hit,) = res["hits"]
    assert hit["path"] == "predict.md"
    assert hit["matched_terms"] == ["inline", "prediction"]
    raw = hit["snippet"].encode("utf-8")
    covered = [raw[s["start"] : s["end"]].decode() for s in hit["match_spans"]]
    # the parts touch, so their spans stay apart (SPEC §7) and cover "Inline", "Prediction"
    assert covered == ["Inline", "Prediction"]
    assert res["options"]["identifiers"] == "split"


def test_whole_identifier_query_matches_its_parts_too(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    res = Engine().search(
        Call(bundle, Settings()), {"query": "InlinePrediction", "identifiers": "split"}
    )
    assert res["terms"] == ["inlineprediction", "inline", "prediction"]
    assert [h["path"] for h in res["hits"]] == ["predict.md"]
    # under match=any the parts alone also find the section about inline spans
    any_ = Engine().search(
        Call(bundle, Settings()),
        {"query": "InlinePrediction", "identifiers": "split", "match": "any"},
    )
    assert [h["path"] for h in any_["hits"]] == ["predict.md", "other.md"]
    assert any_["hits"][1]["matched_terms"] == ["inline"]


def test_letter_digit_join(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    engine = Engine()
    assert engine.search(engine.call(bundle), {"query": "utf 8"})["total"] == 0
    res = engine.search(engine.call(bundle), {"query": "utf 8", "identifiers": "split"})
    assert [h["path"] for h in res["hits"]] == ["enc.md"]
    # the whole token is still a term: utf8 finds utf8
    assert (
        engine.search(engine.call(bundle), {"query": "utf8", "identifiers": "split"})["total"] == 1
    )


def test_default_and_explicit_whole_are_the_contract(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    engine = Engine()
    for query in ("inline", "InlinePrediction", "utf8"):
        plain = engine.search(engine.call(bundle), {"query": query})
        whole = engine.search(engine.call(bundle), {"query": query, "identifiers": "whole"})
        assert "options" not in whole
        assert encode(whole) == encode(plain)


def test_identifiers_in_requests_recall_and_schemas() -> None:
    assert CHOICES["identifiers"] == ("whole", "split")
    assert RECALL["identifiers"] == "split"
    assert Relevance.from_mapping({"profile": "recall"}).identifiers == "split"
    narrowed = Relevance.from_mapping({"profile": "recall", "identifiers": "whole"})
    assert narrowed.identifiers == "whole" and narrowed.match == "any"
    with pytest.raises(CitelineError) as err:
        SearchRequest.from_json({"query": "q", "identifiers": "camel"})
    assert err.value.code == "schema_validation"
    validate("search.request", {"query": "q", "identifiers": "split"})
    with pytest.raises(jsonschema.ValidationError):
        validate("search.request", {"query": "q", "identifiers": "camel"})


def test_cli_flag_travels() -> None:
    args = cli.parser().parse_args(["search", ".", "-q", "x", "--identifiers", "split"])
    assert cli.request_from(args)["identifiers"] == "split"
    args = cli.parser().parse_args(["search", ".", "-q", "x"])
    assert "identifiers" not in cli.request_from(args)
    with pytest.raises(cli.UsageError):  # reported as schema_validation (exit 2)
        cli.parser().parse_args(["search", ".", "-q", "x", "--identifiers", "camel"])


def test_lsp_setting_and_mcp_input() -> None:
    opts = parse_settings({"identifiers": "split"})
    assert opts.relevance_options.identifiers == "split"
    assert opts.search_request({"query": "q"})["identifiers"] == "split"
    with pytest.raises(CitelineError) as err:
        parse_settings({"identifiers": "camel"})
    assert err.value.code == "schema_validation"
    (search,) = [t for t in tool_list("/docs") if t.name == "search_sections"]
    prop = search.input_schema["properties"]["identifiers"]
    assert prop["enum"] == ["whole", "split"] and prop["default"] == "whole"
    assert "identifiers=split" in search.input_schema["properties"]["profile"]["description"]
    assert "InlinePrediction" in prop["description"]
