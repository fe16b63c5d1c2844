"""`citeline lsp`: the language server (SPEC §11) — pygls 2 on stdio, one Engine for its life.

Every feature is a thin adapter: take the request apart, run the engine in a worker thread
(so the server keeps reading messages), map the result or the error back to LSP
(lsp/symbols.py converts). The pieces it is made of each live in a module of their own:

- lsp/rpc.py, the JSON-RPC edge: malformed messages answered as JSON-RPC 2.0 requires, the
  one mapping of errors (SPEC §10), the commands (one per operation of engine/operations.py)
  run as the request's own task so that ``$/cancelRequest`` reaches them;
- lsp/transport.py: reading frames from stdin, and the watch on the client process
  (initialize's processId) that ends the server when the client dies;
- lsp/places.py: the workspace folders, and how an editor's paths and documents meet them;
- lsp/jobs.py, the job pool: engine work in a private thread pool from ``async def``
  handlers (a cancelled handler sets the engine's CancelToken, checked between files and
  stages, and pygls answers -32800: nothing partial is ever sent), the warm-up's gate and
  work-done progress;
- here: the state (settings, the folders' places, diagnostics published) and the handlers
  that register lsp/features.py.

Logging goes to stderr; stdout is the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol.json_rpc import JsonRPCNotification
from pygls.uris import to_fs_path

from citeline.engine import CancelToken, CitelineError, Engine, Problem
from citeline.engine.base.limits import Settings
from citeline.fronts import names
from citeline.fronts.json_names import json_type

from . import features, transport
from .diagnostics import DIAGNOSTIC_DELAY, Diagnostics
from .jobs import PROGRESS_INTERVAL, Job, Jobs
from .places import MARKDOWN_SUFFIXES, Places
from .rpc import (
    COMMANDS,
    CitelineProtocol,
    JsonRpcRequestFailed,
    bug_error,
    guarded,
    rpc_error,
)
from .settings import ServerSettings, parse_settings, unwrap
from .stdio import FrameReader
from .transport import PARENT_POLL_INTERVAL, process_alive

log = logging.getLogger("citeline.lsp")

T = TypeVar("T")

VERSION = "0.1.0"


class CitelineServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("citeline", VERSION, protocol_cls=CitelineProtocol)
        self.options = ServerSettings()
        self.engine = Engine.long_lived(self.options.engine, cache=self.options.cache)
        self.jobs = Jobs(self, lambda: self.engine.reuse.files_analysed)
        self.diagnostics = Diagnostics(self)
        self.background: set[asyncio.Task[Any]] = set()
        self.exit_requested = False
        self.closing: asyncio.Event | None = None  # set to stop serving (client process gone)
        # the workspace folders, and how editor paths and open documents meet them
        self.places = Places(self, lambda folder: self.engine.reuse.known(folder))

    def engine_settings(self, folder: str, strict: bool = False) -> Settings:
        """The engine's settings for `folder`: the user's (or, for a request with `"strict":
        true`, okf's contract's), with `.gitignore` comparing names as the folder's volume does
        (fronts/names.py)."""
        return names.for_volume(self.options.engine_for(strict), folder)

    # -- running engine work -------------------------------------------------------------

    # The job pool's state, as the server's own (tests and main() read it so).
    @property
    def pool(self) -> ThreadPoolExecutor:
        return self.jobs.pool

    @property
    def tokens(self) -> set[CancelToken]:
        return self.jobs.tokens

    @property
    def warming(self) -> asyncio.Future[Any] | None:
        return self.jobs.warming

    @property
    def pending_check(self) -> dict[str, asyncio.TimerHandle]:
        return self.diagnostics.pending

    @property
    def published(self) -> dict[str, set[str]]:
        return self.diagnostics.published

    async def run_engine(
        self,
        job: Job[T],
        *,
        work_done_token: types.ProgressToken | None = None,
        title: str = "citeline",
        after_warm_up: bool = True,
    ) -> T:
        """Run `job` in the pool (lsp/jobs.py), after the warm-up unless told otherwise."""
        return await self.jobs.run(
            job, work_done_token=work_done_token, title=title, after_warm_up=after_warm_up
        )

    # -- serving -------------------------------------------------------------------------

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Like pygls' start_io, reading with citeline's FrameReader and handle_body.

        pygls' run_async cannot be used: it only accepts a header line that is exactly
        `Content-Length: N`, never resynchronises after a wrong length, and turns invalid
        JSON into a window/showMessage instead of an answer.
        """
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self.serve(FrameReader(stdin or sys.stdin.buffer)))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):  # SystemExit: pygls' `exit` handler
            pass
        finally:
            self.shutdown()

    async def serve(self, frames: FrameReader) -> None:
        """Read and dispatch messages until end of input, `exit`, or the client's death."""
        self.closing = asyncio.Event()
        protocol = self.protocol
        assert isinstance(protocol, CitelineProtocol)
        await transport.serve(protocol, frames, self.closing)

    def watch_parent(self, pid: int | None) -> None:
        """Stop serving when the client process dies (LSP: initialize's processId)."""
        transport.watch_parent(self, pid)

    def parent_gone(self, pid: int) -> None:
        log.warning("the client process %d is gone: exiting", pid)
        self.cancel_all()
        if self.closing is not None:
            self.closing.set()  # serve() returns and main() ends the process

    def shutdown(self) -> None:
        """Like pygls' shutdown, without waiting for the stdin reader thread (see main)."""
        self.cancel_all()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        self.pool.shutdown(wait=False, cancel_futures=True)

    def cancel_all(self) -> None:
        self.jobs.cancel_all()

    # -- features ------------------------------------------------------------------------

    async def run_command(self, params: types.ExecuteCommandParams) -> dict[str, Any]:
        """A command of the operations table (lsp/rpc.py dispatches here)."""
        return await features.execute_command(self, params)

    # -- diagnostics ---------------------------------------------------------------------

    def overlay(self, folder: str) -> dict[str, bytes] | None:
        """With the setting `unsaved`, the open documents' text to search instead of the
        disk's (SPEC §11 "Unsaved text")."""
        if not self.options.unsaved:
            return None
        texts = self.places.open_texts(folder)
        return {p: t.encode("utf-8", "surrogatepass") for p, t in texts.items()} or None

    def tell(self, folder: str, message: str | None, key: str | None = None) -> None:
        """Show `message` once per change of the folder's situation (None: all is well)."""
        self.diagnostics.tell(folder, message, key)

    def tell_failure(self, folder: str, exc: JsonRpcException) -> None:
        """A request failed on the workspace itself (a limit, a parse error): say so once."""
        message = self.diagnostics.failure_message(exc)
        if message is not None:
            self.tell(folder, message)

    def schedule_check(self, folder: str, delay: float = DIAGNOSTIC_DELAY) -> None:
        """Debounced re-check of one folder's diagnostics."""
        self.diagnostics.schedule(
            folder, delay, lambda: self.spawn(features.check_folder(self, folder))
        )

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def document_changed(self, uri: str, on_disk: bool = True) -> None:
        """A document changed: on disk (saved, closed, watched-file event), it is read again
        at the next capture whatever its stat; its folder's diagnostics are re-checked."""
        path = to_fs_path(uri)
        if not path:
            return
        folder = self.places.folder_of(path)
        if folder is None:
            return
        if on_disk:
            rel = self.places.relative(folder, path)
            if rel is not None:
                self.engine.changed(folder, [rel])
        if path.lower().endswith(MARKDOWN_SUFFIXES) or not on_disk:
            self.schedule_check(folder)

    # -- settings and warm-up ------------------------------------------------------------

    def apply_settings(self, raw: Any) -> bool:
        try:
            new = parse_settings(raw)
        except CitelineError as err:
            log.warning("invalid settings: %s", err.message)
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error,
                    message=f"citeline: {err.message} The previous settings stay in effect.",
                )
            )
            return False
        self.options = new
        self.engine.use_cache(new.cache)
        self.engine.reread = new.reread
        self.engine.embed_in_background = new.background_embedding
        self.engine.use_embedding(new.embedding)  # (the same model: nothing changes)
        if not new.background_embedding:
            self.engine.stop_background()  # the worker, if one runs (after its passage)
        return True

    def client_has_progress(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def start_warm_up(self, folders: list[str] | None = None) -> None:
        """Capture and index the folders (all by default) so that the first requests are
        fast: at start, when folders are added, when settings change what is indexed.

        The gate that requests wait on is set here, synchronously: a client sends its first
        requests right after `initialized`, and they must find the warm-up already begun
        rather than start the same analysis beside it.
        """
        previous, gate = self.jobs.gate()
        self.spawn(features.warm_up(self, folders, previous, gate))


server = CitelineServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: CitelineServer, params: types.InitializeParams) -> None:
    for uri in [params.root_uri, *(f.uri for f in params.workspace_folders or ())]:
        path = to_fs_path(uri) if uri else None
        if uri and not (path and os.path.isabs(path)):
            log.warning("ignoring workspace folder %r: not the URI of an absolute path", uri)
    ls.apply_settings(params.initialization_options)
    ls.watch_parent(params.process_id)


