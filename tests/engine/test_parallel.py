"""The worker pool (engine/index/parallel.py): how it stops, and how it fails. A pool's failure is
never an error nor a line on the terminal: a job no worker answered is built in-process
(docs/architecture.md, "A folder never seen"). Python 3.11's ProcessPoolExecutor, used
before, printed an InvalidStateError traceback from its manager thread when a worker died
with a cancelled job queued (issue 33)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.engine.index.parallel import Result, Workers, start_method


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def gone_within(pids: set[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def touch_after(path: str, seconds: float) -> int:
    """A job with a trace: sleeps, then creates `path`; returns the worker's pid."""
    time.sleep(seconds)
    Path(path).touch()
    return os.getpid()


def fail() -> None:
    raise ZeroDivisionError("in the worker")


def started_pool() -> tuple[Workers, set[int]]:
    """Two workers, each known by its pid (each job returns the pid that ran it)."""
    workers = Workers(2)
    pids: set[int] = set()
    deadline = time.monotonic() + 60
    while len(pids) < 2 and time.monotonic() < deadline:
        for r in workers.run(time.sleep, [(0.2,), (0.2,)]):
            r.get()
        pids |= {r.get() for r in workers.run(os.getpid, [()] * 8)}
    assert len(pids) == 2 and os.getpid() not in pids
    return workers, pids


@pytest.fixture()
def thread_errors() -> Iterator[list[BaseException]]:
    """Exceptions that reached any thread's top (they would print a traceback)."""
    seen: list[BaseException] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: seen.append(args.exc_value)  # type: ignore[assignment]
    try:
        yield seen
    finally:
        threading.excepthook = previous


def feeding_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "citeline-worker-feed"]


def test_workers_start_with_the_platforms_safe_method() -> None:
    from citeline.engine.base.platform import PLATFORM

    # Linux; spawn where there is no forkserver, and under the forced Windows configuration
    assert start_method() == ("spawn" if PLATFORM.forced else "forkserver")


def test_close_stops_the_workers_at_work_and_drops_the_queued(tmp_path: Path) -> None:
    workers, pids = started_pool()
    results = workers.run(touch_after, [(str(tmp_path / f"job{i}"), 1.5) for i in range(8)])
    time.sleep(0.3)  # two at work, the rest queued
    workers.close(wait=True)
    assert not workers.started
    assert not any(alive(pid) for pid in pids)  # reaped, not left sleeping
    assert feeding_threads() == []
    assert [r.get() for r in results] == [None] * 8  # nobody answered: built in-process
    time.sleep(1.5)
    assert list(tmp_path.iterdir()) == []  # neither those at work nor the queued finished


def test_close_without_waiting_kills_the_workers_mid_job() -> None:
    workers, pids = started_pool()
    workers.run(time.sleep, [(60.0,)] * 2)
    time.sleep(0.3)
    started = time.monotonic()
    workers.close(wait=False)
    assert time.monotonic() - started < 2
    assert not workers.started
    assert gone_within(pids, 5)  # killed, not left sleeping for a minute


def test_a_worker_killed_with_cancelled_jobs_queued_breaks_nothing(
    thread_errors: list[BaseException], tmp_path: Path
) -> None:
    """What a Ctrl-C did to the old pool: jobs cancelled by the request while queued, then
    a worker gone. The jobs answer None, no thread meets an error, and the next run starts
    a new pool that works."""
    workers, pids = started_pool()
    at_work = workers.run(time.sleep, [(30.0,), (30.0,)])
    queued = workers.run(touch_after, [(str(tmp_path / f"q{i}"), 0) for i in range(6)])
    for r in queued:
        r.cancel()
    time.sleep(0.3)
    os.kill(next(iter(pids)), signal.SIGKILL)
    assert [r.get() for r in at_work] == [None, None]
    assert [r.get() for r in queued] == [None] * 6
    assert list(tmp_path.iterdir()) == []
    assert gone_within(pids, 5)  # the pool was discarded: its other worker too
    assert [r.get() for r in workers.run(pow, [(2, 10), (3, 3)])] == [1024, 27]
    workers.close(wait=True)
    assert thread_errors == []


def test_workers_ignore_ctrl_c() -> None:
    """A Ctrl-C at a terminal reaches the whole process group; the owner alone handles it
    (a worker killed by it would print its own traceback)."""
    workers, pids = started_pool()
    try:
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        time.sleep(0.3)
        assert all(alive(pid) for pid in pids)
        assert [r.get() for r in workers.run(pow, [(2, 5)] * 4)] == [32] * 4
    finally:
        workers.close(wait=True)


def test_a_job_that_fails_in_a_worker_answers_none() -> None:
    """The caller then builds it in-process, where the same error is raised for real."""
    workers, _ = started_pool()
    try:
        (failed,) = workers.run(fail, [()])
        assert failed.get() is None
        assert [r.get() for r in workers.run(pow, [(2, 3)])] == [8]  # the pool still works
    finally:
        workers.close(wait=True)


def test_workers_leave_when_their_owner_leaves_at_once(tmp_path: Path) -> None:
    """An owner that ends with os._exit (the language server) closes its end of each pipe:
    a worker waiting for a job sees that and leaves; nothing watches pids."""
    script = textwrap.dedent(
        """
        import os, sys, time
        from citeline.engine.index.parallel import Workers
        workers = Workers(2)
        pids = set()
        while len(pids) < 2:
            for r in workers.run(time.sleep, [(0.2,), (0.2,)]):
                r.get()
            pids |= {r.get() for r in workers.run(os.getpid, [()] * 8)}
        print(*sorted(pids), flush=True)
        os._exit(0)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    pids = {int(word) for word in run.stdout.split()}
    assert len(pids) == 2
    assert gone_within(pids, 10)


def test_a_taken_answer_is_not_kept_by_its_result() -> None:
    """A build's list of runs keeps each Result until the build ends; the answer (a block's
    bytes) should go as soon as it has been taken in."""
    result = Result(len, ((),))
    answer = [b"a block's bytes"]
    result.answer(answer)
    assert result.done() and result.get() is answer
    assert result.take() is answer
    assert result.done() and result.get() is None
