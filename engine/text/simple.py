"""Headings of *simple* Markdown without the block parser: exact, or it declines.

markdown-it-py's block parse is most of the cost of analysing a file, and a great many real
files (every page of the tldr pages, most notes) use only paragraphs, ATX headings, block
quotes and list items whose lines all start in the first column. For such a file the block
structure cannot hide or create a heading: a line is an ATX heading exactly when it starts
with one to six `#` followed by a space, a tab or its end (CommonMark 4.2; an ATX heading
interrupts a paragraph, a block quote and a list item whose content would need indentation).

`atx_headings` answers only when every line of the file is of a form whose meaning is
certain, and returns None otherwise — then the caller asks markdown-it. It declines on any
line that is indented (indented code, list continuation), that could open a fenced code block,
an HTML block or a link reference definition (whose title may span lines), that could
underline a Setext heading or be a thematic break, and on block quote or list item content
that could itself open a block. A property test and a test over every file of the corpora
check that whenever it answers, markdown-it gives the same headings.
"""

from __future__ import annotations

import re

from markdown_it.common.utils import MD_TRIM_CHARS  # the heading rule's trimming set

_ATX = re.compile("(#{1,6})(?:[ \t]|$)")
_BLANK = re.compile("[ \t]*")
_UNDERLINE = re.compile("(?:=+|-+)[ \t]*")
_ORDERED = re.compile("[0-9]{1,9}[.)](?:[ \t]|$)")
# Characters that may start a block inside block-quote or list-item content.
_NESTED = frozenset(" \t#>-*+_=<[")

Heading = tuple[int, int, str]  # (0-based line, level, inline content)


def atx_headings(src: str) -> list[Heading] | None:
    """The ATX headings of `src` (the text markdown-it would be given), or None when the
    file is not simple enough to be sure without the block parser."""
    if "]:" in src or "```" in src or "~~~" in src:
        return None  # link reference definitions (titles span lines), fences
    # as markdown-it's normalize does (the text has no lone CR: the caller made them spaces)
    if "\r" in src:
        src = src.replace("\r\n", "\n")
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    found: list[Heading] = []
    for number, line in enumerate(src.split("\n")):
        if not line:
            continue
        first = line[0]
        if first == "#":
            m = _ATX.match(line)
            if m is not None:
                level = len(m.group(1))
                found.append((number, level, _content(line, level)))
            continue  # "#word": a paragraph line
        if first in " \t":
            if _BLANK.fullmatch(line):
                continue
            return None  # indentation: code, or content of an open block
        if first == ">":
            rest = line[1:]
            if rest[:1] in (" ", "\t"):
                rest = rest[1:]
            if not _plain_content(rest):
                return None
            continue
        if first in "-*+_=":
            if _UNDERLINE.fullmatch(line):
                return None  # a Setext underline or a thematic break
            if first in "-*+" and (len(line) == 1 or line[1] in " \t"):
                if not _plain_content(line[2:]):
                    return None
                continue
            if first in "_=":
                return None
            continue  # "**bold**", "-word": a paragraph line
        if first.isdigit():
            m = _ORDERED.match(line)
            if m is not None and not _plain_content(line[m.end() :]):
                return None
            continue
        if first == "<":
            return None  # an HTML block
        # anything else starts (or continues) a paragraph
    return found


def _plain_content(rest: str) -> bool:
    """Content of a block quote line or a list item that can only be paragraph text."""
    if not rest:
        return True
    if rest[0] in _NESTED:
        return False
    return not (rest[0].isdigit() and _ORDERED.match(rest))


def _content(line: str, level: int) -> str:
    """An ATX heading's inline content, as markdown-it's heading rule cuts it: the closing
    sequence of `#` dropped when a space or tab precedes it, then CommonMark-trimmed."""
    end = len(line)
    while end > level and line[end - 1] in " \t":
        end -= 1
    cut = end
    while cut > level and line[cut - 1] == "#":
        cut -= 1
    if cut > level and line[cut - 1] in " \t":
        end = cut
    return line[level:end].strip(MD_TRIM_CHARS)


__all__ = ["atx_headings"]
