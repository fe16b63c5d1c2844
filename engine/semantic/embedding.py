"""Embedding sections (SPEC §15 "Costs"): the vectors a request needs, and the others in
the background.

- `embed` gives a request the vectors of its candidates' passages: those in the persistent
  cache (vectors.Vectors, checked), the missing ones computed in batches with a progress
  callback and the CancelToken checked between batches (and, by the backend, between
  passages), each batch written back as it is done. A cancelled request raises the
  engine's `cancelled` error: never a partial answer (what was computed stays cached).
- `BackgroundEmbedder`, owned by a long-lived process: one worker thread that embeds the
  rest of a snapshot's sections after an answer, one passage at a time on one thread of the
  model, at the lowest priority where a thread has its own, stepping aside when other work
  wants the CPU, waiting while any request of the process is in `foreground()` or its
  background work is paused (`pause_background`); `status()` says how far it is
  (docs/semantic.md, "The first answers and the background embedder").

Like semantic.py, nothing of the lexical engine imports this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..base.cancel import CancelToken
from ..base.errors import cancelled
from .semantic import Backend, Locked, Passage, decode_vector, encode_vector
from .vectors import Vectors

log = logging.getLogger("citeline.semantic")

Counted = Callable[[int, int], None]  # (passages embedded, of how many)
"""progress(done, total): passages whose vector is ready, of all the request needs."""

# Passages embedded between two checks of the cancel token and two progress calls: small,
# so that a cancellation is seen within about a second on 2 cores (0.25–0.5 s a passage).
BATCH = 4
# The background worker's niceness (where a thread has its own: Linux), so that its
# embedding takes only the CPU time no request wants.
BACKGROUND_NICE = 19
# The model's threads for the worker's passages: one core's worth, whatever the machine has.
BACKGROUND_THREADS = 1
# How often the worker logs how far it is (and once when its work ends).
LOG_SECONDS = 60.0
# Stepping aside: a passage during which the worker ran less than BUSY_SHARE of the time
# (waiting the rest for a CPU, or for the model) shows that other work wants the CPU; it
# then leaves the CPU to it for STEP_ASIDE times the passage's CPU time (at most MOST_ASIDE
# seconds), taking about a tenth of a contended core. Its niceness cannot do that across
# sessions: Linux's autogroup weighs the warm process's session (a session of its own)
# against the user's as equals, whatever its threads' niceness (docs/semantic.md).
BUSY_SHARE = 0.8
STEP_ASIDE = 8.0
MOST_ASIDE = 5.0
# How many keys the worker looks up in the cache at once before embedding the missing ones.
LOOKUP = 64


@dataclass(frozen=True, slots=True)
class Embedded:
    """The vectors of a request's passages, in the passages' order."""

    vectors: tuple[tuple[float, ...], ...]
    cached: int  # distinct passages found in the cache
    computed: int  # distinct passages embedded by this call


def embed(
    passages: Sequence[Passage],
    backend: Backend,
    vectors: Vectors,
    cancel: CancelToken | None = None,
    progress: Counted | None = None,
    batch: int = BATCH,
) -> Embedded:
    """The vectors of `passages` (see the module's docstring). Passages with the same key
    are embedded once. Raises the engine's `cancelled` error when `cancel` is set before
    every vector is ready."""
    if batch < 1:
        raise ValueError("a batch holds at least one passage")
    if vectors.dim != backend.dim:
        raise ValueError(
            f"the cache's vectors have {vectors.dim} components, the model's {backend.dim}"
        )
    texts = {p.key: p.text for p in passages}
    found = vectors.get_many(list(texts))
    missing = [key for key in texts if key not in found]
    total, done = len(texts), len(texts) - len(missing)
    if progress is not None:
        progress(done, total)
    for start in range(0, len(missing), batch):
        if cancel is not None:
            cancel.check()
        keys = missing[start : start + batch]
        got = backend.embed_passages([texts[k] for k in keys], cancel)
        if len(got) != len(keys):
            raise ValueError(f"the backend gave {len(got)} vectors for {len(keys)} passages")
        # As the cache keeps them (int8): a score must not depend on whether it was warm.
        got = [decode_vector(encode_vector(v), backend.dim) for v in got]
        vectors.put_many(zip(keys, got, strict=True))
        found.update(zip(keys, got, strict=True))
        done += len(keys)
        if progress is not None:
            progress(done, total)
    if cancel is not None and cancel.is_cancelled:
        raise cancelled()
    return Embedded(
        tuple(tuple(found[p.key]) for p in passages), total - len(missing), len(missing)
    )


class _Gate:
    """What every worker of the process waits for: no request served (`foreground`), no
    pause (`pause_background`). One for all: a request of any engine holds every worker
    (they share the one model, and the CPU)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.foreground = 0
        self.paused = False

    def held(self) -> bool:
        return self.foreground > 0 or self.paused


_GATE = _Gate()


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """Hold while serving a request: no background worker of the process starts a passage
    meanwhile (the passage in hand finishes)."""
    with _GATE.cond:
        _GATE.foreground += 1
    try:
        yield
    finally:
        with _GATE.cond:
            _GATE.foreground -= 1
            _GATE.cond.notify_all()


def pause_background() -> None:
    """Pause every background worker of the process (after the passage in hand), and those
    made later, until `resume_background`. Requests still embed what they need."""
    with _GATE.cond:
        _GATE.paused = True
        _GATE.cond.notify_all()


def resume_background() -> None:
    with _GATE.cond:
        _GATE.paused = False
        _GATE.cond.notify_all()


def background_paused() -> bool:
    with _GATE.cond:
        return _GATE.paused


@dataclass(frozen=True, slots=True)
class Status:
    """What the background embedder has done of its current work, and what it costs."""

    done: int  # passages of the current work whose vector is now cached
    total: int  # passages of the current work
    running: bool  # the worker thread is alive
    paused: bool  # held: a request is served, or the process's background work is paused
    error: str | None  # why the last work stopped early, if it did
    # embedding | yielding (to other work) | waiting (a request is served) | paused |
    # idle (nothing left) | stopped
    state: str = "idle"
    busy: bool = False  # a passage is in hand now
    embedded: int = 0  # passages this worker computed since it started (not found cached)
    cpu_seconds: float = 0.0  # CPU time of the worker thread since it started
    threads: int | None = None  # the model's threads for its passages (None: not known)
    nice: int | None = None  # its niceness (None: a thread has none of its own here)
    yielded_seconds: float = 0.0  # time it stepped aside for other work (BUSY_SHARE)


def own_niceness(nice: int) -> int | None:
    """Give the calling thread niceness `nice` where a thread has its own, and return it
    (else None). Decided by what the system offers: a thread id under /proc/self/task is a
    task of this process, whose niceness setpriority sets alone (Linux); elsewhere the id
    may name another process, so nothing is set. Threads started from it inherit it."""
    tid = threading.get_native_id()
    setp, getp = getattr(os, "setpriority", None), getattr(os, "getpriority", None)
    if nice <= 0 or setp is None or getp is None or not os.path.isdir(f"/proc/self/task/{tid}"):
        return None
    try:
        setp(os.PRIO_PROCESS, tid, nice)  # type: ignore[attr-defined,unused-ignore]
        return int(getp(os.PRIO_PROCESS, tid))  # type: ignore[attr-defined,unused-ignore]
    except OSError:
        return None


class BackgroundEmbedder:
    """One low-priority worker thread embedding the passages it is given (see the module's
    docstring). Thread-safe. A request of the owning process runs inside `foreground()`
    (the worker pauses between passages while any is inside) and embeds through `backend`
    (the same model, behind a lock taken one passage at a time)."""

    def __init__(
        self,
        backend: Backend,
        vectors: Vectors,
        nice: int = BACKGROUND_NICE,
        threads: int | None = BACKGROUND_THREADS,
    ) -> None:
        if vectors.dim != backend.dim:
            raise ValueError("the cache's vectors and the model differ in dimension")
        self._model_lock = threading.Lock()
        self.backend: Backend = Locked(backend, self._model_lock)
        self.vectors = vectors
        self._want_nice, self._want_threads = nice, threads
        self._nice: int | None = None
        self._threads: int | None = None
        self._cond = _GATE.cond  # every worker's state under the gate's one condition
        self._pending: deque[Passage] = deque()
        self._total = 0
        self._done = 0
        self._embedded = 0
        self._cpu = 0.0
        self._error: str | None = None
        self._closed = False
        self._cancel = CancelToken()  # replaced by each submit; cancel() sets it
        self._busy = False  # a chunk of the work is in hand
        self._in_hand = False  # a passage is being embedded
        self._stepping, self._aside = False, 0.0  # stepping aside now; seconds of it in all
        self._logged = 0.0  # time.monotonic() of the last progress line
        self._thread = threading.Thread(target=self._run, name="citeline-embed", daemon=True)
        self._thread.start()

    # -- what the owner calls ----------------------------------------------------------------

    def submit(self, passages: Sequence[Passage]) -> None:
        """Embed these passages (a snapshot's sections, say), replacing the work not yet
        done: the newest snapshot is the one worth embedding."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the embedder is closed")
            self._cancel.cancel()  # the passage in hand, if any, is abandoned
            self._cancel = CancelToken()
            unique = list({p.key: p for p in passages}.values())
            self._pending = deque(unique)
            self._total, self._done, self._error = len(unique), 0, None
            self._cond.notify_all()

    def cancel(self) -> None:
        """Drop the work not yet done (the worker stays, for the next submit)."""
        with self._cond:
            self._cancel.cancel()
            self._pending.clear()
            self._total = self._done
            self._cond.notify_all()

    def close(self, timeout: float | None = 10.0) -> bool:
        """Stop the worker (after the passage in hand); True when it has stopped."""
        with self._cond:
            self._closed = True
            self._cancel.cancel()
            self._pending.clear()
            self._cond.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def foreground(self) -> contextlib.AbstractContextManager[None]:
        return foreground()  # every worker of the process waits, not only this one

    def status(self) -> Status:
        with self._cond:
            running = self._thread.is_alive() and not self._closed
            left = bool(self._pending) or self._busy
            state = "stopped" if not running else "idle" if not left else "embedding"
            if state == "embedding" and _GATE.held():
                state = "paused" if _GATE.paused else "waiting"
            elif state == "embedding" and self._stepping:
                state = "yielding"
            return Status(
                self._done,
                self._total,
                self._thread.is_alive(),
                _GATE.held(),
                self._error,
                state,
                self._in_hand,
                self._embedded,
                round(self._cpu, 3),
                self._threads,
                self._nice,
                round(self._aside, 1),
            )

    @property
    def native_id(self) -> int | None:
        """The worker thread's id in the operating system (its niceness is set on it)."""
        return self._thread.native_id

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no work is pending and no passage is in hand; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout)

    def wait_busy(self, timeout: float | None = None) -> bool:
        """Wait until the worker holds a passage (measurements, tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._in_hand or self._closed, timeout)

    # -- the worker --------------------------------------------------------------------------

    def _setup(self) -> None:
        nice = own_niceness(self._want_nice)
        threads = None
        if self._want_threads is not None:
            # The model's own setting, for this thread only (a request's stays as it is).
            with contextlib.suppress(Exception):
                threads = self.backend.limit_threads(self._want_threads)  # type: ignore[attr-defined]
        with self._cond:
            self._nice, self._threads = nice, threads

    def _next(self) -> tuple[list[Passage], CancelToken] | None:
        """The next passages to consider, once nothing holds the workers; None when
        closed."""
        with self._cond:
            while not self._closed and (not self._pending or _GATE.held()):
                self._cond.wait()
            if self._closed:
                return None
            n = min(LOOKUP, len(self._pending))
            chunk = [self._pending.popleft() for _ in range(n)]
            self._busy = True
            return chunk, self._cancel

    def _run(self) -> None:
        self._setup()
        while True:
            taken = self._next()
            if taken is None:
                break
            chunk, cancel = taken
            try:
                self._embed_chunk(chunk, cancel)
            except Exception as exc:  # a broken model or cache: stop this work, keep the thread
                if not cancel.is_cancelled:
                    log.warning("background embedding stopped: %s", exc)
                    with self._cond:
                        self._error = str(exc)
                        self._pending.clear()
            finally:
                with self._cond:  # (re-entrant) the last line said before it shows idle
                    self._cpu = time.thread_time()
                    self._log_progress(not self._pending and not cancel.is_cancelled)
                    self._busy = False
                    self._cond.notify_all()
        with self._cond:
            self._busy = False
            self._cond.notify_all()

    def _embed_chunk(self, chunk: list[Passage], cancel: CancelToken) -> None:
        found = self.vectors.get_many([p.key for p in chunk])
        self._count(cancel, len(found))
        missing = [p for p in chunk if p.key not in found]
        # One passage at a time, but a backend that batches (an endpoint: one request per
        # batch; an ONNX folder) is given its batch: a request per passage would make a
        # folder of thousands of sections as many round trips.
        step = max(1, int(getattr(self.backend, "batch", 1)))
        for start in range(0, len(missing), step):
            group = missing[start : start + step]
            with self._cond:  # between passages: wait while held, stop when asked
                while _GATE.held() and not cancel.is_cancelled and not self._closed:
                    self._cond.wait()
                if cancel.is_cancelled:
                    return
                self._in_hand = True
                self._cond.notify_all()
            try:
                wall, cpu = time.monotonic(), time.thread_time()
                got = self.backend.embed_passages([p.text for p in group], cancel)
                wall, cpu = time.monotonic() - wall, time.thread_time() - cpu
                if len(got) != len(group):
                    raise ValueError(f"the backend gave {len(got)} vectors for {len(group)}")
                self.vectors.put_many([(p.key, v) for p, v in zip(group, got, strict=True)])
            except BaseException:
                self._count(cancel, 0)  # no longer in hand
                raise
            self._count(cancel, len(group), embedded=len(group))  # as they leave the hand
            self._log_progress(False)
            if cpu < BUSY_SHARE * wall:
                self._step_aside(cancel, min(MOST_ASIDE, STEP_ASIDE * cpu))

    def _step_aside(self, cancel: CancelToken, seconds: float) -> None:
        with self._cond:
            self._aside += seconds
            self._stepping = True
            self._cond.wait_for(lambda: cancel.is_cancelled or self._closed, seconds)
            self._stepping = False

    def _count(self, cancel: CancelToken, n: int, embedded: int = 0) -> None:
        with self._cond:
            self._in_hand = False
            if not cancel.is_cancelled:
                self._done += n
                self._embedded += embedded
                self._cpu = time.thread_time()
                self._cond.notify_all()

    def _log_progress(self, ended: bool) -> None:
        """A line now and then while it embeds, and when its work ends (CITELINE_LOG=info)."""
        now = time.monotonic()
        if not ended and now - self._logged < LOG_SECONDS:
            return
        self._logged = now
        s = self.status()
        if ended and s.total == 0:
            return
        log.info(
            "background embedding: %d of %d sections%s (%d embedded by this worker, "
            "%.1f s CPU, %s thread(s), nice %s)",
            s.done,
            s.total,
            " done" if ended else "",
            s.embedded,
            s.cpu_seconds,
            s.threads if s.threads is not None else "the model's",
            s.nice if s.nice is not None else "unchanged",
        )


__all__ = ["BATCH", "BackgroundEmbedder", "Counted", "Embedded", "Status", "embed", "foreground"]
__all__ += ["background_paused", "pause_background", "resume_background"]
