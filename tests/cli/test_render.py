"""cli/render.py, cli/sections.py and cli/style.py in process: the human output's pieces
as docs/cli.md describes them (colour, paths, the lines shown for a hit, line cutting, the
lines format, the notes on stderr). The end-to-end command-line tests are test_cli.py,
test_habits.py and tests/lines; these pin the rules those leave open."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from citeline.cli import render, sections, style
from citeline.cli.style import BOLD, BOLD_RED, DIM, GREEN, MAGENTA, RESET
from citeline.fronts import hits


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- escaping (SPEC §10) ---------------------------------------------------------------------


def test_one_escaping_for_every_front() -> None:
    """The CLI's human output and MCP's text content escape the workspace's text with one
    function (issue 49), in a module that imports no front's renderer."""
    import ast

    from citeline.fronts import escape
    from citeline.mcp_server import text as mcp

    assert style.terminal is escape.escaped
    assert mcp.escaped is escape.escaped
    imported = [
        n
        for n in ast.walk(ast.parse(Path(escape.__file__).read_text()))
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    assert [getattr(n, "module", None) for n in imported] == ["__future__"]


def test_line_separators_are_escaped_too() -> None:
    """U+2028 and U+2029 end a line in JavaScript and in some renderers: escaped as the C0
    and C1 controls are, so no file name or line breaks the line it is shown on."""
    assert style.terminal("a\u2028b\u2029c\x85d\ne\rf\x1bg\th") == (
        "a\\u2028b\\u2029c\\x85d\\ne\\rf\\x1bg\th"
    )


# -- colour ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "tty", "env", "expected"),
    [
        ("always", False, {}, True),
        ("never", True, {}, False),
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"TERM": "dumb"}, False),
        ("auto", True, {"TERM": "xterm", "NO_COLOR": ""}, True),  # empty NO_COLOR: unset
        ("always", True, {"NO_COLOR": "1"}, True),  # asked for explicitly
    ],
)
def test_colour_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
    choice: str,
    tty: bool,
    env: dict[str, str],
    expected: bool,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stream = Tty() if tty else io.StringIO()
    assert style.use_color(choice, stream) is expected


def test_paint_and_marked() -> None:
    assert style.paint("x", GREEN, True) == f"{GREEN}x{RESET}"
    assert style.paint("x", GREEN, False) == "x"
    assert style.paint("", GREEN, True) == ""  # nothing to colour: no escape codes
    text = "an ordered hashtable"
    spans = ((3, 10), (11, 20))
    assert style.marked(text, spans, False) == text
    assert style.marked(text, spans, True) == (
        f"an {BOLD_RED}ordered{RESET} {BOLD_RED}hashtable{RESET}"
    )
    assert style.marked(text, (), True) == text


# -- paths -----------------------------------------------------------------------------------------


def test_display_path_as_the_user_opens_it() -> None:
    assert style.display_path(None, "a/b.md") == "a/b.md"
    assert style.display_path(".", "a/b.md") == "a/b.md"
    assert style.display_path("./", "a/b.md") == "a/b.md"
    assert style.display_path("docs", "a/b.md") == os.path.join("docs", "a", "b.md")
    assert style.display_path("/abs/docs", "x.md") == os.path.join("/abs/docs", "x.md")


def test_short_revision() -> None:
    assert style.short("3f9c2a77aa") == "3f9c2a…"


# -- summaries and notes ---------------------------------------------------------------------------


def test_summaries_count_and_agree_in_number() -> None:
    revision = "abcdef0123"
    one = {"hits": [{}], "total": 1, "snapshot_revision": revision}
    many = {"hits": [{}, {}], "total": 12, "snapshot_revision": revision}
    assert sections.search_summary(one) == "1 of 1 section · snapshot abcdef…"
    assert sections.search_summary(many) == "2 of 12 sections · snapshot abcdef…"
    concepts = {"concepts": [{}], "total": 1, "snapshot_revision": revision}
    assert render.concepts_summary(concepts) == "1 of 1 concept · snapshot abcdef…"
    assert render.concepts_summary({**concepts, "total": 3}) == "1 of 3 concepts · snapshot abcdef…"
    lines = {"matches": [], "total": 0, "snapshot_revision": revision}
    assert render.lines_summary(lines) == "0 of 0 matches · snapshot abcdef…"
    assert render.lines_summary({**lines, "total": 1}) == "0 of 1 match · snapshot abcdef…"


