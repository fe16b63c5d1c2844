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
