"""The engine driven by one call value (engine/call.py, issue 29): a Call and a typed request
give what the keyword form of the same call gives, and the two forms are not mixed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from citeline.engine import Call, Engine, Settings, SymbolsRequest
from citeline.engine.answer.lines import LinesRequest
from citeline.engine.answer.present import encode
from citeline.engine.answer.requests import ConceptsRequest, Relevance, SearchRequest
from citeline.engine.operations import OPERATIONS

FILES = {
    "a.md": "---\ntitle: Alpha guide\n---\n# Alpha\nalpha beta\n\n## Gamma\ngamma alpha\n",
    "b.md": "# Beta\nbeta gamma\n",
    "index.md": "# Index\nalpha\n",
}


def test_a_call_and_its_keyword_form_answer_the_same(make_bundle: Callable[..., Path]) -> None:
    bundle = make_bundle(FILES)
    settings = Settings(reserved=())  # not the engine's own: the Call's settings are used
    engine = Engine()
    call = Call(bundle, settings)
    search = {"query": "alpha", "profile": "recall"}
    assert encode(engine.search(call, SearchRequest.from_json(search))) == encode(
        engine.search(bundle, search, settings=settings)
    )
    assert "index.md" in {h["path"] for h in engine.search(call, SearchRequest("alpha"))["hits"]}
    assert engine.concepts(call, ConceptsRequest("a")) == engine.concepts(
        bundle, {"query": "a"}, settings=settings
    )
    assert engine.lines(call, LinesRequest("gamma")) == engine.lines(
        bundle, {"pattern": "gamma"}, settings=settings
    )
    recall = Relevance.from_mapping({"profile": "recall"})
    assert engine.symbols(call, SymbolsRequest("alp", 5, 10, recall)) == engine.symbols(
        bundle, "alp", cap=5, list_cap=10, relevance={"profile": "recall"}, settings=settings
    )
    sections = engine.prepare(call).n  # index.md searched: the Call's settings
    assert sections == engine.prepare(bundle, settings=settings).n > engine.prepare(bundle).n
    # each operation of the table runs the engine's method with its request read from JSON
    for name, request in (("search", search), ("concepts", {"query": "a"})):
        assert OPERATIONS[name].run(engine, call, request) == getattr(engine, name)(
            bundle, request, settings=settings
        )


def test_a_call_is_not_mixed_with_keywords(make_bundle: Callable[..., Path]) -> None:
    bundle = make_bundle(FILES)
    engine = Engine()
    with pytest.raises(TypeError, match="settings belong in it"):
        engine.search(Call(bundle, Settings()), {"query": "alpha"}, settings=Settings())
    assert engine.call(bundle, fresh_after=1.0) == Call(bundle, engine.settings, fresh_after=1.0)