def test_skipped_notes_name_each_file_as_typed() -> None:
    result = {
        "skipped": [
            {"path": "a/bad.md", "line": 3, "reason": "invalid UTF-8"},
            {"path": "c.md", "line": 1, "reason": "front matter"},
        ]
    }
    # One summary, not one line per file.
    assert render.skipped_notes(result, "docs") == [
        f"citeline: skipped 2 unparsable files: {os.path.join('docs', 'a', 'bad.md')}:3: "
        f"invalid UTF-8; {os.path.join('docs', 'c.md')}:1: front matter"
    ]
    many = {"skipped": [{"path": f"{n}.md", "line": 1, "reason": "r"} for n in range(5)]}
    assert render.skipped_notes(many) == [
        "citeline: skipped 5 unparsable files: 0.md:1: r; 1.md:1: r; 2.md:1: r; "
        "and 2 more (--json lists them)"
    ]
    assert render.skipped_notes({}) == [] and render.skipped_notes({"skipped": None}) == []


def test_reserved_note_names_the_files_present(tmp_path: Path) -> None:
    assert render.reserved_note(str(tmp_path), ("index.md", "log.md")) is None
    (tmp_path / "index.md").write_text("# I\n")
    (tmp_path / "log.md").mkdir()  # a folder is no reserved file
    assert render.reserved_note(str(tmp_path), ("index.md", "log.md")) == (
        "index.md at the root is not searched (navigation files); --no-reserved includes them"
    )
    (tmp_path / "log.md").rmdir()
    (tmp_path / "log.md").write_text("# L\n")
    assert render.reserved_note(str(tmp_path), ("index.md", "log.md")) == (
        "index.md and log.md at the root are not searched (navigation files); "
        "--no-reserved includes them"
    )
    assert render.reserved_note(str(tmp_path / "missing"), ("index.md",)) is None


def test_one_line_headings() -> None:
    assert style.one_line("a\nb\rc\u2028d\x85e") == "a b c d e"
    assert style.one_line("plain") == "plain"


def test_no_hit_notice() -> None:
    first = "No section holds every word of the query."
    assert sections.no_hit_notice(None) == first
    assert sections.no_hit_notice(0) == first + " None holds any of them either (--profile recall)."
    assert sections.no_hit_notice(3) == (
        first + "\nBest sections with --profile recall, which accepts any of the words:"
    )


# -- the lines shown for a hit ---------------------------------------------------------------------


def tokenizer(**options: str) -> object:
    return hits.tokenizer_of({"options": options} if options else {})


def test_overlapping_matches_are_marked_once() -> None:
    """Under identifiers=split a word matches whole and by its parts: one marked run."""
    hit = {
        "line_start": 1,
        "line_end": 2,
        "matched_terms": ["inlineprediction", "inline", "prediction"],
    }
    jump, shown = sections.hit_lines(
        hit, ["# Title", "Use InlinePrediction here"], tokenizer(identifiers="split"), 0
    )
    assert jump == 2
    assert shown == [sections.Shown(2, "Use InlinePrediction here", ((4, 20),), True)]


def test_fold_merges_overlaps_and_keeps_touching_runs_apart() -> None:
    assert sections._fold([(6, 16), (0, 6), (0, 16)]) == ((0, 16),)
    assert sections._fold([(3, 5), (0, 3)]) == ((0, 3), (3, 5))  # touching: two runs
    assert sections._fold([(0, 4), (2, 3)]) == ((0, 4),)  # inside: the outer one
    assert sections._fold([]) == ()


