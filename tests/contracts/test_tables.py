"""The engine's tables of shared facts (issue 29) agree with the contract: each relevance
option's declaration (engine/base/relevance.py) with the JSON Schemas of engine/contracts, and the
table of error codes (engine/base/errors.py) with SPEC §10 and the error schema."""

from __future__ import annotations

from dataclasses import fields
from typing import get_args

import pytest

from citeline.engine.answer.requests import Relevance, SearchRequest
from citeline.engine.base.errors import CODES, ERRORS, INTERNAL_EXIT, Code, reported
from citeline.engine.base.relevance import BY_KEY, KEYS, OPTIONS, RECALL, profile_first
from citeline.engine.contracts import schema


def test_each_relevance_option_is_the_search_schemas() -> None:
    properties = schema("search.request")["properties"]
    assert set(properties) == {"query", "limit", *KEYS, "strict"}
    # `strict` (okf's contract exactly) is a field of every request, echoed by every result
    for name in ("search", "concepts", "lines"):
        assert schema(f"{name}.request")["properties"]["strict"]["type"] == "boolean"
    for name in ("search", "concepts", "lines", "lines.semantic"):
        assert schema(f"{name}.result")["properties"]["strict"] == {
            "const": True,
            "description": "Present when the request asked for strict.",
        }
    for option in OPTIONS:
        declared = properties[option.key]
        assert declared["enum"] == list(option.values), option.key
        assert declared["default"] == option.default, option.key
    # only section search takes them (a line search's `context` is a number of lines)
    assert not set(schema("concepts.request")["properties"]) & set(KEYS)
    lines = schema("lines.request")["properties"]
    assert set(lines) & set(KEYS) == {"context"} and lines["context"]["type"] == "integer"


def test_the_search_result_echoes_the_options_the_schema_lists() -> None:
    echoed = schema("search.result")["properties"]["options"]
    # and, under profile hybrid, the semantic model's id (SPEC §15): not an option
    assert list(echoed["properties"]) == [*(o.key for o in profile_first()), "model"]
    assert set(echoed["required"]) == set(KEYS)
    for option in OPTIONS:
        assert echoed["properties"][option.key]["enum"] == list(option.values), option.key


def test_the_request_values_are_the_declarations() -> None:
    assert [f.name for f in fields(Relevance)] == list(KEYS)
    assert Relevance() == Relevance(**{o.key: o.default for o in OPTIONS})
    assert list(Relevance().to_json()) == [o.key for o in profile_first()]
    recall = Relevance.from_mapping({"profile": "recall"})
    assert {k: getattr(recall, k) for k in RECALL} == RECALL
    assert set(RECALL) == set(KEYS) - {"profile"}  # the profile sets every other option
    hybrid = Relevance.from_mapping({"profile": "hybrid"})  # recall's analysis, then fused
    assert {k: getattr(hybrid, k) for k in RECALL} == RECALL and hybrid.hybrid
    assert not recall.hybrid
    assert ("query", "limit", *KEYS, "strict") == SearchRequest.FIELDS
    # a value outside the declaration is refused, naming the declared ones
    for option in OPTIONS:
        with pytest.raises(Exception, match=", ".join(option.values)):
            Relevance.from_mapping({option.key: "neither"})


def test_the_flags_are_distinct_and_context_is_spelled_scope() -> None:
    flags = [o.flag for o in OPTIONS]
    assert len(set(flags)) == len(flags)
    assert all(f == f"--{o.key}" for o, f in zip(OPTIONS, flags, strict=True) if o.key != "context")
    assert BY_KEY["context"].flag == "--scope"  # -C/--context means lines of context


def test_the_error_table_is_spec_10s() -> None:
    assert get_args(Code) == CODES
    assert schema("error")["properties"]["error"]["properties"]["code"]["enum"] == list(CODES)
    # SPEC §10: exit codes, and JSON-RPC codes
    assert {c: ERRORS[c].exit for c in CODES} == {
        "schema_validation": 2,
        "resource_limit": 3,
        "bundle_not_found": 4,
        "bundle_invalid": 4,
        "parse_error": 5,
        "cancelled": 130,
    }
    assert {c: ERRORS[c].rpc for c in CODES} == {
        "schema_validation": -32602,
        "resource_limit": -32803,
        "bundle_not_found": -32803,
        "bundle_invalid": -32803,
        "parse_error": -32803,
        "cancelled": -32800,
    }
    assert reported("internal_error").exit == INTERNAL_EXIT == 70
    assert reported("internal_error").rpc == -32603


def test_each_operation_is_a_contract() -> None:
    from citeline.engine import CitelineError
    from citeline.engine.contracts import NAMES
    from citeline.engine.operations import OPERATIONS

    assert sorted(OPERATIONS) == sorted(n.split(".")[0] for n in NAMES if n.endswith(".request"))
    for name, operation in OPERATIONS.items():
        assert operation.name == name
        assert {f"{name}.request", f"{name}.result"} <= set(NAMES)
        with pytest.raises(CitelineError) as err:  # its request is read as its schema says
            operation.parse({"bogus": 1})
        assert err.value.code == "schema_validation"
    assert [n for n, op in OPERATIONS.items() if op.unsaved] == ["search", "lines", "verify"]


def test_every_front_offers_each_operation_once() -> None:
    """The language server's commands, the command line's subcommands, the MCP tools and
    the renderer's summaries are the operations of one table, each exactly once."""
    import argparse

    from citeline.cli import cli, render
    from citeline.engine.operations import OPERATIONS
    from citeline.lsp import rpc
    from citeline.mcp_server.tools import TOOLS

    names = list(OPERATIONS)
    assert tuple(f"citeline.{n}" for n in names) == rpc.COMMANDS
    assert sorted(t.contract for t in TOOLS) == sorted(names)
    assert sorted(render.SUMMARIES) == sorted(names)
    (sub,) = [a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(names) <= set(sub.choices)
