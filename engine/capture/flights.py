"""Captures that requests share: one walk for requests an editor sends together.

A request may use a capture of the same bundle and settings that *started after it
arrived* — still running (a flight) or finished (landed) — since that snapshot is as fresh
as one of its own would be: the answer reflects the files at a moment after the request
was sent. Requests an editor sends at once walk the workspace once, and those that waited
for the warm-up use the warm-up's capture if it began after they arrived. An editor's
notification of a change forgets the finished captures of its bundle (`forget`).

A landed capture is kept without the bytes it read (`records`): it must not keep a
workspace's bytes alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..base.cancel import CancelToken
from ..base.limits import Settings
from .snapshot import Snapshot

LANDED_KEPT = 8  # finished captures kept to share (one per bundle and settings)
WAIT_STEP = 0.05  # seconds between two looks at the cancel token while waiting for a flight

Key = tuple[str, Settings]  # (bundle key, settings)


@dataclass(slots=True)
class Flight:
    """One capture: running until `done` is set, its snapshot then (None if it failed)."""

    started: float
    done: threading.Event = field(default_factory=threading.Event)
    snapshot: Snapshot | None = None


class Flights:
    """The captures running and the last finished ones, per bundle and settings. Thread-safe."""

    def __init__(self, kept: int = LANDED_KEPT) -> None:
        self.kept = kept
        self.flying: dict[Key, Flight] = {}
        self.landed: dict[Key, Flight] = {}
        self._lock = threading.Lock()

    def share(
        self,
        key: Key,
        fresh_after: float,
        cancel: CancelToken | None,
        capture: Callable[[], Snapshot],
    ) -> Snapshot:
        """A snapshot as fresh as one taken after `fresh_after`: a running or finished
        capture that started since, else one taken now by `capture` (which others may then
        share)."""
        with self._lock:
            flight = self.flying.get(key)
            landed = self.landed.get(key)
        if flight is not None and flight.started >= fresh_after:
            while not flight.done.wait(WAIT_STEP):
                if cancel is not None:
                    cancel.check()
            if flight.snapshot is not None:
                return flight.snapshot
        if landed is not None and landed.started >= fresh_after:
            assert landed.snapshot is not None
            return landed.snapshot
        flight = Flight(time.monotonic())
        with self._lock:
            self.flying[key] = flight
        try:
            flight.snapshot = capture()
            self._land(key, flight.started, flight.snapshot)
            return flight.snapshot
        finally:
            flight.done.set()
            with self._lock:
                if self.flying.get(key) is flight:
                    del self.flying[key]

    def _land(self, key: Key, started: float, snapshot: Snapshot) -> None:
        with self._lock:
            before = self.landed.get(key)
            if before is None or before.started < started:
                self.landed.pop(key, None)
                self.landed[key] = Flight(started, snapshot=records(snapshot))
                while len(self.landed) > self.kept:
                    del self.landed[next(iter(self.landed))]

    def forget(self, bundle: str) -> None:
        """The finished captures of `bundle` (a bundle key) are not shared any more."""
        with self._lock:
            for key in [k for k in self.landed if k[0] == bundle]:
                del self.landed[key]


def records(snap: Snapshot) -> Snapshot:
    """The snapshot without the bytes it read (kept to share, it must not keep a workspace's
    bytes alive: those a later request needs are held by reuse.RecentBytes or read again and
    checked against their SHA-256, as for any file the stat index vouched for)."""
    known = snap.known
    if known is None or known.captured is None or not snap.read:
        return snap
    return Snapshot(snap.root, known.captured.files, snap.revision, known, 0)


class Serving:
    """How many requests an engine is serving, for background work that must not slow
    them: it waits for none to be running before each step of its own (engine/base/warmer.py)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0

    @contextmanager
    def request(self) -> Iterator[None]:
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def wait_idle(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._running == 0)


__all__ = ["LANDED_KEPT", "Flight", "Flights", "Serving", "records"]
