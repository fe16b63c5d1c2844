"""Analysing many files on several cores.

Parsing and tokenising are most of a cold request's cost and a pure function of the files'
bytes, so whole blocks are built in worker processes (build.build_chunk) and come back
encoded, as the cache stores them.

The pool is our own, not concurrent.futures' ProcessPoolExecutor: each worker is a process
with one pipe, fed by one thread of the owner's that sends it a job and waits for the
answer. Python 3.11's executor runs a manager thread of its own that fails on a future the
request cancelled when a worker dies (an `InvalidStateError` traceback on the terminal
after a Ctrl-C), and cannot always be joined after a worker was killed. Here a dead or
killed worker only ever means "no answer": the job is built in-process, as any failure of
the pool is, and nothing is printed.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from ..base import platform
from ..base.cancel import CancelToken

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    if sys.platform == "win32":
        from multiprocessing.connection import PipeConnection
    else:
        PipeConnection = Connection
    from multiprocessing.process import BaseProcess

# multiprocessing is imported when a pool first starts: most requests never need one, and
# the command line's start-up time is part of every call.

POLL = 0.1  # seconds between a feeding thread's checks that its worker still lives


def default_workers() -> int:
    """Worker processes to use: none on one core, else one per core up to four."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores or 1, 4) if (cores or 1) > 1 else 0


def start_method() -> str:
    """forkserver where the platform has it, else spawn (never fork: a forked child inherits
    locks other threads hold — the language server's stdin reader holds stdin's, and the
    child's start-up closes stdin: a deadlock). The platform seam decides (and spawns under
    the forced Windows configuration)."""
    return platform.start_method()


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT blocked in this thread while workers start: a process inherits the mask, so a
    worker (and the forkserver it is forked from) starts with Ctrl-C held until _serve
    ignores it. A Ctrl-C at a terminal reaches the whole process group, and a worker killed
    by it would print a traceback of its own; the owner alone handles it. The owner's own
    Ctrl-C is only delayed until the workers have started. (Where the platform has no
    signal masks, _serve ignores SIGINT as its first step.)"""
    if sys.platform == "win32" or not hasattr(signal, "pthread_sigmask"):
        yield  # (the name too: type checkers know Windows has no signal masks)
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _serve(conn: Connection) -> None:
    """A worker: run each job the owner sends, answer (True, value) or (False, None), and
    leave on None or when the owner's end of the pipe closes (the owner has gone: its exit,
    even with os._exit, closes the pipe, so no worker outlives it by more than one job).

    Workers hold none of their owner's standard streams: a language client waits for EOF on
    the server's stdout, so a worker must not keep that pipe open.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform != "win32" and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending one is dropped
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args = job
        try:
            reply: tuple[bool, Any] = (True, fn(*args))
        except BaseException:  # the owner builds the job itself, and meets the error there
            reply = (False, None)
        try:
            conn.send(reply)
        except Exception:
            return  # the owner has gone, or the answer cannot travel (built there instead)