@server.feature(types.INITIALIZED)
def on_initialized(ls: CitelineServer, params: types.InitializedParams) -> None:
    ls.start_warm_up()


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: CitelineServer, params: None) -> None:
    ls.cancel_all()
    ls.engine.stop_background()  # the embedding worker, if a semantic request started one


@server.feature(types.EXIT)
def on_exit(ls: CitelineServer, params: None) -> None:
    ls.exit_requested = True
    ls.cancel_all()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_configuration(ls: CitelineServer, params: types.DidChangeConfigurationParams) -> None:
    if not unwrap(params.settings):
        # eglot (and other clients with nothing configured) send `{}` right after
        # connecting; that must not wipe what initializationOptions set.
        log.info("empty configuration change: settings unchanged")
        return
    before = ls.options
    if ls.apply_settings(params.settings):
        after = ls.options
        if (before.engine, before.relevance_options.analysis) != (
            after.engine,
            after.relevance_options.analysis,
        ):
            ls.start_warm_up()  # indexes of the new settings; it checks every folder too
        else:
            for _, folder in ls.places.folders():
                ls.schedule_check(folder, 0)


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def on_workspace_folders(ls: CitelineServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    # pygls has already added and removed the folders; warm the new ones up.
    added = [path for f in params.event.added or () if (path := to_fs_path(f.uri))]
    if added:
        ls.start_warm_up(added)


@server.feature(types.WORKSPACE_SYMBOL)
async def on_workspace_symbol(
    ls: CitelineServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation]:
    return await guarded(features.workspace_symbols)(ls, params)


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def on_document_symbol(
    ls: CitelineServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol]:
    return await guarded(features.document_symbols)(ls, params)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_did_open(ls: CitelineServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.document_changed(params.text_document.uri, on_disk=False)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_did_change(ls: CitelineServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.document_changed(params.text_document.uri, on_disk=False)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_did_save(ls: CitelineServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.document_changed(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_did_close(ls: CitelineServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.document_changed(params.text_document.uri)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def on_watched_files(ls: CitelineServer, params: types.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        ls.document_changed(change.uri)


def _register_commands() -> None:
    """Advertise the commands of the operations table; CitelineProtocol runs them (see its
    execute_command)."""

    for name in COMMANDS:

        async def placeholder(ls: CitelineServer, *args: Any) -> None:  # never called
            raise JsonRpcInvalidParams("unreachable")

        server.command(name)(placeholder)


_register_commands()


class _QuietRequestErrors(logging.Filter):
    """pygls logs a traceback for every error response; ours are answers, not crashes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, JsonRpcException) and exc.data is not None)


def main() -> int:
    """Serve on stdio until `exit` or the end of stdin, then leave at once.

    stdin is read in a thread that stays blocked in read(); a normal interpreter exit
    would wait for it (and for any engine thread), so the process ends with os._exit after
    cancelling the engine's work and flushing its output.
    """
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="citeline-lsp %(levelname)s %(name)s: %(message)s",
    )
    level = os.environ.get("CITELINE_LOG", "WARNING").upper()
    for name in ("citeline", "pygls"):
        logging.getLogger(name).setLevel(level)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietRequestErrors())
    code = 0
    try:
        server.start_io()
        code = 1 if server.exit_requested and not server.protocol._shutdown else 0
    finally:
        server.cancel_all()
        server.pool.shutdown(wait=False, cancel_futures=True)
        server.engine.close()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        logging.shutdown()
        os._exit(code)


# What tests, scripts and editors' glue import from here, wherever it is defined now.
__all__ = [
    "COMMANDS",
    "PARENT_POLL_INTERVAL",
    "PROGRESS_INTERVAL",
    "VERSION",
    "CancelToken",
    "CitelineError",
    "CitelineProtocol",
    "CitelineServer",
    "JsonRPCNotification",
    "JsonRpcInvalidParams",
    "JsonRpcInvalidRequest",
    "JsonRpcParseError",
    "JsonRpcRequestFailed",
    "Problem",
    "bug_error",
    "json_type",
    "main",
    "process_alive",
    "rpc_error",
    "server",
]


if __name__ == "__main__":
    sys.exit(main())
