"""The engine's one background thread for derived state: what later requests on an index want
and a one-shot call does not (the index's lexicon, the held words of its sections' names).

Jobs run one at a time in the order they were added; a job added again while it still waits
is not queued twice. Each job calls `pause` between its steps: it waits while the engine
serves a request (Serving.wait_idle), so background work never slows an answer, and once the
engine is closed it ends the job there. Answers are the same before, during and after: what
a job makes is a cache of a pure function.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

Job = Callable[[Callable[[], None]], None]  # called with `pause`
log = logging.getLogger("citeline.engine")


class Stopped(Exception):
    """Raised by `pause` once the warmer is closed: the job ends at its next step."""


class Warmer:
    def __init__(self, wait_idle: Callable[[], None]) -> None:
        self._wait_idle = wait_idle
        self._cond = threading.Condition()
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._closed = False

    def add(self, key: Hashable, job: Job) -> None:
        """Run `job` in the background after those before it (once, if `key` waits already)."""
        with self._cond:
            if self._closed or key in self._jobs:
                return
            self._jobs[key] = job
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="citeline-warmer", daemon=True
                )
                self._thread.start()

    def pause(self) -> None:
        """Between two steps of a job: wait while a request is served; end once closed."""
        if self._closed:
            raise Stopped
        self._wait_idle()
        if self._closed:
            raise Stopped

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no job runs or waits (at most `timeout` seconds); whether that is so."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and not self._busy, timeout)

    def close(self) -> None:
        """Drop the waiting jobs; the running one ends at its next pause."""
        with self._cond:
            self._closed = True
            self._jobs.clear()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._jobs or self._closed:
                    self._thread = None
                    self._cond.notify_all()
                    return
                _, job = self._jobs.popitem(last=False)
                self._busy = True
            try:
                job(self.pause)
            except Stopped:
                pass
            except Exception:  # pragma: no cover - a cache not made; the requests make it
                log.info("background preparation failed", exc_info=True)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


__all__ = ["Job", "Stopped", "Warmer"]