def test_the_first_line_of_each_word_then_more_up_to_four() -> None:
    """docs/cli.md: the first line holding each query word (a rarer word is never cut off),
    then further matching lines, four in all, in file order, with … for lines left out."""
    lines = [
        "# Alpha notes",  # 1
        "alpha one",  # 2
        "alpha two",  # 3
        "nothing",  # 4
        "alpha three",  # 5
        "alpha four",  # 6
        "alpha five",  # 7
        "beta at last",  # 8
    ]
    hit = {"line_start": 1, "line_end": 8, "matched_terms": ["alpha", "beta"]}
    jump, shown = sections.hit_lines(hit, lines, tokenizer(), 0)
    assert jump == 1
    numbers = [s.number if s else None for s in shown]
    assert numbers == [1, 2, 3, None, 8]  # alpha at 1, beta at 8, then 2 and 3
    assert all(s is None or s.match for s in shown)
    with_context = sections.hit_lines(hit, lines, tokenizer(), 1)[1]
    assert [(s.number, s.match) if s else None for s in with_context] == [
        (1, True),
        (2, True),
        (3, True),
        (4, False),
        None,
        (7, True),  # context around line 8, itself holding a match
        (8, True),
    ]


def test_a_hit_matched_by_its_title_only_shows_its_first_line() -> None:
    hit = {"line_start": 3, "line_end": 5, "matched_terms": ["guide"]}
    jump, shown = sections.hit_lines(hit, ["---", "title: Guide", "", "  ", "text"], tokenizer(), 0)
    assert jump == 3
    assert shown == [sections.Shown(5, "text", (), False)]


def test_gutter_width_and_markers() -> None:
    shown = [
        sections.Shown(9, "nine", ((0, 4),), True),
        None,
        sections.Shown(10, "ten", (), False),
        sections.Shown(None, "unknown line", (), True),
    ]
    assert sections._draw_lines(shown, False) == [
        "   9: nine",
        "   …",
        "  10- ten",
        "    : unknown line",
    ]
    assert sections._draw_lines(shown[:1], True) == [f"  {GREEN}9{RESET}: {BOLD_RED}nine{RESET}"]
    assert sections._draw_lines([sections.Shown(3, "", (), True)], False) == ["  3:"]


# -- reading a hit's file back ---------------------------------------------------------------------


def test_sources_trust_only_the_bytes_that_were_searched(tmp_path: Path) -> None:
    import hashlib

    data = "\ufeff# Title\r\nline two\n".encode()
    (tmp_path / "a.md").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    sources = hits.Sources(str(tmp_path))
    assert sources.lines("a.md", sha) == ["# Title", "line two", ""]  # no BOM, no CR
    assert sources.lines("a.md", "0" * 64) is None  # other bytes than those cited
    assert sources.lines("gone.md", sha) is None
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    assert sources.lines("link.md", sha) is None  # never through a link
    (tmp_path / "a.md").write_text("changed\n")
    assert sources.lines("a.md", sha) == ["# Title", "line two", ""]  # read once per search


def test_a_hit_whose_file_is_gone_is_drawn_from_its_snippet(tmp_path: Path) -> None:
    from citeline.engine import Call, Engine, Settings

    (tmp_path / "a.md").write_text("# Alpha\n\nalpha words here\n")
    result = Engine().search(Call(tmp_path, Settings()), {"query": "alpha"})
    (tmp_path / "a.md").unlink()
    text = sections.render_search(result, False, bundle="b", sources=hits.Sources(str(tmp_path)))
    head, *body = text.splitlines()
    assert head.startswith(f"{os.path.join('b', 'a.md')}:1: Alpha  (lines 1-3, score ")
    assert head.endswith(", changed since the search)")
    assert body == ["  1: # Alpha", "  …", "  3: alpha words here"]


# -- snippets drawn without the file ---------------------------------------------------------------


