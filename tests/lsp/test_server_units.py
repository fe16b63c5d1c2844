"""lsp/server.py in process, piece by piece: the error mapping of SPEC §10, the checks of a
raw message before pygls sees it, and the helpers they use. The server as a whole is
tested over stdio (test_lsp_*.py, tests/hardening); mutation testing (docs/testing.md) can
only see code run in the test's own process, hence these."""

from __future__ import annotations

import os

import pytest
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

from citeline.engine import CitelineError
from citeline.lsp import server as srv


@pytest.mark.parametrize(
    ("code", "rpc", "number"),
    [
        ("schema_validation", JsonRpcInvalidParams, -32602),
        ("cancelled", JsonRpcRequestCancelled, -32800),
        ("resource_limit", srv.JsonRpcRequestFailed, -32803),
        ("parse_error", srv.JsonRpcRequestFailed, -32803),
        ("bundle_not_found", srv.JsonRpcRequestFailed, -32803),
    ],
)
def test_engine_errors_map_to_json_rpc_codes(code: str, rpc: type, number: int) -> None:
    err = CitelineError(code, "What went wrong.", {"field": "query"})
    mapped = srv.rpc_error(err)
    assert type(mapped) is rpc
    response = mapped.to_response_error()
    assert response.code == number
    assert response.message == "What went wrong."
    assert response.data == err.to_json()["error"]  # the envelope's error object


def test_json_type_names() -> None:
    names = [srv.json_type(v) for v in (None, True, 0, 1.5, "s", [], {})]
    assert names == [
        "null",
        "a boolean",
        "a number",
        "a number",
        "a string",
        "an array",
        "an object",
    ]


def test_process_alive() -> None:
    assert srv.process_alive(os.getpid())
    assert not srv.process_alive(2**22 + 12345)  # above any pid_max: never a process
    assert not srv.process_alive(2**70)  # too big for a pid_t
