"""`.gitignore` on a volume that folds names (macOS, Windows): git compares its patterns
without case there (core.ignorecase, which `git init` sets on such a volume) and, on macOS,
with NFD and NFC as one (core.precomposeunicode). The engine takes the volume's rules as
Settings.ignore_case / ignore_nfc (the fronts set them, fronts/names.py); its default is exact.

git itself is the oracle for case: `git -c core.ignorecase=true ls-files` applies the same
patterns as git on a case-insensitive volume (the folding is in its matcher, not the file
system). git precomposes NFD names only on macOS, so NFC is checked by construction."""

from __future__ import annotations

import os
import subprocess
import unicodedata
from pathlib import Path

import pytest
from bundles import write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inprocess import run_cli
from needs import tool

from citeline.engine import Settings
from citeline.engine.capture.capture import capture
from citeline.engine.capture.ignore import Ignores, compile_rules, name_fold

NFD = unicodedata.normalize("NFD", "Résumé")
NFC = unicodedata.normalize("NFC", "Résumé")


def captured(bundle: Path, **kw: bool) -> list[str]:
    return [f.path for f in capture(bundle, Settings(**kw)).files]  # type: ignore[arg-type]


def test_case_folded_patterns_and_paths(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        {
            ".gitignore": "Drafts/\nnotes/b.md\n*.TMP.md\n!KEEP.tmp.md\n",
            "drafts/a.md": "# A\n",
            "Notes/B.md": "# B\n",
            "x.tmp.md": "# X\n",
            "keep.TMP.md": "# K\n",
            "plain.md": "# P\n",
        },
    )
    assert captured(bundle) == ["Notes/B.md", "drafts/a.md", "plain.md", "x.tmp.md"]
    # names as stored in the records, whatever the case of the patterns that spared them
    assert captured(bundle, ignore_case=True) == ["keep.TMP.md", "plain.md"]
    assert captured(bundle, ignore_case=True, use_ignore=False) == captured(
        bundle, use_ignore=False
    )


def test_nfd_names_on_disk_and_nfc_patterns(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        {".gitignore": f"{NFC}/\n", f"{NFD}/cv.md": "# CV\n", "other.md": "# O\n"},
    )
    assert captured(bundle) == [f"{NFD}/cv.md", "other.md"]
    assert captured(bundle, ignore_nfc=True) == ["other.md"]
    assert captured(bundle, ignore_case=True) == [f"{NFD}/cv.md", "other.md"]  # NTFS: no
    assert captured(bundle, ignore_case=True, ignore_nfc=True) == ["other.md"]


def test_rules_above_the_bundle_fold_too(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "repo",
        {".gitignore": "Docs/Old/\n", "docs/old/a.md": "# A\n", "docs/new.md": "# N\n"},
    )
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("DOCS/NEW.MD\n")
    bundle = root / "docs"
    assert captured(bundle) == ["new.md", "old/a.md"]
    assert captured(bundle, ignore_case=True) == []


def test_folds_and_the_exact_rules() -> None:
    assert name_fold(False, False) is None
    assert name_fold(True, False)("ÀB.md") == "àb.md"  # type: ignore[misc]
    assert name_fold(False, True)(NFD) == NFC  # type: ignore[misc]
    assert name_fold(True, True)(NFD.upper()) == NFC.lower()  # type: ignore[misc]
    rules = compile_rules(["*.MD", "!a.md"])
    assert rules.check("b.md") is None  # exact: *.MD is not *.md
    folded = rules.folded(str.lower)
    assert folded.check("b.md") is True and folded.check("a.md") is False
    assert rules.folded(str.lower) is folded  # compiled once per fold
    ignores = Ignores(fold=str.lower)
    ignores.stack.append(("Sub/", rules))
    assert ignores.ignored("SUB/X.Md") is True and ignores.ignored("sub/A.MD") is False
    assert ignores.ignored("Sub/notes.txt") is False  # (the walk asks for paths below it)


LS_FILES = ("ls-files", "--others", "--exclude-standard", "-z")


def git_case_insensitive(bundle: Path, home: Path) -> list[str]:
    done = subprocess.run(
        [tool("git"), "-c", "core.ignorecase=true", *LS_FILES],
        cwd=bundle,
        env={
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        },
        check=True,
        capture_output=True,
    )
    return sorted(
        p
        for p in done.stdout.decode().split("\0")
        if p.lower().endswith(".md") and not any(part.startswith(".") for part in p.split("/"))
    )


NAMES = st.sampled_from(["a", "A", "b", "B", "Docs", "docs", "DOCS", "x.md", "X.MD", "y.Md"])
PATTERN = st.builds(
    lambda neg, body, slash: ("!" if neg else "") + body + ("/" if slash else ""),
    st.booleans(),
    st.sampled_from(["a", "A", "docs", "Docs", "*.md", "*.MD", "X.md", "docs/*.MD", "b/"]),
    st.booleans(),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    folders=st.lists(NAMES.filter(lambda n: not n.endswith((".md", ".MD", ".Md"))), max_size=2),
    files=st.lists(st.sampled_from(["x.md", "X.MD", "y.Md", "z.md"]), min_size=1, max_size=3),
    patterns=st.lists(PATTERN, min_size=1, max_size=4),
)
def test_as_git_with_core_ignorecase(
    tmp_path_factory: pytest.TempPathFactory,
    folders: list[str],
    files: list[str],
    patterns: list[str],
) -> None:
    """Random patterns and names of mixed case: what citeline captures with ignore_case is
    what git lists with core.ignorecase=true (names that differ only by case kept apart on
    this volume, as a case-sensitive folder would hold them)."""
    base = tmp_path_factory.mktemp("fold")
    home = base / "home"
    home.mkdir()
    bundle = base / "b"
    layout = {".gitignore": "\n".join(patterns) + "\n"}
    for name in files:
        layout["/".join([*folders, name])] = "# T\n"
        layout[name] = "# T\n"
    write_bundle(bundle, layout)
    subprocess.run(
        [tool("git"), "init", "-q", str(bundle)],
        check=True,
        env={
            **os.environ,
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        },
    )
    assert captured(bundle, ignore_case=True) == git_case_insensitive(bundle, home)


def test_the_command_line_follows_the_volume(tmp_path: Path) -> None:
    """On a volume that folds case (forced: CITELINE_VOLUME_RULES), `Drafts/` ignores
    drafts/; on this machine's own volume it does not."""
    bundle = write_bundle(
        tmp_path / "b",
        {".gitignore": "Drafts/\n", "drafts/a.md": "# Zebra draft\n", "b.md": "# Zebra\n"},
    )
    args = ["search", str(bundle), "-q", "zebra", "--json", "--no-cache"]
    here = run_cli(args, env={"CITELINE_VOLUME_RULES": None})
    folded = run_cli(args, env={"CITELINE_VOLUME_RULES": "case"})
    assert '"path":"drafts/a.md"' in here.stdout
    assert '"path":"drafts/a.md"' not in folded.stdout and '"path":"b.md"' in folded.stdout