def test_snippet_lines_with_context_and_gaps() -> None:
    snippet = "# H\none alpha\ntwo\nthree\nfour\nfive alpha\nsix"
    start = snippet.index("alpha")
    later = snippet.rindex("alpha")
    hit = {
        "line_start": 4,
        "snippet": snippet,
        "match_spans": [{"start": start, "end": start + 5}, {"start": later, "end": later + 5}],
    }
    jump, shown = sections.snippet_lines(hit, 1)
    assert jump == 5  # the first line holding a match, numbered from the section's start
    assert [(s.number, s.text, s.match) if s else None for s in shown] == [
        (4, "# H", False),
        (5, "one alpha", True),
        (6, "two", False),
        None,
        (8, "four", False),
        (9, "five alpha", True),
        (10, "six", False),
    ]
    assert shown[1] is not None and shown[1].spans == ((4, 9),)


def test_snippet_that_starts_at_a_word_is_not_trimmed() -> None:
    snippet = " " * 85 + "word alpha"
    start = snippet.index("alpha")
    hit = {"line_start": 2, "snippet": snippet, "match_spans": [{"start": start, "end": start + 5}]}
    jump, (line,) = sections.snippet_lines(hit, 0)
    assert line is not None and line.number is None and jump == 2
    assert line.text == snippet  # nothing cut: it starts with spaces, not inside a word


def test_a_snippet_line_ending_in_cr_is_shown_without_it() -> None:
    """A CRLF file's snippet holds "\r" before each "\n": never drawn (it would move the
    cursor back on a terminal). The match on the last line keeps context inside the
    snippet."""
    snippet = "# H\r\none alpha\r\ntwo"
    start = snippet.index("alpha")
    hit = {"line_start": 3, "snippet": snippet, "match_spans": [{"start": start, "end": start + 5}]}
    assert sections.snippet_lines(hit, 1) == (
        4,
        [
            sections.Shown(3, "# H", (), False),
            sections.Shown(4, "one alpha", ((4, 9),), True),
            sections.Shown(5, "two", (), False),
        ],
    )
    last = {"line_start": 3, "snippet": "# H\nalpha", "match_spans": [{"start": 4, "end": 9}]}
    assert sections.snippet_lines(last, 1) == (
        4,
        [sections.Shown(3, "# H", (), False), sections.Shown(4, "alpha", ((0, 5),), True)],
    )


def test_a_snippet_from_the_section_start_keeps_its_first_word() -> None:
    """A section without a heading starts with a word: that is no cut word."""
    hit = {"line_start": 1, "snippet": "alpha beta", "match_spans": [{"start": 0, "end": 5}]}
    assert sections.snippet_lines(hit, 0) == (1, [sections.Shown(1, "alpha beta", ((0, 5),), True)])


def test_line_numbers_are_known_only_within_the_contracts_lead() -> None:
    """SPEC §6: a snippet starts 80 code points before its first match, or at the section's
    start when the match comes sooner. A first match at 79 proves the snippet starts at the
    section; one at 80 may have been cut, so its lines get no numbers and its cut first
    word is dropped."""
    at_79 = "w" * 78 + " alpha"
    hit = {"line_start": 7, "snippet": at_79, "match_spans": [{"start": 79, "end": 84}]}
    assert sections.snippet_lines(hit, 0) == (7, [sections.Shown(7, at_79, ((79, 84),), True)])
    at_80 = "w" * 79 + " alpha"
    hit = {"line_start": 7, "snippet": at_80, "match_spans": [{"start": 80, "end": 85}]}
    assert sections.snippet_lines(hit, 0) == (7, [sections.Shown(None, "…alpha", ((1, 6),), True)])


def test_a_cut_snippet_jumps_to_the_sections_start() -> None:
    """Its first match is on the snippet's second line, but that line's number is unknown:
    the jump goes to the section's first line, not one further."""
    snippet = "lorem ipsum " * 8 + "\nalpha"
    start = snippet.index("alpha")
    hit = {"line_start": 7, "snippet": snippet, "match_spans": [{"start": start, "end": start + 5}]}
    assert sections.snippet_lines(hit, 0) == (7, [sections.Shown(None, "alpha", ((0, 5),), True)])


def test_a_snippet_without_matches_shows_its_first_line() -> None:
    """Matched through the title or the outline only: the section's first line."""
    hit = {"line_start": 5, "snippet": "# H\nbody", "match_spans": []}
    assert sections.snippet_lines(hit, 0) == (5, [sections.Shown(5, "# H", (), False)])


