"""Heading text is text of the file (SPEC §3, issue 14): a Setext heading written over several
lines keeps its "\\n", a lone CR inside a heading stays a CR; fronts may show both as spaces
(the LSP symbols do). And the capture suffix check is ASCII case-insensitive (SPEC §2)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from citeline.engine import Call, Engine, SectionHit, Settings
from citeline.engine.answer.present import encode
from citeline.engine.text.layout import Layout, layout
from citeline.engine.text.sections import headings
from citeline.lsp.symbols import display, document_symbols, symbol_name, workspace_symbol


def texts(source: str) -> list[str]:
    lay = layout(source.encode())
    assert isinstance(lay, Layout)
    return [h.text for h in headings(lay)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("line one\nline two\n===\n", "line one\nline two"),
        ("one\ntwo\nthree\n---\n", "one\ntwo\nthree"),
        ("one  \ntwo\n===\n", "one\ntwo"),  # hard break (two spaces)
        ("one\\\ntwo\n===\n", "one\ntwo"),  # hard break (backslash)
        ("one   \n   two\n===\n", "one\ntwo"),  # spaces around the break are not text
        ("*one\ntwo*\n===\n", "one\ntwo"),  # emphasis across the break
        ("> quoted\n> twice\n> ===\n", "quoted\ntwice"),
        ("one\r\ntwo\r\n===\r\n", "one\ntwo"),  # CRLF ends a line like LF
        ("`a\nb`\n===\n", "a b"),  # a code span's line ending is a space (CommonMark)
    ],
)
def test_setext_heading_keeps_its_line_breaks(source: str, expected: str) -> None:
    assert texts(source) == [expected]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("# one\rtwo\n", "one\rtwo"),
        ("# one\r\rtwo\n", "one\r\rtwo"),
        ("# *one\rtwo* three\n", "one\rtwo three"),
        ("# `one\rtwo`\n", "one\rtwo"),  # inside a code span
        ("# [one\rtwo](/url)\n", "one\rtwo"),  # inside link text
        ("# &amp;\rx\n", "&\rx"),  # after an entity (not a slice of the source)
        ("# \\*\rx\n", "*\rx"),  # after an escape
        ("> # quoted\rcr\n", "quoted\rcr"),
        ("- # in\ritem\n", "in\ritem"),
        ("# a\rb #\n", "a\rb"),  # closing sequence dropped
        ("one\rtwo\nthree\n===\n", "one\rtwo\nthree"),  # Setext: both kinds at once
        ("#\rtitle\n", "title"),  # the CR the parser read as the space after `#`: markup
        ("# title\r\n", "title"),  # CRLF: not a lone CR
        ("# a \r b\n", "a \r b"),
        ("#  \rpadded\r  \n", "padded"),  # CRs the parser trimmed as spaces go with them
        ("one\n\rtwo\n===\n", "one\ntwo"),  # trimmed after the line break
        ("# a\x00\rb\n", "a\ufffd\rb"),  # NUL is U+FFFD as CommonMark says; the CR stays
    ],
)
def test_lone_cr_inside_a_heading_stays_a_cr(source: str, expected: str) -> None:
    assert texts(source) == [expected]


def test_lone_cr_before_setext_underline_is_still_a_paragraph() -> None:
    assert texts("Title\r===\n") == []  # one physical line: the parser sees "Title ==="


# The parser saw a space at each lone CR: taking the CRs back must not change anything else.
pieces = st.lists(
    st.sampled_from(["a", "b", "word", " ", "\r", "*", "`", "_", "[x](/u)", "&amp;", "\\*", "#"]),
    min_size=1,
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None, database=None)
@given(
    first=pieces,
    second=st.one_of(st.none(), pieces),
    kind=st.sampled_from(["# ", "## ", "> # ", "- # ", ""]),
)
def test_restored_crs_are_only_where_the_parser_saw_spaces(
    first: str, second: str | None, kind: str
) -> None:
    source = kind + first + ("\n" + second if second is not None else "") + "\n"
    if not kind:
        source += "===\n"
    with_cr = texts(source)
    # Only a lone CR is text (a CR before an LF ends the line): that is what the parser saw
    # as a space.
    with_spaces = texts(re.sub("\r(?!\n)", " ", source))
    assert [t.replace("\r", " ") for t in with_cr] == with_spaces
    for text in with_cr:
        assert text.count("\r") <= source.count("\r")


def test_search_hit_heading_keeps_newline_and_cr(make_bundle) -> None:
    bundle = make_bundle({"a.md": b"one\rtwo\nthree\n=====\nbody words\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "words"})["hits"]
    assert hit["heading"] == "one\rtwo\nthree"
    assert '"heading":"one\\rtwo\\nthree"' in encode(hit)
    # the heading's words are indexed as before: the CR and LF separate them
    assert Engine().search(Call(bundle, Settings()), {"query": "two three"})["total"] == 1


# -- the LSP front shows them as spaces ----------------------------------------------------------


def test_display_puts_a_heading_on_one_line() -> None:
    assert display("one\rtwo\nthree") == "one two three"
    assert display("a\u2028b\x85c\fd\ve") == "a b c d e"
    assert display("plain") == "plain"


def test_workspace_symbol_name_is_one_line() -> None:
    hit = SectionHit("a.md", "a", "", "one\rtwo\nthree", 1, 1, 4, 1.0, ("two",))
    assert symbol_name(hit) == "one two three"
    assert workspace_symbol("/ws", hit).name == "one two three"
    body = SectionHit("b.md", "b", "Title\non two lines", "", 0, 1, 2, 0.0, ())
    assert symbol_name(body) == "Title on two lines"


def test_document_symbol_name_is_one_line() -> None:
    lay = layout(b"one\rtwo\nthree\n===\n\n# next\n")
    assert isinstance(lay, Layout)
    heads = headings(lay)
    assert heads[0].text == "one\rtwo\nthree"
    outline = document_symbols(lay, heads, len)
    assert [s.name for s in outline] == ["one two three", "next"]
    assert outline[0].selection_range == types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=2, character=3)
    )


# -- capture: ASCII case-insensitive suffixes ------------------------------------------------------


def test_kelvin_sign_suffix_is_not_markdown(make_bundle) -> None:
    bundle = make_bundle(
        {
            "h.mar\u212adown": "# Kelvin\nalpha\n",  # KELVIN SIGN: str.lower() makes it "k"
            "i.MARKDOWN": "# Upper\nalpha\n",
            "j.Md": "# Mixed\nalpha\n",
            "k.m\u0064": "# Plain d\nalpha\n",
        }
    )
    snap = Engine().capture(Call(bundle, Settings()))
    assert [f.path for f in snap.files] == ["i.MARKDOWN", "j.Md", "k.md"]


def test_cli_human_output_shows_heading_and_title_on_one_line(make_bundle) -> None:
    from fronts_harness import run_cli

    bundle = make_bundle(
        {
            "a.md": b"one\rtwo\nthree\n===\nalpha\n",
            "b.md": b"---\ntitle: |\n  Two\n  lines\n---\nalpha\n",
        }
    )
    search = run_cli(["search", str(bundle), "-q", "alpha", "--color", "never"], "utf-8")
    header = next(line for line in search.stdout.decode().split("\n") if "a.md:" in line)
    assert ": one two three  (lines 1-4," in header
    assert b"\r" not in search.stdout
    concepts = run_cli(["concepts", str(bundle), "-q", "two", "--color", "never"], "utf-8")
    # a.md is titled by its H1 ("one two three"), b.md by its front matter
    shown = [line.rstrip() for line in concepts.stdout.decode().splitlines()]
    assert next(line for line in shown if "b.md" in line).endswith("b.md  Two lines")
    assert next(line for line in shown if "a.md" in line).endswith("a.md  one two three")
