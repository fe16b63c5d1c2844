"""Semantic mode and the hybrid profile as pure stages (SPEC §15): values in, values out.

The caller (Engine, phase 2b) supplies recall's candidate sections as `Candidate` values
(`candidate()` makes one from an index section and its file's decoded text), the query's
vector and the candidates' vectors (embedding.embed); these stages score, order and shape
them:

- `semantic_search`: the AFI matches of `mode: "semantic"`, calibrated scores at or above
  the threshold, sorted by score, then path, then line; `SemanticResult.to_json` gives the
  envelope of engine/contracts/lines.semantic.result.json.
- `hybrid`: recall's ranked hits fused with their cosines by the measured rule
  (semantic.fuse, reciprocal-rank fusion over recall's top k).

Standard library only; nothing of the lexical engine imports it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..answer.lines import clip, window
from ..answer.requests import check_threshold
from ..base.errors import schema_error
from ..index.hashes import section_sha256
from ..text.terms import Tokenizer, check_query
from .semantic import (
    DEFAULT_FUSION,
    DEFAULT_THRESHOLD,
    Calibration,
    Fusion,
    Passage,
    Standing,
    cosine,
    fuse,
    passage,
    query_script,
)
from .unfitted import Unfitted

if TYPE_CHECKING:
    from ..index.index import Section

MODE = "semantic"
MAX_LIMIT = 1000  # §8's limit: 1–1,000
DEFAULT_LIMIT = 100
MAX_CONTEXT = 10  # §8's context: 0–10
DEFAULT_CONTEXT = 2
SCORE_DIGITS = 6  # scores are rounded so that equal scores tie on every platform

_ATX = re.compile(r"\A {0,3}#{1,6}(?:[ \t]|$)")
_SETEXT = re.compile(r"\A {0,3}(?:=+|-+)[ \t]*\Z")
# The tokens that pick a section's representative line: stems for English (a query's
# "stopping" finds "stop"), bigrams for CJK (a Chinese query shares bigrams, not runs).
_PICK = Tokenizer(cjk="bigrams", stemming="english")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One section a semantic or hybrid request may return, as values."""

    path: str
    heading: str
    line_start: int  # 1-based, inclusive
    line_end: int
    content_sha256: str  # of the whole file, as §6
    passage: Passage
    section_sha256: str  # of the section's text, as §6
    lines: tuple[str, ...]  # the section's lines, without line endings
    body_from: int  # index in `lines` of the first line after the heading's own lines
    before: tuple[str, ...]  # up to MAX_CONTEXT lines of the file before the section
    after: tuple[str, ...]  # up to MAX_CONTEXT lines after it


def candidate(
    model_id: str,
    *,
    path: str,
    content_sha256: str,
    title: str,
    outline: str,
    heading: str,
    first: int,
    last: int,
    start: int,
    end: int,
    text: str,
) -> Candidate:
    """The Candidate of an index section (engine/index/index.py's Section: `first`/`last` its
    0-based lines, `start`/`end` its code-point offsets in the decoded file `text`)."""
    if not 0 <= first <= last or not 0 <= start <= end <= len(text):
        raise ValueError("a section's lines and offsets must lie inside its file")
    file_lines = text.replace("\r\n", "\n").split("\n")
    if file_lines and file_lines[-1] == "" and len(file_lines) > last + 1:
        file_lines.pop()
    if last >= len(file_lines):
        raise ValueError(f"a section ends at line {last + 1}; its file has {len(file_lines)}")
    lines = tuple(file_lines[first : last + 1])
    body_from = 0
    if heading and lines:
        if _ATX.match(lines[0]):
            body_from = 1
        elif len(lines) > 1 and _SETEXT.match(lines[1]):
            body_from = 2
    return Candidate(
        path=path,
        heading=heading,
        line_start=first + 1,
        line_end=last + 1,
        content_sha256=content_sha256,
        passage=passage(model_id, title, outline, heading, text[start:end]),
        section_sha256=section_sha256(text, start, end),
        lines=lines,
        body_from=body_from,
        before=tuple(file_lines[max(0, first - MAX_CONTEXT) : first]),
        after=tuple(file_lines[last + 1 : last + 1 + MAX_CONTEXT]),
    )