# -- cutting a long line at word boundaries --------------------------------------------------------


def test_word_start_moves_past_a_cut_word_never_beyond_its_limit() -> None:
    assert sections.word_start("-abcd e", 3, 7) == 6  # to the end of "abcd", then the space
    assert sections.word_start("ab cd", 0, 5) == 0  # the line's start cuts no word
    assert sections.word_start("ab cd", 1, 5) == 3  # past "b" and the space
    assert sections.word_start("abcd", 1, 2) == 2  # stops at the limit, inside the word
    assert sections.word_start("ab  cd", 1, 3) == 3  # the spaces too stop at the limit
    assert sections.word_start("ab.cd", 1, 5) == 2  # punctuation ends a word
    # CJK characters stand alone: a cut beside one cuts no word.
    assert sections.word_start("ab漢字", 2, 4) == 2
    assert sections.word_start("漢字", 1, 2) == 1


def test_word_end_moves_back_before_a_cut_word_never_below_its_floor() -> None:
    assert sections.word_end("abc", 3, 0) == 3  # the line's end cuts no word
    assert sections.word_end("ab cd", 4, 0) == 2  # before "cd" and the space
    assert sections.word_end("abcd", 3, 2) == 2  # stops at the floor, inside the word
    assert sections.word_end("ab  cd", 4, 3) == 3  # the spaces too stop at the floor


def test_a_short_line_is_not_cut() -> None:
    assert sections.clip("abc", ((0, 3),), width=3) == ("abc", ((0, 3),))


def test_a_line_without_a_match_is_cut_from_its_start() -> None:
    assert sections.clip("one two three four", (), width=9, lead=0) == ("one two…", ())
    assert sections.clip("one two three four", (), width=9) == ("one two…", ())


def test_a_cut_line_is_never_empty() -> None:
    """With no word boundary within the width, the cut keeps one code point rather than
    showing an empty line; a match is never cut away, and a one-letter match keeps no
    space after it."""
    assert sections.clip("x" * 12, (), width=5) == ("x…", ())
    assert sections.clip("abcdefghijkl mn", ((0, 12),), width=5, lead=2) == ("abcde…", ((0, 5),))
    assert sections.clip("5 " + "x" * 10, ((0, 1),), width=5, lead=2) == ("5…", ((0, 1),))


def test_a_cut_line_keeps_its_match_and_the_lead_before_it() -> None:
    text = "aa bb cc dd ee ff gg hh"
    # 4 code points before "ee" fall inside "cc dd": start after the cut "cc" and its space.
    assert sections.clip(text, ((12, 14),), width=10, lead=4) == ("…dd ee ff…", ((4, 6),))
    # Near the end the window moves back so that the width is used; trailing spaces are
    # no cut, so no … after them.
    text = "aa bb cc dd ee ff gg hh  "
    assert sections.clip(text, ((21, 23),), width=10, lead=4) == ("…ff gg hh  ", ((7, 9),))


def test_a_cut_line_is_marked_only_where_it_was_cut() -> None:
    # A match at the start: nothing cut before it.
    assert sections.clip("aa bb cc dd ee", ((0, 2),), width=8, lead=4) == ("aa bb cc…", ((0, 2),))
    # Leading spaces (indentation) are kept: the line starts there.
    assert sections.clip("  aa bb cc dd", ((2, 4),), width=8, lead=4) == ("  aa bb…", ((2, 4),))
    # Cut one code point in, after a punctuation mark: no word to skip, still a cut.
    assert sections.clip("-aa bb cc dd ee", ((7, 9),), width=8, lead=6) == ("…aa bb cc…", ((7, 9),))
    # Cut one code point in, inside a word: that word goes.
    assert sections.clip("xaa bb cc dd ee", ((7, 9),), width=8, lead=6) == ("…bb cc dd…", ((4, 6),))


def test_matches_outside_a_cut_line_are_dropped() -> None:
    spans = ((0, 4), (5, 9), (10, 14))
    assert sections.clip("aaaa-bbbb cccc", spans, width=5, lead=2) == ("aaaa-…", ((0, 4),))


