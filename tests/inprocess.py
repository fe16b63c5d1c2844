"""`citeline …` for the command-line tests: a real subprocess, or, under mutation testing,
the same call in this process.

Mutation testing (docs/testing.md) can only kill a mutant with a test that runs the mutated
code in its own process: a subprocess imports the unmutated package. So under mutmut (and
whenever CITELINE_TEST_IN_PROCESS=1) `run_cli` calls `citeline.cli.cli.main(argv)` here,
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rpc_frames import Messages

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
        [sys.executable, "-m", "citeline.cli.cli", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environ,
        timeout=timeout,
    )


def _call(
    argv: list[str], cwd: Path | None, changes: Mapping[str, str | None]
) -> subprocess.CompletedProcess[str]:
    from citeline.cli import cli
    from citeline.cli.daemon import environment, exit_code

    # Pipes, as a subprocess's are: not terminals, bytes decoded as the test decodes them.
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    streams = sys.stdout, sys.stderr
    here = os.getcwd()
    try:
        with environment(changes):
            if cwd is not None:
                os.chdir(cwd)
            sys.stdout, sys.stderr = out, err
            try:
                code = cli.main(argv)
            except SystemExit as exit_:  # --help, --version: argparse exits
                code = exit_code(exit_)
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
    from citeline.cli import cli
    from citeline.mcp_server.server import CitelineMCP

    args = cli.parser().parse_args(cli.bind_text_values(["mcp", *argv]))
    settings = cli.settings_from(args)
    return CitelineMCP(
        os.path.abspath(args.bundle),
        settings,
        cache=not args.no_cache,
        reread=args.reread,
        background=not args.no_background_embedding,
    )


class LspServer(Messages):
    """`citeline lsp` served in this process over a socket pair: what a subprocess on stdio
    is to the tests, for mutation testing. A fresh CitelineServer each time, with the
    features lsp/server.py registers on its module-level one (pygls binds each handler to
    the server it was registered on). Spoken to in raw JSON-RPC (the framing of
    tests/rpc_frames.py, as tests/hardening/rpc.RawServer does), or by a pytest-lsp client
    (`attach`). Its log records are kept in `log`."""

    def __init__(self, log_level: str = "DEBUG") -> None:
        import logging
        import queue
        import socket
        import threading

        from citeline.lsp import server as module

        self.server = module.CitelineServer()
        fm = module.server.protocol.fm
        for name, handler in fm.features.items():
            self.server.feature(name, fm.feature_options.get(name))(handler.func)
        for name, handler in fm.commands.items():
            self.server.command(name)(handler.func)

        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stash: dict[Any, dict[str, Any]] = {}
        self.seen: list[dict[str, Any]] = []  # notifications from the server, in order
        self._told = 0  # how many of them notifications() has returned
        self.log: list[str] = []
        self._ids = iter(range(1, 10**9))
        log = self.log

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                log.append(self.format(record))  # with the traceback, as on stderr

        self._handler = Keep()
        self._handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self._loggers = [logging.getLogger("citeline"), logging.getLogger("pygls")]
        self._levels = [lg.level for lg in self._loggers]
        for lg, level in zip(self._loggers, (log_level, "WARNING"), strict=True):
            lg.addHandler(self._handler)
            lg.setLevel(level)

        self.client_socket, server_socket = socket.socketpair()
        stdin, stdout = server_socket.makefile("rb"), server_socket.makefile("wb")

        def serve() -> None:
            try:
                self.server.start_io(stdin, stdout)
            finally:
                # the end of the process: its stdout closes, a blocked stdin read returns
                with contextlib.suppress(OSError):
                    server_socket.shutdown(socket.SHUT_RDWR)
                for stream in (stdout, stdin):
                    with contextlib.suppress(OSError, ValueError):
                        stream.close()
                server_socket.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        self._to_server: Any = None

    # -- the process's view -----------------------------------------------------------------

    def poll(self) -> int | None:
        """None while serving, then the exit code main() would give."""
        if self.thread.is_alive():
            return None
        return 1 if self.server.exit_requested and not self.server.protocol._shutdown else 0

    def wait(self, timeout: float) -> int | None:
        self.thread.join(timeout)
        return self.poll()

    def kill(self) -> None:
        import socket

        with contextlib.suppress(OSError):
            self.client_socket.shutdown(socket.SHUT_RDWR)  # end of input: serve() returns

    def close(self) -> None:
        self.kill()
        self.thread.join(10)
        self.client_socket.close()
        self.server.engine.close()
        for lg, level in zip(self._loggers, self._levels, strict=True):
            lg.removeHandler(self._handler)
            lg.setLevel(level)

    # -- what tests/hardening/rpc.RawServer's users read of the process ----------------------

    @property
    def proc(self) -> _Proc:
        return _Proc(self)

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def stderr(self) -> list[bytes]:
        return [f"{line}\n".encode() for line in self.log]

    def rss_kib(self) -> int:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    # -- a pytest-lsp client ----------------------------------------------------------------

    async def attach(self, client: Any) -> None:
        """Connect a pytest-lsp LanguageClient, as its start_io would to a subprocess."""
        import asyncio
        import logging

        from pygls.io_ import run_async

        reader, writer = await asyncio.open_connection(sock=self.client_socket)
        client.protocol.set_writer(writer)
        connection = asyncio.create_task(
            run_async(
                stop_event=client._stop_event,
                reader=reader,
                protocol=client.protocol,
                logger=logging.getLogger("pygls.client"),
                error_handler=client.report_server_error,
            )
        )
        client._async_tasks.append(connection)
        client._server = _Process(self)

    # -- raw JSON-RPC -------------------------------------------------------------------------

    def _raw(self) -> None:
        import json
        import threading

        from rpc_frames import read_frame

        if self._to_server is not None:
            return
        self._to_server = self.client_socket.makefile("wb")
        source = self.client_socket.makefile("rb")

        def read() -> None:
            try:
                while (body := read_frame(source)) is not None:
                    self.inbox.put(json.loads(body))
            except (OSError, ValueError):
                pass
            finally:
                self.inbox.put(None)

        threading.Thread(target=read, daemon=True).start()

    def write(self, data: bytes) -> None:
        self._raw()
        self._to_server.write(data)
        self._to_server.flush()

    def next_message(self, timeout: float = 10.0) -> dict[str, Any] | None:
        import queue

        self._raw()
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def _file(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # server → client request
            self.send({"id": message["id"], "result": None})
        elif "method" not in message:
            self.stash[message.get("id")] = message
        else:
            self.seen.append(message)

    def notifications(self, method: str, timeout: float) -> list[Any]:
        """The params of the `method` notifications not asked for yet, after waiting
        `timeout` seconds for more (other messages are kept for response())."""
        import time

        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self.next_message(left)
            if message is None:
                break
            self._file(message)
        fresh, self._told = self.seen[self._told :], len(self.seen)
        return [m.get("params") for m in fresh if m.get("method") == method]

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

    def initialize(self, folders: Path | Sequence[Path], **extra: Any) -> dict[str, Any]:
        from pygls.uris import from_fs_path

        if isinstance(folders, Path):
            folders = [folders]
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


class _Process:
    """An in-process LspServer as pytest-lsp sees its server: asyncio's Process."""

    def __init__(self, served: LspServer) -> None:
        self.served = served

    @property
    def returncode(self) -> int | None:
        return self.served.poll()

    def kill(self) -> None:
        self.served.kill()

    async def wait(self) -> int | None:
        import asyncio

        while self.served.thread.is_alive():
            await asyncio.sleep(0.01)
        return self.served.poll()


class _Proc:
    """An in-process LspServer as RawServer's users see its process (subprocess.Popen)."""

    def __init__(self, served: LspServer) -> None:
        self.served = served
        self.stdin = self  # closing stdin ends the input

    def close(self) -> None:
        self.served.kill()

    def poll(self) -> int | None:
        return self.served.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        return self.served.wait(timeout or 30)

    def kill(self) -> None:
        self.served.kill()


def inject_faults(monkeypatch: Any) -> None:
    """tests/faults.py's fault in this process (for a front served in process), undone with
    `monkeypatch`."""
    import faults

    faults.install(monkeypatch.setattr)
