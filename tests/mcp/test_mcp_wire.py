"""Hostile JSON-RPC lines to `citeline mcp` over a raw pipe (issue 31 hole 4).

The SDK's stdio transport drops a line it cannot validate without a reply — not JSON, not a
JSON-RPC message, nested deeper than its parser reads (100,000 levels, or 300) — so the
client waits forever, and it reads a line of any length whole. Each such line now gets its
JSON-RPC 2.0 error (-32700 or -32600, with the id when it can be read), a line longer than
4 MiB is refused in bounded memory, and the server serves on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle
from mcp_pipe import Pipe

pytest.importorskip("mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipe]:
    bundle = write_bundle(tmp_path_factory.mktemp("wire") / "b", {"a.md": "# Alpha\n\nalpha\n"})
    server = Pipe(bundle)
    try:
        server.initialize()
        yield server
    finally:
        server.close()


def nested(msg_id: int, depth: int) -> bytes:
    inner = b"[" * depth + b"]" * depth
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"x":%s}}\n' % (msg_id, inner)


CASES: list[tuple[bytes, Any, int]] = [
    (b"not json\n", None, PARSE_ERROR),
    (b'{"jsonrpc": "2.0", "id": 5, "method": \n', None, PARSE_ERROR),
    (b"[1, 2]\n", None, INVALID_REQUEST),
    (b"null\n", None, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 11}\n', 11, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 12, "method": 5}\n', 12, INVALID_REQUEST),
    (b'{"id": 13, "method": "tools/list"}\n', 13, INVALID_REQUEST),
    (nested(300, 300), 300, INVALID_REQUEST),  # JSON, deeper than the SDK's parser reads
    (nested(1000, 1_000), None, PARSE_ERROR),  # deeper than json reads: no id to give
    (nested(100000, 100_000), None, PARSE_ERROR),
]


@pytest.mark.parametrize(("line", "msg_id", "code"), CASES, ids=[repr(c[0][:30]) for c in CASES])
def test_every_bad_line_gets_its_error(pipe: Pipe, line: bytes, msg_id: Any, code: int) -> None:
    pipe.write(line)
    answer = pipe.answer()
    assert answer["jsonrpc"] == "2.0" and "result" not in answer
    assert answer["id"] == msg_id and answer["error"]["code"] == code, answer
    assert answer["error"]["message"]
    assert pipe.proc.poll() is None
    pipe.serves(7)


# An id that is neither a string nor an integer (MCP: "MUST be a string or integer", and
# never null): the SDK read such a request as a notification — the id ignored — and answered
# nothing, so the client waited forever (issue 49 finding 8). Each is -32600 with id null,
# since the id cannot be given back (JSON-RPC 2.0 §5).
MALFORMED_IDS = ["{}", '{"a": 1}', "[]", "[1]", "true", "false", "1.5", "1.0", "null"]


@pytest.mark.parametrize("raw_id", MALFORMED_IDS)
def test_a_malformed_id_is_an_invalid_request(pipe: Pipe, raw_id: str) -> None:
    for method in ("tools/list", "tools/call"):
        pipe.write(
            b'{"jsonrpc": "2.0", "id": %s, "method": "%s"}\n' % (raw_id.encode(), method.encode())
        )
        answer = pipe.answer(10)
        assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST, answer
        assert "id" in answer["error"]["message"]
        assert pipe.proc.poll() is None
        pipe.serves(14)


def test_a_notification_with_a_malformed_id_field_is_still_not_a_notification(pipe: Pipe) -> None:
    """A message with "id" is a request whatever the id holds: answered, not obeyed silently."""
    pipe.write(b'{"jsonrpc": "2.0", "id": {}, "method": "notifications/initialized"}\n')
    answer = pipe.answer(10)
    assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST, answer
    pipe.serves(15)


def test_nesting_the_sdk_reads_is_served(pipe: Pipe) -> None:
    pipe.write(nested(150, 150))
    answer = pipe.answer()
    assert answer["id"] == 150 and "result" in answer, answer


def test_bad_notifications_and_responses_are_not_answered(pipe: Pipe) -> None:
    deep = b"[" * 300 + b"]" * 300
    pipe.write(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"x": %s}}\n' % deep)
    pipe.write(b'{"jsonrpc": "2.0", "method": 5}\n')
    pipe.write(b'{"jsonrpc": "2.0", "id": 99, "result": {"x": %s}}\n' % deep)
    pipe.write(b"\n  \n")  # blank lines between messages
    pipe.serves(8)  # the next answer is that one's: none of the above was answered


def test_an_overlong_line_is_refused_in_bounded_memory(pipe: Pipe) -> None:
    pipe.serves(9)
    before = pipe.peak_kib()
    filler = b"y" * (64 << 20)  # 64 MiB inside a JSON string: valid, but no MCP message
    pipe.write(b'{"jsonrpc": "2.0", "id": 64, "method": "tools/list", "params": {"x": "')
    pipe.write(filler + b'"}}\n')
    answer = pipe.answer(60)
    assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST, answer
    assert "at most 4194304 bytes" in answer["error"]["message"]
    grown = pipe.peak_kib() - before
    print(f"\npeak memory after a 64 MiB line: +{grown / 1024:.1f} MiB")
    assert grown < 32 * 1024, f"+{grown} KiB"
    pipe.serves(10)


def test_end_of_input_still_ends_the_server(tmp_path: Path) -> None:
    server = Pipe(write_bundle(tmp_path / "b", {"a.md": "# A\n"}))
    try:
        server.write(b"not json\n")
        assert server.answer()["error"]["code"] == PARSE_ERROR
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.proc.wait(30) == 0
    finally:
        server.close()
