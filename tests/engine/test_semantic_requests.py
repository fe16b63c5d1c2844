"""The semantic line request (SPEC §15) as the engine reads it and as the schema states it;
no model is needed to refuse a request."""

from __future__ import annotations

import math
from typing import Any

import jsonschema
import pytest

from citeline.engine.answer.lines import SEMANTIC_THRESHOLD, LinesRequest
from citeline.engine.base.errors import CitelineError
from citeline.engine.contracts import schema
from citeline.engine.semantic.semantic import DEFAULT_THRESHOLD


def refused(request: dict[str, Any]) -> CitelineError:
    with pytest.raises(CitelineError) as caught:
        LinesRequest.from_json(request)
    assert caught.value.code == "schema_validation"
    return caught.value


def schema_accepts(request: dict[str, Any]) -> bool:
    try:
        jsonschema.validate(request, schema("lines.request"))
    except jsonschema.ValidationError:
        return False
    return True


def test_a_semantic_request_and_its_defaults() -> None:
    req = LinesRequest.from_json({"mode": "semantic", "query": "stop a service"})
    assert req.semantic and req.pattern == "stop a service"
    assert (req.threshold, req.limit, req.context) == (DEFAULT_THRESHOLD, 100, 2)
    assert SEMANTIC_THRESHOLD == DEFAULT_THRESHOLD == 0.5  # the documented default
    assert schema("lines.request")["properties"]["threshold"]["default"] == DEFAULT_THRESHOLD
    assert not LinesRequest.from_json({"pattern": "x"}).semantic


@pytest.mark.parametrize(
    "request_",
    [
        {"mode": "semantic", "query": "q", "threshold": 0},
        {"mode": "semantic", "query": "q", "threshold": 1},
        {"mode": "semantic", "query": "q", "threshold": 0.75, "limit": 1000, "context": 0},
        {"mode": "semantic", "query": "x" * 512, "limit": 1, "context": 10},
        {"mode": "semantic", "query": "!!"},  # meaning, not words: no letter is needed
    ],
)
def test_the_bounds_are_accepted_by_the_engine_and_the_schema(request_: dict[str, Any]) -> None:
    req = LinesRequest.from_json(request_)
    assert req.threshold == request_.get("threshold", DEFAULT_THRESHOLD)
    assert schema_accepts(request_)


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({"mode": "semantic"}, "query"),
        ({"mode": "semantic", "query": ""}, "query"),
        ({"mode": "semantic", "query": "x" * 513}, "query"),
        ({"mode": "semantic", "query": 7}, "query"),
        ({"mode": "semantic", "query": "q", "pattern": "q"}, "pattern"),
        ({"mode": "semantic", "query": "q", "case_sensitive": False}, "case_sensitive"),
        ({"mode": "semantic", "query": "q", "threshold": -0.01}, "threshold"),
        ({"mode": "semantic", "query": "q", "threshold": 1.01}, "threshold"),
        ({"mode": "semantic", "query": "q", "threshold": True}, "threshold"),
        ({"mode": "semantic", "query": "q", "threshold": "0.5"}, "threshold"),
        ({"mode": "semantic", "query": "q", "limit": 0}, "limit"),
        ({"mode": "semantic", "query": "q", "limit": 1001}, "limit"),
        ({"mode": "semantic", "query": "q", "context": 11}, "context"),
        ({"pattern": "q", "threshold": 0.5}, "threshold"),
        ({"pattern": "q", "mode": "regex", "query": "q"}, "query"),
        ({"query": "q"}, "query"),
        ({"pattern": "q", "mode": "meaning"}, "mode"),
    ],
)
def test_out_of_bounds_requests_name_their_field(request_: dict[str, Any], field: str) -> None:
    err = refused(request_)
    assert err.details["field"] == field, err.message
    assert not schema_accepts(request_)  # the schema says the same


def test_a_nan_threshold_is_refused() -> None:
    # (not JSON, but a front in this process can pass one)
    assert refused({"mode": "semantic", "query": "q", "threshold": math.nan}).details["field"] == (
        "threshold"
    )
