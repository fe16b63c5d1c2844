"""Parsing many files on several cores.

markdown-it's block parse is most of a cold request's cost and is a pure function of a
file's bytes, so it runs in worker processes; only the small Structure comes back.
Everything that depends on the relevance options stays in the calling process.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

from .cancel import CancelToken
from .layout import ParseIssue
from .sections import Structure, structure

# Below this much unparsed Markdown, starting and feeding workers costs more than it saves.
PARALLEL_MIN_BYTES = 2 << 20
_CHUNK_BYTES = 256 << 10


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


def _structures(chunk: list[bytes]) -> list[Structure | ParseIssue]:
    return [structure(data) for data in chunk]


class Pending:
    """Structures being parsed by the pool, fetched one file at a time."""

    def __init__(
        self,
        owner: Workers,
        futures: list[Future[list[Structure | ParseIssue]]],
        where: dict[str, tuple[int, int]],
    ) -> None:
        self.owner = owner
        self.futures = futures
        self.where = where
        self.failed = False

    def get(self, key: str, cancel: CancelToken | None = None) -> Structure | ParseIssue | None:
        """The structure of `key`, waiting for its chunk; None if the pool broke."""
        place = self.where.get(key)
        if place is None or self.failed:
            return None
        future = self.futures[place[0]]
        while True:
            if cancel is not None:
                cancel.check()
            try:
                return future.result(timeout=0.05)[place[1]]
            except FutureTimeout:
                continue
            except BrokenProcessPool:
                self.failed = True
                self.owner._discard()
                return None

    def cancel(self) -> None:
        for future in self.futures:
            future.cancel()


class Workers:
    """A lazily started process pool; any failure falls back to parsing in-process."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _get(self) -> ProcessPoolExecutor:
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

    def parse(self, datas: dict[str, bytes]) -> Pending | None:
        """Start parsing `datas` (key → bytes) in the pool; None when not worth a pool.

        Chunks are submitted in the given order, so a caller walking the files in that order
        can analyse each one while the workers parse the files after it.
        """
        if self.count < 2 or sum(len(d) for d in datas.values()) < PARALLEL_MIN_BYTES:
            return None
        chunks: list[list[str]] = [[]]
        size = 0
        for key, data in datas.items():
            if size >= _CHUNK_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(key)
            size += len(data)
        try:
            pool = self._get()
            futures = [pool.submit(_structures, [datas[k] for k in chunk]) for chunk in chunks]
        except (OSError, RuntimeError, BrokenProcessPool):
            self._discard()
            return None
        where = {key: (i, j) for i, chunk in enumerate(chunks) for j, key in enumerate(chunk)}
        return Pending(self, futures, where)

    def _discard(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            # The owner may leave at once (os._exit): do not leave workers mid-parse.
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.kill()
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._discard()
