"""Verifying citations against the files as they are now (SPEC §18).

Each citation gets one status: `valid` (the cited bytes are where it says), `moved` (the same
text elsewhere: nearest in the same file by line distance, else the first path in code-point
order; `others` counts further occurrences), `changed` (the text is gone but a section with
its heading is still in the file: nearest to the old line_start), `stale` (only the file's
hash was given and it changed) or `missing`.

No full-text search: the cited file is read (when its hash does not already prove the
citation), and a citation whose text left its file is looked up by section hash across the
bundle (engine/index/hashes.py: tables made once per block, on first need, held by the index).
A line citation whose text left its file is looked up through the index's postings: the
sections holding every token of the line's visible text (a word cut by a clipping `…` left
out) are the only ones whose files are read; a line with no token (`---`) is not looked for
elsewhere.

`similarity` (changed): the share of the cited text's tokens, as a multiset, that the section
keeps today: |cited ∩ now| / |cited| over case-folded word tokens (`\\w+`). The cited text is
the citation's `text` when it gives one, else its `snippet` (a §6 hit's verbatim part of the
section); a citation with neither has similarity null. Deterministic, cheap, in [0, 1].
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..base.errors import schema_error
from ..capture.snapshot import CapturedFile, Snapshot
from ..index.hashes import section_sha256
from ..index.index import Index
from ..text.layout import decode, line_index
from ..text.terms import Tokenizer
from .present import locator

MAX_CITATIONS = 100
ELLIPSIS = "…"
_SHA = re.compile(r"[0-9a-f]{64}")
_WORD = re.compile(r"\w+")
FIELDS = ("citations", "strict")


@dataclass(frozen=True, slots=True)
class VerifyRequest:
    citations: tuple[Mapping[str, Any], ...]
    strict: bool = False

    @classmethod
    def from_json(cls, request: Any) -> VerifyRequest:
        if not isinstance(request, Mapping):
            raise schema_error("The verify request must be a JSON object with citations.")
        extra = sorted(set(request) - set(FIELDS))
        if extra:
            raise schema_error(f"Unknown field {extra[0]!r} in the verify request.", field=extra[0])
        cites = request.get("citations")
        if not isinstance(cites, list) or not 1 <= len(cites) <= MAX_CITATIONS:
            raise schema_error(
                f"citations must be a list of 1 to {MAX_CITATIONS} citations.", field="citations"
            )
        strict = request.get("strict", False)
        if not isinstance(strict, bool):
            raise schema_error("strict must be true or false.", field="strict")
        for n, c in enumerate(cites):
            _check(c, n)
        return cls(tuple(cites), strict)


def _check(c: Any, n: int) -> None:
    where = f"citations[{n}]"

    def bad(why: str) -> Exception:
        return schema_error(f"{where}: {why}", field=where)

    if not isinstance(c, Mapping):
        raise bad("a citation is an object (a search hit, or path/line/text of a line match).")
    if not isinstance(c.get("path"), str) or not c["path"]:
        raise bad("path must be a non-empty string.")

    def positive(key: str) -> int:
        v = c.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise bad(f"{key} must be an integer of at least 1.")
        return v

    if "line" in c:
        positive("line")
        if not isinstance(c.get("text"), str):
            raise bad("a line citation needs the line's text.")
        return
    if positive("line_start") > positive("line_end"):
        raise bad("line_start must not be after line_end.")
    shas = [k for k in ("section_sha256", "content_sha256") if k in c]
    if not shas:
        raise bad("a section citation needs section_sha256 and/or content_sha256.")
    for k in shas:
        if not isinstance(c[k], str) or not _SHA.fullmatch(c[k]):
            raise bad(f"{k} must be 64 lowercase hex digits.")
    if "heading" in c and not isinstance(c["heading"], str):
        raise bad("heading must be a string.")


class _Files:
    """The snapshot's files and their decoded texts, each decoded once."""

    def __init__(self, snapshot: Snapshot, fetch: Callable[[CapturedFile], bytes]) -> None:
        self.snapshot = snapshot
        self.fetch = fetch
        self.texts: dict[str, str | None] = {}
        self.lines: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def file(self, path: str) -> CapturedFile | None:
        files = self.snapshot.files
        i = bisect.bisect_left(files, path, key=lambda f: f.path)
        return files[i] if i < len(files) and files[i].path == path else None

    def text(self, path: str) -> str | None:
        if path not in self.texts:
            f = self.file(path)
            t = None if f is None else decode(self.fetch(f))
            self.texts[path] = t if isinstance(t, str) else None
        return self.texts[path]

    def text_of(self, path: str, sha: str) -> str | None:
        return self.text(path)

    def index_of(self, path: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        text = self.text(path)
        if text is None:
            return None
        if path not in self.lines:
            self.lines[path] = line_index(text)
        return self.lines[path]

    def span(self, path: str, a: int, b: int) -> str | None:
        """The text of lines a..b (1-based) as in the file, without the final line ending."""
        text, at = self.text(path), self.index_of(path)
        if text is None or at is None or b > len(at[0]):
            return None
        return text[at[0][a - 1] : at[1][b - 1]]


def _sections_of(index: Index, path: str) -> list[int]:
    """The global numbers of the index's sections of `path`, in line order."""
    for block, base in zip(index.blocks, index.bases, strict=True):
        i = bisect.bisect_left(block.paths, path)
        if i == len(block.paths) or block.paths[i] != path:
            continue
        d = bisect.bisect_left(block.doc_input, i)
        if d == len(block.doc_input) or block.doc_input[d] != i:
            return []  # unparsable: no sections
        return list(range(base + block.doc_sec[d], base + block.doc_sec[d + 1]))
    return []


def similarity(cited: str | None, now: str) -> float | None:
    if cited is None:
        return None
    want = Counter(_WORD.findall(cited.casefold()))
    total = sum(want.values())
    if not total:
        return 1.0 if not _WORD.search(now) else 0.0
    kept = want & Counter(_WORD.findall(now.casefold()))
    return round(sum(kept.values()) / total, 4)


def _nothing(status: str, c: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    keys = ("path", "line", "text") if "line" in c else _SECTION_KEYS
    return {"status": status, "citation": dict(c), **dict.fromkeys(keys), **more}


_SECTION_KEYS = (
    "path",
    "line_start",
    "line_end",
    "locator",
    "content_sha256",
    "section_sha256",
    "heading",
)


def _section_result(
    status: str, c: Mapping[str, Any], index: Index, files: _Files, g: int, **more: Any
) -> dict[str, Any]:
    sec = index.section(g)
    text = files.text(sec.path) or ""
    return {
        "status": status,
        "citation": dict(c),
        "path": sec.path,
        "line_start": sec.first + 1,
        "line_end": sec.last + 1,
        "locator": locator(sec.path, sec.first + 1, sec.last + 1),
        "content_sha256": sec.sha256,
        "section_sha256": section_sha256(text, sec.start, sec.end),
        "heading": sec.heading,
        **more,
    }


def _verify_section(c: Mapping[str, Any], index: Index, files: _Files) -> dict[str, Any]:
    path, a, b = c["path"], c["line_start"], c["line_end"]
    want = c.get("section_sha256")
    f = files.file(path)
    if f is not None:
        same_file = c.get("content_sha256") == f.sha256
        here = None if same_file and want else files.span(path, a, b)
        digest = want if here is None else section_sha256(here, 0, len(here))
        if same_file or (here is not None and digest == want):
            heading = next(
                (
                    s.heading
                    for g in _sections_of(index, path)
                    if (s := index.section(g)).first == a - 1
                ),
                c.get("heading"),
            )
            return {
                "status": "valid",
                "citation": dict(c),
                "path": path,
                "line_start": a,
                "line_end": b,
                "locator": locator(path, a, b),
                "content_sha256": f.sha256,
                "section_sha256": digest,
                "heading": heading,
            }
    if want is not None:
        found = _occurrences(want, path, a, index, files)
        if found:
            return _section_result("moved", c, index, files, found[0], others=len(found) - 1)
    if f is not None and want is None:  # no hash of the text: where it went is unknown
        return _nothing("stale", c) | {"path": path, "content_sha256": f.sha256}
    heading = c.get("heading")
    if f is not None and heading is not None:
        named = [g for g in _sections_of(index, path) if index.section(g).heading == heading]
        if named:
            g = min(named, key=lambda g: (abs(index.section(g).first + 1 - a), g))
            sec = index.section(g)
            now = (files.text(path) or "")[sec.start : sec.end]
            cited = c.get("text") if isinstance(c.get("text"), str) else c.get("snippet")
            score = similarity(cited if isinstance(cited, str) else None, now)
            return _section_result("changed", c, index, files, g, similarity=score)
    return _nothing("missing", c, file_exists=f is not None)


def _occurrences(want: str, path: str, a: int, index: Index, files: _Files) -> list[int]:
    """The sections whose text hashes to `want`: those of `path` nearest first, then the
    others in path order."""

    def same(g: int) -> bool:
        sec = index.section(g)
        text = files.text(sec.path)
        return text is not None and section_sha256(text, sec.start, sec.end) == want

    here = [g for g in _sections_of(index, path) if same(g)]
    here.sort(key=lambda g: (abs(index.section(g).first + 1 - a), g))
    found = index.hashes.find(index.blocks, index.bases, want, files.text_of)
    there = [g for g in found if index.section(g).path != path and same(g)]
    there.sort(key=lambda g: (index.section(g).path, g))
    return here + there


def _line_matches(cited: str, line: str) -> bool:
    if cited == line:
        return True
    head, tail = cited.startswith(ELLIPSIS), cited.endswith(ELLIPSIS)
    visible = cited[1 if head else 0 : len(cited) - 1 if tail else len(cited)]
    if not visible or not (head or tail):
        return False
    if head and tail:
        return visible in line
    return line.endswith(visible) if head else line.startswith(visible)


def _lines_of(files: _Files, path: str) -> list[str] | None:
    text = files.text(path)
    if text is None:
        return None
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _line_elsewhere(
    cited: str, path: str, index: Index, files: _Files, tokenizer: Tokenizer
) -> list[tuple[str, int]]:
    """(path, line) of each line of another file that matches `cited`, in path and line
    order: only the files of sections the index says hold every token of the text."""
    head, tail = cited.startswith(ELLIPSIS), cited.endswith(ELLIPSIS)
    visible = cited[1 if head else 0 : len(cited) - 1 if tail else len(cited)]
    words = list(_WORD.finditer(visible))
    # a word the clipping cut is not a word of the file
    if head and words and words[0].start() == 0:
        words = words[1:]
    if tail and words and words[-1].end() == len(visible):
        words = words[:-1]
    terms = {t for w in words for t in tokenizer.tokens(w.group())}
    if not terms:
        return []
    import numpy as np

    secs: Any = None
    for term in sorted(terms, key=index.df):
        held = index.postings(term).secs
        secs = held if secs is None else np.intersect1d(secs, held, assume_unique=True)
        if not len(secs):
            return []
    found: set[tuple[str, int]] = set()
    for g in secs.tolist():
        sec = index.section(g)
        if sec.path == path:
            continue
        lines = _lines_of(files, sec.path) or []
        for i in range(sec.first, min(sec.last + 1, len(lines))):
            if _line_matches(cited, lines[i]):
                found.add((sec.path, i + 1))
    return sorted(found)


def _verify_line(
    c: Mapping[str, Any], index: Index, files: _Files, tokenizer: Tokenizer | None
) -> dict[str, Any]:
    path, n, cited = c["path"], c["line"], c["text"]
    f = files.file(path)
    lines = _lines_of(files, path) if f is not None else None
    if lines is not None and n <= len(lines) and _line_matches(cited, lines[n - 1]):
        return {"status": "valid", "citation": dict(c), "path": path, "line": n, "text": cited}
    here = [i + 1 for i, line in enumerate(lines or ()) if _line_matches(cited, line)]
    here.sort(key=lambda i: (abs(i - n), i))
    found = [(path, i) for i in here]
    if tokenizer is not None:
        found += _line_elsewhere(cited, path, index, files, tokenizer)
    if found:
        where, best = found[0]
        return {
            "status": "moved",
            "citation": dict(c),
            "path": where,
            "line": best,
            "text": cited,
            "others": len(found) - 1,
        }
    return _nothing("missing", c, file_exists=f is not None)


def verify_citations(
    snapshot: Snapshot,
    index: Index,
    fetch: Callable[[CapturedFile], bytes],
    req: VerifyRequest,
    tokenizer: Tokenizer | None = None,
) -> dict[str, Any]:
    """The SPEC §18 result for `req` over this snapshot and its index (`tokenizer`: the one
    the index was built with, to look a line citation up in other files)."""
    files = _Files(snapshot, fetch)
    results = [
        _verify_line(c, index, files, tokenizer)
        if "line" in c
        else _verify_section(c, index, files)
        for c in req.citations
    ]
    result: dict[str, Any] = {
        "snapshot_revision": snapshot.revision,
        "total": len(results),
        "results": results,
    }
    if req.strict:
        result["strict"] = True
    return result


def request_of(value: Any) -> dict[str, Any]:
    """A verify request from what a front was handed: `{"citations": [...]}` as it is, or a
    whole search, lines or semantic result (§6, §8, §15), whose hits or matches are then the
    citations. Anything else: schema_validation."""
    if isinstance(value, Mapping):
        if "citations" in value:
            return dict(value)
        for key in ("hits", "matches"):
            if isinstance(value.get(key), list) and "snapshot_revision" in value:
                return {"citations": value[key]}
    raise schema_error(
        'Give citations as {"citations": [...]}, or a whole search, lines or semantic result.'
    )


__all__ = ["MAX_CITATIONS", "VerifyRequest", "request_of", "similarity", "verify_citations"]
