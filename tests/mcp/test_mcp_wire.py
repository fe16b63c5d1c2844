"""Hostile JSON-RPC lines to `citeline mcp` over a raw pipe (issue 31 hole 4).

The SDK's stdio transport drops a line it cannot validate without a reply — not JSON, not a
JSON-RPC message, nested deeper than its parser reads (100,000 levels, or 300) — so the
client waits forever, and it reads a line of any length whole. Each such line now gets its
JSON-RPC 2.0 error (-32700 or -32600, with the id when it can be read), a line longer than
4 MiB is refused in bounded memory, and the server serves on.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle

pytest.importorskip("mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class Pipe:
    """`citeline mcp <bundle>` with raw lines in and the lines it answers out."""

    def __init__(self, bundle: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "citeline.lsp.cli", "mcp", str(bundle)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def answer(self, timeout: float = 30) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            state = self.proc.poll()
            raise AssertionError(
                f"no answer within {timeout} s (server {'running' if state is None else state};"
                f" stderr {self.stderr[-500:]!r})"
            ) from None

    def serves(self, msg_id: int) -> None:
        """A well-formed request is still answered, and it is the next answer."""
        self.send({"id": msg_id, "method": "tools/list"})
        answer = self.answer()
        assert answer["id"] == msg_id and "result" in answer, answer
        assert {t["name"] for t in answer["result"]["tools"]} >= {"search_sections"}

    def peak_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        raise AssertionError("no VmHWM")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipe]:
    bundle = write_bundle(tmp_path_factory.mktemp("wire") / "b", {"a.md": "# Alpha\n\nalpha\n"})
    server = Pipe(bundle)
    try:
        server.send(
            {
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert "result" in server.answer(60)
        server.send({"method": "notifications/initialized"})
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
