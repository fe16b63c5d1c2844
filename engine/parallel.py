"""Analysing many files on several cores.

Parsing and tokenising are most of a cold request's cost and a pure function of the files'
bytes, so whole blocks are built in worker processes (build.build_chunk) and come back
encoded, as the cache stores them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .cancel import CancelToken

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

# Process pools are imported when first started: most requests never need one, and the
# command line's start-up time is part of every call.


def default_workers() -> int:
    """Worker processes to use: none on one core, else one per core up to four."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores or 1, 4) if (cores or 1) > 1 else 0


def _init_worker(owner: int) -> None:
    """Make a worker hold none of its owner's pipes, and end when its owner ends.

    Workers inherit stdin and stdout, and a language client waits for EOF on the server's
    stdout, so a worker must not keep that pipe open. A worker (and the forkserver, which
    lives while any worker holds its "alive" pipe) would otherwise outlive an owner that
    leaves without shutting the pool down, as the language server does with os._exit.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)

    def watch() -> None:
        while True:
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                pass
            time.sleep(0.25)

    threading.Thread(target=watch, name="citeline-owner-watch", daemon=True).start()


class Result:
    """One job's result, fetched with cancellation checks; None if the pool broke."""

    def __init__(self, owner: Workers, future: Future[Any] | None) -> None:
        self.owner = owner
        self.future = future

    def get(self, cancel: CancelToken | None = None) -> Any:
        if self.future is None:
            return None
        from concurrent.futures import TimeoutError as FutureTimeout
        from concurrent.futures.process import BrokenProcessPool

        while True:
            if cancel is not None:
                cancel.check()
            try:
                return self.future.result(timeout=0.05)
            except FutureTimeout:
                continue
            except BrokenProcessPool:
                self.owner._discard()
                return None

    def done(self) -> bool:
        return self.future is None or self.future.done()

    def cancel(self) -> None:
        if self.future is not None:
            self.future.cancel()


class Workers:
    """A lazily started process pool; any failure falls back to parsing in-process."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether worker processes are running (a pool was started and not discarded)."""
        return self._pool is not None

    def _get(self) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        with self._lock:
            if self._pool is None:
                # forkserver, not fork: a forked child inherits locks that other threads
                # hold (the language server's stdin reader holds stdin's, and the child's
                # start-up closes stdin: a deadlock). Like spawn, forkserver imports the
                # caller's __main__ in each worker, which is why workers are opt-in (the
                # fronts, whose __main__ is guarded, turn them on).
                self._pool = ProcessPoolExecutor(
                    self.count,
                    mp_context=get_context("forkserver"),
                    initializer=_init_worker,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def run(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> list[Result]:
        """Start `fn(*job)` for each job, in order; results that cannot start are None."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            pool = self._get()
            return [Result(self, pool.submit(fn, *job)) for job in jobs]
        except (OSError, RuntimeError, BrokenProcessPool):
            self._discard()
            return [Result(self, None) for _ in jobs]

    def _discard(self, wait: bool = False) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        if not wait:
            # The owner leaves at once (os._exit): do not leave workers mid-parse. A pool
            # whose worker was killed cannot be joined safely (its manager thread may wait
            # forever for the rest of a result the worker was sending), so only a caller
            # that will not wait for it may kill.
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.kill()
        pool.shutdown(wait=wait, cancel_futures=True)

    def close(self, wait: bool = False) -> None:
        """Stop the workers. `wait`: let those at work finish their chunk and join the pool's
        manager thread — before a normal interpreter exit, whose clean-up would otherwise
        wake that thread through a pipe the pool may already have closed (an "Exception
        ignored … Bad file descriptor"). Without `wait` they are killed."""
        self._discard(wait)
