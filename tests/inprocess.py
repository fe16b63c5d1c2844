"""`citeline …` for the command-line tests: a real subprocess, or, under mutation testing,
the same call in this process.

Mutation testing (docs/testing.md) can only kill a mutant with a test that runs the mutated
code in its own process: a subprocess imports the unmutated package. So under mutmut (and
whenever CITELINE_TEST_IN_PROCESS=1) `run_cli` calls `citeline.lsp.cli.main(argv)` here,
with the working directory, the environment and the standard streams a subprocess would
have had, and returns what a subprocess would have: exit code, stdout, stderr. The tests
assert the same things either way.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

IN_PROCESS = "CITELINE_TEST_IN_PROCESS"
_SERVERS = ("lsp", "mcp")  # commands that serve stdio until it closes: always a subprocess


def in_process() -> bool:
    return os.environ.get(IN_PROCESS) == "1"


def run_cli(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`citeline *args`; `env` changes the inherited environment (None: unset the name)."""
    argv = [os.fspath(a) for a in args]
    changes = dict(env or {})
    if in_process() and not (argv and argv[0] in _SERVERS):
        return _call(argv, cwd, changes)
    environ = {**os.environ, **{k: v for k, v in changes.items() if v is not None}}
    for name in [k for k, v in changes.items() if v is None]:
        environ.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "citeline.lsp.cli", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environ,
        timeout=timeout,
    )


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _call(
    argv: list[str], cwd: Path | None, changes: Mapping[str, str | None]
) -> subprocess.CompletedProcess[str]:
    from citeline.lsp import cli

    # Pipes, as a subprocess's are: not terminals, bytes decoded as the test decodes them.
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    streams = sys.stdout, sys.stderr
    here = os.getcwd()
    try:
        with _environment(changes):
            if cwd is not None:
                os.chdir(cwd)
            sys.stdout, sys.stderr = out, err
            try:
                code = cli.main(argv)
            except SystemExit as exit_:  # --help, --version: argparse exits
                code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    finally:
        sys.stdout, sys.stderr = streams
        os.chdir(here)
    texts = []
    for stream in (out, err):
        stream.flush()
        raw: bytes = stream.buffer.getvalue()  # type: ignore[attr-defined]
        # subprocess.run(text=True) reads with universal newlines: the same here
        text = raw.decode("utf-8", "replace")
        texts.append(text.replace("\r\n", "\n").replace("\r", "\n"))
    return subprocess.CompletedProcess(["citeline", *argv], code, texts[0], texts[1])


def mcp_front(argv: Sequence[str]) -> Any:
    """The MCP server `citeline mcp *argv` would serve, built in this process as
    cli.serve_mcp and mcp.main build it (stdio aside)."""
    from citeline.lsp import cli
    from citeline.lsp.mcp import CitelineMCP

    args = cli.parser().parse_args(cli.bind_text_values(["mcp", *argv]))
    settings = cli.settings_from(args)
    return CitelineMCP(
        os.path.abspath(args.bundle), settings, cache=not args.no_cache, reread=args.reread
    )


