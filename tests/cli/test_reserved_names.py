"""Reserved names are exact (SPEC §2), on every volume: `INDEX.md` at the root is searched
even where it opens as `index.md` (macOS, Windows), and the command line's note says so, so
that what it says and what the search did agree (docs/decisions.md, "Reserved names on a
volume that folds case"). The note reads the root's stored names, never a lookup by another
spelling, which such a volume would answer."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.cli import render


def test_a_name_that_differs_by_case_is_searched_and_the_note_says_so(tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", {"INDEX.md": "# Index\n\nzebra map\n", "a.md": "# A\n"})
    note = render.reserved_note(str(bundle), ("index.md", "log.md"))
    assert note == (
        "INDEX.md at the root is searched: reserved names are exact (index.md); "
        "--reserved INDEX.md leaves it out"
    )
    done = run_cli(["search", str(bundle), "-q", "zebra", "--stats", "--no-cache"])
    assert done.returncode == 0 and "INDEX.md:" in done.stdout
    assert note in done.stderr
    # as the note says: named exactly, it is left out
    named = run_cli(["search", str(bundle), "-q", "zebra", "--reserved", "INDEX.md", "--json"])
    assert named.returncode == 1 and '"total":0' in named.stdout


def test_both_notes_and_every_spelling(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "Über.md")
    write(tmp_path / "b", {"index.md": "# I\n", "Log.MD": "# L\n", nfd: "# U\n"})
    note = render.reserved_note(str(tmp_path / "b"), ("index.md", "log.md", "über.md"))
    assert note == (
        "index.md at the root is not searched (navigation files); --no-reserved includes them"
        f" · Log.MD and {nfd} at the root are searched: reserved names are exact (log.md, "
        "über.md); --reserved Log.MD leaves it out"
    )


def test_the_note_reads_stored_names_not_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folding volume answers lstat("index.md") for INDEX.md: the note must not."""
    write(tmp_path / "b", {"INDEX.md": "# I\n"})
    real = os.lstat
    monkeypatch.setattr(
        os, "lstat", lambda p, *a, **k: real(str(p).replace("index.md", "INDEX.md"), *a, **k)
    )
    note = render.reserved_note(str(tmp_path / "b"), ("index.md",))
    assert note is not None and note.startswith("INDEX.md at the root is searched")
    assert "not searched" not in note
