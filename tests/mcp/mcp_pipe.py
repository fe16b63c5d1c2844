"""`citeline mcp <bundle>` as a real process driven over a raw pipe: lines in, answers out.

The raw pipe lets a test send what no SDK client would (a malformed line, an id that is an
object) and read the answer exactly as the server wrote it.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any


class Pipe:
    """`citeline mcp <bundle>` with raw lines in and the lines it answers out."""

    def __init__(self, bundle: Path, *options: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "citeline.cli.cli", "mcp", *options, str(bundle)],
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

    def initialize(self) -> None:
        self.send(
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
        assert "result" in self.answer(60)
        self.send({"method": "notifications/initialized"})

    def serves(self, msg_id: int) -> None:
        """A well-formed request is still answered, and it is the next answer."""
        self.send({"id": msg_id, "method": "tools/list"})
        answer = self.answer()
        assert answer["id"] == msg_id and "result" in answer, answer
        assert {t["name"] for t in answer["result"]["tools"]} >= {"search_sections"}

    def call(self, msg_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """tools/call's result (content and structuredContent), notifications skipped."""
        self.send(
            {"id": msg_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )
        while True:
            answer = self.answer(60)
            if "id" in answer:
                assert answer["id"] == msg_id and "result" in answer, answer
                result: dict[str, Any] = answer["result"]
                assert not result.get("isError"), result
                return result

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
