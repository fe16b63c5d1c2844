"""The engine driven by one call value (engine/call.py; issues 29 and 50): a Call and a typed
request give what the same Call and the request's JSON give, `Engine.call` makes the Call of a
bundle, and the Call is the one form: no method takes the parts of a call as keywords."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

from citeline.engine import Call, CancelToken, Engine, Settings, SymbolsRequest
from citeline.engine import call as call_module
from citeline.engine.answer.lines import LinesRequest
from citeline.engine.answer.present import encode
from citeline.engine.answer.requests import ConceptsRequest, Relevance, SearchRequest
from citeline.engine.operations import OPERATIONS

FILES = {
    "a.md": "---\ntitle: Alpha guide\n---\n# Alpha\nalpha beta\n\n## Gamma\ngamma alpha\n",
    "b.md": "# Beta\nbeta gamma\n",
    "index.md": "# Index\nalpha\n",
}
# The methods that answer a call: each takes the Call first, and the Call only.
TAKE_A_CALL = ("search", "symbols", "concepts", "lines", "verify", "problems", "prepare", "capture")


def test_a_typed_request_and_its_json_answer_the_same(make_bundle: Callable[..., Path]) -> None:
    bundle = make_bundle(FILES)
    settings = Settings(reserved=())  # not the engine's own: the Call's settings are used
    engine = Engine()
    call = Call(bundle, settings)
    search = {"query": "alpha", "profile": "recall"}
    assert encode(engine.search(call, SearchRequest.from_json(search))) == encode(
        engine.search(call, search)
    )
    assert "index.md" in {h["path"] for h in engine.search(call, SearchRequest("alpha"))["hits"]}
    assert engine.concepts(call, ConceptsRequest("a")) == engine.concepts(call, {"query": "a"})
    assert engine.lines(call, LinesRequest("gamma")) == engine.lines(call, {"pattern": "gamma"})
    recall = Relevance.from_mapping({"profile": "recall"})
    assert engine.symbols(call, SymbolsRequest("alp", 5, 10, recall)) == engine.symbols(
        call, "alp", cap=5, list_cap=10, relevance={"profile": "recall"}
    )
    # index.md searched: the Call's settings, not the engine's
    assert engine.prepare(call).n > engine.prepare(engine.call(bundle)).n
    # each operation of the table runs the engine's method with its request read from JSON
    for name, request in (("search", search), ("concepts", {"query": "a"})):
        assert OPERATIONS[name].run(engine, call, request) == getattr(engine, name)(call, request)


def test_engine_call_makes_a_call_with_the_engines_settings(
    make_bundle: Callable[..., Path],
) -> None:
    bundle = make_bundle(FILES)
    own, other = Settings(reserved=()), Settings()
    engine = Engine(own)
    assert engine.call(bundle) == Call(bundle, own)
    assert engine.call(bundle, fresh_after=1.0) == Call(bundle, own, fresh_after=1.0)
    token, overlay = CancelToken(), {"a.md": b"# A\n"}

    def progress(stage: str, done: int, total: int) -> None:
        pass

    made = engine.call(
        bundle, settings=other, cancel=token, progress=progress, overlay=overlay, fresh_after=2.0
    )
    assert made == Call(bundle, other, token, progress, overlay, 2.0)
    with pytest.raises(TypeError):
        engine.call(bundle, other)  # type: ignore[misc]  # the parts are keywords only


def test_the_call_is_the_one_form(make_bundle: Callable[..., Path]) -> None:
    """No public method of the Engine takes keywords it does not name (the keyword form of
    a call, `**keywords` made into a Call by `call_of`, is gone: issue 50)."""
    public = [n for n, _ in inspect.getmembers(Engine, inspect.isfunction) if n[0] != "_"]
    assert set(TAKE_A_CALL) | {"call"} <= set(public)
    for name in public:
        kinds = [p.kind for p in inspect.signature(getattr(Engine, name)).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD not in kinds, name
    for name in TAKE_A_CALL:
        _, first, *_ = inspect.signature(getattr(Engine, name)).parameters.values()
        assert (first.name, first.annotation) == ("call", "Call"), name
    assert not hasattr(call_module, "call_of") and not hasattr(call_module, "CallKeywords")
    bundle = make_bundle(FILES)
    with pytest.raises(TypeError):  # a Call's parts are not given beside it
        Engine().search(Call(bundle, Settings()), {"query": "alpha"}, settings=Settings())  # type: ignore[call-arg]
    with pytest.raises((AttributeError, TypeError)):  # nor is a bare bundle a call
        Engine().search(bundle, {"query": "alpha"})  # type: ignore[arg-type]
