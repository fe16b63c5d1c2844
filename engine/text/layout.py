"""One file's text: strict decoding, LF-only physical lines and front matter (SPEC §3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import ParseIssue

_LF = re.compile("\n")
# A front-matter fence may end in spaces or tabs (SPEC §3, as Jekyll and Hugo read it: real
# pages close their front matter with "--- "); nothing else may follow or precede it.
_BLANKS = " \t"


@dataclass(frozen=True, slots=True)
class Layout:
    text: str  # decoded, leading BOM removed
    starts: tuple[int, ...]  # code-point offset where each line starts
    ends: tuple[int, ...]  # offset where each line's content ends (before LF, or CR LF)
    front: dict[str, Any]  # front matter mapping ({} when there is none)
    body_line: int  # 0-based index of the first line after front matter

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line(self, i: int) -> str:
        """Content of 0-based line i (no LF, no CR of a CRLF)."""
        return self.text[self.starts[i] : self.ends[i]]

    def span_text(self, first: int, last: int) -> str:
        """Lines first..last (0-based, inclusive) as in the file, without the final ending."""
        return self.text[self.starts[first] : self.ends[last]]


def decode(data: bytes) -> str | ParseIssue:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return ParseIssue(
            line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        )
    return text[1:] if text.startswith("\ufeff") else text


def line_index(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Line starts and content ends; a final LF ends the last line, CR LF counts as one end."""
    starts = [0]
    ends = []
    for m in _LF.finditer(text):
        pos = m.start()
        ends.append(pos - 1 if pos > 0 and text[pos - 1] == "\r" else pos)
        starts.append(pos + 1)
    if starts[-1] == len(text):
        starts.pop()
    else:
        ends.append(len(text))
    return tuple(starts), tuple(ends)


def layout(data: bytes) -> Layout | ParseIssue:
    text = decode(data)
    if isinstance(text, ParseIssue):
        return text
    starts, ends = line_index(text)
    lay = Layout(text, starts, ends, {}, 0)
    if not starts or lay.line(0).rstrip(_BLANKS) != "---":
        return lay
    close = next(
        (i for i in range(1, len(starts)) if lay.line(i).rstrip(_BLANKS) in ("---", "...")),
        None,
    )
    if close is None:
        return ParseIssue(1, "front matter opened by '---' on line 1 is never closed")
    source = "\n".join(lay.line(i) for i in range(1, close))
    from .frontmatter import load_front_matter  # PyYAML: only for files that have some

    value = load_front_matter(source)
    if isinstance(value, ParseIssue):
        return value
    return Layout(text, starts, ends, value, close + 1)
