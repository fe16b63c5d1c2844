"""Section search (SPEC §6) and as-you-type symbols (§11) over a snapshot's checked index.

Ranking is rank.py's; this takes the best sections to their hits: each hit's file text as
the request read it (decoded once per file), its snippet and match spans, the result.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.cancel import CancelToken
from ..base.errors import CitelineError
from ..capture.snapshot import CapturedFile, Snapshot
from ..index.hashes import section_sha256
from ..index.index import Index, Section
from ..rank.rank import rank
from ..rank.scoring import navigation_factor
from ..text.terms import QueryTerms, normalise, query_terms, word_re
from .present import SectionHit, hit, search_result
from .requests import SearchRequest, SymbolsRequest
from .snippets import Finders, snippet


@dataclass(frozen=True, slots=True)
class Rerank:
    """A second ordering of the lexical ranking's best `k` hits (`profile: hybrid`, SPEC
    §15): `order(sections, hits)` gives the hits (as §6 presents them) in the new order,
    each with its new `score`; `options` joins the result's options echo."""

    k: int
    order: Callable[[Sequence[Section], list[dict[str, Any]]], list[dict[str, Any]]]
    options: Mapping[str, str] = field(default_factory=dict)


def search_sections(
    snapshot: Snapshot,
    index: Index,
    fetch: Callable[[CapturedFile], bytes],
    req: SearchRequest,
    terms: QueryTerms,
    *,
    skip_invalid: bool = False,
    cancel: CancelToken | None = None,
    texts: MutableMapping[str, str] | None = None,
    rerank: Rerank | None = None,
) -> dict[str, Any]:
    """The SPEC §6 result for `req` (whose query gave `terms`). `texts`: see Engine.search.
    `rerank`: the ranking's best `rerank.k` hits (whatever the limit) reordered by it, then
    cut to the limit."""
    rel = req.relevance
    want = req.limit if rerank is None else max(req.limit, rerank.k)
    ranked = rank(
        index,
        terms,
        match_any=rel.match == "any",
        limit=want,
        navigation=navigation_factor(req.query),
    )
    if cancel is not None:
        cancel.check()
    shown: dict[str, str] = {}  # decoded once per file, however many hits it has
    finders: Finders = {}
    outline = rel.context == "outline"
    hits = []
    sections = []
    for scored in ranked.best:
        sec = index.section(scored.section)
        sections.append(sec)
        file = file_named(snapshot, sec.path)
        text = shown.get(sec.path)
        if text is None:
            text = shown[sec.path] = decoded_text(fetch(file))
        cut = snippet(text[sec.start : sec.end], scored.matched, rel.tokenizer, finders)
        digest = section_sha256(text, sec.start, sec.end)
        hits.append(
            hit(sec, scored, cut, outline=outline, unsaved=file.unsaved, section_sha256=digest)
        )
    if rerank is not None:
        hits = rerank.order(sections[: rerank.k], hits[: rerank.k])[: req.limit]
    skipped = index.problems if skip_invalid else None
    result = search_result(req, terms, snapshot.revision, ranked.total, hits, skipped)
    if rerank is not None and rerank.options:
        result.setdefault("options", req.relevance.to_json()).update(rerank.options)
    if texts is not None:
        for found in hits:
            texts[found["content_sha256"]] = shown[found["path"]]
    return result


def symbol_hits(index: Index, req: SymbolsRequest) -> list[SectionHit]:
    """As-you-type section search: the last term also matches as a prefix. A query with no
    word lists the sections that have headings, in concept_id/line order."""
    if not has_words(req.query):
        return [SectionHit.of(index.section(g), 0.0, ()) for g in index.listing(req.list_cap)]
    rel = req.relevance
    terms = query_terms(req.query, rel.tokenizer)
    last = req.query[-1:]
    prefix = bool(word_re(last).fullmatch(last))
    ranked = rank(index, terms, match_any=rel.match == "any", prefix_last=prefix, limit=req.cap)
    return [SectionHit.of(index.section(s.section), s.score, s.matched) for s in ranked.best]


def has_words(query: str) -> bool:
    """Whether a symbols query holds a word (without one, it lists the sections)."""
    folded = normalise(query)
    return bool(word_re(folded).findall(folded))


def file_named(snapshot: Snapshot, path: str) -> CapturedFile:
    files = snapshot.files
    i = bisect.bisect_left(files, path, key=lambda f: f.path)
    if i == len(files) or files[i].path != path:  # pragma: no cover - the index is the snapshot's
        raise CitelineError("bundle_invalid", f"{path!r} is not in the snapshot.", {"path": path})
    return files[i]


def decoded_text(data: bytes) -> str:
    from ..text.layout import decode

    text = decode(data)
    assert isinstance(text, str)  # only analysed, parseable files reach here
    return text


__all__ = ["Rerank", "has_words", "search_sections", "symbol_hits"]
