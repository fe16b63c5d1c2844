"""The Engine: one object per server, a fresh snapshot per request.

capture → analyse (memoised per file SHA-256) → index checks → rank → snippets → JSON.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from .analysis import (
    AnalysisOptions,
    FileAnalysis,
    analyse,
    analyse_with_structure,
    outline_tree,
)
from .cancel import CancelToken
from .capture import CapturedFile, Progress, Snapshot, capture
from .errors import CitelineError, parse_error
from .layout import Layout, ParseIssue, decode
from .limits import MAX_HEADING_BYTES, Settings, limit_error
from .parallel import Pending, Workers
from .present import check_size, locator
from .rank import Corpus, Doc, rank
from .requests import ConceptsRequest, SearchRequest
from .sections import Heading, Structure
from .snippets import snippet
from .terms import WORD_RE, Tokenizer, normalise, query_terms

Bundle = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Index:
    """The searchable part of one snapshot, with every §2/§3 check passed."""

    snapshot: Snapshot
    files: tuple[CapturedFile, ...]  # parallel to corpus.docs
    corpus: Corpus
    skipped: tuple[Problem, ...]


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


INDEXES_KEPT = 2  # e.g. the contract's and the recall profile's index of one workspace
BUNDLES_HELD = 4  # bundles whose last snapshot's bytes are kept for the next capture

# An analysis (postings, sections) costs about nine times its file's size in memory
# (measured on the PowerShell docs); the memo budgets with this factor, rounded up.
ANALYSIS_COST = 12


class Memo:
    """Per-file analyses and structures keyed by SHA-256; LRU, bounded by estimated memory.

    An analysis is keyed by (SHA-256, options); the options-independent structure (front
    matter and headings) by (SHA-256, None), so one markdown-it parse serves every option set.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[str, AnalysisOptions | None], tuple[int, Any]] = (
            OrderedDict()
        )
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0  # analyses found
        self.misses = 0  # analyses computed

    def lookup(self, key: tuple[str, AnalysisOptions | None]) -> Any:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            if key[1] is not None:
                self.hits += 1
            return found[1]

    def store(self, key: tuple[str, AnalysisOptions | None], value: Any, cost: int) -> None:
        with self._lock:
            if key[1] is not None:
                self.misses += 1
            if key in self._items or cost > self.max_bytes:
                return
            self._items[key] = (cost, value)
            self._bytes += cost
            while self._bytes > self.max_bytes:
                _, (old, _) = self._items.popitem(last=False)
                self._bytes -= old

    def __contains__(self, key: tuple[str, AnalysisOptions | None]) -> bool:
        with self._lock:
            return key in self._items

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


def concept_id_of(path: str, analysis: FileAnalysis) -> str:
    if analysis.front_id is not None:
        return analysis.front_id
    base, dot, _ext = path.rpartition(".")
    return base if dot else path


