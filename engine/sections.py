"""Headings from markdown-it-py's CommonMark parser, and the flat sections they cut (SPEC §3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from .layout import Layout, ParseIssue, layout

# Block structure is all that decides where headings are; inline parsing is only needed
# for the heading texts themselves, so the block parser skips it.
_BLOCK = MarkdownIt("commonmark").disable(["inline", "text_join"])
_INLINE = MarkdownIt("commonmark")
_LONE_CR = re.compile("\r(?!\n)")
_NOT_WHITE = re.compile(
    "[^\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)


@dataclass(frozen=True, slots=True)
class Heading:
    line: int  # 0-based line where the heading starts
    level: int
    text: str  # plain text (markup removed)
    end_line: int  # 0-based line after the heading's last line (Setext underline included)


@dataclass(frozen=True, slots=True)
class Span:
    """A flat section: 0-based inclusive line range, with its heading (None: preamble/body)."""

    first: int
    last: int
    heading: Heading | None


def parser_input(lay: Layout) -> str:
    """The text markdown-it sees: front matter blanked (line numbers kept), lone CR → space."""
    body = lay.text[lay.starts[lay.body_line] :] if lay.body_line < lay.line_count else ""
    text = "\n" * lay.body_line + body
    return _LONE_CR.sub(" ", text) if "\r" in text else text


def headings(lay: Layout) -> list[Heading]:
    if lay.body_line >= lay.line_count:
        return []
    # Link reference definitions collected by the block pass resolve `[text][ref]` in headings.
    env: dict = {}
    tokens = _BLOCK.parse(parser_input(lay), env)
    found = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            inline = tokens[i + 1]
            found.append(
                Heading(tok.map[0], int(tok.tag[1]), plain_text(inline.content, env), tok.map[1])
            )
    return found


def plain_text(content: str, env: dict | None = None) -> str:
    """A heading's inline content with markup dropped and the text inside kept.

    `env` carries the document's link reference definitions (from the block pass).
    """
    if not content:
        return ""
    out: list[str] = []
    for tok in _INLINE.parseInline(content, dict(env) if env else None):
        _collect(tok.children or [], out)
    return "".join(out)


def _collect(children: list[Token], out: list[str]) -> None:
    for child in children:
        kind = child.type
        if kind in ("text", "text_special", "code_inline"):
            out.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            out.append(" ")
        elif kind == "image":
            _collect(child.children or [], out)


def cut(lay: Layout, heads: list[Heading]) -> list[Span]:
    """Preamble, then one section per heading; whitespace-only sections are omitted."""
    n = lay.line_count
    spans: list[Span] = []
    first_heading = heads[0].line if heads else n
    if lay.body_line < first_heading:
        spans.append(Span(lay.body_line, first_heading - 1, None))
    for i, head in enumerate(heads):
        last = heads[i + 1].line - 1 if i + 1 < len(heads) else n - 1
        spans.append(Span(head.line, last, head))
    return [s for s in spans if _NOT_WHITE.search(lay.span_text(s.first, s.last))]


@dataclass(frozen=True, slots=True)
class Structure:
    """What markdown-it decides about a file: its front matter and headings.

    Independent of the relevance options, so one parse serves every option set, and small
    enough to be computed in another process and sent back.
    """

    front: dict[str, Any]
    body_line: int
    headings: tuple[Heading, ...]


def structure(data: bytes) -> Structure | ParseIssue:
    lay = layout(data)
    if isinstance(lay, ParseIssue):
        return lay
    return Structure(lay.front, lay.body_line, tuple(headings(lay)))