@dataclass(frozen=True, slots=True)
class Representative:
    """A section's most representative line for a query, and where its text window sits."""

    index: int  # in Candidate.lines
    column: int  # 0-based code point the window is centred on (0: the line's start)


def section_candidate(model_id: str, sec: Section, text: str) -> Candidate:
    """The Candidate of one index section, from its file's decoded text."""
    return candidate(
        model_id,
        path=sec.path,
        content_sha256=sec.sha256,
        title=sec.title,
        outline=sec.outline,
        heading=sec.heading,
        first=sec.first,
        last=sec.last,
        start=sec.start,
        end=sec.end,
        text=text,
    )


def representative(query: str, cand: Candidate) -> Representative:
    """The line a semantic match points at: among the section's body lines (its heading's
    own lines excluded), the one holding the most distinct query tokens (English stems,
    CJK bigrams), the first on a tie, its window at the first such token; when no body
    line shares a token, the first non-blank body line; a section with no body, its
    heading line. Lexical overlap, not a per-line embedding: a line's vector would cost a
    passage's embedding each, and the section's vector already says the section answers;
    this only says where in it to look."""
    wanted = set(_PICK.tokens(query))
    best: tuple[int, int, int] | None = None  # (-shared, index, column)
    first_text: int | None = None
    for i in range(cand.body_from, len(cand.lines)):
        line = cand.lines[i]
        if not line.strip():
            continue
        if first_text is None:
            first_text = i
        if not wanted:
            break
        shared: set[str] = set()
        column = -1
        for token, begin, _ in _PICK.located(line):
            if token in wanted:
                if column < 0:
                    column = begin
                shared.add(token)
        if shared and (best is None or (-len(shared), i) < best[:2]):
            best = (-len(shared), i, column)
    if best is not None:
        return Representative(best[1], best[2])
    if first_text is not None:
        return Representative(first_text, 0)
    return Representative(0, 0)


@dataclass(frozen=True, slots=True)
class SemanticMatch:
    """One match of `mode: "semantic"`: a section, in the agent-file-interface Match shape."""

    path: str
    line: int
    text: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    score: float
    line_start: int
    line_end: int
    heading: str
    content_sha256: str
    section_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": 1,
            "text": self.text,
            "context": {"before": list(self.before), "after": list(self.after)},
            "score": self.score,
            "x-line_start": self.line_start,
            "x-line_end": self.line_end,
            "x-heading": self.heading,
            "x-content_sha256": self.content_sha256,
            "x-section_sha256": self.section_sha256,
        }


@dataclass(frozen=True, slots=True)
class SemanticResult:
    """The matches of a semantic request and the envelope's own pieces (§8's envelope with
    `mode`, `threshold` and `model`; the snapshot's revision is the caller's)."""

    query: str
    threshold: float
    model: str
    total: int  # candidates at or above the threshold
    matches: tuple[SemanticMatch, ...]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.matches)

    def to_json(self, snapshot_revision: str) -> dict[str, Any]:
        return {
            "pattern": self.query,
            "mode": MODE,
            "threshold": self.threshold,
            "model": self.model,
            "snapshot_revision": snapshot_revision,
            "total": self.total,
            "truncated": self.truncated,
            "matches": [m.to_json() for m in self.matches],
        }


def _check_int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise schema_error(
            f"{name} must be an integer from {low} to {high}, got {value!r}.",
            field=name,
            value=value if isinstance(value, int | float | str) else repr(value),
        )
    return value


def _lines_around(cand: Candidate, index: int, context: int) -> tuple[tuple[str, ...], ...]:
    """The `context` lines before and after the section's line `index`, clipped at the
    file's ends, each a §8 context line."""
    if not context:
        return (), ()
    around = cand.before + cand.lines + cand.after
    at = len(cand.before) + index
    before = around[max(0, at - context) : at]
    after = around[at + 1 : at + 1 + context]
    return tuple(clip(x) for x in before), tuple(clip(x) for x in after)


