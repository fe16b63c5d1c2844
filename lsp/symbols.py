"""Engine results → LSP types (workspace symbols, document outline, diagnostics).

Ranges. LSP lines are 0-based, the engine's 1-based. A workspace symbol's range runs from
the start of its first line to the *start of the line after its last line* (``line_end, 0``):
the LSP spec's own way to include a whole last line with its line ending, and it needs no
second read of the file (the engine does not hand out line texts with section hits). The
outline (documentSymbol) has the document's text at hand, so its ranges end exactly at the
end of the subtree's last line, measured in the negotiated position encoding.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence

from lsprotocol import types
from pygls.uris import from_fs_path

from citeline.engine import Problem, SectionHit
from citeline.engine.text.layout import Layout
from citeline.engine.text.sections import Heading

SOURCE = "citeline"
EMPTY_HEADING = "(empty heading)"
# A heading is text of the file: a Setext heading written over two lines holds "\n", and a
# lone CR stays a CR (SPEC §3). A symbol's name is one line in every client's list, so each
# character str.splitlines() would break a line at is shown as a space (SPEC §3 allows it).
_ONE_LINE = str.maketrans(dict.fromkeys("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


def display(text: str) -> str:
    """A heading or title as a symbol's name: on one line."""
    return text.translate(_ONE_LINE)


def file_uri(folder: str, rel_path: str) -> str:
    uri = from_fs_path(os.path.join(folder, *rel_path.split("/")))
    assert uri is not None
    return uri


def symbol_name(hit: SectionHit) -> str:
    """The heading; for a preamble/body section the file's title (front matter, else its
    first H1), else the path: the engine's one rule (text/sections.py section_label), as the
    command line and MCP name it."""
    name = hit.label
    return name if name == hit.path else display(name)


def workspace_symbol(folder: str, hit: SectionHit) -> types.SymbolInformation:
    return _symbol(folder, hit.path, symbol_name(hit), hit.line_start, hit.line_end)


# As-you-type, each keystroke's answer holds most of the previous one's symbols, and making
# one (its URI above all) costs about as much as ranking it. A symbol is a pure function of
# these fields, and nothing changes a symbol once made (pygls only serializes it), so the
# same object can be sent again.
@functools.lru_cache(maxsize=4_096)
def _symbol(
    folder: str, path: str, name: str, line_start: int, line_end: int
) -> types.SymbolInformation:
    return types.SymbolInformation(
        name=name,
        kind=types.SymbolKind.String,
        container_name=path,
        location=types.Location(
            uri=file_uri(folder, path),
            range=types.Range(
                start=types.Position(line=line_start - 1, character=0),
                end=types.Position(line=line_end, character=0),
            ),
        ),
    )


def document_symbols(
    lay: Layout, heads: Sequence[Heading], units: Callable[[str], int]
) -> list[types.DocumentSymbol]:
    """Nested outline: each heading spans through the end of its subtree.

    A heading's subtree ends on the line before the next heading of the same or a higher
    level (a smaller or equal number), or at the end of the file. Children nest under the
    nearest preceding heading of a higher level, so h2 → h4 puts the h4 under the h2.
    `units` measures a line's length in the client's position encoding.
    """
    last_line = max(lay.line_count - 1, 0)

    def end_of(line: int) -> types.Position:
        if lay.line_count == 0:
            return types.Position(line=0, character=0)
        return types.Position(line=line, character=units(lay.line(line)))

    roots: list[types.DocumentSymbol] = []
    stack: list[tuple[int, types.DocumentSymbol]] = []  # (level, symbol) of open headings
    for i, h in enumerate(heads):
        end = last_line
        for nxt in heads[i + 1 :]:
            if nxt.level <= h.level:
                end = max(nxt.line - 1, h.line)
                break
        head_end = max(h.line, min(h.end_line - 1, end))  # a Setext underline included
        symbol = types.DocumentSymbol(
            name=display(h.text) if h.text else EMPTY_HEADING,
            detail="#" * h.level,
            kind=types.SymbolKind.String,
            range=types.Range(start=types.Position(line=h.line, character=0), end=end_of(end)),
            selection_range=types.Range(
                start=types.Position(line=h.line, character=0), end=end_of(head_end)
            ),
            children=[],
        )
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        if stack:
            children = stack[-1][1].children
            assert isinstance(children, list)  # made as a list above
            children.append(symbol)
        else:
            roots.append(symbol)
        stack.append((h.level, symbol))
    return roots


def diagnostic(problem: Problem) -> types.Diagnostic:
    line = max(problem.line - 1, 0)
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=0),
            end=types.Position(line=line + 1, character=0),
        ),
        message=f"citeline cannot parse this file: {problem.reason}. It blocks search "
        "until fixed (or set skip_invalid).",
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
        code="parse_error",
    )


def diagnostics(problems: Iterable[Problem]) -> list[types.Diagnostic]:
    return [diagnostic(p) for p in problems]


__all__ = ["display", "document_symbols", "file_uri", "symbol_name", "workspace_symbol"]