def test_a_snippet_cut_mid_word_starts_at_the_next_word() -> None:
    assert sections.trim_leading_word("rd alpha", ()) == ("…alpha", ())
    # Never past the first match, even when it is the end of the cut word (identifiers=split
    # matches "prediction" inside "linePrediction").
    assert sections.trim_leading_word("linePrediction rest", ((4, 14),)) == (
        "…Prediction rest",
        ((1, 11),),
    )
    # A one-letter cut word: the punctuation after it stays.
    assert sections.trim_leading_word("s, and alpha", ((7, 12),)) == ("…, and alpha", ((7, 12),))
    assert sections.trim_leading_word(" alpha", ((1, 6),)) == (" alpha", ((1, 6),))  # no word cut


def test_the_first_line_of_each_word_is_chosen_before_repeats() -> None:
    """Line 3 holds "a" again after "c" was seen: a repeat, left for "d" on line 4."""
    found = {0: {"a"}, 1: {"b"}, 2: {"c"}, 3: {"a"}, 4: {"d"}}
    assert sections._choose(found) == [0, 1, 2, 4]


def test_a_hit_of_blank_lines_shows_its_first_line() -> None:
    """No word of the hit is in its lines and they are all blank: its first line, never a
    line past the section."""
    hit = {"line_start": 2, "line_end": 3, "matched_terms": ["guide"]}
    assert sections.hit_lines(hit, ["# Guide", "", "   ", "after"], tokenizer(), 0) == (
        2,
        [sections.Shown(2, "", (), False)],
    )


def test_gutter_without_line_numbers() -> None:
    shown = [
        sections.Shown(None, "alpha", ((0, 5),), True),
        None,
        sections.Shown(None, "b", (), False),
    ]
    assert sections._draw_lines(shown, False) == ["   : alpha", "  …", "   - b"]
    # No number: no colour in the gutter either.
    assert sections._draw_lines(shown[:1], True) == [f"   : {BOLD_RED}alpha{RESET}"]


# -- whole outputs ---------------------------------------------------------------------------------


def search_result() -> dict[str, object]:
    """A recall search as the contract gives it (options present: words matched and missing
    are named), drawn from its snippets (no sources)."""
    alpha = {
        "path": "notes/a.md",
        "heading": "Alpha",
        "line_start": 1,
        "line_end": 3,
        "score": 0.5,
        "content_sha256": "0" * 64,
        "matched_terms": ["alpha"],
        "snippet": "# Alpha\n\nalpha here",
        "match_spans": [{"start": 2, "end": 7}, {"start": 9, "end": 14}],
    }
    untitled = {
        "path": "b.md",
        "heading": "",
        "line_start": 5,
        "line_end": 6,
        "score": 0.25,
        "content_sha256": "1" * 64,
        "matched_terms": [],
        "snippet": "intro text\nmore",
        "match_spans": [],
    }
    return {
        "query": "alpha beta gamma",
        "options": {"profile": "recall"},
        "hits": [alpha, untitled],
        "total": 2,
        "snapshot_revision": "abcdef0123",
    }


def test_render_search_without_colour() -> None:
    assert sections.render_search(search_result(), False) == (
        "notes/a.md:1: Alpha  (lines 1-3, score 0.500; matched: alpha; missing: beta, gamma)\n"
        "  1: # Alpha\n"
        "  …\n"
        "  3: alpha here\n"
        "\n"
        "b.md:5: b.md  (lines 5-6, score 0.250; missing: alpha, beta, gamma)\n"
        "  5- intro text"
    )


def test_render_search_in_colour() -> None:
    text = sections.render_search(search_result(), True)
    first = text.split("\n\n")[0]
    about = "(lines 1-3, score 0.500; matched: alpha; missing: beta, gamma)"
    assert first.splitlines() == [
        f"{MAGENTA}notes/a.md{RESET}:{GREEN}1{RESET}: {BOLD}Alpha{RESET}  {DIM}{about}{RESET}",
        f"  {GREEN}1{RESET}: # {BOLD_RED}Alpha{RESET}",
        "  …",
        f"  {GREEN}3{RESET}: {BOLD_RED}alpha{RESET} here",
    ]