class Engine:
    """Pure search over a bundle: bytes in, JSON-ready results out. Thread-safe."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        memo_bytes: int = 1 << 30,
        workers: int = 0,
    ) -> None:
        self.settings = settings or Settings()
        self.memo = Memo(memo_bytes) if memo_bytes > 0 else None
        # Worker processes are opt-in (see parallel.Workers); pass parallel.default_workers().
        self.workers = Workers(workers)
        # The last indexes built, by (snapshot_revision, options, settings): the same bytes
        # give the same index, so an unchanged workspace skips straight to ranking.
        self._indexes: OrderedDict[tuple[str, AnalysisOptions, Settings], Index] = OrderedDict()
        self._lock = threading.Lock()  # guards _indexes and _held
        # The bytes of the last snapshot of each bundle, by SHA-256: the next capture keeps
        # these for unchanged files instead of holding a second copy (see capture()).
        self._held: OrderedDict[str, dict[str, bytes]] = OrderedDict()

    def close(self) -> None:
        """Stop the worker processes, if any were started."""
        self.workers.close()

    # -- stages ---------------------------------------------------------------------------

    def capture(
        self,
        bundle: Bundle,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
    ) -> Snapshot:
        if self.memo is None:
            return capture(bundle, settings or self.settings, cancel, progress)
        key = os.fspath(bundle)
        with self._lock:
            held = self._held.get(key)
        snap = capture(bundle, settings or self.settings, cancel, progress, held)
        with self._lock:
            _keep_newest(self._held, key, {f.sha256: f.data for f in snap.files}, BUNDLES_HELD)
        return snap

    def analyse(
        self,
        file: CapturedFile,
        options: AnalysisOptions,
        known: Structure | ParseIssue | None = None,
    ) -> FileAnalysis:
        memo = self.memo
        if memo is None:
            return analyse(file.data, options, known)
        found = memo.lookup((file.sha256, options))
        if found is not None:
            return found
        if known is None:
            known = memo.lookup((file.sha256, None))
        if known is None:
            result, known = analyse_with_structure(file.data, options)
            memo.store((file.sha256, None), known, max(file.size, 1))
        else:
            result = analyse(file.data, options, known)
        memo.store((file.sha256, options), result, max(file.size, 1) * ANALYSIS_COST)
        return result

    def _parse_ahead(
        self, files: tuple[CapturedFile, ...], options: AnalysisOptions
    ) -> Pending | None:
        """Start parsing, on other cores, the files nothing is remembered for."""
        memo = self.memo
        todo = {
            f.sha256: f.data
            for f in files
            if memo is None or ((f.sha256, options) not in memo and (f.sha256, None) not in memo)
        }
        return self.workers.parse(todo)

    def index(
        self,
        snapshot: Snapshot,
        options: AnalysisOptions = AnalysisOptions(),
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
    ) -> Index:
        """Analyse every searchable file and run the checks in SPEC §2's order."""
        settings = settings or self.settings
        key = (snapshot.revision, options, settings)
        if self.memo is not None:
            with self._lock:
                cached = self._indexes.get(key)
                if cached is not None:
                    self._indexes.move_to_end(key)
                    return replace(cached, snapshot=snapshot)
        built = self._build_index(snapshot, options, settings, cancel, progress)
        if self.memo is not None:
            with self._lock:
                _keep_newest(self._indexes, key, built, INDEXES_KEPT)
        return built

    def _build_index(
        self,
        snapshot: Snapshot,
        options: AnalysisOptions,
        settings: Settings,
        cancel: CancelToken | None,
        progress: Progress | None,
    ) -> Index:
        limits = settings.limits
        searchable = snapshot.searchable
        ahead = self._parse_ahead(searchable, options)
        analysed: list[tuple[CapturedFile, FileAnalysis]] = []
        try:
            for i, file in enumerate(searchable):
                if cancel is not None:
                    cancel.check()
                known = ahead.get(file.sha256, cancel) if ahead is not None else None
                analysed.append((file, self.analyse(file, options, known)))
                if progress is not None:
                    progress("analyse", i + 1, len(searchable))
        finally:
            if ahead is not None:
                ahead.cancel()
        problems = tuple(
            Problem(f.path, a.issue.line, a.issue.reason) for f, a in analysed if a.issue
        )
        if problems and not settings.skip_invalid:
            raise parse_error(
                [p.to_json() for p in problems],
                "cannot be parsed",
                "Fix them, or skip unparsable files with --skip-invalid.",
            )
        good = [(f, a) for f, a in analysed if a.issue is None]
        owners: dict[str, str] = {}
        docs = []
        for f, a in good:
            cid = concept_id_of(f.path, a)
            if cid in owners:
                raise CitelineError(
                    "bundle_invalid",
                    f"Concept id {cid!r} is used by both {owners[cid]!r} and {f.path!r}; "
                    "give one of them another front-matter id.",
                    {
                        "reason": "duplicate_concept_id",
                        "concept_id": cid,
                        "paths": [owners[cid], f.path],
                    },
                )
            owners[cid] = f.path
            docs.append(Doc(cid, a))
        for f, a in good:
            if a.too_long is not None:
                t = a.too_long
                raise CitelineError(
                    "resource_limit",
                    f"The {t.what} at {f.path}:{t.line} is {t.size} UTF-8 bytes; at most "
                    f"{MAX_HEADING_BYTES} are allowed. Shorten it.",
                    {
                        "limit": f"{t.what}_bytes",
                        "value": t.size,
                        "max": MAX_HEADING_BYTES,
                        "path": f.path,
                        "line": t.line,
                    },
                )
        sections = sum(len(a.sections) for _, a in good)
        if sections > limits.max_sections:
            raise limit_error("max_sections", sections, limits.max_sections)
        tokens = sum(a.tokens for _, a in good)
        if tokens > limits.max_tokens:
            raise limit_error("max_tokens", tokens, limits.max_tokens)
        return Index(
            snapshot,
            tuple(f for f, _ in good),
            Corpus.of(docs),
            problems if settings.skip_invalid else (),
        )

    def open_index(
        self,
        bundle: Bundle,
        options: AnalysisOptions = AnalysisOptions(),
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
    ) -> Index:
        snap = self.capture(bundle, settings=settings, cancel=cancel, progress=progress)
        return self.index(snap, options, settings=settings, cancel=cancel, progress=progress)

    # -- section search (SPEC §6) ---------------------------------------------------------

    def search(
        self,
        bundle: Bundle,
        request: Any,
        *,
        settings: Settings | None = None,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        req = request if isinstance(request, SearchRequest) else SearchRequest.from_json(request)
        rel = req.relevance
        terms = query_terms(req.query, rel.tokenizer)
        settings = settings or self.settings
        idx = self.open_index(
            bundle, rel.analysis, settings=settings, cancel=cancel, progress=progress
        )
        ranked = rank(idx.corpus, terms, match_any=rel.match == "any", limit=req.limit)
        if cancel is not None:
            cancel.check()
        texts: dict[int, str] = {}  # decoded once per file, however many hits it has
        hits = [
            self._hit(idx, s, terms, rel.tokenizer, rel.context == "outline", texts)
            for s in ranked.best
        ]
        result: dict[str, Any] = {
            "query": req.query,
            "terms": list(terms),
            "snapshot_revision": idx.snapshot.revision,
            "total": ranked.total,
            "truncated": ranked.total > len(hits),
            "hits": hits,
        }
        if not rel.is_default:
            result["options"] = rel.to_json()
        if settings.skip_invalid:
            result["skipped"] = [p.to_json() for p in idx.skipped]
        return check_size(result, settings.limits)

    def _hit(
        self,
        idx: Index,
        s: Any,
        terms: tuple[str, ...],
        tokenizer: Tokenizer,
        with_outline: bool,
        texts: dict[int, str],
    ) -> dict[str, Any]:
        file = idx.files[s.doc]
        doc = idx.corpus.docs[s.doc]
        sec = doc.analysis.sections[s.section]
        text = texts.get(s.doc)
        if text is None:
            text = texts[s.doc] = _text(file)
        shown = snippet(text[sec.start : sec.end], s.matched, tokenizer)
        hit: dict[str, Any] = {
            "concept_id": doc.concept_id,
            "path": file.path,
            "heading": sec.heading,
            "locator": locator(file.path, sec.first + 1, sec.last + 1),
            "line_start": sec.first + 1,
            "line_end": sec.last + 1,
            "content_sha256": file.sha256,
            "snippet": shown.text,
            "score": s.score,
            "matched_terms": list(s.matched),
            "match_spans": [{"start": a, "end": b} for a, b in shown.spans],
        }
        if with_outline:
            hit["outline"] = sec.outline
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
    ) -> list[SectionHit]:
        """As-you-type section search: the last term also matches as a prefix.

        A query with no terms lists the sections that have headings, in concept_id/line order.
        """
        from .requests import Relevance

        rel = (
            relevance
            if isinstance(relevance, Relevance)
            else Relevance.from_mapping(relevance or {})
        )
        base_terms = [t for t in WORD_RE.findall(normalise(query))]
        idx = self.open_index(
            bundle, rel.analysis, settings=settings, cancel=cancel, progress=progress
        )
        docs = idx.corpus.docs
        if not base_terms:
            listing = [
                (doc.concept_id, sec.first, di, si)
                for di, doc in enumerate(docs)
                for si, sec in enumerate(doc.analysis.sections)
                if sec.heading
            ]
            listing.sort()
            return [self._section_hit(idx, di, si, 0.0, ()) for _, _, di, si in listing[:list_cap]]
        terms = query_terms(query, rel.tokenizer)
        prefix = bool(WORD_RE.fullmatch(query[-1:]))
        ranked = rank(
            idx.corpus, terms, match_any=rel.match == "any", prefix_last=prefix, limit=cap
        )
        return [self._section_hit(idx, s.doc, s.section, s.score, s.matched) for s in ranked.best]

    def _section_hit(
        self, idx: Index, di: int, si: int, score: float, matched: tuple[str, ...]
    ) -> SectionHit:
        doc = idx.corpus.docs[di]
        sec = doc.analysis.sections[si]
        return SectionHit(
            idx.files[di].path,
            doc.concept_id,
            doc.analysis.title,
            sec.heading,
            sec.level,
            sec.first + 1,
            sec.last + 1,
            score,
            matched,
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
    ) -> dict[str, Any]:
        req = (
            request if isinstance(request, ConceptsRequest) else ConceptsRequest.from_json(request)
        )
        settings = settings or self.settings
        idx = self.open_index(bundle, settings=settings, cancel=cancel, progress=progress)
        needle = normalise(req.query)
        found = []
        for file, doc in zip(idx.files, idx.corpus.docs, strict=True):
            title = doc.analysis.title
            if needle in normalise(doc.concept_id) or needle in normalise(title):
                found.append(
                    {
                        "concept_id": doc.concept_id,
                        "path": file.path,
                        "title": title,
                        "content_sha256": file.sha256,
                    }
                )
        found.sort(key=lambda c: c["concept_id"])
        result: dict[str, Any] = {
            "query": req.query,
            "snapshot_revision": idx.snapshot.revision,
            "total": len(found),
            "truncated": len(found) > req.limit,
            "concepts": found[: req.limit],
        }
        if settings.skip_invalid:
            result["skipped"] = [p.to_json() for p in idx.skipped]
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
    ) -> dict[str, Any]:
        from .lines import LinesRequest, search_lines

        req = request if isinstance(request, LinesRequest) else LinesRequest.from_json(request)
        settings = settings or self.settings
        snap = self.capture(bundle, settings=settings, cancel=cancel, progress=progress)
        return check_size(
            search_lines(snap, req, cancel=cancel, skip_invalid=settings.skip_invalid),
            settings.limits,
        )

    # -- editor helpers -------------------------------------------------------------------

    def problems(
        self, bundle: Bundle, *, settings: Settings | None = None, cancel: CancelToken | None = None
    ) -> list[Problem]:
        """Parse errors of every searchable file (for diagnostics); capture errors raise."""
        snap = self.capture(bundle, settings=settings, cancel=cancel)
        out = []
        for file in snap.searchable:
            a = self.analyse(file, AnalysisOptions())
            if a.issue is not None:
                out.append(Problem(file.path, a.issue.line, a.issue.reason))
        return out

    @staticmethod
    def outline(data: bytes) -> tuple[Layout, list[Heading]] | ParseIssue:
        return outline_tree(data)


def _keep_newest(items: OrderedDict[Any, Any], key: Any, value: Any, count: int) -> None:
    """Store `value` as the newest item, dropping the oldest beyond `count`."""
    items[key] = value
    items.move_to_end(key)
    while len(items) > count:
        items.popitem(last=False)


def _text(file: CapturedFile) -> str:
    text = decode(file.data)
    assert isinstance(text, str)  # only analysed, parseable files reach here
    return text


__all__ = ["Engine", "Index", "Problem", "SectionHit"]
