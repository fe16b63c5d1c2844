"""The engine's tables of shared facts (issue 29) agree with the contract: the table of error
codes (engine/errors.py) with SPEC §10 and the error schema."""

from __future__ import annotations

from typing import get_args

from citeline.engine.contracts import schema
from citeline.engine.errors import CODES, ERRORS, INTERNAL_EXIT, Code, reported


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