def test_a_hit_to_the_files_last_line_is_drawn_from_the_file(tmp_path: Path) -> None:
    """A file without a final newline: the hit's last line is the file's last line, and the
    file read back is the one searched (not "changed since the search")."""
    import hashlib

    data = b"# Alpha\nalpha here"
    (tmp_path / "a.md").write_bytes(data)
    hit = {
        "path": "a.md",
        "heading": "Alpha",
        "line_start": 1,
        "line_end": 2,
        "score": 0.5,
        "content_sha256": hashlib.sha256(data).hexdigest(),
        "matched_terms": ["alpha"],
        "snippet": "# Alpha\nalpha here",
        "match_spans": [{"start": 2, "end": 7}, {"start": 8, "end": 13}],
    }
    result = {"query": "alpha", "hits": [hit], "total": 1, "snapshot_revision": "ab"}
    sources = hits.Sources(str(tmp_path))
    assert sections.render_search(result, False, sources=sources) == (
        "a.md:1: Alpha  (lines 1-2, score 0.500)\n  1: # Alpha\n  2: alpha here"
    )


def test_sources_and_paths_split_only_at_slashes(tmp_path: Path) -> None:
    """Paths may hold spaces; '/' alone separates their folders."""
    import hashlib

    assert style.display_path("docs", "my notes/a b.md") == os.path.join(
        "docs", "my notes", "a b.md"
    )
    (tmp_path / "my notes").mkdir()
    data = b"# T\n"
    (tmp_path / "my notes" / "a b.md").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    assert hits.Sources(str(tmp_path)).lines("my notes/a b.md", sha) == ["# T", ""]


def test_sources_never_fail_on_bytes_that_do_not_decode(tmp_path: Path) -> None:
    """The engine only cites bytes it decoded; should others carry the cited SHA-256, they
    are shown with U+FFFD, as the engine would, rather than stopping the output."""
    import hashlib

    data = b"# T\n\xff\n"
    (tmp_path / "a.md").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    assert hits.Sources(str(tmp_path)).lines("a.md", sha) == ["# T", "\ufffd", ""]


def test_render_concepts() -> None:
    result = {
        "concepts": [
            {"concept_id": "a", "path": "a.md", "title": "Alpha\nNotes"},
            {"concept_id": "b/c", "path": "b/c.md", "title": ""},
        ]
    }
    assert render.render_concepts(result, False) == "a  a.md  Alpha Notes\nb/c  b/c.md"
    assert render.render_concepts(result, True, bundle="docs") == (
        f"{GREEN}a{RESET}  {MAGENTA}{os.path.join('docs', 'a.md')}{RESET}  Alpha Notes\n"
        f"{GREEN}b/c{RESET}  {MAGENTA}{os.path.join('docs', 'b', 'c.md')}{RESET}"
    )


def test_line_finder_highlights_as_the_lines_command_matched(
    capfd: pytest.CaptureFixture[str],
) -> None:
    assert render.line_finder("Alpha", "exact", True)("alpha Alpha") == [(6, 11)]
    assert render.line_finder("Alpha", "exact", False)("alpha Alpha") == [(0, 5), (6, 11)]
    assert render.line_finder("a.c", "exact", True)("abc a.c") == [(4, 7)]  # "." as typed
    assert render.line_finder("a.c", "regex", True)("abc a.c") == [(0, 3), (4, 7)]
    assert render.line_finder("a*", "regex", True)("bab") == [(1, 2)]  # no empty matches
    # A pattern RE2 refuses highlights nothing, and RE2 writes nothing of its own to stderr
    # (the command reports the error once, in its words).
    assert render.line_finder("(", "regex", True)("(x") == []
    assert capfd.readouterr().err == ""


