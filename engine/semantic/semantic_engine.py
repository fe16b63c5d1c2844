"""Semantic mode and `profile: hybrid` inside the Engine (SPEC §15; docs/semantic.md,
"What phase 2b wires").

The Engine owns one `SemanticRuntime`: the model is loaded on the first semantic or hybrid
request (semantic_backends.load, which raises the error naming the extra), its vectors are
read from and written to the engine's own persistent cache, and a long-lived process may
have it embed every section of the last snapshot in the background. Imported only by
those two requests, so that the lexical paths load nothing of the model or numpy
(tests/engine/test_semantic_isolation.py).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ..answer.requests import Relevance
from ..answer.search import Rerank, decoded_text, file_named
from ..base.cancel import CancelToken
from ..store.store import Store
from .embedding import BATCH, BackgroundEmbedder, Embedded, Status, embed, foreground
from .loading import Loader, default_loader
from .recall import K, recall_evidence, recall_ranked
from .reference import REFERENCE, REFERENCE_TOPICS
from .semantic import (
    CALIBRATIONS,
    Backend,
    Calibration,
    Locked,
    Passage,
    decode_vector,
    encode_vector,
    passage_key,
    query_script,
    standing,
)
from .semantic_search import Candidate, hybrid, section_candidate, semantic_search
from .unfitted import Unfitted, centroid, mean_cosine, reads_cjk, sample_positions
from .vectors import Vectors

if TYPE_CHECKING:
    from ..answer.lines import LinesRequest
    from ..call import Call, IndexedSnapshot, Result
    from ..capture.snapshot import Snapshot
    from ..index.index import Index, Section
    from ..text.options import AnalysisOptions

_log = logging.getLogger(__name__)
# Engine._on_index: run a function on a call's snapshot and its index.
OnIndex = Callable[["Call", "AnalysisOptions", Callable[["IndexedSnapshot"], None]], None]
QUERY_VECTORS = 64  # recent queries whose vectors are kept (a repeated question skips ~50 ms)
CENTROIDS = 8  # corpus samples' centroids kept (unfitted.centroid), by model and snapshot
REMEMBERED = 4096  # vectors kept in memory (398 bytes each: ≈ 1.6 MB)
RECALL_RELEVANCE = Relevance.from_mapping({"profile": "recall"})
RECALL_ANALYSIS = RECALL_RELEVANCE.analysis  # semantic mode's candidates are recall's


class Remembered(Vectors):
    """The store's vectors with the last REMEMBERED of them in memory too: an engine
    without a persistent cache (or one that is off) embeds a section once per process.
    They are kept as the cache keeps them (encode_vector's bytes; embed() rounds what it
    computes so too), so that a score does not depend on where its vector came from."""

    def __init__(self, store: Store, dim: int) -> None:
        super().__init__(store, dim)
        self._memory: OrderedDict[str, bytes] = OrderedDict()  # encode_vector's 398 bytes
        self._held = threading.Lock()

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        with self._held:
            held = {k: self._memory[k] for k in keys if k in self._memory}
        found = {k: decode_vector(blob, self.dim) for k, blob in held.items()}
        rest = [k for k in keys if k not in found]
        if rest:
            found.update(super().get_many(rest))
        return found

    def put_many(self, items: Iterable[tuple[str, Sequence[float]]]) -> bool:
        rows = [(k, list(v)) for k, v in items]
        stored = super().put_many(rows)
        with self._held:
            for key, vector in rows:
                self._memory[key] = encode_vector(vector)
                self._memory.move_to_end(key)
            while len(self._memory) > REMEMBERED:
                self._memory.popitem(last=False)
        return stored


class SemanticRuntime:
    """The model of one Engine and what it needs: thread-safe; `background`: the engine's
    wish at its start to embed every section of each answered snapshot in a background
    thread (long-lived fronts only). The worker is made by embed_the_rest, which the engine
    calls only while its own `embed_in_background` is on (a front's setting turns it off)."""

    def __init__(self, *, background: bool = False, loader: Loader | None = None) -> None:
        self._lock = threading.Lock()
        self._loader = loader or default_loader
        self._backend: Backend | None = None
        self.background = background
        self._embedder: BackgroundEmbedder | None = None
        self._store: Store | None = None
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._reads_cjk: dict[str, bool] = {}  # unfitted.reads_cjk, by model id
        self._centroids: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self._remembered: Remembered | None = None
        # (model id, snapshot revision) of this thread's last answer, and of the last
        # snapshot given to the worker: a request on a snapshot the worker already has
        # starts no submit (which decodes every file and makes every passage again, and
        # would restart the worker's pass over the cache): docs/semantic.md, "The fix: a
        # snapshot is given to the background worker once"
        self._answered = threading.local()
        self._submitted: tuple[str, str] | None = None
        self.submissions = 0  # snapshots given to the worker (embed_the_rest's threads)

    # -- the model ------------------------------------------------------------------------

    def backend(self, store: Store, cancel: CancelToken | None = None) -> Backend:
        """The model (loaded once; semantic.unavailable when the extra is missing), behind
        a lock of this runtime's that its background worker takes too. Loaded outside this
        runtime's lock, so that a request waiting for it can be cancelled (`cancel`)."""
        with self._lock:
            if self._backend is not None:
                return self._backend
        loaded = self._loader(cancel)
        with self._lock:
            if self._backend is None:
                self._backend = Locked(loaded, threading.Lock())
            return self._backend

    @property
    def model_id(self) -> str | None:
        """The loaded model's id (None before a semantic or hybrid request loaded it)."""
        backend = self._backend
        return None if backend is None else backend.model_id

    def embedder(self, store: Store) -> BackgroundEmbedder:
        """The background worker over `store`, made on first use (a worker over another
        store, the engine's cache having changed, is closed)."""
        backend = self.backend(store)
        with self._lock:
            if self._embedder is None or self._store is not store:
                if self._embedder is not None:
                    self._embedder.close()
                self._embedder = BackgroundEmbedder(backend, Vectors(store, backend.dim))
                self._store = store
                self._submitted = None
            return self._embedder

    def calibration(self, backend: Backend) -> Calibration | None:
        """The model's fitted calibration, or None for a model nobody fitted: its score is
        then its cosine's standing against the corpus (semantic.Standing, SPEC §15)."""
        return CALIBRATIONS.get(backend.model_id)

    def reference_vectors(
        self, backend: Backend, store: Store, call: Call | None = None
    ) -> Sequence[Sequence[float]]:
        """The reference passages' vectors (semantic.Standing): embedded once per model,
        then read from the cache."""
        passages = [Passage(t, passage_key(backend.model_id, t)) for t in REFERENCE]
        cancel, progress = (call.cancel, _report(call)) if call else (None, None)
        return self.vectors(backend, store, passages, cancel, progress).vectors

    def reads(self, backend: Backend, store: Store, query: str, call: Call | None = None) -> bool:
        """Whether the model reads the query's script: a Latin query, a model with a fitted
        calibration (measured), or unfitted.reads_cjk over the reference passages' vectors,
        worked out once per model."""
        if query_script(query) != "cjk" or self.calibration(backend) is not None:
            return True
        with self._lock:
            found = self._reads_cjk.get(backend.model_id)
        if found is None:
            scripts = [query_script(t) for t in REFERENCE]
            found = reads_cjk(
                self.reference_vectors(backend, store, call), REFERENCE_TOPICS, scripts
            )
            with self._lock:
                self._reads_cjk[backend.model_id] = found
        return found

    def corpus_mean(
        self,
        backend: Backend,
        store: Store,
        p: IndexedSnapshot,
        query_vector: Sequence[float],
        call: Call | None = None,
    ) -> float:
        """The query's mean cosine with the corpus sample (unfitted.sample_positions), whose
        vectors are embedded once per corpus and model, then cached; their centroid is kept
        per model and snapshot (a function of both), so a request takes one product."""
        key = (backend.model_id, p.snapshot.revision)  # the index: recall's, of the snapshot
        with self._lock:
            centre = self._centroids.get(key)
        if centre is None:
            secs = [p.index.section(g) for g in sample_positions(p.index.n)]
            sample = candidates(backend.model_id, p.snapshot, p.index, p.fetch, secs, passages=True)
            cancel, progress = (call.cancel, _report(call)) if call else (None, None)
            centre = centroid(self.vectors(backend, store, sample, cancel, progress).vectors)
            with self._lock:
                self._centroids[key] = centre
                while len(self._centroids) > CENTROIDS:
                    self._centroids.popitem(last=False)
        return mean_cosine(query_vector, centre)

    def foreground(self) -> Any:
        """Held by every request this engine serves: no background worker of the process
        starts a passage meanwhile (they share the model, and the CPU)."""
        return foreground()

    def status(self) -> Status | None:
        embedder = self._embedder
        return None if embedder is None else embedder.status()

    def close(self) -> None:
        with self._lock:
            if self._embedder is not None:
                self._embedder.close()
                self._embedder = None
            self._submitted = None

    # -- a request's vectors --------------------------------------------------------------

    def vectors(
        self,
        backend: Backend,
        store: Store,
        passages: Sequence[Passage],
        cancel: CancelToken | None,
        progress: Callable[[int, int], None] | None,
    ) -> Embedded:
        with self._lock:
            if self._remembered is None or self._remembered.store is not store:
                self._remembered = Remembered(store, backend.dim)
            vectors = self._remembered
        # A backend that batches (an endpoint) is given its batch between two checks of
        # the cancel token (it checks the token itself between its requests).
        step = max(BATCH, int(getattr(backend, "batch", 1)))
        return embed(passages, backend, vectors, cancel, progress, batch=step)

    def query_vector(self, backend: Backend, query: str) -> list[float]:
        key = f"{backend.model_id}\0{query}"
        with self._lock:
            found = self._queries.get(key)
            if found is not None:
                self._queries.move_to_end(key)
                return found
        vector = backend.embed_query(query)
        with self._lock:
            self._queries[key] = vector
            while len(self._queries) > QUERY_VECTORS:
                self._queries.popitem(last=False)
        return vector

    def answered(self, model_id: str, snapshot: Snapshot) -> None:
        """Called by each semantic or hybrid answer, in the thread that answers."""
        self._answered.last = (model_id, snapshot.revision)

    def take_submit(self) -> bool:
        """Whether the snapshot this thread last answered over should go to the worker
        (marking it given): not when the worker already has it and has not failed on it.
        Unknown (no answer seen in this thread since its last call): yes, as before. The
        note is taken, so that it never outlives its request."""
        last = self._answered.__dict__.pop("last", None)
        with self._lock:
            embedder = self._embedder
            if embedder is None:
                return False
            if last is not None and last == self._submitted and embedder.status().error is None:
                return False
            self._submitted = last
            self.submissions += 1
            return True

    def forget_submit(self) -> None:
        """The submit failed: the next answer gives the snapshot again."""
        with self._lock:
            self._submitted = None

    def submit(self, model_id: str, snapshot: Snapshot, index: Index, fetch: Any) -> None:
        """After an answer (never before it): every section of the snapshot to the
        background worker, which embeds those not yet cached."""
        if self._embedder is None:
            return
        sections = [index.section(g) for g in range(index.n)]
        self._embedder.submit(candidates(model_id, snapshot, index, fetch, sections, passages=True))


def _report(call: Call) -> Callable[[int, int], None]:
    progress = call.progress

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress("embed", done, total)

    return report


def semantic_answer(
    runtime: SemanticRuntime, store: Store, call: Call, backend: Backend, req: LinesRequest
) -> Callable[[IndexedSnapshot], Result]:
    """Semantic mode over an indexed snapshot: recall's best K sections for the query,
    ordered by the calibrated score, those under the threshold dropped (SPEC §15)."""
    calibration = runtime.calibration(backend)

    def answer(p: IndexedSnapshot) -> Result:
        runtime.answered(backend.model_id, p.snapshot)
        terms, best = recall_ranked(p.index, req.pattern, RECALL_RELEVANCE.tokenizer)
        sections = [p.index.section(s.section) for s in best]
        cands = candidates(backend.model_id, p.snapshot, p.index, p.fetch, sections)
        passages = [c.passage for c in cands]
        embedded = runtime.vectors(backend, store, passages, call.cancel, _report(call))
        query_vector = runtime.query_vector(backend, req.pattern)
        scorer: Calibration | Unfitted
        if calibration is not None:
            scorer = calibration
        else:
            refs = runtime.reference_vectors(backend, store, call)
            reads = runtime.reads(backend, store, req.pattern, call)
            scorer = Unfitted(
                standing(backend.model_id, query_vector, refs),
                recall_evidence(p.index, terms, best),
                reads,
                partial(runtime.corpus_mean, backend, store, p, query_vector, call)
                if p.index.n
                else None,
            )
        found = semantic_search(
            req.pattern,
            query_vector,
            cands,
            embedded.vectors,
            scorer,
            req.threshold,
            req.limit,
            req.context,
        )
        return found.to_json(p.snapshot.revision)

    return answer


def hybrid_rerank(
    runtime: SemanticRuntime,
    store: Store,
    call: Call,
    backend: Backend,
    query: str,
    p: IndexedSnapshot,
) -> Rerank:
    """`profile: hybrid`: recall's best K hits in the order of the measured fusion, each
    hit's `score` the fused one; the options echo names the model (SPEC §15)."""
    runtime.answered(backend.model_id, p.snapshot)

    def reads_script(query: str) -> bool:
        return runtime.reads(backend, store, query, call)

    def order(sections: Sequence[Section], hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        passages = candidates(
            backend.model_id, p.snapshot, p.index, p.fetch, sections, passages=True
        )
        embedded = runtime.vectors(backend, store, passages, call.cancel, _report(call))
        query_vector = runtime.query_vector(backend, query)
        fused = hybrid(hits, embedded.vectors, query_vector, reads=reads_script(query))
        return [{**f.hit, "score": f.score} for f in fused]

    return Rerank(K, order, {"model": backend.model_id})


def embed_the_rest(
    on_index: OnIndex, store: Store, runtime: SemanticRuntime, call: Call, options: AnalysisOptions
) -> None:
    """After a semantic or hybrid answer (never before it), in a long-lived process: every
    section of the bundle to the background worker, from a thread of its own so that the
    answer does not wait for the decoding of every file. `on_index`: the engine's way to
    run a function on the call's snapshot and index (semantic mode is handed what it needs,
    never the Engine)."""
    backend = runtime.backend(store)
    runtime.embedder(store)
    if not runtime.take_submit():
        return
    quiet = replace(call, progress=None, cancel=None, overlay=None, fresh_after=None)

    def submit() -> None:
        try:
            on_index(
                quiet,
                options,
                lambda p: runtime.submit(backend.model_id, p.snapshot, p.index, p.fetch),
            )
        except Exception:  # pragma: no cover - the next request says what is wrong
            runtime.forget_submit()
            _log.info("background embedding not started", exc_info=True)

    threading.Thread(target=submit, name="citeline-embed-submit", daemon=True).start()


def candidates(
    model_id: str,
    snapshot: Snapshot,
    index: Index,
    fetch: Any,
    sections: Sequence[Section],
    *,
    passages: bool = False,
) -> list[Any]:
    """The Candidate of each section (or only its Passage, `passages`), from the decoded
    text the snippets use (each file decoded once)."""
    from .semantic import passage

    texts: dict[str, str] = {}
    out: list[Any] = []
    for sec in sections:
        text = texts.get(sec.path)
        if text is None:
            text = texts[sec.path] = decoded_text(fetch(file_named(snapshot, sec.path)))
        if passages:
            body = text[sec.start : sec.end]
            out.append(passage(model_id, sec.title, sec.outline, sec.heading, body))
            continue
        out.append(section_candidate(model_id, sec, text))
    return out


__all__ = [
    "RECALL_ANALYSIS",
    "Candidate",
    "K",
    "SemanticRuntime",
    "candidates",
    "embed_the_rest",
    "hybrid_rerank",
    "semantic_answer",
]
