"""The Engine: one object per server, a fresh snapshot per request.

capture → reuse → analysis → rank → snippets → JSON. Each request captures the bundle
(reading only what its stat index cannot prove unchanged), brings the bundle's index up to
date (rebuilding only the blocks that hold changed files), checks the SPEC §2 limits in
order, ranks and presents. If a file turns out to have changed during the request, the
request captures again.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .blocks import options_key
from .cancel import CancelToken
from .capture import CapturedFile, Changed, Fetcher, OnRead, Progress, Snapshot, capture
from .errors import CitelineError
from .index import Index, Problem, Section
from .limits import Settings
from .options import AnalysisOptions
from .parallel import Workers
from .present import check_size, locator
from .rank import rank
from .requests import ConceptsRequest, Relevance, SearchRequest
from .reuse import Reuse, bundle_key
from .reuse.store import Store, default_folder
from .snippets import snippet
from .terms import Tokenizer, normalise, query_terms, word_re

if TYPE_CHECKING:
    from .build import Ahead

Bundle = str | os.PathLike[str]
T = TypeVar("T")
ATTEMPTS = 3  # captures per request when files keep changing under it
LANDED_KEPT = 8  # finished captures kept to share (one per bundle and settings)
HOLD_BYTES = 256 << 20  # bytes of recently read files kept for snippets and line search


@dataclass(frozen=True, slots=True)
class SectionHit:
    """A ranked section, before presentation (used by symbols and search alike)."""

    path: str
    concept_id: str
    title: str
    heading: str
    level: int
    line_start: int  # 1-based
    line_end: int
    score: float
    matched: tuple[str, ...]


@dataclass(slots=True)
class _Flight:
    """A capture, that requests which arrived before it started may share (running or
    finished: Engine.capture)."""

    started: float
    done: threading.Event = field(default_factory=threading.Event)
    snapshot: Snapshot | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request's snapshot and its checked index."""

    snapshot: Snapshot
    index: Index
    fetch: Fetcher


