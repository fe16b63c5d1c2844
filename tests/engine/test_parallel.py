"""The worker pool (engine/parallel.py): how it stops. A process that leaves at once kills its
workers; one that exits normally lets the chunks at work finish and joins the pool, which a
pool with a killed worker cannot always do (docs/architecture.md, "A folder never seen")."""

from __future__ import annotations

import os
import time

from citeline.engine.parallel import Workers


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone_within(pids: set[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def started_pool() -> tuple[Workers, set[int]]:
    """Two workers, each known by its pid (each job returns the pid that ran it)."""
    workers = Workers(2)
    pids: set[int] = set()
    deadline = time.monotonic() + 60
    while len(pids) < 2 and time.monotonic() < deadline:
        results = workers.run(time.sleep, [(0.2,), (0.2,)])
        for r in results:
            r.get()
        pids |= {r.get() for r in workers.run(os.getpid, [()] * 8)}
    assert len(pids) == 2 and os.getpid() not in pids
    return workers, pids


def test_close_waiting_lets_chunks_at_work_finish_and_drops_the_queued() -> None:
    workers, pids = started_pool()
    results = workers.run(time.sleep, [(1.0,)] * 8)
    time.sleep(0.3)  # two at work, the rest queued
    for r in results:
        r.cancel()  # what a cancelled request does with its chunks in flight
    started = time.monotonic()
    workers.close(wait=True)
    took = time.monotonic() - started
    assert not workers.started
    # The two at work finish (under a second left each); the six queued never run.
    assert 0.3 < took < 10, took
    assert gone_within(pids, 10)


def test_close_without_waiting_kills_the_workers_mid_job() -> None:
    workers, pids = started_pool()
    workers.run(time.sleep, [(60.0,)] * 2)
    time.sleep(0.3)
    started = time.monotonic()
    workers.close(wait=False)
    assert time.monotonic() - started < 2
    assert not workers.started
    assert gone_within(pids, 5)  # killed, not left sleeping for a minute