class LspServer:
    """`citeline lsp` served in this process, over pipes, to a raw JSON-RPC client (the
    framing of tests/rpc_frames.py): what tests/hardening/rpc.RawServer does with a
    subprocess. A fresh CitelineServer each time, with the features lsp/server.py registers
    on its module-level one (pygls binds each handler to the server it was registered on)."""

    def __init__(self, log_level: str = "DEBUG") -> None:
        import json
        import logging
        import queue
        import threading

        from rpc_frames import read_frame

        from citeline.lsp import server as module

        self.json = json
        self.server = module.CitelineServer()
        fm = module.server.protocol.fm
        for name, handler in fm.features.items():
            self.server.feature(name, fm.feature_options.get(name))(handler.func)
        for name, handler in fm.commands.items():
            self.server.command(name)(handler.func)
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        self._to_server = os.fdopen(w_in, "wb")
        stdin, stdout, source = (
            os.fdopen(r_in, "rb"),
            os.fdopen(w_out, "wb"),
            os.fdopen(r_out, "rb"),
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stash: dict[Any, dict[str, Any]] = {}
        self.log: list[str] = []
        self.seen: list[dict[str, Any]] = []  # notifications from the server
        self._ids = iter(range(1, 10**9))

        log = self.log

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                log.append(f"{record.levelname} {record.name}: {record.getMessage()}")

        self._handler = Keep()
        self._loggers = [logging.getLogger("citeline"), logging.getLogger("pygls")]
        self._levels = [lg.level for lg in self._loggers]
        for lg, level in zip(self._loggers, (log_level, "WARNING"), strict=True):
            lg.addHandler(self._handler)
            lg.setLevel(level)

        def serve() -> None:
            try:
                self.server.start_io(stdin, stdout)
            finally:
                with contextlib.suppress(OSError, ValueError):
                    stdout.close()

        def read() -> None:
            try:
                while (body := read_frame(source)) is not None:
                    self.inbox.put(json.loads(body))
            except (OSError, ValueError):
                pass
            finally:
                self.inbox.put(None)

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        threading.Thread(target=read, daemon=True).start()

    # -- the process's view -----------------------------------------------------------------

    def poll(self) -> int | None:
        """None while serving, then the exit code main() would give."""
        if self.thread.is_alive():
            return None
        return 1 if self.server.exit_requested and not self.server.protocol._shutdown else 0

    def wait(self, timeout: float) -> int | None:
        self.thread.join(timeout)
        return self.poll()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._to_server.close()  # end of input: serve() returns
        self.thread.join(10)
        self.server.engine.close()
        for lg, level in zip(self._loggers, self._levels, strict=True):
            lg.removeHandler(self._handler)
            lg.setLevel(level)

    # -- messages -------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self._to_server.write(data)
        self._to_server.flush()

    def send(self, message: dict[str, Any]) -> None:
        from rpc_frames import frame

        self.write(frame(self.json.dumps({"jsonrpc": "2.0", **message}).encode()))

    def request(self, method: str, params: Any = None) -> int:
        msg_id = next(self._ids)
        self.send(
            {"id": msg_id, "method": method, **({} if params is None else {"params": params})}
        )
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, **({} if params is None else {"params": params})})

    def next_message(self, timeout: float = 10.0) -> dict[str, Any] | None:
        import queue

        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def notifications(self, method: str, timeout: float) -> list[dict[str, Any]]:
        """The `method` notifications (params) that arrive within `timeout` seconds; other
        messages are kept for response() or answered (server requests: null)."""
        import time

        found = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self.next_message(left)
            if message is None:
                break
            self._file(message)
            if message.get("method") == method and "id" not in message:
                found.append(message.get("params"))
        return found

    def _file(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # server → client request
            self.send({"id": message["id"], "result": None})
        elif "method" not in message:
            self.stash[message.get("id")] = message
        else:
            self.seen.append(message)

    def response(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        import time

        deadline = time.monotonic() + timeout
        while msg_id not in self.stash:
            message = self.next_message(max(deadline - time.monotonic(), 0.01))
            if message is None:
                raise AssertionError(f"no response to {msg_id!r} within {timeout} s")
            self._file(message)
        return self.stash.pop(msg_id)

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def initialize(self, folders: Sequence[Path], **extra: Any) -> dict[str, Any]:
        from pygls.uris import from_fs_path

        uris = [from_fs_path(str(f)) for f in folders]
        params = {
            "processId": os.getpid(),
            "rootUri": uris[0] if uris else None,
            "workspaceFolders": [
                {"uri": u, "name": f.name} for u, f in zip(uris, folders, strict=True)
            ],
            "capabilities": {},
            **extra,
        }
        answer = self.call("initialize", params)
        assert "result" in answer, answer
        self.notify("initialized", {})
        return answer
