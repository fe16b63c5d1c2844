"""The language server's job pool: engine work in a private thread pool, one CancelToken
per job (set when the request's task is cancelled, checked by the engine between files and
stages, so that nothing partial is ever sent), work-done progress, and the warm-up gate
that requests wait on (two threads analysing the same files at once under the GIL would
make both slower).

Handed a plain pygls server (for $/progress) rather than the citeline server: it knows
nothing of folders, settings or documents.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from citeline.engine import CancelToken, CitelineError, Progress
from citeline.engine.base.errors import INTERNAL

from .rpc import bug_error, rpc_error

log = logging.getLogger("citeline.lsp")

T = TypeVar("T")
Job = Callable[[CancelToken, Progress | None], T]

PROGRESS_INTERVAL = 0.1  # at most ten $/progress reports a second
WORKERS = 4  # engine jobs at once: requests beside a long one are still answered


class WorkDone:
    """Work-done progress for one request, fed from the engine's worker thread."""

    def __init__(
        self, ls: LanguageServer, loop: asyncio.AbstractEventLoop, token: types.ProgressToken
    ) -> None:
        self.ls = ls
        self.loop = loop
        self.token = token
        self._last = 0.0

    def begin(self, title: str) -> None:
        self.ls.work_done_progress.begin(
            self.token, types.WorkDoneProgressBegin(title=title, cancellable=False, percentage=0)
        )

    def __call__(self, stage: str, done: int, total: int) -> None:  # called in the worker
        now = time.monotonic()
        if now - self._last < PROGRESS_INTERVAL and done != total:
            return
        self._last = now
        pct = int(done * 100 / total) if total else 100
        value = types.WorkDoneProgressReport(message=f"{stage} {done}/{total}", percentage=pct)
        self.loop.call_soon_threadsafe(self.ls.work_done_progress.report, self.token, value)

    def end(self, message: str) -> None:
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))


class Jobs:
    def __init__(self, ls: LanguageServer, analysed: Callable[[], int] = lambda: 0) -> None:
        self.ls = ls  # where work-done progress is sent
        self.analysed = analysed  # files the engine has parsed so far (for the DEBUG log)
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="citeline-engine")
        self.tokens: set[CancelToken] = set()  # running engine jobs, cancelled at shutdown
        self.tokens_lock = threading.Lock()
        self.warming: asyncio.Future[Any] | None = None  # the warm-up's engine job

    async def run(
        self,
        job: Job[T],
        *,
        work_done_token: types.ProgressToken | None = None,
        title: str = "citeline",
        after_warm_up: bool = True,
    ) -> T:
        """Run `job` in the pool; cancellation of the caller sets the job's CancelToken. An
        engine error is raised as its JSON-RPC answer (lsp/rpc.py), a bug as -32603.

        While the warm-up is still analysing files, a request first waits for it.
        """
        warming = self.warming
        if after_warm_up and warming is not None and not warming.done():
            await asyncio.wait([warming])
        loop = asyncio.get_running_loop()
        token = CancelToken()
        progress = None
        if work_done_token is not None:
            progress = WorkDone(self.ls, loop, work_done_token)
            progress.begin(title)
        with self.tokens_lock:
            self.tokens.add(token)
        ended = "cancelled"
        started = time.monotonic()

        def run() -> T:
            how = "failed"  # how the engine call itself ended (tests read it at DEBUG level)
            try:
                result = job(token, progress)
                how = "finished"
                return result
            except CitelineError as err:
                how = "stopped (cancelled)" if err.code == "cancelled" else f"failed ({err.code})"
                raise
            finally:
                log.debug(
                    "engine job %s %s after %.3fs (files analysed so far: %d)",
                    title,
                    how,
                    time.monotonic() - started,
                    self.analysed(),
                )

        try:
            result = await loop.run_in_executor(self.pool, run)
            ended = "done"
            return result
        except asyncio.CancelledError:
            token.cancel()
            raise
        except CitelineError as err:
            ended = err.code
            raise rpc_error(err) from None
        except Exception as exc:
            ended = INTERNAL
            raise bug_error(exc, title) from None
        finally:
            with self.tokens_lock:
                self.tokens.discard(token)
            if progress is not None:
                progress.end(ended)

    def cancel_all(self) -> None:
        with self.tokens_lock:
            for token in self.tokens:
                token.cancel()

    def gate(self) -> tuple[asyncio.Future[Any] | None, asyncio.Future[Any]]:
        """A new warm-up's gate, set synchronously (a client sends its first requests right
        after `initialized`: they must find it begun), and the previous warm-up's."""
        previous = self.warming
        self.warming = asyncio.get_running_loop().create_future()
        return previous, self.warming


__all__ = ["PROGRESS_INTERVAL", "Job", "Jobs", "WorkDone"]
