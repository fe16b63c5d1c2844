"""From ranked sections to the contract's JSON values (SPEC §6, §11), and the response limit.

Concept search (concepts.py) and line search (lines.py) build their own results; the
locator, the encoding and the size check are shared by all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.limits import Limits, limit_error

if TYPE_CHECKING:
    from ..index.index import Problem, Section
    from ..rank.rank import Scored
    from .requests import SearchRequest
    from .snippets import Snippet

_SAFE_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/$&+,:;=@"
_SAFE = frozenset(_SAFE_CHARS.encode("ascii"))
_UNSAFE = re.compile(f"[^{re.escape(_SAFE_CHARS)}]")


def escape_path(path: str) -> str:
    """The path as Go's url.URL.EscapedPath writes it."""
    if not _UNSAFE.search(path):
        return path  # the common case: nothing to escape
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in path.encode("utf-8"))


def locator(path: str, line_start: int, line_end: int) -> str:
    return f"{escape_path(path)}#L{line_start}-L{line_end}"


def encode(result: dict[str, Any]) -> str:
    """The compact UTF-8 JSON every front writes (and the size the response limit counts)."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def check_size(result: dict[str, Any], limits: Limits) -> dict[str, Any]:
    size = len(encode(result).encode("utf-8"))
    if size > limits.max_response_bytes:
        raise limit_error("max_response_bytes", size, limits.max_response_bytes)
    return result


# -- section search (SPEC §6) ---------------------------------------------------------------


def hit(
    sec: Section,
    scored: Scored,
    shown: Snippet,
    *,
    outline: bool,
    unsaved: bool,
    section_sha256: str,
) -> dict[str, Any]:
    """One hit of a section search: the section, its score and its snippet
    (`section_sha256`: of the section's text, engine/index/hashes.py)."""
    found: dict[str, Any] = {
        "concept_id": sec.concept_id,
        "path": sec.path,
        "heading": sec.heading,
        "locator": locator(sec.path, sec.first + 1, sec.last + 1),
        "line_start": sec.first + 1,
        "line_end": sec.last + 1,
        "content_sha256": sec.sha256,
        "section_sha256": section_sha256,
        "snippet": shown.text,
        "score": scored.score,
        "matched_terms": list(scored.matched),
        "match_spans": [{"start": a, "end": b} for a, b in shown.spans],
    }
    if outline:
        found["outline"] = sec.outline
    if unsaved:
        found["unsaved"] = True
    return found


def search_result(
    req: SearchRequest,
    terms: Sequence[str],
    revision: str,
    total: int,
    hits: list[dict[str, Any]],
    skipped: Sequence[Problem] | None,
) -> dict[str, Any]:
    """A section search's result; `skipped`: the unparsable files left out (skip_invalid),
    None when they are not (then the request failed on them)."""
    result: dict[str, Any] = {
        "query": req.query,
        "terms": list(terms),
        "snapshot_revision": revision,
        "total": total,
        "truncated": total > len(hits),
        "hits": hits,
    }
    if not req.relevance.is_default:
        result["options"] = req.relevance.to_json()
    if skipped is not None:
        result["skipped"] = [x.to_json() for x in skipped]
    return result


# -- sections as editor symbols (SPEC §11) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class SectionHit:
    """A ranked section, before presentation (as-you-type symbols: lsp/symbols.py)."""

    path: str
    concept_id: str
    title: str
    heading: str
    level: int
    line_start: int  # 1-based
    line_end: int
    score: float
    matched: tuple[str, ...]
    h1: str = ""  # the file's first H1, for a preamble/body section (section_label)

    @property
    def label(self) -> str:
        """Its name for people (engine/text/sections.py section_label)."""
        from ..text.sections import section_label

        return section_label(self.path, self.heading, self.level, self.title, self.h1)

    @classmethod
    def of(cls, sec: Section, score: float, matched: tuple[str, ...]) -> SectionHit:
        return cls(
            sec.path,
            sec.concept_id,
            sec.title,
            sec.heading,
            sec.level,
            sec.first + 1,
            sec.last + 1,
            score,
            matched,
            sec.h1,
        )