def semantic_search(
    query: str,
    query_vector: Sequence[float],
    candidates: Sequence[Candidate],
    vectors: Sequence[Sequence[float]],
    calibration: Calibration | Standing | Unfitted,
    threshold: float = DEFAULT_THRESHOLD,
    limit: int = DEFAULT_LIMIT,
    context: int = DEFAULT_CONTEXT,
) -> SemanticResult:
    """Semantic mode over recall's candidates (`vectors[i]` is `candidates[i]`'s, in
    recall's order): each scored by `calibration` from its cosine with the query (an
    Unfitted score also reads recall's evidence), those below `threshold`
    dropped, the rest sorted by score (descending), then path, then line, the first
    `limit` returned. Raises schema_validation for a query, threshold, limit or context
    out of §8/§15's bounds."""
    query = check_query(query, need_word=False)
    threshold = check_threshold(threshold)
    limit = _check_int(limit, "limit", 1, MAX_LIMIT)
    context = _check_int(context, "context", 0, MAX_CONTEXT)
    if len(vectors) != len(candidates):
        raise ValueError(f"{len(vectors)} vectors for {len(candidates)} candidates")
    script = query_script(query)
    cosines = [cosine(query_vector, vector) for vector in vectors]
    kept: list[tuple[float, Candidate]] = []
    for cand, raw in zip(candidates, calibration.scores(cosines, script), strict=True):
        score = round(raw, SCORE_DIGITS)
        if score >= threshold:
            kept.append((score, cand))
    rows = []
    for score, cand in kept:
        rep = representative(query, cand)
        rows.append((score, cand, rep, cand.line_start + rep.index))
    rows.sort(key=lambda r: (-r[0], r[1].path, r[3]))
    matches = []
    for score, cand, rep, line in rows[:limit]:
        before, after = _lines_around(cand, rep.index, context)
        matches.append(
            SemanticMatch(
                path=cand.path,
                line=line,
                text=window(cand.lines[rep.index], rep.column),
                before=before,
                after=after,
                score=score,
                line_start=cand.line_start,
                line_end=cand.line_end,
                heading=cand.heading,
                content_sha256=cand.content_sha256,
                section_sha256=cand.section_sha256,
            )
        )
    return SemanticResult(query, threshold, calibration.model_id, len(kept), tuple(matches))


# -- hybrid ----------------------------------------------------------------------------------

Hit = TypeVar("Hit")


@dataclass(frozen=True, slots=True)
class Fused(Generic[Hit]):
    """One of recall's hits in the hybrid order."""

    hit: Hit
    score: float  # the fused score in (0, 1]: §6's `score` under `profile: hybrid`
    cosine: float
    lexical_rank: int  # 1-based, in recall's order


def hybrid(
    hits: Sequence[Hit],
    vectors: Sequence[Sequence[float]],
    query_vector: Sequence[float],
    fusion: Fusion = DEFAULT_FUSION,
    *,
    reads: bool = True,
) -> list[Fused[Hit]]:
    """`profile: hybrid`: recall's first `fusion.k` hits (`hits`, in recall's order, best
    first; `vectors[i]` is `hits[i]`'s section's vector) in the fused order of
    semantic.fuse, best first; equal fused scores keep recall's order. Hits past the
    k-th are not ranked (the fusion was measured over recall's top 20 only): the caller
    asks recall for k hits whatever the request's limit, then cuts this list to it.
    `reads`: whether the model reads the query's script (unfitted.reads_cjk); when it does
    not, its cosines are noise and recall's order stands in for theirs."""
    n = min(fusion.k, len(hits))
    if len(vectors) < n:
        raise ValueError(f"{len(vectors)} vectors for the {n} hits fused")
    cosines = [cosine(query_vector, vectors[i]) for i in range(n)]
    dense = cosines if reads else [float(-i) for i in range(n)]
    fused = [(i, round(score, SCORE_DIGITS)) for i, score in fuse(dense, fusion)]
    # Sorted again after the rounding: scores that round equal tie in recall's order.
    fused.sort(key=lambda e: (-e[1], e[0]))
    return [Fused(hits[i], score, cosines[i], i + 1) for i, score in fused]


__all__ = [
    "DEFAULT_CONTEXT",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MODE",
    "Candidate",
    "Fused",
    "Representative",
    "SemanticMatch",
    "SemanticResult",
    "candidate",
    "hybrid",
    "representative",
    "section_candidate",
    "semantic_search",
]
