"""Section vectors in the engine's persistent cache (SPEC §15 "Costs"): semantic mode's own
kind of row in the store, which knows nothing of vectors (the store is below semantic in the
engine's layers)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from ..store.store import Store
from .semantic import decode_vector, encode_vector

log = logging.getLogger("citeline.cache")  # (the cache's own log, as before the move)

VECTOR = "vector"


class Vectors:
    """Section vectors in a store, under the kind `vector`, keyed by semantic.passage_key
    (which already names the model, the passage rule and the passage), the value
    semantic.encode_vector's checked bytes (no pickle).

    A value that fails semantic.decode_vector (truncated, altered, another model's) is
    reported missing, so the caller recomputes it and the write replaces it: a cached
    vector is never trusted unchecked."""

    def __init__(self, store: Store, dim: int) -> None:
        self.store = store
        self.dim = dim

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        """The vectors found and intact for `keys` (the others left out)."""
        found: dict[str, list[float]] = {}
        for key, blob in self.store.get_many(VECTOR, list(dict.fromkeys(keys))).items():
            try:
                found[key] = decode_vector(blob, self.dim)
            except ValueError as exc:
                log.info("cached vector %s refused (%s): recomputed", key[:12], exc)
        return found

    def put_many(self, items: Iterable[tuple[str, Sequence[float]]]) -> bool:
        """Store (key, vector) pairs in one transaction; False when the cache could not."""
        rows = []
        for key, vector in items:
            if len(vector) != self.dim:
                raise ValueError(f"a vector of this model has {self.dim} components")
            rows.append((VECTOR, key, encode_vector(vector)))
        return self.store.put(rows) if rows else True


__all__ = ["VECTOR", "Vectors"]
