"""The JSON Schemas in engine/contracts are the wire contract: outputs obey them, and the
engine's request validation agrees with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from needs import corpus

from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.answer.requests import ConceptsRequest, SearchRequest
from citeline.engine.contracts import NAMES, schema, validate


def test_every_schema_is_a_valid_draft_2020_12_schema() -> None:
    for name in NAMES:
        jsonschema.Draft202012Validator.check_schema(schema(name))


def test_schemas_ship_as_package_data() -> None:
    import citeline.engine.contracts as contracts

    folder = Path(contracts.__file__).parent
    assert sorted(p.stem for p in folder.glob("*.json")) == sorted(NAMES)


def _bundle(tmp_path: Path) -> Path:
    files = {
        "a.md": "---\ntitle: Alpha & <beta>\n---\n# Straße\n\nstrasse ß İstanbul 限流\n",
        "dir with space/b#%.md": "# Heading\n\nhashtables and ordered hashtable\n",
    }
    for rel, body in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "request_",
    [
        {"query": "strasse"},
        {"query": "hashtable", "limit": 1},
        {"query": "hashtables ordered", "profile": "recall"},
        {"query": "限流", "cjk": "bigrams", "context": "outline"},
    ],
)
def test_real_search_results_obey_the_schema(tmp_path: Path, request_: dict[str, Any]) -> None:
    result = Engine().search(Call(_bundle(tmp_path), Settings()), request_)
    validate("search.request", request_)
    validate("search.result", result)
    assert result["hits"], "a schema check on an empty result proves little"


def test_real_concepts_and_errors_obey_the_schema(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    result = Engine().concepts(Call(bundle, Settings()), {"query": "a"})
    validate("concepts.result", result)
    assert result["concepts"]
    with pytest.raises(CitelineError) as caught:
        Engine().search(Call(bundle / "missing", Settings()), {"query": "x"})
    validate("error", caught.value.to_json())


def test_schema_rejects_what_the_contract_forbids(tmp_path: Path) -> None:
    result = Engine().search(Call(_bundle(tmp_path), Settings()), {"query": "strasse"})
    broken = {**result, "hits": [{**result["hits"][0], "line_start": 0}]}
    with pytest.raises(jsonschema.ValidationError):
        validate("search.result", broken)
    with pytest.raises(jsonschema.ValidationError):
        validate("search.result", {**result, "extra": 1})


VALID = [
    {"query": "a"},
    {"query": "x" * 512, "limit": 100},
    {"query": "q", "limit": 1, "match": "any", "context": "outline"},
    {"query": "q", "cjk": "bigrams", "stemming": "english", "profile": "recall"},
]
INVALID = [
    {},
    {"query": ""},
    {"query": "x" * 513},
    {"query": 5},
    {"query": "q", "limit": 0},
    {"query": "q", "limit": 101},
    {"query": "q", "limit": "3"},
    {"query": "q", "limit": 2.5},
    {"query": "q", "match": "some"},
    {"query": "q", "profile": "fast"},
    {"query": "q", "limt": 3},
    {"query": "q", "limit": None},
    {"query": "q", "match": None},
    ["q"],
]


@pytest.mark.parametrize("request_", VALID)
def test_engine_and_schema_accept_the_same_requests(request_: dict[str, Any]) -> None:
    validate("search.request", request_)
    SearchRequest.from_json(request_)


@pytest.mark.parametrize("request_", INVALID)
def test_engine_and_schema_reject_the_same_requests(request_: Any) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate("search.request", request_)
    with pytest.raises(CitelineError) as caught:
        SearchRequest.from_json(request_)
    assert caught.value.code == "schema_validation"


def test_rules_beyond_the_schema_are_the_engines() -> None:
    # A schema cannot say "at least one letter or number" or "no lone surrogates".
    for query in ("!!!", "\ud800x"):
        with pytest.raises(CitelineError) as caught:
            SearchRequest.from_json({"query": query})
        assert caught.value.code == "schema_validation"
    validate("concepts.request", {"query": "!!!"})
    assert ConceptsRequest.from_json({"query": "!!!"}).query == "!!!"


@pytest.mark.corpus
def test_corpus_results_obey_the_schema() -> None:
    bundle = corpus("apisix-zh")
    engine = Engine()
    for query in ("jwt", "upstream", "limit-count", "consumer"):
        result = engine.search(engine.call(bundle), {"query": query, "limit": 100})
        validate("search.result", result)
        assert result["hits"]
    recall = engine.search(engine.call(bundle), {"query": "如何配置限流", "profile": "recall"})
    validate("search.result", recall)
    assert recall["hits"]
