"""Line search (SPEC §8): grep over every line of every searchable file, exact or RE2.

Semantics are those of searching each line on its own (a line's text excludes its LF and
a CR before it; a lone CR belongs to the line). For speed the search runs over the whole
file text instead, which gives identical answers because

- the text is searched with every CR LF turned into LF, so the LF-separated pieces of the
  searched text are exactly the lines;
- an exact pattern holding an LF can never match a line, and any other exact pattern can
  only match inside one line;
- a regex is compiled a second time for whole-file use, as ``(?m)`` + pattern with RE2's
  ``never_nl`` option: nothing can match an LF, so no match spans two lines, and ``^``/``$``
  see LF (or the text's ends) exactly where a line's ends are. ``\\b`` sees an LF or a text
  end at a line's ends, both non-word. Patterns this reasoning does not cover (``\\A``,
  ``\\z``, ``\\C``, flag groups that touch ``m``, ``\\Q…\\E``) are searched line by line.

Once a match is found on a line, the search resumes at the next line (the first match of a
line is the one reported), so the number of RE2 calls is the number of matching lines + 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import re2

from ..base.cancel import CancelToken
from ..base.errors import CitelineError, ParseIssue, parse_error, schema_error
from ..capture.snapshot import CapturedFile, Snapshot
from ..text.layout import decode
from ..text.terms import check_query
from .requests import STRICT, bool_field, check_keys, check_text, check_threshold, int_field

MODES = ("exact", "regex")  # searched here; "semantic" is semantic_search's (SPEC §15)
SEMANTIC = "semantic"
SEMANTIC_THRESHOLD = 0.5  # semantic.DEFAULT_THRESHOLD (a test holds them equal)
MAX_TEXT = 256  # code points of a match's text window
WINDOW_LEAD = 128  # code points of the window before the match start
ELLIPSIS = "…"
BOM = b"\xef\xbb\xbf"

# Constructs whose whole-file meaning differs from their per-line meaning (conservative:
# a false alarm only costs speed).
_PER_LINE_ONLY = re.compile(r"\\[AzCQ]|\(\?[^:)]*m")


@dataclass(frozen=True, slots=True)
class LinesRequest:
    """A line search (§8): `pattern` exact or RE2; or, with `mode` "semantic" (§15), the
    sections whose meaning matches `pattern` (the request's `query`) at a calibrated score
    of at least `threshold`."""

    pattern: str
    mode: str = "exact"
    case_sensitive: bool = True
    limit: int = 100
    context: int = 2
    threshold: float = SEMANTIC_THRESHOLD
    strict: bool = False  # echoed in the result when true (SPEC §17)

    FIELDS = ("pattern", "query", "mode", "case_sensitive", "threshold", "limit", "context", STRICT)

    @property
    def semantic(self) -> bool:
        return self.mode == SEMANTIC

    @classmethod
    def from_json(cls, request: Any) -> LinesRequest:
        req = check_keys(request, cls.FIELDS, "lines")
        strict = bool_field(req, STRICT, False)
        out = cls._read(req)
        return replace(out, strict=True) if strict else out

    @classmethod
    def _read(cls, req: Mapping[str, Any]) -> LinesRequest:
        mode = req.get("mode", "exact")
        if mode == SEMANTIC:
            return cls._semantic(req)
        if mode not in MODES:
            raise schema_error(
                f"mode must be 'exact', 'regex' or 'semantic'; got {mode!r}.", field="mode"
            )
        for name in ("query", "threshold"):
            if name in req:
                raise schema_error(
                    f"{name} is a field of mode 'semantic'; mode {mode!r} takes a pattern.",
                    field=name,
                )
        if "pattern" not in req:
            raise schema_error("The lines request needs a pattern.", field="pattern")
        pattern = check_text(req["pattern"], "pattern")
        if not pattern:
            raise schema_error("pattern must not be empty.", field="pattern")
        out = cls(
            pattern,
            mode,
            bool_field(req, "case_sensitive", True),
            int_field(req, "limit", 100, 1, 1000),
            int_field(req, "context", 2, 0, 10),
        )
        matcher(out.pattern, out.mode, out.case_sensitive)  # an invalid regex fails here
        return out

    @classmethod
    def _semantic(cls, req: Mapping[str, Any]) -> LinesRequest:
        for name in ("pattern", "case_sensitive"):
            if name in req:
                raise schema_error(
                    f"mode 'semantic' takes a query (text in plain words), not {name}.",
                    field=name,
                )
        if "query" not in req:
            raise schema_error("mode 'semantic' needs a query.", field="query")
        query = check_query(req["query"], need_word=False)
        threshold = check_threshold(req["threshold"]) if "threshold" in req else SEMANTIC_THRESHOLD
        return cls(
            query,
            SEMANTIC,
            True,
            int_field(req, "limit", 100, 1, 1000),
            int_field(req, "context", 2, 0, 10),
            threshold,
        )


# -- matching ---------------------------------------------------------------------------------

# A file searcher: (normalised text as str, as UTF-8 bytes) -> [(0-based line, 0-based column)]
# where column is in code points. It yields one entry per matching line, in line order.
Hits = list[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Matcher:
    """How one request searches one file; built once per request."""

    find: Callable[[str, bytes], Hits]
    needs_bytes: bool


def _options(case_sensitive: bool) -> re2.Options:
    opts = re2.Options()
    opts.case_sensitive = case_sensitive
    opts.never_nl = True
    opts.never_capture = True
    opts.log_errors = False
    return opts


def _compile(pattern: str, opts: re2.Options) -> Any:
    try:
        return re2.compile(pattern, opts)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise schema_error(
            f"pattern is not a valid RE2 regular expression: {reason} — fix it, or search "
            "with mode 'exact'. RE2 has no backreferences or look-around; see "
            "https://github.com/google/re2/wiki/Syntax",
            field="pattern",
            re2_error=reason,
        ) from None


def matcher(pattern: str, mode: str, case_sensitive: bool) -> Matcher:
    """The request's pattern compiled (raises schema_validation for a bad regex). Parsing a
    request compiles it to check it and the search compiles it again: tens of microseconds,
    where a memo would be module state."""
    if mode not in MODES:
        raise schema_error(f"mode must be 'exact' or 'regex'; got {mode!r}.", field="mode")
    if mode == "exact" and "\n" in pattern:
        return Matcher(lambda _text, _data: [], False)  # a line never holds an LF
    if mode == "exact" and case_sensitive:
        return Matcher(lambda text, _data: _find_literal(text, pattern), False)
    source = re2.escape(pattern) if mode == "exact" else pattern
    opts = _options(case_sensitive)
    per_line = _starts(_compile(source, opts))
    if mode == "regex" and _PER_LINE_ONLY.search(pattern):
        return Matcher(lambda _text, data: _find_per_line(data, per_line), True)
    try:
        whole = _starts(re2.compile("(?m)" + source, opts))
    except re2.error:  # e.g. the program grew past max_mem; per-line is still exact
        return Matcher(lambda _text, data: _find_per_line(data, per_line), True)
    return Matcher(lambda _text, data: _find_whole(data, whole), True)


def _find_literal(text: str, needle: str) -> Hits:
    hits: Hits = []
    line = 0
    counted = 0  # text[:counted] has `line` LFs
    pos = text.find(needle)
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        line += text.count("\n", counted, start)
        counted = start
        hits.append((line, pos - start))
        end = text.find("\n", pos)
        if end < 0:
            break
        pos = text.find(needle, end + 1)
    return hits


def _starts(rx: Any) -> Callable[[bytes, int], int]:
    """Where rx first matches data at or after byte pos (-1: nowhere).

    Calls the compiled RE2 object directly when the binding exposes it (google-re2's
    `_Regexp._regexp`): a third of the cost of building a Match object per line.
    """
    raw = getattr(rx, "_regexp", None)
    if raw is not None and hasattr(raw, "Match"):
        match = raw.Match
        anchor = re2._Anchor.UNANCHORED

        def direct(data: bytes, pos: int) -> int:
            return int(match(anchor, data, pos, len(data))[0][0])

        return direct

    def public(data: bytes, pos: int) -> int:
        m = rx.search(data, pos)
        return -1 if m is None else int(m.start())

    return public


def _column(before: bytes) -> int:
    """Code points before a match that starts after the UTF-8 bytes `before`.

    An empty-width match (e.g. \\B) can start inside a multi-byte character, since RE2 tries
    every byte position; "replace" counts the cut character whole, so the column is that of
    the next character boundary.
    """
    return len(before.decode("utf-8", "replace"))


def _find_whole(data: bytes, first: Callable[[bytes, int], int]) -> Hits:
    hits: Hits = []
    size = len(data)
    line = 0
    counted = 0
    pos = 0
    while pos <= size:
        at = first(data, pos)
        if at < 0:
            break
        start = data.rfind(b"\n", 0, at) + 1
        if start == size:  # an empty match after the final LF: not a line
            break
        line += data.count(b"\n", counted, start)
        counted = start
        hits.append((line, _column(data[start:at])))
        end = data.find(b"\n", at)
        if end < 0:
            break
        pos = end + 1
    return hits


def _find_per_line(data: bytes, first: Callable[[bytes, int], int]) -> Hits:
    hits: Hits = []
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # a final LF ends the last line; an empty file has none
    for i, piece in enumerate(pieces):
        at = first(piece, 0)
        if at >= 0:
            hits.append((i, _column(piece[:at])))
    return hits


# -- presentation -----------------------------------------------------------------------------


def window(line: str, column: int) -> str:
    """The match's `text`: the line, or 256 code points around the match with ellipses."""
    n = len(line)
    if n <= MAX_TEXT:
        return line
    start = max(0, min(column - WINDOW_LEAD, n - MAX_TEXT))
    end = start + MAX_TEXT
    return (ELLIPSIS if start > 0 else "") + line[start:end] + (ELLIPSIS if end < n else "")


def clip(line: str) -> str:
    """A context line: over 256 code points it keeps its first 255 and ends with `…`."""
    return line if len(line) <= MAX_TEXT else line[: MAX_TEXT - 1] + ELLIPSIS


def split_lines(text: str) -> list[str]:
    """The lines of CR LF-normalised text (a final LF ends the last line)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n") if "\r" in text else text


# -- search -----------------------------------------------------------------------------------


def _parse_error(errors: list[dict[str, Any]]) -> CitelineError:
    return parse_error(
        errors, "are not valid UTF-8", "Re-save them as UTF-8 to search their lines."
    )


def search_lines(
    snapshot: Snapshot,
    req: LinesRequest,
    fetch: Callable[[CapturedFile], bytes] | None = None,
    cancel: CancelToken | None = None,
    *,
    skip_invalid: bool = False,
) -> dict[str, Any]:
    """SPEC §8 over a captured snapshot: matches in path order, then line order.

    `fetch` gives each file's bytes (capture.Fetcher: those read, held or read again and
    checked); without it, every file's bytes must be in the snapshot.

    Any file that is not valid UTF-8 blocks the search (all of them are listed), unless
    `skip_invalid`: then those files are left out and listed under `skipped`.
    """
    find = matcher(req.pattern, req.mode, req.case_sensitive)
    errors: list[dict[str, Any]] = []
    total = 0
    matches: list[dict[str, Any]] = []
    for file in snapshot.searchable:
        if cancel is not None:
            cancel.check()
        raw = fetch(file) if fetch is not None else file.data
        assert raw is not None
        text = decode(raw)
        if isinstance(text, ParseIssue):
            errors.append({"path": file.path, "line": text.line, "reason": text.reason})
            continue
        if errors and not skip_invalid:
            continue  # the answer is a parse_error: only look for more of them
        norm = _normalise(text)
        data = b""
        if find.needs_bytes:
            plain = b"\r" not in raw and not raw.startswith(BOM)
            data = raw if plain else norm.encode("utf-8")
        hits = find.find(norm, data)
        if not hits:
            continue
        room = req.limit - len(matches)
        if room > 0:
            lines = split_lines(norm)
            for line, column in hits[:room]:
                found = _match(file.path, lines, line, column, req.context)
                if file.unsaved:
                    found["x-unsaved"] = True  # SPEC §8: extra fields only as x- keys
                matches.append(found)
        total += len(hits)
    if errors and not skip_invalid:
        raise _parse_error(errors)
    result: dict[str, Any] = {
        "pattern": req.pattern,
        "mode": req.mode,
        "snapshot_revision": snapshot.revision,
        "total": total,
        "truncated": total > len(matches),
        "matches": matches,
    }
    if skip_invalid:
        result["skipped"] = errors
    return result


def _match(path: str, lines: list[str], line: int, column: int, context: int) -> dict[str, Any]:
    before = lines[max(0, line - context) : line] if context else []
    after = lines[line + 1 : line + 1 + context] if context else []
    return {
        "path": path,
        "line": line + 1,
        "column": column + 1,
        "text": window(lines[line], column),
        "context": {"before": [clip(x) for x in before], "after": [clip(x) for x in after]},
    }


__all__ = ["LinesRequest", "Matcher", "clip", "matcher", "search_lines", "window"]