class Engine:
    """Pure search over a bundle: bytes in, JSON-ready results out. Thread-safe.

    `cache`: a folder for the persistent cache, True for the default one
    (CITELINE_CACHE_DIR or the user cache folder), or None/False for none. `reread`: read
    every file on every request (no reuse by stat). `workers`: processes for big cold
    builds (parallel.default_workers()).
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
    ) -> None:
        self.settings = settings or Settings()
        self.workers = Workers(workers)
        self.reuse = Reuse(Store(None), hold_bytes)
        self.use_cache(cache, cache_bytes)
        self.reread = reread
        self._flights: dict[tuple[str, Settings], _Flight] = {}  # captures in progress
        self._landed: dict[tuple[str, Settings], _Flight] = {}  # the last finished ones
        self._flights_lock = threading.Lock()

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
        self.reuse.store.close()

    def changed(self, bundle: Bundle, paths: Sequence[str] | None = None) -> None:
        """Editor notifications: these bundle-relative paths (None: all) are read again at
        the next capture, whatever their stat says."""
        key = bundle_key(bundle)
        self.reuse.marks.mark(key, paths)
        with self._flights_lock:
            for flight_key in [k for k in self._landed if k[0] == key]:
                del self._landed[flight_key]

    # -- stages ---------------------------------------------------------------------------

    def capture(
        self,
        bundle: Bundle,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        overlay: Mapping[str, bytes] | None = None,
        fresh_after: float | None = None,
        on_read: OnRead | None = None,
    ) -> Snapshot:
        """A fresh snapshot of the bundle (`on_read`: see capture.capture).

        `fresh_after` (a time.monotonic() reading: when the request arrived) lets a request
        use a capture of the same bundle and settings that started at or after that moment,
        still running or finished: it is then as fresh as one of its own would be (requests
        an editor sends together walk the workspace once, and those that waited for the
        warm-up use the warm-up's capture if it started after they arrived). An editor's
        notification of a change forgets the finished captures of that bundle.
        """
        settings = settings or self.settings
        key = bundle_key(bundle)
        if fresh_after is None or overlay:
            return self._capture(bundle, key, settings, cancel, progress, overlay, on_read)
        flight_key = (key, settings)
        with self._flights_lock:
            flight = self._flights.get(flight_key)
            landed = self._landed.get(flight_key)
        if flight is not None and flight.started >= fresh_after:
            while not flight.done.wait(0.05):
                if cancel is not None:
                    cancel.check()
            if flight.snapshot is not None:
                return flight.snapshot
        if landed is not None and landed.started >= fresh_after:
            assert landed.snapshot is not None
            return landed.snapshot
        flight = _Flight(time.monotonic())
        with self._flights_lock:
            self._flights[flight_key] = flight
        try:
            snap = self._capture(bundle, key, settings, cancel, progress, None, on_read)
            flight.snapshot = snap
            with self._flights_lock:
                before = self._landed.get(flight_key)
                if before is None or before.started < flight.started:
                    self._landed.pop(flight_key, None)
                    self._landed[flight_key] = _Flight(flight.started, snapshot=_records(snap))
                    while len(self._landed) > LANDED_KEPT:
                        del self._landed[next(iter(self._landed))]
            return flight.snapshot
        finally:
            flight.done.set()
            with self._flights_lock:
                if self._flights.get(flight_key) is flight:
                    del self._flights[flight_key]

    def _capture(
        self,
        bundle: Bundle,
        key: str,
        settings: Settings,
        cancel: CancelToken | None,
        progress: Progress | None,
        overlay: Mapping[str, bytes] | None,
        on_read: OnRead | None = None,
    ) -> Snapshot:
        reuse = self.reuse
        known = None if self.reread else reuse.known(key)
        clock, marked = reuse.marks.current(key)
        held = reuse.held if reuse.held.max_bytes > 0 else None
        snap = capture(
            bundle,
            settings,
            cancel,
            progress,
            held,
            known=known,
            marked=marked,
            overlay=overlay,
            on_read=on_read,
        )
        reuse.marks.clear(key, clock)
        reuse.remember(key, snap.known)
        if snap.read or overlay:
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
        from .build import update  # the parser and tokenizer: only when something changed

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

    def _prepared(
        self,
        bundle: Bundle,
        options: AnalysisOptions,
        settings: Settings,
        cancel: CancelToken | None,
        progress: Progress | None,
        overlay: Mapping[str, bytes] | None,
        then: Callable[[Prepared], T],
        check: bool = True,
        fresh_after: float | None = None,
    ) -> T:
        """Capture, index, check and run `then` (see _captured)."""
        ahead = None if overlay else self._ahead(bundle, options, settings)

        def indexed(snap: Snapshot, fetch: Fetcher) -> T:
            idx = self.index(
                snap,
                options,
                bundle=bundle,
                settings=settings,
                fetch=fetch,
                cancel=cancel,
                progress=progress,
                ahead=ahead,
            )
            if check:
                idx.check(settings)
            return then(Prepared(snap, idx, fetch))

        try:
            return self._captured(
                bundle,
                settings,
                cancel,
                progress,
                overlay,
                indexed,
                fresh_after,
                ahead.add if ahead is not None else None,
            )
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
        from .build import Ahead

        return Ahead(options, self.workers, self.reuse.structures, frozenset(settings.reserved))

    def _captured(
        self,
        bundle: Bundle,
        settings: Settings,
        cancel: CancelToken | None,
        progress: Progress | None,
        overlay: Mapping[str, bytes] | None,
        then: Callable[[Snapshot, Fetcher], T],
        fresh_after: float | None = None,
        on_read: OnRead | None = None,
    ) -> T:
        """Capture and run `then` with the snapshot and a Fetcher of its files' bytes; again
        if a file changed meanwhile (the Fetcher found other bytes than the records name).
        `fresh_after`, `on_read`: see capture() (only for the first attempt).

        The last attempt reads every file, so all its bytes are at hand and it cannot fail so.
        What the request leaves for the cache is written in one transaction at its end.
        """
        with self.reuse.store.batch():
            for attempt in range(ATTEMPTS):
                snap = self.capture(
                    bundle,
                    settings=settings,
                    cancel=cancel,
                    progress=progress,
                    overlay=overlay,
                    fresh_after=fresh_after if attempt == 0 else None,
                    on_read=on_read if attempt == 0 else None,
                )
                with Fetcher(snap, self.reuse.held.get) as fetch:
                    try:
                        return then(snap, fetch)
                    except Changed as changed:
                        again = None if attempt >= ATTEMPTS - 2 else [changed.path]
                        self.changed(bundle, again)
                    finally:
                        self.reuse.held.put(fetch.read)
        raise AssertionError("unreachable: the last attempt read every file")

    # -- section search (SPEC §6) ---------------------------------------------------------

    def search(
        self,
        bundle: Bundle,
        request: Any,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        overlay: Mapping[str, bytes] | None = None,
        fresh_after: float | None = None,
        texts: MutableMapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Section search (SPEC §6). `texts`, when given, receives the text of each hit's
        file (decoded, without its BOM) by the hit's content_sha256: the bytes this request
        searched, so that a front showing more of a hit than its snippet (the command line's
        numbered lines) never reads the file a second time (SPEC §2)."""
        req = request if isinstance(request, SearchRequest) else SearchRequest.from_json(request)
        rel = req.relevance
        terms = query_terms(req.query, rel.tokenizer)
        settings = settings or self.settings

        def answer(p: Prepared) -> dict[str, Any]:
            ranked = rank(p.index, terms, match_any=rel.match == "any", limit=req.limit)
            if cancel is not None:
                cancel.check()
            shown: dict[str, str] = {}  # decoded once per file, however many hits it has
            outline = rel.context == "outline"
            hits = [
                self._hit(p, p.index.section(s.section), s, terms, rel.tokenizer, outline, shown)
                for s in ranked.best
            ]
            result: dict[str, Any] = {
                "query": req.query,
                "terms": list(terms),
                "snapshot_revision": p.snapshot.revision,
                "total": ranked.total,
                "truncated": ranked.total > len(hits),
                "hits": hits,
            }
            if not rel.is_default:
                result["options"] = rel.to_json()
            if settings.skip_invalid:
                result["skipped"] = [x.to_json() for x in p.index.problems]
            if texts is not None:
                for hit in hits:
                    texts[hit["content_sha256"]] = shown[hit["path"]]
            return result

        result = self._prepared(
            bundle,
            rel.analysis,
            settings,
            cancel,
            progress,
            overlay,
            answer,
            fresh_after=fresh_after,
        )
        return check_size(result, settings.limits)

    def _hit(
        self,
        p: Prepared,
        sec: Section,
        s: Any,
        terms: tuple[str, ...],
        tokenizer: Tokenizer,
        with_outline: bool,
        texts: dict[str, str],
    ) -> dict[str, Any]:
        file = _file(p.snapshot, sec.path)
        text = texts.get(sec.path)
        if text is None:
            text = texts[sec.path] = _text(p.fetch(file))
        shown = snippet(text[sec.start : sec.end], s.matched, tokenizer)
        hit: dict[str, Any] = {
            "concept_id": sec.concept_id,
            "path": sec.path,
            "heading": sec.heading,
            "locator": locator(sec.path, sec.first + 1, sec.last + 1),
            "line_start": sec.first + 1,
            "line_end": sec.last + 1,
            "content_sha256": sec.sha256,
            "snippet": shown.text,
            "score": s.score,
            "matched_terms": list(s.matched),
            "match_spans": [{"start": a, "end": b} for a, b in shown.spans],
        }
        if with_outline:
            hit["outline"] = sec.outline
        if file.unsaved:
            hit["unsaved"] = True
        return hit

    # -- sections as editor symbols (SPEC §11) --------------------------------------------

    def symbols(
        self,
        bundle: Bundle,
        query: str,
        *,
        cap: int = 100,
        list_cap: int = 1000,
        relevance: Any = None,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        overlay: Mapping[str, bytes] | None = None,
        fresh_after: float | None = None,
    ) -> list[SectionHit]:
        """As-you-type section search: the last term also matches as a prefix.

        A query with no terms lists the sections that have headings, in concept_id/line order.
        """
        rel = (
            relevance
            if isinstance(relevance, Relevance)
            else Relevance.from_mapping(relevance or {})
        )
        settings = settings or self.settings
        folded = normalise(query)
        base_terms = word_re(folded).findall(folded)

        def answer(p: Prepared) -> list[SectionHit]:
            idx = p.index
            if not base_terms:
                return [_section_hit(idx.section(g), 0.0, ()) for g in idx.listing(list_cap)]
            terms = query_terms(query, rel.tokenizer)
            prefix = bool(word_re(query[-1:]).fullmatch(query[-1:]))
            ranked = rank(idx, terms, match_any=rel.match == "any", prefix_last=prefix, limit=cap)
            return [_section_hit(idx.section(s.section), s.score, s.matched) for s in ranked.best]

        return self._prepared(
            bundle,
            rel.analysis,
            settings,
            cancel,
            progress,
            overlay,
            answer,
            fresh_after=fresh_after,
        )

    # -- concept search (SPEC §9) ---------------------------------------------------------

    def concepts(
        self,
        bundle: Bundle,
        request: Any,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        fresh_after: float | None = None,
    ) -> dict[str, Any]:
        req = (
            request if isinstance(request, ConceptsRequest) else ConceptsRequest.from_json(request)
        )
        settings = settings or self.settings
        needle = normalise(req.query)

        def answer(p: Prepared) -> dict[str, Any]:
            found = []
            for block in p.index.blocks:
                for cid, title, i in zip(block.concept, block.title, block.doc_input, strict=True):
                    if needle in normalise(cid) or needle in normalise(title):
                        found.append(
                            {
                                "concept_id": cid,
                                "path": block.paths[i],
                                "title": title,
                                "content_sha256": block.shas[i],
                            }
                        )
            found.sort(key=lambda c: c["concept_id"])
            result: dict[str, Any] = {
                "query": req.query,
                "snapshot_revision": p.snapshot.revision,
                "total": len(found),
                "truncated": len(found) > req.limit,
                "concepts": found[: req.limit],
            }
            if settings.skip_invalid:
                result["skipped"] = [x.to_json() for x in p.index.problems]
            return result

        result = self._prepared(
            bundle,
            AnalysisOptions(),
            settings,
            cancel,
            progress,
            None,
            answer,
            fresh_after=fresh_after,
        )
        return check_size(result, settings.limits)

    # -- line search (SPEC §8) ------------------------------------------------------------

    def lines(
        self,
        bundle: Bundle,
        request: Any,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        overlay: Mapping[str, bytes] | None = None,
        fresh_after: float | None = None,
    ) -> dict[str, Any]:
        from .lines import LinesRequest, search_lines

        req = request if isinstance(request, LinesRequest) else LinesRequest.from_json(request)
        settings = settings or self.settings

        def answer(snap: Snapshot, fetch: Fetcher) -> dict[str, Any]:
            return search_lines(snap, req, fetch, cancel=cancel, skip_invalid=settings.skip_invalid)

        result = self._captured(bundle, settings, cancel, progress, overlay, answer, fresh_after)
        return check_size(result, settings.limits)

    # -- editor helpers -------------------------------------------------------------------

    def problems(
        self,
        bundle: Bundle,
        options: AnalysisOptions = AnalysisOptions(),
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Problem]:
        """Parse errors of every searchable file (for diagnostics); capture errors raise."""
        settings = settings or self.settings
        return self._prepared(
            bundle,
            options,
            settings,
            cancel,
            None,
            None,
            lambda p: list(p.index.problems),
            check=False,
        )

    def prepare(
        self,
        bundle: Bundle,
        options: AnalysisOptions = AnalysisOptions(),
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        fresh_after: float | None = None,
    ) -> Index:
        """Capture and index the bundle (a warm-up); the limits are checked. `fresh_after`:
        see capture() (a warm-up that passes it leaves its capture to requests that arrived
        before it started)."""
        settings = settings or self.settings
        return self._prepared(
            bundle, options, settings, cancel, progress, None, lambda p: p.index, True, fresh_after
        )


def _section_hit(sec: Section, score: float, matched: tuple[str, ...]) -> SectionHit:
    return SectionHit(
        sec.path,
        sec.concept_id,
        sec.title,
        sec.heading,
        sec.level,
        sec.first + 1,
        sec.last + 1,
        score,
        matched,
    )


def _records(snap: Snapshot) -> Snapshot:
    """The snapshot without the bytes it read (kept to share, it must not keep a workspace's
    bytes alive: those a later request needs are held by reuse.Held or read again and
    checked against their SHA-256, as for any file the stat index vouched for)."""
    known = snap.known
    if known is None or known.captured is None or not snap.read:
        return snap
    return Snapshot(snap.root, known.captured.files, snap.revision, known, 0)


def _file(snapshot: Snapshot, path: str) -> CapturedFile:
    files = snapshot.files
    i = bisect.bisect_left(files, path, key=lambda f: f.path)
    if i == len(files) or files[i].path != path:  # pragma: no cover - the index is the snapshot's
        raise CitelineError("bundle_invalid", f"{path!r} is not in the snapshot.", {"path": path})
    return files[i]


def _text(data: bytes) -> str:
    from .layout import decode

    text = decode(data)
    assert isinstance(text, str)  # only analysed, parseable files reach here
    return text


__all__ = ["Engine", "Index", "Problem", "SectionHit"]