class Result:
    """One job's answer: the function's value, or None when no worker could give it (the
    pool broke or closed, the job failed in the worker); the caller then does it itself."""

    __slots__ = ("_answered", "_value", "args", "cancelled", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.cancelled = False
        self._value: Any = None
        self._answered = threading.Event()

    def get(self, cancel: CancelToken | None = None) -> Any:
        while not self._answered.wait(0.05):
            if cancel is not None:
                cancel.check()
        return self._value

    def take(self, cancel: CancelToken | None = None) -> Any:
        """get(), and the answer forgotten: a caller that keeps the Result (a list of runs
        in flight) need not keep its answer too."""
        value = self.get(cancel)
        self._value = None
        return value

    def done(self) -> bool:
        return self._answered.is_set()

    def cancel(self) -> None:
        """Not wanted any more: never sent if it is still queued; one at work finishes and
        its answer is dropped."""
        self.cancelled = True

    def answer(self, value: Any) -> None:
        self._value = value
        self._answered.set()


class _Worker:
    """A worker process and the owner's end of its pipe."""

    __slots__ = ("conn", "process")

    def __init__(self, process: BaseProcess, conn: Connection | PipeConnection) -> None:
        self.process = process
        self.conn = conn


class Workers:
    """A lazily started pool of worker processes; any failure falls back to in-process."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._lock = threading.Condition()
        self._queue: deque[Result] = deque()
        self._workers: list[_Worker] = []
        self._threads: list[threading.Thread] = []
        self._generation = 0  # a pool discarded and started again: the old threads leave

    @property
    def started(self) -> bool:
        """Whether worker processes are running (a pool was started and not discarded)."""
        return bool(self._workers)

    def _start(self) -> None:
        """Start the processes and their feeding threads (the lock held)."""
        from multiprocessing import get_context

        ctx: Any = get_context(start_method())  # (typeshed's BaseContext has no Process)
        generation = self._generation
        with _interrupts_held():
            for _ in range(self.count):
                mine, theirs = ctx.Pipe()
                process = ctx.Process(target=_serve, args=(theirs,), daemon=True)
                process.start()
                theirs.close()
                worker = _Worker(process, mine)
                self._workers.append(worker)
                thread = threading.Thread(
                    target=self._feed,
                    args=(worker, generation),
                    name="citeline-worker-feed",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()

    def run(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> list[Result]:
        """Queue `fn(*job)` for each job, in order; each Result answers None if it cannot
        be done in a worker."""
        results = [Result(fn, tuple(job)) for job in jobs]
        with self._lock:
            if not self._workers:
                try:
                    self._start()
                except (OSError, RuntimeError, ValueError, ImportError):
                    self._stop_locked()
            if not self._workers:
                for result in results:
                    result.answer(None)
                return results
            self._queue.extend(results)
            self._lock.notify_all()
        return results

    def _next(self, generation: int) -> Result | None:
        """The next job that is still wanted, or None when this pool is being stopped."""
        with self._lock:
            while True:
                if generation != self._generation:
                    return None
                while self._queue:
                    job = self._queue.popleft()
                    if not job.cancelled:
                        return job
                    job.answer(None)
                self._lock.wait()

    def _feed(self, worker: _Worker, generation: int) -> None:
        """One worker's thread: send it jobs one at a time and hand back its answers. It
        never raises: a worker that dies or is killed leaves its job unanswered by it
        (None), and the pool is discarded, as a broken pool is."""
        job: Result | None = None
        try:
            while True:
                job = self._next(generation)
                if job is None:
                    return
                worker.conn.send((job.fn, job.args))
                while not worker.conn.poll(POLL):
                    if not worker.process.is_alive():
                        raise EOFError
                ok, value = worker.conn.recv()
                job.answer(value if ok and not job.cancelled else None)
                job = None
        except BaseException:
            if job is not None:
                job.answer(None)
            self._discard_generation(generation)
        finally:
            # Closed here, by the one thread that uses it: closed from another thread, its
            # descriptor number could be reused under a poll() still running here.
            with suppress(OSError):
                worker.conn.close()

    def _discard_generation(self, generation: int) -> None:
        with self._lock:
            if generation == self._generation:
                self._stop_locked()

    def _stop_locked(self) -> tuple[list[_Worker], list[threading.Thread]]:
        """Stop this pool (the lock held): its feeding threads leave, queued jobs answer
        None, every worker is killed (one at work included: nobody waits for its answer).
        Returns what was stopped, for close() to reap."""
        self._generation += 1
        for job in self._queue:
            job.answer(None)
        self._queue.clear()
        for worker in self._workers:
            with suppress(OSError, ValueError, AttributeError):  # gone, or never started
                worker.process.kill()
        self._lock.notify_all()
        stopped = (self._workers, self._threads)
        self._workers, self._threads = [], []
        return stopped

    def kill(self) -> None:
        """Kill the workers without taking the pool's lock: for a process about to leave at
        once after a Ctrl-C, which may have come while this thread held it."""
        for worker in list(self._workers):
            with suppress(OSError, ValueError, AttributeError):
                worker.process.kill()

    def close(self, wait: bool = False) -> None:
        """Stop the workers, those at work included. `wait`: also reap the processes and
        join the feeding threads, so nothing of the pool is left when this returns (a
        process about to exit normally); without it (a process about to leave at once)
        the killed processes are left to the system."""
        with self._lock:
            workers, threads = self._stop_locked()
        if not wait:
            return
        for worker in workers:
            worker.process.join(5)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(5)
