"""The Engine: one object per server, a fresh snapshot per request.

capture → reuse → analysis → rank → present → JSON. Each request captures the bundle
(reading only what its stat index cannot prove unchanged), brings the bundle's index up to
date (rebuilding only the blocks that hold changed files), checks the SPEC §2 limits in
order, ranks and presents. If a file turns out to have changed during the request, the
request captures again.

Every operation takes a `Call` (what the call carries: bundle, settings, cancel, progress,
unsaved text, arrival time; engine/call.py) and its typed request (or the request's JSON,
which it reads). `Engine.call` makes a Call of a bundle with the engine's settings.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from .answer.present import SectionHit, check_size
from .answer.requests import ConceptsRequest, Relevance, SearchRequest, SymbolsRequest
from .answer.search import Rerank, search_sections, symbol_hits
from .base.cancel import CancelToken
from .base.limits import Settings
from .base.warmer import Warmer
from .call import Bundle, Call, IndexedSnapshot, Result
from .capture.capture import Changed, Fetcher, OnRead, Progress, capture
from .capture.flights import Flights, Serving
from .capture.globs import echo as echo_globs
from .capture.snapshot import Snapshot
from .index.blocks import options_key
from .index.index import Index, Problem
from .index.parallel import Workers, default_workers
from .rank import naming, warming
from .reuse import Reuse, bundle_key
from .semantic.models import ModelSpec
from .store.store import Store, default_folder
from .text.options import AnalysisOptions
from .text.terms import query_terms

if TYPE_CHECKING:
    from .answer.lines import LinesRequest
    from .answer.verify import VerifyRequest
    from .index.build import Ahead
    from .semantic.semantic import Backend
    from .semantic.semantic_engine import SemanticRuntime

T = TypeVar("T")
ATTEMPTS = 3  # captures per request when files keep changing under it
HOLD_BYTES = 256 << 20  # bytes of recently read files kept for snippets and line search


class Engine:
    """Pure search over a bundle: bytes in, JSON-ready results out. Thread-safe.

    `cache`: a folder for the persistent cache, True for the default one
    (CITELINE_CACHE_DIR or the user cache folder), or None/False for none. `reread`: read
    every file on every request (no reuse by stat). `workers`: processes for big cold
    builds (parallel.default_workers()). `journal`: watch each bundle's folders (Linux
    inotify, capture/journal.py) so that a warm request stats only what changed: for the
    long-lived fronts, never a one-shot call. `embed_in_background`: after a semantic or
    hybrid answer, embed every section of its snapshot in a background thread (SPEC §15:
    the long-lived fronts; close() stops it). `prepare_in_background`: after an answer,
    make what later requests on its index want (Index.make_lexicon, naming.hold_all's
    held names: the long-lived fronts) in the engine's one background thread (`warmer`,
    engine/base/warmer.py), which steps aside while a request is served; close() stops it.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        workers: int = 0,
        cache: str | os.PathLike[str] | bool | None = None,
        cache_bytes: int | None = None,
        hold_bytes: int = HOLD_BYTES,
        reread: bool = False,
        journal: bool = False,
        embed_in_background: bool = False,
        prepare_in_background: bool = False,
        embedding: ModelSpec | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.embed_in_background = embed_in_background
        self.prepare_in_background = prepare_in_background
        self.embedding = embedding or ModelSpec()  # the model semantic requests use
        self._semantic: SemanticRuntime | None = None  # made on the first semantic request
        self._semantic_lock = threading.Lock()
        self.workers = Workers(workers)
        self.reuse = Reuse(Store(None), hold_bytes)
        if journal:  # (a long-lived front: watching costs more than one walk saves)
            from .capture.journals import Journals

            self.reuse.journals = Journals()
        self.use_cache(cache, cache_bytes)
        self.reread = reread
        self.flights = Flights()  # captures that requests share
        self.serving = Serving()  # requests running, which background work steps aside for
        self.warmer = Warmer(self.serving.wait_idle)  # (prepare_in_background's one thread)

    @classmethod
    def one_shot(
        cls,
        settings: Settings | None = None,
        *,
        cache: bool | str = True,
        reread: bool = False,
        embedding: ModelSpec | None = None,
    ) -> Engine:
        """The engine of one command-line call: the other cores for a big cold parse, the
        persistent cache for what earlier calls learnt, no file bytes held (nothing asks
        twice), nothing in the background; `embedding`: the model of semantic requests."""
        return cls(
            settings,
            workers=default_workers(),
            cache=cache,
            reread=reread,
            hold_bytes=0,
            embedding=embedding,
        )

    @classmethod
    def long_lived(
        cls,
        settings: Settings | None = None,
        *,
        cache: str | os.PathLike[str] | bool | None = True,
        reread: bool = False,
        hold_bytes: int = HOLD_BYTES,
        embed_in_background: bool = True,
        embedding: ModelSpec | None = None,
    ) -> Engine:
        """The engine of a process that answers many requests (the language server, the MCP
        server, the warm process): the other cores for a big cold parse, change journals
        (a warm request stats only what changed), derived state made between requests, and
        after a semantic answer the rest of the workspace's vectors (`embed_in_background`);
        `embedding`: the model of semantic requests."""
        return cls(
            settings,
            workers=default_workers(),
            cache=cache,
            reread=reread,
            hold_bytes=hold_bytes,
            journal=True,
            embed_in_background=embed_in_background,
            prepare_in_background=True,
            embedding=embedding,
        )

    def use_cache(
        self, cache: str | os.PathLike[str] | bool | None, cache_bytes: int | None = None
    ) -> None:
        """Switch the persistent cache: a folder, True for the default one, None for none."""
        folder = default_folder() if cache is True else (cache or None)
        current = self.reuse.store
        if folder != current.folder or (cache_bytes or current.max_bytes) != current.max_bytes:
            store = Store(folder) if cache_bytes is None else Store(folder, cache_bytes)
            self.reuse.use_store(store)

    def close(self, wait: bool = False) -> None:
        """Stop the worker processes, if any were started, and close the cache (`wait`: see
        parallel.Workers.close; a process about to exit normally passes True)."""
        self.workers.close(wait)
        self.warmer.close()
        for index in self.reuse.indexes():  # the names they hold
            naming.held_of(index).close()
        if self._semantic is not None:
            self._semantic.close()
        self.reuse.store.close()
        if self.reuse.journals is not None:
            self.reuse.journals.close()

    def stop_background(self) -> None:
        """Stop the background embedding (SPEC §15), if a semantic request started it."""
        if self._semantic is not None:
            self._semantic.close()

    def call(
        self,
        bundle: Bundle,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        overlay: Mapping[str, bytes] | None = None,
        fresh_after: float | None = None,
    ) -> Call:
        """A Call of `bundle` with this engine's settings unless others are given."""
        return Call(bundle, settings or self.settings, cancel, progress, overlay, fresh_after)

    def changed(self, bundle: Bundle, paths: Sequence[str] | None = None) -> None:
        """Editor notifications: these bundle-relative paths (None: all) are read again at
        the next capture, whatever their stat says."""
        key = bundle_key(bundle)
        self.reuse.marks.mark(key, paths)
        self.flights.forget(key)

    # -- section search (SPEC §6) ---------------------------------------------------------

    def search(
        self,
        call: Call,
        request: SearchRequest | Mapping[str, object],
        *,
        texts: MutableMapping[str, str] | None = None,
    ) -> Result:
        """Section search (SPEC §6). `texts`, when given, receives the text of each hit's
        file (decoded, without its BOM) by the hit's content_sha256: the bytes this request
        searched, so that a front showing more of a hit than its snippet (the command line's
        numbered lines) never reads the file a second time (SPEC §2)."""
        req = request if isinstance(request, SearchRequest) else SearchRequest.from_json(request)
        # The query's terms before the capture: a query's errors come before the bundle's.
        terms = query_terms(req.query, req.relevance.tokenizer)

        backend = self.semantic_backend(call.cancel) if req.relevance.hybrid else None

        def answer(p: IndexedSnapshot) -> Result:
            rerank = None if backend is None else self._hybrid(call, backend, req.query, p)
            found = search_sections(
                p.snapshot,
                p.index,
                p.fetch,
                req,
                terms,
                skip_invalid=call.settings.skip_invalid,
                cancel=call.cancel,
                texts=texts,
                rerank=rerank,
            )
            return echo_globs(found, call.settings.globs)

        result = self._on_index(call, req.relevance.analysis, answer)
        if backend is not None:
            self._embed_the_rest(call, req.relevance.analysis)
        return check_size(echo_strict(result, req.strict), call.settings.limits)

    # -- semantic mode and profile: hybrid (SPEC §15; engine/semantic/semantic_engine.py) ----------

    def semantic(self) -> SemanticRuntime:
        """The engine's semantic runtime (nothing of the model is loaded until a semantic
        or hybrid request asks for it)."""
        with self._semantic_lock:
            if self._semantic is None:
                from .semantic.loading import loader_of
                from .semantic.semantic_engine import SemanticRuntime

                self._semantic = SemanticRuntime(
                    background=self.embed_in_background, loader=loader_of(self.embedding)
                )
            return self._semantic

    def use_embedding(self, spec: ModelSpec) -> None:
        """Choose the embedding model (SPEC §15): the next semantic or hybrid request loads
        it; the background work of the previous one stops."""
        with self._semantic_lock:
            if spec == self.embedding:
                return
            self.embedding = spec
            old, self._semantic = self._semantic, None
        if old is not None:
            old.close()

    def semantic_backend(self, cancel: CancelToken | None = None) -> Backend:
        """The model, loaded once (semantic.unavailable, naming the extra, without it; a
        load that waits on an endpoint ends when `cancel` is set)."""
        runtime = self.semantic()
        return runtime.backend(self.reuse.store, cancel)

    def _hybrid(self, call: Call, backend: Backend, query: str, p: IndexedSnapshot) -> Rerank:
        from .semantic.semantic_engine import hybrid_rerank

        return hybrid_rerank(self.semantic(), self.reuse.store, call, backend, query, p)

    def _embed_the_rest(self, call: Call, options: AnalysisOptions) -> None:
        if self._semantic is not None and self.embed_in_background:
            from .semantic.semantic_engine import embed_the_rest

            embed_the_rest(self._on_index, self.reuse.store, self._semantic, call, options)

    # -- sections as editor symbols (SPEC §11) --------------------------------------------

    def symbols(
        self,
        call: Call,
        request: SymbolsRequest | str,
        *,
        cap: int = 100,
        list_cap: int = 1000,
        relevance: Relevance | Mapping[str, object] | None = None,
    ) -> list[SectionHit]:
        """As-you-type section search (SymbolsRequest), or of the query given as a string,
        with `cap`, `list_cap` and `relevance` beside it."""
        if not isinstance(request, SymbolsRequest):
            rel = (
                relevance
                if isinstance(relevance, Relevance)
                else Relevance.from_mapping(relevance or {})
            )
            request = SymbolsRequest(request, cap, list_cap, rel)
        req = request
        return self._on_index(call, req.relevance.analysis, lambda p: symbol_hits(p.index, req))

    # -- concept search (SPEC §9) ---------------------------------------------------------

    def concepts(
        self,
        call: Call,
        request: ConceptsRequest | Mapping[str, object],
    ) -> Result:
        """Concept search (SPEC §9; engine/answer/concepts.py). Unsaved text is not searched: a
        concept is a file's front matter, as saved."""
        from .answer.concepts import search_concepts

        req = (
            request if isinstance(request, ConceptsRequest) else ConceptsRequest.from_json(request)
        )
        call = replace(call, overlay=None)
        skip_invalid = call.settings.skip_invalid

        def answer(p: IndexedSnapshot) -> Result:
            found = search_concepts(
                p.index,
                p.snapshot.revision,
                req,
                skip_invalid=skip_invalid,
                # the concept title rule: a file's first H1 where front matter has no title;
                # strict keeps okf's (front matter only)
                h1_titles=not getattr(req, "strict", False),
            )
            return echo_globs(found, call.settings.globs)

        result = echo_strict(self._on_index(call, AnalysisOptions(), answer), req.strict)
        return check_size(result, call.settings.limits)

    # -- line search (SPEC §8) ------------------------------------------------------------

    def lines(
        self,
        call: Call,
        request: LinesRequest | Mapping[str, object],
    ) -> Result:
        """Line search (SPEC §8; engine/answer/lines.py)."""
        from .answer.lines import LinesRequest, search_lines

        req = request if isinstance(request, LinesRequest) else LinesRequest.from_json(request)
        skip_invalid = call.settings.skip_invalid
        if req.semantic:
            result = echo_strict(self._semantic_lines(call, req), req.strict)
            return check_size(result, call.settings.limits)

        def answer(snap: Snapshot, fetch: Fetcher) -> Result:
            found = search_lines(snap, req, fetch, cancel=call.cancel, skip_invalid=skip_invalid)
            return echo_globs(found, call.settings.globs)

        result = echo_strict(self._on_snapshot(call, answer), req.strict)
        return check_size(result, call.settings.limits)

    def _semantic_lines(self, call: Call, req: LinesRequest) -> Result:
        """Semantic mode (SPEC §15; engine/semantic/semantic_engine.py)."""
        from .semantic.semantic_engine import RECALL_ANALYSIS, semantic_answer

        backend = self.semantic_backend(call.cancel)
        answer = semantic_answer(self.semantic(), self.reuse.store, call, backend, req)
        result = echo_globs(self._on_index(call, RECALL_ANALYSIS, answer), call.settings.globs)
        self._embed_the_rest(call, RECALL_ANALYSIS)
        return result

    # -- verifying citations (SPEC §18; engine/answer/verify.py) --------------------------

    def verify(
        self,
        call: Call,
        request: VerifyRequest | Mapping[str, object],
    ) -> Result:
        """Check each citation against the files as they are now (with the call's unsaved
        text, as search sees it). On the index a search of the same profile uses, so a warm
        engine reads at most the cited files."""
        from .answer.verify import VerifyRequest, verify_citations

        req = request if isinstance(request, VerifyRequest) else VerifyRequest.from_json(request)
        profile = "contract" if req.strict else "recall"  # the index the fronts search
        options = Relevance.from_mapping({"profile": profile}).analysis

        def answer(p: IndexedSnapshot) -> Result:
            return verify_citations(p.snapshot, p.index, p.fetch, req, options.tokenizer)

        result = self._on_index(call, options, answer, check=False)
        return check_size(result, call.settings.limits)

    # -- editor helpers -------------------------------------------------------------------

    def problems(
        self,
        call: Call,
        options: AnalysisOptions = AnalysisOptions(),
    ) -> list[Problem]:
        """Parse errors of every searchable file (for diagnostics); capture errors raise.
        Neither progress nor unsaved text: diagnostics of open documents are the editor's."""
        call = replace(call, progress=None, overlay=None, fresh_after=None)  # a capture of its own
        return self._on_index(call, options, lambda p: list(p.index.problems), check=False)

    def prepare(
        self,
        call: Call,
        options: AnalysisOptions = AnalysisOptions(),
    ) -> Index:
        """Capture and index the bundle (a warm-up); the limits are checked. A warm-up that
        gives `fresh_after` leaves its capture to requests that arrived before it started
        (engine/capture/flights.py). Unsaved text is not indexed."""
        call = replace(call, overlay=None)
        return self._on_index(call, options, lambda p: p.index)

    # -- stages ---------------------------------------------------------------------------

    def capture(
        self,
        call: Call,
        *,
        on_read: OnRead | None = None,
    ) -> Snapshot:
        """A fresh snapshot of the bundle (`on_read`: see capture.capture), or one that a
        capture started since the call's `fresh_after` took (engine/capture/flights.py); never a
        shared one for unsaved text."""
        key = bundle_key(call.bundle)
        if call.fresh_after is None or call.overlay:
            return self._capture_now(call, key, on_read)
        return self.flights.share(
            (key, call.settings),
            call.fresh_after,
            call.cancel,
            lambda: self._capture_now(call, key, on_read, overlay=False),
        )

    def _capture_now(
        self, call: Call, key: str, on_read: OnRead | None, *, overlay: bool = True
    ) -> Snapshot:
        reuse = self.reuse
        known = None if self.reread else reuse.known(key)
        clock, marked = reuse.marks.current(key)
        held = reuse.held if reuse.held.max_bytes > 0 else None
        unsaved = call.overlay if overlay else None
        journals = None if self.reread else reuse.journals
        look = None if journals is None else journals.look(key, key, known, call.settings)
        snap = capture(
            call.bundle,
            call.settings,
            call.cancel,
            call.progress,
            held,
            known=known,
            marked=marked,
            overlay=unsaved,
            on_read=on_read,
            look=look,
        )
        if journals is not None and look is not None:
            journals.made(key, look, snap.known, snap.walked)
        reuse.marks.clear(key, clock)
        reuse.remember(key, snap.known)
        if snap.read or unsaved:
            reuse.held.put([(f.sha256, f.data) for f in snap.files if f.data is not None])
        return snap

    def index(
        self,
        snapshot: Snapshot,
        options: AnalysisOptions = AnalysisOptions(),
        *,
        bundle: Bundle | None = None,
        settings: Settings | None = None,
        fetch: Fetcher | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        ahead: Ahead | None = None,
    ) -> Index:
        """The index of the snapshot's searchable files (not yet checked against limits);
        `ahead`: blocks started while it was captured (see _ahead)."""
        settings = settings or self.settings
        key = (bundle_key(bundle or snapshot.root), options_key(options), settings.reserved)
        live = self.reuse.index(key)
        if live is not None and live.revision == snapshot.revision:
            return live.index
        from .index.build import update  # the parser and tokenizer: only when something changed

        own = fetch is None
        fetch = fetch or Fetcher(snapshot, self.reuse.held.get)
        try:
            built = update(
                live.index if live is not None else None,
                snapshot.searchable,
                options,
                fetch=fetch,
                structures=self.reuse.structures,
                workers=self.workers,
                cancel=cancel,
                progress=progress,
                ahead=ahead,
            )
        finally:
            if own:
                fetch.__exit__()
        self.reuse.remember_index(
            key, snapshot.revision, built.index, built.new_blocks, built.stored
        )
        return built.index

    def _on_index(
        self,
        call: Call,
        options: AnalysisOptions,
        then: Callable[[IndexedSnapshot], T],
        check: bool = True,
    ) -> T:
        """Capture, index, check the limits (unless not `check`) and run `then` (see
        _on_snapshot)."""
        ahead = None if call.overlay else self._ahead(call.bundle, options, call.settings)

        def indexed(snap: Snapshot, fetch: Fetcher) -> T:
            idx = self.index(
                snap,
                options,
                bundle=call.bundle,
                settings=call.settings,
                fetch=fetch,
                cancel=call.cancel,
                progress=call.progress,
                ahead=ahead,
            )
            if check:
                idx.check(call.settings)
            answer = then(IndexedSnapshot(snap, idx, fetch))
            if self.prepare_in_background and warming.wanted(idx):
                self.warmer.add(idx, functools.partial(warming.warm, idx))
            return answer

        try:
            return self._on_snapshot(call, indexed, ahead.add if ahead is not None else None)
        finally:
            if ahead is not None:
                ahead.close()

    def _ahead(self, bundle: Bundle, options: AnalysisOptions, settings: Settings) -> Ahead | None:
        """Blocks to build while the capture reads, when this is a cold build on several
        cores: nothing known of the bundle (every file will be read) and no index to update."""
        if self.workers.count < 2:
            return None
        key = bundle_key(bundle)
        if self.reuse.known(key) is not None:
            return None
        if self.reuse.index((key, options_key(options), settings.reserved)) is not None:
            return None
        from .index.build import Ahead

        return Ahead(options, self.workers, self.reuse.structures, frozenset(settings.reserved))

    def _on_snapshot(
        self,
        call: Call,
        then: Callable[[Snapshot, Fetcher], T],
        on_read: OnRead | None = None,
    ) -> T:
        """Capture and run `then` with the snapshot and a Fetcher of its files' bytes; again
        if a file changed meanwhile (the Fetcher found other bytes than the records name).
        The call's `fresh_after` and `on_read` (see capture()) serve the first attempt only.

        The last attempt reads every file, so all its bytes are at hand and it cannot fail so.
        What the request leaves for the cache is written in one transaction at its end.
        """
        again = replace(call, fresh_after=None)
        runtime = self._semantic
        # While any request runs, the background embedder starts no passage.
        with (
            nullcontext() if runtime is None else runtime.foreground(),
            self.serving.request(),
            self.reuse.store.batch(),
        ):
            for attempt in range(ATTEMPTS):
                first = attempt == 0
                snap = self.capture(call if first else again, on_read=on_read if first else None)
                with Fetcher(snap, self.reuse.held.get) as fetch:
                    try:
                        return then(snap, fetch)
                    except Changed as changed:
                        paths = None if attempt >= ATTEMPTS - 2 else [changed.path]
                        self.changed(call.bundle, paths)
                    finally:
                        self.reuse.held.put(fetch.read)
        raise AssertionError("unreachable: the last attempt read every file")


__all__ = ["Call", "Engine", "Index", "IndexedSnapshot", "Problem", "SectionHit"]


def echo_strict(result: Result, strict: bool) -> Result:
    """A result asked for with `strict` says so (SPEC §17); otherwise it is left as it is."""
    if strict:
        result["strict"] = True
    return result
