"""A section's links, read from markdown-it's tokens (SPEC §13 `structure: fields`).

Under `structure=fields` (profile `recall`) a section's words are weighed by the block they
stand in, as issue 52's measurement chose (docs/relevance.md, "Third round: what a section
says"): a link's destination (`../guide/setup.md`, `https://…`, a heading's `{#anchor}`) is
what the section points to, not what it says, so its words weigh 0, as do the lines of a
link reference definition (markdown-it makes no token of them); and a section whose body is
mostly links is a navigation section, which ranking demotes unless the question asks for a
list (engine/rank/scoring.py `navigation_factor`).

This module owns finding those words: which of a section's tokens to take out of its
counts, and whether it is a navigation section. It reads the file through markdown-it's
parser, so it is only run on a file that can hold a link destination, definition or anchor
at all (`_LINKISH`); a file without one is read as it always was. Of such a file, only the
inline content that can hold a link (`_LINK_START`) goes through the inline parser; the
rest counts the words it holds, which is what the inline parser's text gives (markup
characters are no words), at a fraction of the cost of parsing every paragraph.
Imports: the layout, sections' parser input, and the tokenizer it is handed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from .layout import Layout
from .sections import Blocks, Span, parse_blocks, rules_compiled

# The share of a section's body tokens (everything but its heading) that link labels and
# destinations must reach for it to be a navigation section (measured: docs/relevance.md).
NAVIGATION_SHARE = 0.6
# `{#id}` / `{ #id }` after a heading's text: an anchor (Pandoc, MkDocs, FastAPI's docs).
ANCHOR = re.compile(r"\{\s*#[^}]*\}")
# What a file needs before any of this can apply: an inline link or image `](`, a full or
# collapsed reference `][`, a definition `]:`, or an anchor `{#` / `{ #` (substring tests,
# a third of a regex's time on tldr's 38,000 pages; an anchor spaced otherwise is left in
# a file with nothing else). An autolink `<https://…>` is left as prose: its label is its
# destination, so its words count once either way.
_LINKISH = ("](", "][", "]:", "{#", "{ #")
# An inline link's destination and title, after the `](` that starts them (CommonMark 6.3):
# `<…>` or a run without spaces whose parentheses balance (one level), then an optional
# title in quotes or parentheses.
_DESTINATION = re.compile(
    r"\]\(\s*(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)"
    r"(?:\s+(\"[^\"]*\"|'[^']*'|\((?:[^()\\]|\\.)*\)))?\s*\)"
)
_REFERENCE = re.compile(r"\]\[((?:[^\[\]\\]|\\.)+)\]")
# Inline content that can hold a link or image (`[`) or an autolink (`<scheme:`).
_LINK_START = re.compile(r"\[|<[A-Za-z][A-Za-z0-9.+-]{1,31}:")
# The block tokens whose lines are the file's text (a line none of them covers, and not
# blank, is part of a link reference definition).
_LEAVES = frozenset(("paragraph_open", "heading_open", "fence", "code_block", "html_block", "hr"))
_CODE = frozenset(("fence", "code_block"))
_INLINES = rules_compiled(MarkdownIt("commonmark"))


@dataclass(frozen=True, slots=True)
class Links:
    """One section's links: the tokens of its text that weigh 0, and whether it is a
    navigation section."""

    dropped: Counter[str]
    navigation: bool


def linkish(lay: Layout) -> bool:
    """Whether the file can hold a link destination, definition or anchor at all."""
    if lay.body_line >= lay.line_count:
        return False
    text = lay.text[lay.starts[lay.body_line] :] if lay.body_line else lay.text
    return any(mark in text for mark in _LINKISH)


def links(
    lay: Layout,
    spans: Sequence[Span],
    tokens: Callable[[str], list[str]],
    blocks: Blocks | None = None,
) -> list[Links] | None:
    """Each span's Links, for a file that is `linkish` (None when it has no span).
    `blocks`: the file's sections.parse_blocks, when the caller has them."""
    if not spans:
        return None
    firsts = [s.first for s in spans]

    def at(line: int) -> int:
        i = bisect_right(firsts, line) - 1
        return i if i >= 0 and line <= spans[i].last else -1

    n = len(spans)
    dropped: list[Counter[str]] = [Counter() for _ in range(n)]
    label = [0] * n  # link label and image alt tokens
    dest = [0] * n  # destination tokens (inline, reference and autolinks, anchors)
    body = [0] * n  # every token but the heading's

    covered = bytearray(lay.line_count + 1)
    # env: the link reference definitions, for the references that use them
    parsed, env = blocks if blocks is not None else parse_blocks(lay)
    for i, tok in enumerate(parsed):
        if tok.map is None:
            continue
        if tok.type in _LEAVES:
            covered[tok.map[0] : tok.map[1]] = b"\x01" * (tok.map[1] - tok.map[0])
        s = at(tok.map[0])
        if s < 0:
            continue
        if tok.type in _CODE:
            body[s] += len(tokens(f"{tok.info} {tok.content}"))
        elif tok.type == "html_block":
            body[s] += len(tokens(tok.content))
        elif tok.type == "inline":
            heading = i > 0 and parsed[i - 1].type == "heading_open"
            if _LINK_START.search(tok.content):
                children = _INLINES.parseInline(tok.content, dict(env))[0].children or []
                _inline(tok.content, children, heading, tokens, dropped[s], s, label, dest, body)
            elif heading:
                _anchors(tok.content, tokens, dropped[s], s, dest, body)
            else:
                body[s] += len(tokens(tok.content))

    # Lines no block covers that are not blank: link reference definitions, in no field.
    for line in range(lay.body_line, lay.line_count):
        if not covered[line]:
            text = lay.line(line)
            if text.strip():
                s = at(line)
                if s >= 0:
                    dropped[s].update(tokens(text))
    return [
        Links(dropped[s], body[s] > 0 and label[s] + dest[s] >= NAVIGATION_SHARE * body[s])
        for s in range(n)
    ]


