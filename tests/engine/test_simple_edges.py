"""engine/text/simple.py answers for the simple files it exists for (found by mutation testing,
docs/testing.md): empty quote and list lines and text starting with a number are plain
paragraph text, and a heading keeps every character of its text."""

from __future__ import annotations

from test_simple_headings import markdown_it

from citeline.engine.text.simple import atx_headings


def test_empty_quote_and_list_lines_are_simple() -> None:
    for src in ("# T\n>\n> text\n", "# T\n*\n+ \n* x\n", "# T\n1.\n2. two\n"):
        found = atx_headings(src)
        assert found is not None, src  # nothing here needs the block parser
        assert found == markdown_it(src) == [(0, 1, "T")]


def test_text_starting_with_a_number_is_simple() -> None:
    """`> 2024 was…` or `- 3 apples` hold no ordered list (no `.` or `)` after the
    digits): the file stays simple. `> 1. item` opens a list inside the quote: declined."""
    for src in ("# Year\n> 2024 was a year\n", "# Fruit\n- 3 apples\n+ 10x faster\n"):
        found = atx_headings(src)
        assert found is not None, src
        assert found == markdown_it(src)
    assert atx_headings("# Q\n> 1. item\n") is None
    assert atx_headings("# Q\n- 2) item\n") is None


def test_heading_text_keeps_its_last_letters() -> None:
    """Only spaces, tabs and a closing `#` sequence are cut from a heading's end."""
    for line, level, text in (
        ("# LaTeX", 1, "LaTeX"),
        ("## Install TeX ##", 2, "Install TeX"),
        ("# tab\t", 1, "tab"),
        ("### a\tX\t #", 3, "a\tX"),
    ):
        src = line + "\n"
        assert atx_headings(src) == markdown_it(src) == [(0, level, text)], line
