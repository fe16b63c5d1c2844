"""lsp/symbols.py in process: engine values → LSP types, every field by hand.

The end-to-end tests (test_lsp_features.py, test_lsp_server.py) check the same through a
real server; these pin each rule on its own, fast enough for mutation testing to run them
for every mutant (docs/testing.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from citeline.engine import Problem, SectionHit
from citeline.engine.base.errors import ParseIssue
from citeline.engine.text.analysis import outline_tree
from citeline.lsp.symbols import (
    EMPTY_HEADING,
    diagnostic,
    diagnostics,
    display,
    document_symbols,
    file_uri,
    symbol_name,
    workspace_symbol,
)


def hit(heading: str = "", level: int = 0, title: str = "", path: str = "d/a b.md") -> SectionHit:
    return SectionHit(path, "d/a b", title, heading, level, 3, 7, 1.5, ("x",))


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def rng(a: int, b: int, c: int, d: int) -> types.Range:
    return types.Range(start=pos(a, b), end=pos(c, d))


@pytest.mark.parametrize(
    ("section", "name"),
    [
        (hit("Install", 2, "Guide"), "Install"),  # the heading, whatever the title
        (hit("", 1, "Guide"), EMPTY_HEADING),  # `#` alone: a heading without text
        (hit("", 3), EMPTY_HEADING),
        (hit("", 0, "Guide"), "Guide"),  # a body section: the concept title
        (hit("", 0, ""), "d/a b.md"),  # ... or the path
        # One line in every client's list: line breaks of the text are shown as spaces.
        (hit("Setext\nover two", 1), "Setext over two"),
        (hit("lone\rCR\u2028sep\x85nel", 2), "lone CR sep nel"),
        (hit("", 0, "Title\non two\x0clines"), "Title on two lines"),
        (hit("tab\tand ß stay", 1), "tab\tand ß stay"),
    ],
)
def test_symbol_name(section: SectionHit, name: str) -> None:
    assert symbol_name(section) == name
    assert EMPTY_HEADING == "(empty heading)"


def test_workspace_symbol_fields(tmp_path: Path) -> None:
    symbol = workspace_symbol(str(tmp_path), hit("Install", 2))
    assert symbol.name == "Install"
    assert symbol.kind == types.SymbolKind.String
    assert symbol.container_name == "d/a b.md"
    assert symbol.location.uri == from_fs_path(str(tmp_path / "d" / "a b.md"))
    assert symbol.location.uri.endswith("/d/a%20b.md")
    # lines 3-7 (1-based) → 2..(7, 0): the start of the line after the last
    assert symbol.location.range == rng(2, 0, 7, 0)
    assert file_uri(str(tmp_path), "x/y/z.md") == from_fs_path(str(tmp_path / "x" / "y" / "z.md"))


OUTLINE = (
    "---\ntitle: T\n---\n"  # lines 0-2
    "# One\n"  # 3
    "text\n"  # 4
    "## Two\n"  # 5
    "#### Four\n"  # 6: under Two (h2 → h4)
    "deep\n"  # 7
    "### Three\n"  # 8: a sibling of Four, under Two
    "Setext\n"  # 9
    "------\n"  # 10: an h2 closing Two's subtree
    "#\n"  # 11: an h1 without text closing One's
    "last line é😀"  # 12, no final LF
)


def outline(text: str, units=len) -> list[types.DocumentSymbol]:
    found = outline_tree(text.encode("utf-8"))
    assert not isinstance(found, ParseIssue)
    return document_symbols(*found, units)


def test_document_symbols_nest_and_end_where_their_subtree_ends() -> None:
    roots = outline(OUTLINE)

    def shape(syms: list[types.DocumentSymbol]) -> list:
        return [(s.name, s.detail, shape(s.children or [])) for s in syms]

    assert shape(roots) == [
        (
            "One",
            "#",
            [
                ("Two", "##", [("Four", "####", []), ("Three", "###", [])]),
                ("Setext", "##", []),
            ],
        ),
        (EMPTY_HEADING, "#", []),
    ]
    one, empty = roots
    two, setext = one.children
    four, three = two.children
    assert all(s.kind == types.SymbolKind.String for s in (one, two, three, four, setext, empty))
    assert one.range == rng(3, 0, 10, len("------"))  # up to the line before "#"
    assert one.selection_range == rng(3, 0, 3, len("# One"))
    assert two.range == rng(5, 0, 8, len("### Three"))  # up to the line before "Setext"
    assert four.range == rng(6, 0, 7, len("deep"))  # the h3 after it is not deeper: it ends
    assert three.range == rng(8, 0, 8, len("### Three"))
    assert setext.range == rng(9, 0, 10, len("------"))
    assert setext.selection_range == rng(9, 0, 10, len("------"))  # underline included
    assert empty.range == rng(11, 0, 12, len("last line é😀"))  # to the end of the file
    assert empty.selection_range == rng(11, 0, 11, 1)


def test_document_symbol_ends_are_measured_in_the_clients_units() -> None:
    def utf16(line: str) -> int:
        return len(line.encode("utf-16-le")) // 2

    (root,) = outline("# Ünï 😀\nbody 😀😀\n", utf16)
    assert root.selection_range.end == pos(0, len("# Ünï ") + 2)
    assert root.range.end == pos(1, len("body ") + 4)
    (root,) = outline("# Ünï 😀\nbody 😀😀\n", lambda s: len(s.encode("utf-8")))
    assert root.range.end == pos(1, len("body ") + 8)


def test_outline_names_are_one_line() -> None:
    (setext,) = outline("Two\nlines\n===\n")
    assert setext.name == "Two lines"
    assert setext.selection_range == rng(0, 0, 2, 3)
    (lone,) = outline("# a\rb\n")
    assert lone.name == "a b"
    assert display("x\x1cy\x1dz\x1ew\vv") == "x y z w v"


def test_document_symbols_of_degenerate_documents() -> None:
    assert outline("") == []
    assert outline("no heading at all\n") == []
    (only,) = outline("# Alone")
    assert only.range == rng(0, 0, 0, len("# Alone"))
    # Two headings on consecutive lines: the first ends on its own line.
    first, second = outline("# A\n# B\n")
    assert first.range == rng(0, 0, 0, 3) and second.range == rng(1, 0, 1, 3)
    # A deeper heading first, then a shallower one: siblings, not nested.
    deep, shallow = outline("### Deep\n# Shallow\n")
    assert (deep.children, shallow.children) == ([], [])
    assert deep.range == rng(0, 0, 0, len("### Deep"))


def test_diagnostic_points_at_the_line_that_blocks_search() -> None:
    d = diagnostic(Problem("a.md", 4, "invalid UTF-8 (byte 0xff at offset 9)"))
    assert d.range == rng(3, 0, 4, 0)  # the whole line 4 (0-based 3)
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.source == "citeline"
    assert d.code == "parse_error"
    assert d.message == (
        "citeline cannot parse this file: invalid UTF-8 (byte 0xff at offset 9). "
        "It blocks search until fixed (or set skip_invalid)."
    )
    assert diagnostic(Problem("a.md", 1, "r")).range == rng(0, 0, 1, 0)
    assert diagnostic(Problem("a.md", 0, "r")).range == rng(0, 0, 1, 0)  # never negative
    many = diagnostics([Problem("a.md", 2, "x"), Problem("b.md", 5, "y")])
    assert [(d.range.start.line, d.message.split(": ", 1)[1][:1]) for d in many] == [
        (1, "x"),
        (4, "y"),
    ]