def _anchors(
    content: str,
    tokens: Callable[[str], list[str]],
    dropped: Counter[str],
    s: int,
    dest: list[int],
    body: list[int],
) -> None:
    """A heading's `{#anchor}`s: destinations, as written in its text."""
    if "{" in content:
        for m in ANCHOR.finditer(content):
            words = tokens(m.group())
            dropped.update(words)
            dest[s] += len(words)
            body[s] += len(words)


def _inline(
    content: str,
    children: list[Token],
    heading: bool,
    tokens: Callable[[str], list[str]],
    dropped: Counter[str],
    s: int,
    label: list[int],
    dest: list[int],
    body: list[int],
) -> None:
    if heading:
        _anchors(content, tokens, dropped, s, dest, body)
    inside = 0
    linked = False
    for child in children:
        kind = child.type
        if kind == "link_open":
            words = tokens(str(child.attrs.get("href", "")))
            dest[s] += len(words)
            body[s] += len(words)
            inside += 1
            linked = True
        elif kind == "link_close":
            inside -= 1
        elif kind == "image":
            words = tokens(str(child.attrs.get("src", "")))
            alt = len(tokens(child.content))
            dest[s] += len(words)
            label[s] += alt
            body[s] += len(words) + alt
            linked = True
        elif not heading and kind in ("text", "text_special", "code_inline", "html_inline"):
            count = len(tokens(child.content))
            body[s] += count
            if inside and kind == "text":
                label[s] += count
    if linked:
        # As written in the section's raw text: inline destinations and titles, and the
        # names of full references (`[text][name]`), which are no field's words either.
        if "](" in content:
            for m in _DESTINATION.finditer(content):
                for part in m.groups():
                    if part:
                        dropped.update(tokens(part))
        if "][" in content:
            for m in _REFERENCE.finditer(content):
                dropped.update(tokens(m.group(1)))


__all__ = ["ANCHOR", "NAVIGATION_SHARE", "Links", "links"]
