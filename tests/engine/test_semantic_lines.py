"""Which line a semantic match points at, and what of it is shown (SPEC §15: `line` is the
section's most representative line, `text` at most 256 code points with `…` where cut).
No model: these are the rules over a section's lines."""

from __future__ import annotations

import pytest

from citeline.engine.semantic.semantic_search import candidate, representative

TEXT = (
    "# Services\n"  # 1
    "\n"  # 2
    "## Stop a service\n"  # 3
    "\n"  # 4
    "Services run in the background.\n"  # 5
    "To stop one, use Stop-Service; stopping takes a moment.\n"  # 6
    "\n"  # 7
    "Setext heading\n"  # 8
    "--------------\n"  # 9
    "\n"  # 10
    "## Empty\n"  # 11
    "## 限流\n"  # 12
    "插件使用漏桶算法限制请求速率。\n"  # 13
    "配置限流插件的速率参数。\n"  # 14
)


def _cand(heading: str, first: int, last: int):  # type: ignore[no-untyped-def]
    return candidate(
        "m",
        path="a.md",
        content_sha256="0" * 64,
        title="Services",
        outline="Services",
        heading=heading,
        first=first,
        last=last,
        start=0,
        end=len(TEXT),
        text=TEXT,
    )


def test_the_body_line_sharing_most_query_words_is_chosen() -> None:
    c = _cand("Stop a service", 2, 6)
    assert (c.line_start, c.line_end, c.body_from) == (3, 7, 1)
    rep = representative("stopping services", c)
    # Line 6 holds "stop" (stemmed) and "services"; line 5 only "services".
    assert c.line_start + rep.index == 6
    assert c.lines[rep.index][rep.column :].lower().startswith("stop")
    # A single shared word: the first line holding it.
    assert c.line_start + representative("background", c).index == 5


def test_the_heading_line_is_not_a_body_line() -> None:
    c = _cand("Stop a service", 2, 6)
    # "stop a service" is in the heading; the body's best line is still chosen.
    assert c.line_start + representative("stop a service", c).index == 6


def test_with_no_shared_word_the_first_non_blank_body_line() -> None:
    c = _cand("Stop a service", 2, 6)
    rep = representative("chocolate cake", c)
    assert (c.line_start + rep.index, rep.column) == (5, 0)


def test_a_section_without_a_body_points_at_its_heading() -> None:
    c = _cand("Empty", 10, 10)
    assert c.line_start + representative("empty", c).index == 11


def test_a_setext_heading_s_two_lines_are_skipped() -> None:
    c = _cand("Setext heading", 7, 9)
    assert c.body_from == 2
    # No body but a blank line: the heading's first line.
    assert representative("setext", c).index == 0


def test_a_chinese_query_picks_by_bigrams() -> None:
    c = _cand("限流", 11, 13)
    rep = representative("速率参数怎么配置", c)
    assert c.line_start + rep.index == 14


def test_the_context_reaches_outside_the_section() -> None:
    c = _cand("Stop a service", 2, 6)
    assert c.before == ("# Services", "")
    assert c.after[:3] == ("Setext heading", "--------------", "")


def test_a_section_outside_its_file_is_refused() -> None:
    with pytest.raises(ValueError, match="ends at line"):
        _cand("x", 0, 40)
    with pytest.raises(ValueError, match="inside its file"):
        _cand("x", 5, 4)


def test_crlf_lines_are_cited_without_their_cr() -> None:
    text = "# T\r\n\r\n## Stop\r\nStop-Service stops it.\r\nafter\r\n"
    c = candidate(
        "m",
        path="w.md",
        content_sha256="0" * 64,
        title="T",
        outline="T",
        heading="Stop",
        first=2,
        last=3,
        start=text.index("## Stop"),
        end=text.index("after"),
        text=text,
    )
    assert c.lines == ("## Stop", "Stop-Service stops it.")
    assert c.before == ("# T", "") and c.after == ("after",)
    assert c.passage.text == "T › Stop\nStop-Service stops it."
