"""A tiny raw JSON-RPC client for `citeline lsp` over stdio: our own framing, so tests can send
malformed bytes and read exactly what the server answers."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inprocess import LspServer, in_process
from pygls.uris import from_fs_path
from rpc_frames import Messages, read_frame

SERVER = [sys.executable, "-m", "citeline.cli.cli", "lsp"]


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


class RawServer(Messages):
    """`citeline lsp` as a subprocess; messages read by a background thread into a queue.
    Under mutation testing (tests/inprocess.py) it is served in the test's own process."""

    def __new__(cls, cwd: Path | None = None, env: dict[str, str] | None = None) -> Any:
        if in_process():
            level = (env or {}).get("CITELINE_LOG", "WARNING")
            return LspServer(log_level=level.upper())
        return super().__new__(cls)

    def __init__(self, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=None if env is None else {**os.environ, **env},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: list[bytes] = []
        self.stash: dict[Any, dict[str, Any]] = {}  # responses that arrived before asked for
        self._ids = iter(range(1, 10**9))
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while (body := read_frame(out)) is not None:
                self.inbox.put(json.loads(body))
        finally:
            self.inbox.put(None)

    # -- sending -------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    # -- receiving -----------------------------------------------------------------------------

    def next_message(self, timeout: float = 10.0) -> dict[str, Any] | None:
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def response(self, msg_id: Any, timeout: float = 15.0) -> dict[str, Any]:
        """The response to `msg_id`; requests from the server are answered with null."""
        deadline = time.monotonic() + timeout
        while msg_id not in self.stash:
            left = deadline - time.monotonic()
            message = self.next_message(max(left, 0.01))
            if message is None:
                state = self.proc.poll()
                raise AssertionError(
                    f"no response to {msg_id!r} within {timeout} s (server "
                    f"{'running' if state is None else f'exited {state}'}; "
                    f"stderr tail: {b''.join(self.stderr[-5:])!r})"
                )
            if "method" in message and "id" in message:  # server → client request
                self.send({"id": message["id"], "result": None})
            elif "method" not in message:
                self.stash[message.get("id")] = message
        return self.stash.pop(msg_id)

    def call(self, method: str, params: Any = None, timeout: float = 15.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def initialize(self, folder: Path, **extra: Any) -> dict[str, Any]:
        params = {
            "processId": os.getpid(),
            "rootUri": uri_of(folder),
            "workspaceFolders": [{"uri": uri_of(folder), "name": folder.name}],
            "capabilities": {},
            **extra,
        }
        answer = self.call("initialize", params, timeout=30)
        assert "result" in answer, answer
        self.notify("initialized", {})
        return answer

    def rss_kib(self) -> int:
        with open(f"/proc/{self.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def workspace(root: Path, files: int = 120) -> Path:
    """`files` distinct Markdown files of six sections of random words, and an index.md."""
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "hashtable", "bucket", "probing", "tree"]
    words += ["zebra", "quokka", "网关", "été"]
    for i in range(files):
        sections = []
        for j in range(6):
            body = " ".join(rng.choice(words) for _ in range(60))
            sections.append(f"## Part {j} {rng.choice(words)}\n\n{body}\n")
        text = f"---\ntitle: Doc {i}\n---\n# Doc {i}\n\n" + "\n".join(sections)
        target = root / f"d{i % 7}" / f"doc{i:03}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / "index.md").write_text("# Index\n", encoding="utf-8")
    return root


def engine_job_log(srv: RawServer) -> list[tuple[str, str, float, int]]:
    """(title, how it ended, seconds, files the engine had analysed by then) of each engine
    job, in the order they ended, from the server's DEBUG log (start it with
    CITELINE_LOG=DEBUG)."""
    found = []
    for raw in list(srv.stderr):
        line = raw.decode("utf-8", "replace")
        m = re.search(
            r"engine job (.+) (finished|stopped \(cancelled\)|failed.*) after ([0-9.]+)s"
            r" \(files analysed so far: ([0-9]+)\)",
            line,
        )
        if m:
            found.append((m.group(1), m.group(2), float(m.group(3)), int(m.group(4))))
    return found


JobLog = list[tuple[str, str, float, int]]


def logged_jobs(srv: RawServer, done: Callable[[JobLog], bool], timeout: float = 30.0) -> JobLog:
    """engine_job_log once `done(log)` holds, or at the deadline. The log comes on stderr,
    which another thread reads than the one reading the answers, so a job's line can arrive
    after its answer (CI once saw a finished job missing from the log just read)."""
    deadline = time.monotonic() + timeout
    while True:
        found = engine_job_log(srv)
        if done(found) or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)


def engine_jobs(srv: RawServer, title: str, at_least: int = 0, timeout: float = 30.0) -> list[str]:
    """How each engine job named `title` ended, once at least `at_least` of them have."""
    found = logged_jobs(
        srv, lambda log: sum(entry[0] == title for entry in log) >= at_least, timeout
    )
    return [how for name, how, _, _ in found if name == title]
