"""Headings and flat sections (SPEC §3 "Headings", "Sections", "heading")."""

from __future__ import annotations

from itertools import pairwise

import pytest

from citeline.engine import Call, Engine, Settings
from citeline.engine.text.analysis import analyse
from citeline.engine.text.layout import Layout, layout
from citeline.engine.text.sections import cut, headings


def lay_of(text: str | bytes) -> Layout:
    lay = layout(text.encode() if isinstance(text, str) else text)
    assert isinstance(lay, Layout)
    return lay


def heads(text: str | bytes) -> list[tuple[int, str]]:
    """(1-based line, plain text) of every heading."""
    return [(h.line + 1, h.text) for h in headings(lay_of(text))]


def sections(text: str | bytes) -> list[tuple[int, int, str]]:
    """(1-based first, last, heading) of every section, as the index sees them."""
    a = analyse(text.encode() if isinstance(text, str) else text)
    assert a.issue is None
    return [(s.first + 1, s.last + 1, s.heading) for s in a.sections]


def test_atx_headings_cut_flat_sections() -> None:
    text = "intro\n# A\na text\n\n## B\nb text\n# C\n"
    assert sections(text) == [(1, 1, ""), (2, 4, "A"), (5, 6, "B"), (7, 7, "C")]


def test_setext_headings() -> None:
    text = "Big\n===\nbody\n\nSmall\n-----\nmore\n"
    assert heads(text) == [(1, "Big"), (5, "Small")]
    assert sections(text) == [(1, 4, "Big"), (5, 7, "Small")]


def test_multiline_setext_heading_starts_at_its_first_line() -> None:
    assert sections("para\n\nline one\nline two\n===\nbody\n") == [
        (1, 2, ""),
        (3, 6, "line one\nline two"),  # SPEC §3: the heading's line break stays
    ]


def test_lone_cr_setext_is_a_paragraph_not_a_heading() -> None:
    # "Title\r===" is one physical line: the parser sees "Title ===", a paragraph.
    assert heads("Title\r===\n") == []
    assert sections("Title\r===\n") == [(1, 1, "")]
    # ...while CRLF does end the line, so the same bytes with CRLF are a Setext heading.
    assert heads("Title\r\n===\r\n") == [(1, "Title")]


