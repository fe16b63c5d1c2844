"""lsp/render.py in process: the human output's pieces as docs/cli.md describes them
(colour, paths, the lines shown for a hit, line cutting, the lines format, the notes on
stderr). The end-to-end command-line tests are test_cli.py, test_habits.py and
tests/lines; these pin the rules those leave open."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from citeline.lsp import render
from citeline.lsp.render import BOLD_RED, GREEN, RESET


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- colour ------------------------------------------------------------------------------------


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
    assert render.use_color(choice, stream) is expected


def test_paint_and_marked() -> None:
    assert render.paint("x", GREEN, True) == f"{GREEN}x{RESET}"
    assert render.paint("x", GREEN, False) == "x"
    assert render.paint("", GREEN, True) == ""  # nothing to colour: no escape codes
    text = "an ordered hashtable"
    spans = ((3, 10), (11, 20))
    assert render.marked(text, spans, False) == text
    assert render.marked(text, spans, True) == (
        f"an {BOLD_RED}ordered{RESET} {BOLD_RED}hashtable{RESET}"
    )
    assert render.marked(text, (), True) == text


# -- paths ---------------------------------------------------------------------------------------


def test_display_path_as_the_user_opens_it() -> None:
    assert render.display_path(None, "a/b.md") == "a/b.md"
    assert render.display_path(".", "a/b.md") == "a/b.md"
    assert render.display_path("./", "a/b.md") == "a/b.md"
    assert render.display_path("docs", "a/b.md") == os.path.join("docs", "a", "b.md")
    assert render.display_path("/abs/docs", "x.md") == os.path.join("/abs/docs", "x.md")


def test_short_revision() -> None:
    assert render.short("3f9c2a77aa") == "3f9c2a…"


# -- summaries and notes ---------------------------------------------------------------------------


def test_summaries_count_and_agree_in_number() -> None:
    revision = "abcdef0123"
    one = {"hits": [{}], "total": 1, "snapshot_revision": revision}
    many = {"hits": [{}, {}], "total": 12, "snapshot_revision": revision}
    assert render.search_summary(one) == "1 of 1 section · snapshot abcdef…"
    assert render.search_summary(many) == "2 of 12 sections · snapshot abcdef…"
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
    assert render.skipped_notes(result, "docs") == [
        f"citeline: skipped {os.path.join('docs', 'a', 'bad.md')}:3: invalid UTF-8",
        f"citeline: skipped {os.path.join('docs', 'c.md')}:1: front matter",
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
    assert render.one_line("a\nb\rc\u2028d\x85e") == "a b c d e"
    assert render.one_line("plain") == "plain"


def test_no_hit_notice() -> None:
    first = "No section holds every word of the query."
    assert render.no_hit_notice(None) == first
    assert render.no_hit_notice(0) == first + " None holds any of them either (--profile recall)."
    assert render.no_hit_notice(3) == (
        first + "\nBest sections with --profile recall, which accepts any of the words:"
    )


# -- the lines shown for a hit ---------------------------------------------------------------------


def tokenizer(**options: str) -> object:
    return render.tokenizer_of({"options": options} if options else {})


def test_overlapping_matches_are_marked_once() -> None:
    """Under identifiers=split a word matches whole and by its parts: one marked run."""
    hit = {
        "line_start": 1,
        "line_end": 2,
        "matched_terms": ["inlineprediction", "inline", "prediction"],
    }
    jump, shown = render.hit_lines(
        hit, ["# Title", "Use InlinePrediction here"], tokenizer(identifiers="split"), 0
    )
    assert jump == 2
    assert shown == [render.Shown(2, "Use InlinePrediction here", ((4, 20),), True)]


def test_fold_merges_overlaps_and_keeps_touching_runs_apart() -> None:
    assert render._fold([(6, 16), (0, 6), (0, 16)]) == ((0, 16),)
    assert render._fold([(3, 5), (0, 3)]) == ((0, 3), (3, 5))  # touching: two runs
    assert render._fold([(0, 4), (2, 3)]) == ((0, 4),)  # inside: the outer one
    assert render._fold([]) == ()


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
    jump, shown = render.hit_lines(hit, lines, tokenizer(), 0)
    assert jump == 1
    numbers = [s.number if s else None for s in shown]
    assert numbers == [1, 2, 3, None, 8]  # alpha at 1, beta at 8, then 2 and 3
    assert all(s is None or s.match for s in shown)
    with_context = render.hit_lines(hit, lines, tokenizer(), 1)[1]
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
    jump, shown = render.hit_lines(hit, ["---", "title: Guide", "", "  ", "text"], tokenizer(), 0)
    assert jump == 3
    assert shown == [render.Shown(5, "text", (), False)]


def test_gutter_width_and_markers() -> None:
    shown = [
        render.Shown(9, "nine", ((0, 4),), True),
        None,
        render.Shown(10, "ten", (), False),
        render.Shown(None, "unknown line", (), True),
    ]
    assert render._draw_lines(shown, False) == [
        "   9: nine",
        "   …",
        "  10- ten",
        "    : unknown line",
    ]
    assert render._draw_lines(shown[:1], True) == [f"  {GREEN}9{RESET}: {BOLD_RED}nine{RESET}"]
    assert render._draw_lines([render.Shown(3, "", (), True)], False) == ["  3:"]


# -- reading a hit's file back ---------------------------------------------------------------------


def test_sources_trust_only_the_bytes_that_were_searched(tmp_path: Path) -> None:
    import hashlib

    data = "\ufeff# Title\r\nline two\n".encode()
    (tmp_path / "a.md").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    sources = render.Sources(str(tmp_path))
    assert sources.lines("a.md", sha) == ["# Title", "line two", ""]  # no BOM, no CR
    assert sources.lines("a.md", "0" * 64) is None  # other bytes than those cited
    assert sources.lines("gone.md", sha) is None
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    assert sources.lines("link.md", sha) is None  # never through a link
    (tmp_path / "a.md").write_text("changed\n")
    assert sources.lines("a.md", sha) == ["# Title", "line two", ""]  # read once per search


def test_a_hit_whose_file_is_gone_is_drawn_from_its_snippet(tmp_path: Path) -> None:
    from citeline.engine import Engine

    (tmp_path / "a.md").write_text("# Alpha\n\nalpha words here\n")
    result = Engine().search(tmp_path, {"query": "alpha"})
    (tmp_path / "a.md").unlink()
    text = render.render_search(result, False, bundle="b", sources=render.Sources(str(tmp_path)))
    head, *body = text.splitlines()
    assert head.startswith(f"{os.path.join('b', 'a.md')}:1: Alpha  (lines 1-3, score ")
    assert head.endswith(", changed since the search)")
    assert body == ["  1: # Alpha", "  …", "  3: alpha words here"]


# -- snippets drawn without the file ------------------------------------------------------------


def test_snippet_lines_with_context_and_gaps() -> None:
    snippet = "# H\none alpha\ntwo\nthree\nfour\nfive alpha\nsix"
    start = snippet.index("alpha")
    later = snippet.rindex("alpha")
    hit = {
        "line_start": 4,
        "snippet": snippet,
        "match_spans": [{"start": start, "end": start + 5}, {"start": later, "end": later + 5}],
    }
    jump, shown = render.snippet_lines(hit, 1)
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
    jump, (line,) = render.snippet_lines(hit, 0)
    assert line is not None and line.number is None and jump == 2
    assert line.text == snippet  # nothing cut: it starts with spaces, not inside a word