def lines_result() -> dict[str, object]:
    def match(
        path: str, line: int, column: int, text: str, before: int, after: int
    ) -> dict[str, object]:
        return {
            "path": path,
            "line": line,
            "column": column,
            "text": text,
            "context": {
                "before": [f"b{line - before + k}" for k in range(before)],
                "after": [f"a{line + 1 + k}" for k in range(after)],
            },
        }

    return {
        "matches": [
            match("a.md", 5, 4, "an alpha", 3, 3),
            match("a.md", 12, 1, "alpha", 3, 0),
            match("b.md", 1, 1, "alpha beta", 0, 0),
        ]
    }


def test_render_lines_without_context() -> None:
    assert render.render_lines(lines_result(), False) == (
        "a.md:5:4:an alpha\na.md:12:1:alpha\nb.md:1:1:alpha beta"
    )


def test_render_lines_with_context() -> None:
    """Context as asked (2 of the 3 lines given on each side), each line at its number,
    `--` between groups that do not touch, and between files."""
    assert render.render_lines(lines_result(), False, context=2).splitlines() == [
        "a.md-3-b3",
        "a.md-4-b4",
        "a.md:5:4:an alpha",
        "a.md-6-a6",
        "a.md-7-a7",
        "--",
        "a.md-10-b10",
        "a.md-11-b11",
        "a.md:12:1:alpha",
        "--",
        "b.md:1:1:alpha beta",
    ]


def test_render_lines_in_colour() -> None:
    find = render.line_finder("alpha", "exact", False)
    out = render.render_lines(lines_result(), True, context=1, find=find).splitlines()
    path, dash = f"{MAGENTA}a.md{RESET}", f"{DIM}--{RESET}"
    assert out[:5] == [
        f"{path}-{GREEN}4{RESET}-b4",
        f"{path}:{GREEN}5{RESET}:4:an {BOLD_RED}alpha{RESET}",
        f"{path}-{GREEN}6{RESET}-a6",
        dash,
        f"{path}-{GREEN}11{RESET}-b11",
    ]
    # Without a finder the matching line is coloured but nothing in it is marked.
    plain = render.render_lines(lines_result(), True)
    assert plain.splitlines()[0] == f"{path}:{GREEN}5{RESET}:4:an alpha"


def test_reserved_note_looks_at_every_name(tmp_path: Path) -> None:
    (tmp_path / "log.md").write_text("# L\n")
    assert render.reserved_note(str(tmp_path), ("index.md", "log.md")) == (
        "log.md at the root is not searched (navigation files); --no-reserved includes them"
    )


# -- the progress bar ------------------------------------------------------------------------------


class Clock:
    """time.monotonic under the test's control (its origin is arbitrary: here 0)."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def test_progress_bar_draws_after_the_delay_at_most_every_50_ms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(render, "time", clock)
    stream = Tty()
    bar = render.ProgressBar(stream)  # half a second by default (docs/cli.md)
    drawn: list[str] = []

    def step(at: float, stage: str, done: int, total: int) -> None:
        clock.now = at
        before = stream.getvalue()
        bar(stage, done, total)
        drawn.append(stream.getvalue()[len(before) :])

    step(0.2, "capture", 1, 4)  # before the delay
    step(0.6, "capture", 1, 4)  # the first update after it
    step(0.62, "capture", 2, 4)  # 20 ms later
    step(0.8, "capture", 3, 4)
    step(0.81, "capture", 4, 4)  # the last update is always drawn
    step(0.9, "index", 1, 1)
    step(1.0, "write", 0, 0)
    assert drawn == [
        "",
        "\r capture " + "█" * 7 + "·" * 23 + " 1/4",
        "",
        "\r capture " + "█" * 22 + "·" * 8 + " 3/4",
        "\r capture " + "█" * 30 + " 4/4",
        "\r   index " + "█" * 30 + " 1/1",
        "\r   write " + "·" * 30 + " 0/0",
    ]
    before = stream.getvalue()
    bar.clear()
    bar.clear()  # once cleared, nothing more to clear
    assert stream.getvalue()[len(before) :] == "\r\x1b[2K"
    quiet = Tty()
    render.ProgressBar(quiet, delay=0.5).clear()  # never drawn: nothing to clear
    assert quiet.getvalue() == ""