def test_lone_cr_snippet_keeps_original_text(make_bundle) -> None:
    bundle = make_bundle({"a.md": b"Title\r===\nmore\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "title"})["hits"]
    assert hit["heading"] == ""
    assert hit["snippet"] == "Title\r===\nmore"


def test_lone_cr_inside_atx_heading_keeps_heading() -> None:
    # lone CR becomes a space only for the parser; the heading keeps the CR (SPEC §3)
    assert heads("# one\rtwo\nbody\n") == [(1, "one\rtwo")]


def test_form_feed_does_not_start_a_new_line() -> None:
    # "\f# x" is one line starting with a form feed: not an ATX heading, not a new line
    assert heads("intro\f# x\n") == []
    assert sections("intro\f# x\nnext\n") == [(1, 2, "")]


def test_u2028_does_not_start_a_new_line() -> None:
    assert heads("text\u2028# nope\n# yes\n") == [(2, "yes")]


def test_headings_in_block_quotes_and_list_items() -> None:
    text = "> # Quoted\n> text\n\n- # In list\n  item\n\n1. Setext in item\n   ===\n"
    assert heads(text) == [(1, "Quoted"), (4, "In list"), (7, "Setext in item")]


@pytest.mark.parametrize(
    "block",
    [
        "```\n# fenced\n```",
        "~~~md\n# tilde fenced\n~~~",
        "    # indented code",
        "<div>\n# html block\n</div>",
        "<!--\n# in comment\n-->",
        "<!-- start\n# inside -->",
        "<pre>\n# pre\n</pre>",
    ],
    ids=["backticks", "tildes", "indented", "html_block", "html_comment", "comment_end", "pre"],
)
def test_hash_lines_in_code_and_html_are_not_headings(block: str) -> None:
    text = f"before\n\n{block}\n\n# Real\nafter\n"
    real_line = text.split("\n").index("# Real") + 1
    assert heads(text) == [(real_line, "Real")]


def test_unclosed_fence_swallows_rest_of_file() -> None:
    assert heads("# A\n```\n# inside\n# still inside\n") == [(1, "A")]


def test_whitespace_only_preamble_is_omitted() -> None:
    text = "\n  \n\t\u00a0\u3000\u2028\n# A\ntext\n"
    assert sections(text) == [(4, 5, "A")]


def test_whitespace_only_file_has_no_sections(make_bundle) -> None:
    assert sections(" \n\t\n\u00a0\n") == []
    assert sections("") == []
    bundle = make_bundle({"blank.md": "  \n\n", "a.md": "word\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "word"})
    assert [h["path"] for h in res["hits"]] == ["a.md"]


def test_non_breaking_space_is_white_but_zero_width_space_is_not() -> None:
    # U+200B is not White_Space: the preamble holding only it is kept.
    assert sections("\u200b\n# A\n") == [(1, 1, ""), (2, 2, "A")]


def test_heading_free_file_is_one_body_section() -> None:
    text = "first line\nsecond\n\nthird paragraph\n"
    assert sections(text) == [(1, 4, "")]


def test_heading_free_file_after_front_matter(make_bundle) -> None:
    bundle = make_bundle({"a.md": "---\ntitle: T\n---\n\nbody text\nmore\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "body"})["hits"]
    assert (hit["line_start"], hit["line_end"], hit["heading"]) == (4, 6, "")


def test_heading_section_includes_trailing_blank_lines() -> None:
    assert sections("# A\ntext\n\n\n# B\n") == [(1, 4, "A"), (5, 5, "B")]


def test_empty_atx_heading_has_empty_text_but_is_a_section() -> None:
    assert sections("intro\n#\nafter\n") == [(1, 1, ""), (2, 3, "")]


@pytest.mark.parametrize(
    ("line", "plain"),
    [
        ("# *emph* and **strong**", "emph and strong"),
        ("# `code` span", "code span"),
        ("# [link text](http://example.com/x)", "link text"),
        ("# <https://auto.link>", "https://auto.link"),
        ("# raw <span>html</span> inline", "raw html inline"),
        ("# caf&eacute; &amp; &#35;1", "café & #1"),
        ("# escaped \\*star\\* \\#", "escaped *star* #"),
        ("# ![alt text](img.png) image", "alt text image"),
        ("# closing hashes ##", "closing hashes"),
        ("Setext *em*\n===", "Setext em"),
        ("#    spaced   ", "spaced"),
    ],
)
def test_heading_plain_text(line: str, plain: str) -> None:
    assert heads(line + "\n") == [(1, plain)]


def test_reference_link_in_heading_uses_definition() -> None:
    text = "# See [the guide][g] now\n\ntext\n\n[g]: https://example.com/guide\n"
    assert heads(text) == [(1, "See the guide now")]


def test_heading_reported_in_search_hit(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# Install **APISIX** `v3`\nsteps\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "steps"})["hits"]
    assert hit["heading"] == "Install APISIX v3"


def test_sections_never_overlap_and_cover_body() -> None:
    text = "pre\n# A\n> ## B\n```\n# no\n```\nSet\n---\n- # C\n"
    secs = sections(text)
    assert [h for *_, h in secs] == ["", "A", "B", "Set", "C"]
    for (f1, l1, _), (f2, _, _) in pairwise(secs):
        assert f1 <= l1 < f2
    assert secs[-1][1] == lay_of(text).line_count


def test_cut_skips_front_matter_lines() -> None:
    lay = lay_of("---\nid: x\n---\n# H\n")
    spans = cut(lay, headings(lay))
    assert [(s.first, s.last) for s in spans] == [(3, 3)]


def test_parsers_rule_lists_are_built_before_any_thread_parses() -> None:
    """markdown-it builds a ruler's rule lists on first use, in place; two request threads
    parsing first at once could see a half-built list and skip rules. The engine's parsers
    have them built at import, so parsing only ever reads them."""
    from citeline.engine.text import sections

    for md in (sections._BLOCK, sections._INLINE):
        for ruler in (md.core.ruler, md.block.ruler, md.inline.ruler, md.inline.ruler2):
            assert ruler.__cache__ is not None
            assert ruler.__cache__[""], "an empty chain would parse nothing"
