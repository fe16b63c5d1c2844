"""Driving every front (CLI in both output modes, LSP, MCP) over one bundle folder, for the
issue-14 tests: a CLI run in-process behind a stdout of a foreign encoding, a raw MCP client
(newline-delimited JSON-RPC over stdio), a fingerprint of a folder tree, and a start-up
script that injects a fault into the engine of a server subprocess."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import queue
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inprocess import inject_faults  # noqa: F401 - the harness's fault, in process

# Runs the CLI (and the servers it starts) with tests/faults.py's fault installed.
FAULTY = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
import faults
faults.install()

from citeline.cli.cli import main
sys.exit(main(sys.argv[1:]))
"""


def faulty_command(*args: str) -> list[str]:
    return [sys.executable, "-c", FAULTY, *args]


# -- CLI, in-process -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CliRun:
    code: int
    stdout: bytes
    stderr: bytes


def run_cli(argv: list[str], encoding: str = "ascii") -> CliRun:
    """`citeline argv` in this process, its stdout and stderr text streams of `encoding`
    (as a terminal or pipe of that locale would be); the bytes each received."""
    from citeline.cli.cli import main

    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding=encoding, errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding=encoding, errors="strict", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(argv)
    finally:
        sys.stdout, sys.stderr = saved
        with contextlib.suppress(ValueError):
            out.flush()
            err.flush()
    return CliRun(code, out_bytes.getvalue(), err_bytes.getvalue())


# -- MCP, raw --------------------------------------------------------------------------------


class RawMCP:
    """`citeline mcp <bundle>` as a subprocess, spoken to in newline-delimited JSON-RPC."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: list[bytes] = []
        self._ids = iter(range(1, 10**9))
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        answer = self.call(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "citeline-tests", "version": "0"},
            },
            timeout=30,
        )
        assert "result" in answer, answer
        self.send({"method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                if line.strip():
                    self.inbox.put(json.loads(line))
        finally:
            self.inbox.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: Any, timeout: float = 30.0) -> dict[str, Any]:
        msg_id = next(self._ids)
        self.send({"id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                message = None
            if message is None:
                raise AssertionError(
                    f"no answer to {method} (server "
                    f"{'running' if self.proc.poll() is None else 'exited'}; stderr tail: "
                    f"{b''.join(self.stderr[-5:])!r})"
                )
            if message.get("id") == msg_id and "method" not in message:
                return message

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.call("tools/call", {"name": name, "arguments": arguments})
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def tool_text(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


# -- the bundle is never written ---------------------------------------------------------------


def fingerprint(root: bytes) -> dict[bytes, tuple[int, int, int, str]]:
    """Every entry under `root` (bytes paths: names need not be UTF-8): its mode, size,
    mtime and, for a regular file, the SHA-256 of its bytes."""
    out: dict[bytes, tuple[int, int, int, str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            digest = ""
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(path, root)] = (
                info.st_mode,
                info.st_size,
                info.st_mtime_ns,
                digest,
            )
    return out
