"""Headings from markdown-it-py's CommonMark parser, and the flat sections they cut (SPEC §3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..base.errors import ParseIssue
from .layout import Layout, layout
from .simple import atx_headings

# Block structure is all that decides where headings are; inline parsing is only needed
# for the heading texts themselves, so the block parser skips it. The inline parser keeps
# escapes and entities as tokens of their own (no text_join), so that every text token is
# a slice of the heading's source (see _original_text).
_BLOCK = MarkdownIt("commonmark").disable(["inline", "text_join"])
_INLINE = MarkdownIt("commonmark").disable("text_join")


def rules_compiled(md: MarkdownIt) -> MarkdownIt:
    """Each ruler builds its rule lists on first use, in place: a second thread parsing
    meanwhile (the server's requests are threads) could read a half-built list and skip
    rules. Built once here, at import, they are only ever read."""
    for ruler in (md.core.ruler, md.block.ruler, md.inline.ruler, md.inline.ruler2):
        ruler.getRules("")
    return md


rules_compiled(_BLOCK)
rules_compiled(_INLINE)


def _quiet_block_rules() -> None:
    """markdown-it's block rules each log their entry at DEBUG: 400,000 calls for 2,500
    small files, a fifth of the block parse, though that level is never on. While it is off
    when citeline starts, those loggers' debug() does nothing at all. (Their output is only
    ever of use to someone debugging markdown-it itself.)"""
    import logging
    import sys

    for name, module in list(sys.modules.items()):
        logger = getattr(module, "LOGGER", None) if name.startswith("markdown_it.") else None
        if isinstance(logger, logging.Logger) and not logger.isEnabledFor(logging.DEBUG):
            logger.debug = _ignore  # type: ignore[method-assign]


def _ignore(*_: object, **__: object) -> None:
    return None


_quiet_block_rules()
_LONE_CR = re.compile("\r(?!\n)")
# The characters CommonMark's inline rules start on (escapes, code spans, emphasis, links,
# images, autolinks and raw HTML, entities, line breaks): content without any is plain text.
_INLINE_SYNTAX = re.compile("[\\\\`*_\\[\\]!<&\n]")
_NOT_WHITE = re.compile(
    "[^\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)


@dataclass(frozen=True, slots=True)
class Heading:
    line: int  # 0-based line where the heading starts
    level: int
    text: str  # plain text (markup removed); "\n" where a Setext heading breaks its line
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
    return find_headings(lay)[0]


Blocks = tuple[list[Token], dict]


def parse_blocks(lay: Layout) -> Blocks:
    """markdown-it's block tokens of the file (inline content left unparsed), and the link
    reference definitions the block pass collected."""
    return _parse_blocks(parser_input(lay))


def _parse_blocks(source: str) -> Blocks:
    env: dict = {}
    return _BLOCK.parse(source, env), env


def find_headings(lay: Layout, blocks: Blocks | None = None) -> tuple[list[Heading], bool]:
    """The headings, and whether the block parser was needed for them (False when the file
    was simple enough for engine/text/simple.py, or had no body). `blocks`: the file's
    parse_blocks, when the caller has them."""
    if lay.body_line >= lay.line_count:
        return [], False
    source = parser_input(lay)
    # Link reference definitions collected by the block pass resolve `[text][ref]` in headings.
    env: dict = {}
    simple = atx_headings(source)  # exact for simple files, or None: ask markdown-it
    if simple is not None:
        raw = [(first, first + 1, level, content, True) for first, level, content in simple]
    else:
        tokens, env = blocks if blocks is not None else _parse_blocks(source)
        raw = [
            (tok.map[0], tok.map[1], int(tok.tag[1]), tokens[i + 1].content, tok.markup[:1] == "#")
            for i, tok in enumerate(tokens)
            if tok.type == "heading_open" and tok.map is not None
        ]
    found = []
    for first, end, level, content, atx in raw:
        if _LONE_CR.search(lay.text, lay.starts[first], lay.ends[end - 1]):
            pieces = inline_pieces(content, env)
            text = _original_text(lay, first, end, atx, pieces)
        elif _INLINE_SYNTAX.search(content):
            text = "".join(map(_piece_text, inline_pieces(content, env)))
        else:
            text = content  # no character any inline rule acts on: the text is the content
        found.append(Heading(first, level, text, end))
    return found, simple is None


_BREAKS = ("softbreak", "hardbreak")
_TEXT = ("text", "text_special", "code_inline")


def inline_pieces(content: str, env: dict | None = None) -> list[Token]:
    """The tokens that make a heading's plain text, in order: text, escapes and entities
    (text_special), code spans, and line breaks; markup, link destinations and raw HTML
    are dropped, the text of links, emphasis and image alt text kept.

    `env` carries the document's link reference definitions (from the block pass).
    """
    if not content:
        return []
    out: list[Token] = []
    for tok in _INLINE.parseInline(content, dict(env) if env else None):
        _collect(tok.children or [], out)
    return out


def plain_text(content: str, env: dict | None = None) -> str:
    """A heading's inline content with markup dropped and the text inside kept; a line
    break (soft or hard) of a heading written over several lines stays "\n"."""
    return "".join(map(_piece_text, inline_pieces(content, env)))


def _piece_text(piece: Token) -> str:
    kind = piece.type
    if kind in _BREAKS:
        return "\n"
    return "" if kind == "html_inline" else piece.content


def _collect(children: list[Token], out: list[Token]) -> None:
    for child in children:
        kind = child.type
        if kind in _TEXT or kind in _BREAKS or kind == "html_inline":
            out.append(child)
        elif kind == "image":
            _collect(child.children or [], out)


def _original_text(lay: Layout, first: int, end: int, atx: bool, pieces: list[Token]) -> str:
    """The plain text of a heading whose lines hold a lone CR, with each CR kept.

    The parser saw a space for each lone CR (parser_input); the heading is text of the
    file, so the pieces are found again, in order, in the heading's lines as the parser saw
    them, and taken from the original lines at the same offsets (the two differ only where
    a CR became a space). A piece that is not a slice of the source (a decoded escape or
    entity, a code span that crossed a line) keeps what the parser made of it; spaces the
    parser dropped (trimmed around the text, around line breaks) are dropped with their CR.
    """
    start, stop = lay.starts[first], lay.ends[end - 1]
    # As the parser saw them: CR → space, NUL → U+FFFD (CommonMark's replacement, kept).
    original = lay.text[start:stop].replace("\0", "\ufffd")
    seen = _LONE_CR.sub(" ", original)
    cursor = 0
    if atx:  # after the opening `#`s, so no piece is found in a container's markers
        cursor = seen.find("#")
        while cursor < len(seen) and seen[cursor] == "#":
            cursor += 1
    out = []
    for piece in pieces:
        kind = piece.type
        if kind in _BREAKS:
            out.append("\n")
            needle = "\n"
        elif kind == "html_inline":
            needle = piece.content
        else:
            needle = piece.markup if kind == "text_special" else piece.content
        at = seen.find(needle, cursor) if needle else -1
        if kind in ("text", "code_inline"):
            out.append(original[at : at + len(needle)] if at >= 0 else piece.content)
        elif kind == "text_special":
            out.append(piece.content)
        if at >= 0:
            cursor = at + len(needle)
    return "".join(out)


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


# -- what fronts call a section (one rule for the CLI, MCP and the language server) ----------

EMPTY_HEADING = "(empty heading)"


def section_label(path: str, heading: str, level: int, title: str, h1: str) -> str:
    """A section's name for people: its heading; for the text before a file's first heading
    (and a file without headings) the file's title — front matter `title`, else the file's
    first H1 — else its path. `level` > 0 with no text is a heading written empty (`#`)."""
    if heading:
        return heading
    if level > 0:
        return EMPTY_HEADING
    return title or h1 or path


def label_in(path: str, data: bytes, line_start: int, heading: str) -> str:
    """section_label for a hit known by its file's bytes and its first line (1-based): for a
    front that has a result and the bytes it came from, not the index."""
    if heading:
        return heading
    found = structure(data)
    if isinstance(found, ParseIssue):
        return path
    if any(h.line == line_start - 1 for h in found.headings):
        return EMPTY_HEADING
    title = found.front.get("title")
    return section_label(
        path, "", 0, title if isinstance(title, str) else "", first_h1(found.headings)
    )


def first_h1(heads: Any) -> str:
    """The text of the file's first level-1 heading that has text ("" when none)."""
    return next((h.text for h in heads if h.level == 1 and h.text), "")
