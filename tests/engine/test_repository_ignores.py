"""The enclosing repository's ignore rules (SPEC §2 "What is captured"): when the bundle lies
in a git repository, its info/exclude and the .gitignore files from its root down to the
bundle's parent apply, each relative to its own folder; the bundle itself is searched even
when a rule above ignores it; outside a repository nothing above the bundle applies.

git (`ls-files --others --exclude-standard`, run in the bundle) and ripgrep (`rg --files`)
are the oracles, each where the contract follows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from bundles import write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inprocess import run_cli
from needs import tool

from citeline.engine import Engine, Settings
from citeline.engine.capture import stats
from citeline.engine.capture.capture import capture
from citeline.engine.capture.ignore import DIR_MARK, compile_rules, repository_rules


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment in which git and ripgrep read no user's or system's configuration
    (no core.excludesFile, no global ignore file)."""
    folder = tmp_path / "home"
    folder.mkdir()
    return {
        "HOME": str(folder),
        "XDG_CONFIG_HOME": str(folder / ".config"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }


def captured(bundle: Path, **kw: object) -> list[str]:
    return [f.path for f in capture(bundle, Settings(**kw)).files]  # type: ignore[arg-type]


def git(home: dict[str, str], *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [tool("git"), *args],
        cwd=cwd,
        env={**os.environ, **home},
        check=True,
        capture_output=True,
    )
    return done.stdout.decode("utf-8", "surrogateescape")


def git_lists(home: dict[str, str], bundle: Path) -> list[str]:
    """The Markdown files git finds untracked and not ignored in the bundle (relative to
    it), leaving out what citeline skips anyway: names starting with a dot."""
    listed = git(home, "ls-files", "--others", "--exclude-standard", "-z", cwd=bundle)
    return sorted(
        p
        for p in listed.split("\0")
        if p.endswith(".md") and not any(part.startswith(".") for part in p.split("/"))
    )


def rg_lists(home: dict[str, str], bundle: Path) -> list[str]:
    """The Markdown files ripgrep searches when given the bundle's path."""
    done = subprocess.run(
        [tool("rg"), "--files", "--no-config", "."],  # (a -g glob would override ignores)
        cwd=bundle,
        env={**os.environ, **home},
        capture_output=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: no file at all
    return sorted(
        p.removeprefix("./") for p in done.stdout.decode().splitlines() if p.endswith(".md")
    )


def no_repository_above(path: Path) -> None:
    """The tests below build their own repositories under tmp_path: one above it would
    change what they mean."""
    assert not any((p / ".git").exists() for p in path.parents), path


def make_repo(root: Path, files: dict[str, str | bytes], exclude: str | None = None) -> Path:
    """A folder with a `.git` folder (as `git init` leaves it, for what citeline reads:
    info/exclude), and `files` below it."""
    write_bundle(root, files)
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    if exclude is not None:
        (root / ".git" / "info" / "exclude").write_text(exclude)
    return root


# -- git as the oracle ------------------------------------------------------------------------

TREE = {
    ".gitignore": (
        "node_modules/\n*.tmp.md\n!keep.tmp.md\n/docs/guide/anchored.md\n/top.md\nbuild\nnotes.md\n"
    ),
    "docs/.gitignore": "drafts/\n!y.tmp.md\n/guide/only-here.md\n",
    "docs/guide/a.md": "alpha\n",
    "docs/guide/node_modules/pkg/readme.md": "alpha\n",
    "docs/guide/b.tmp.md": "alpha\n",
    "docs/guide/keep.tmp.md": "alpha\n",  # re-included in the root's own file
    "docs/guide/y.tmp.md": "alpha\n",  # re-included by the deeper docs/.gitignore
    "docs/guide/anchored.md": "alpha\n",  # "/docs/guide/anchored.md" in the root's file
    "docs/guide/sub/anchored.md": "alpha\n",  # ... names only the one above
    "docs/guide/only-here.md": "alpha\n",  # anchored to docs/ by docs/.gitignore
    "docs/guide/sub/only-here.md": "alpha\n",
    "docs/guide/top.md": "alpha\n",  # "/top.md" is the repository's top.md only
    "docs/guide/secret.md": "alpha\n",  # info/exclude
    "docs/guide/sub/secret.md": "alpha\n",
    "docs/guide/drafts/d.md": "alpha\n",  # drafts/ in docs/.gitignore
    "docs/guide/build/o.md": "alpha\n",  # "build" matches a folder too
    "docs/guide/notes.md": "alpha\n",  # ignored above, re-included by the bundle's own file
    "docs/guide/.gitignore": "!notes.md\n",
    "docs/guide/sub/.gitignore": "!secret.md\n",  # the bundle re-includes what exclude drops
}
EXPECTED = [
    "a.md",
    "keep.tmp.md",
    "notes.md",
    "sub/anchored.md",
    "sub/only-here.md",
    "sub/secret.md",
    "top.md",
    "y.tmp.md",
]


def test_a_sub_folder_of_a_repository_follows_its_rules_as_git_does(
    tmp_path: Path, home: dict[str, str]
) -> None:
    root = write_bundle(tmp_path / "repo", TREE)
    git(home, "init", "-q", str(root), cwd=tmp_path)
    (root / ".git" / "info" / "exclude").write_text("secret.md\n")
    bundle = root / "docs" / "guide"
    assert git_lists(home, bundle) == EXPECTED
    assert captured(bundle) == EXPECTED
    # the bundle's own rules and every rule above are off together
    everything = sorted(
        str(p.relative_to(bundle)) for p in bundle.rglob("*.md") if ".git" not in p.parts
    )
    assert captured(bundle, use_ignore=False) == everything


def test_deeper_files_win_and_the_last_pattern_within_one(
    tmp_path: Path, home: dict[str, str]
) -> None:
    root = write_bundle(
        tmp_path / "repo",
        {
            ".gitignore": "*.gen.md\n!*.gen.md\n*.gen.md\n",  # the last line decides
            "a/.gitignore": "!*.gen.md\n",  # a deeper file overrides the root's
            "a/b/.gitignore": "x.gen.md\n",  # and a deeper one again
            "a/b/c/x.gen.md": "alpha\n",
            "a/b/c/y.gen.md": "alpha\n",
            "a/b/c/z.md": "alpha\n",
        },
    )
    git(home, "init", "-q", str(root), cwd=tmp_path)
    bundle = root / "a" / "b" / "c"
    assert git_lists(home, bundle) == ["y.gen.md", "z.md"]
    assert captured(bundle) == ["y.gen.md", "z.md"]


def test_a_folder_re_included_by_a_negation_keeps_its_own_patterns_as_git_does(
    tmp_path: Path, home: dict[str, str]
) -> None:
    """`build/` then `!docs/`: docs/ is not ignored, but docs/build/ still is (git matches
    each folder by itself, not through the folders of its path)."""
    root = write_bundle(
        tmp_path / "repo",
        {
            ".gitignore": "build/\n!docs/\n",
            "docs/build/a.md": "alpha\n",
            "docs/b.md": "alpha\n",
            "site/docs/build/c.md": "alpha\n",
            "site/docs/d.md": "alpha\n",
        },
    )
    git(home, "init", "-q", str(root), cwd=tmp_path)
    assert git_lists(home, root) == ["docs/b.md", "site/docs/d.md"]
    assert captured(root) == ["docs/b.md", "site/docs/d.md"]  # the rules inside the bundle
    assert captured(root / "site") == git_lists(home, root / "site") == ["docs/d.md"]


def test_a_bundle_that_is_the_repository_root(tmp_path: Path, home: dict[str, str]) -> None:
    """info/exclude applies (beneath the bundle's own .gitignore); a .gitignore above the
    repository, outside it, does not."""
    no_repository_above(tmp_path)
    outer = write_bundle(tmp_path / "outer", {".gitignore": "*.md\n"})
    root = write_bundle(
        outer / "repo",
        {
            ".gitignore": "!private.md\n",
            "a.md": "alpha\n",
            "private.md": "alpha\n",
            "sub/private.md": "alpha\n",
            "secret.md": "alpha\n",
            "sub/secret.md": "alpha\n",
        },
    )
    git(home, "init", "-q", str(root), cwd=tmp_path)
    (root / ".git" / "info" / "exclude").write_text("secret.md\nprivate.md\n")
    expected = ["a.md", "private.md", "sub/private.md"]
    assert git_lists(home, root) == expected
    assert captured(root) == expected


def test_outside_a_repository_nothing_above_the_bundle_applies(tmp_path: Path) -> None:
    no_repository_above(tmp_path)
    bundle = write_bundle(
        tmp_path / "plain" / "notes",
        {"a.md": "alpha\n", "drafts/b.md": "alpha\n", ".gitignore": "!keep.md\n"},
    )
    (tmp_path / "plain" / ".gitignore").write_text("*.md\ndrafts/\n")
    (tmp_path / ".gitignore").write_text("*\n")
    assert repository_rules(str(bundle)) == ()
    assert captured(bundle) == ["a.md", "drafts/b.md"]


@pytest.mark.parametrize("kind", ["folder", "submodule", "relative-gitdir", "worktree"])
def test_the_nearest_repository_decides(tmp_path: Path, home: dict[str, str], kind: str) -> None:
    """Nested repositories: the inner one's root is the nearest `.git` (a folder, or a file
    naming its git folder as a submodule's or a worktree's does); the outer one's rules do
    not reach into it. The inner one's info/exclude is read from its git folder — for a
    worktree, from the common one (git reads info/ there), not the worktree's own."""
    outer = write_bundle(tmp_path / "outer", {".gitignore": "*.md\n", "top.md": "x\n"})
    git(home, "init", "-q", str(outer), cwd=tmp_path)
    files = {"docs/a.md": "alpha\n", "docs/private.md": "alpha\n", "docs/own.md": "alpha\n"}
    if kind == "worktree":
        main = write_bundle(outer / "main", {"README.md": "x\n"})
        git(home, "init", "-q", str(main), cwd=tmp_path)
        git(home, "add", "README.md", cwd=main)
        git(home, "commit", "-q", "-m", "first", cwd=main)
        inner = outer / "wt"
        git(home, "worktree", "add", "-q", str(inner), cwd=main)
        write_bundle(inner, files)
        common = main / ".git"
        private = main / ".git" / "worktrees" / "wt"
        assert (inner / ".git").is_file() and (private / "commondir").is_file()
        (private / "info").mkdir(exist_ok=True)
        (private / "info" / "exclude").write_text("own.md\n")  # not where git looks
    else:
        inner = write_bundle(outer / "inner", files)
        if kind == "folder":
            git(home, "init", "-q", str(inner), cwd=tmp_path)
            common = inner / ".git"
        else:
            common = outer / ".git" / "modules" / "inner"
            common.parent.mkdir()
            git(home, "init", "-q", f"--separate-git-dir={common}", str(inner), cwd=tmp_path)
            if kind == "relative-gitdir":  # as `git submodule add` writes it
                (inner / ".git").write_text("gitdir: ../.git/modules/inner\n")
            assert (inner / ".git").read_text().startswith("gitdir: ")
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "exclude").write_text("private.md\n")
    bundle = inner / "docs"
    expected = ["a.md", "own.md"]
    assert git_lists(home, bundle) == expected
    assert captured(bundle) == expected
    assert captured(outer) == []  # the outer repository's own files: *.md


# -- the bundle is searched even when a rule above ignores it: ripgrep as the oracle ----------

BELOW = {"a.md": "alpha\n", "sub/b.md": "alpha\n", "docs/c.md": "alpha\n"}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("docs/", ["a.md", "sub/b.md"]),  # the bundle's folder, and a docs/ inside it
        ("docs", ["a.md", "sub/b.md"]),
        ("**/docs", ["a.md", "sub/b.md"]),
        ("d*s/", ["a.md", "sub/b.md"]),
        ("/docs", ["a.md", "docs/c.md", "sub/b.md"]),  # anchored: the bundle's folder only
        ("/docs/", ["a.md", "docs/c.md", "sub/b.md"]),
        ("/*", ["a.md", "docs/c.md", "sub/b.md"]),  # the repository's top level only
        ("*/", ["a.md"]),  # every folder: those inside the bundle too
        ("*", []),  # every file and folder, those inside the bundle too
        ("docs/**", []),  # everything inside docs/: the bundle's content
    ],
)
def test_a_rule_above_that_ignores_the_bundles_folder(
    tmp_path: Path, home: dict[str, str], pattern: str, expected: list[str]
) -> None:
    root = make_repo(tmp_path / "repo", {".gitignore": pattern + "\n"})
    bundle = write_bundle(root / "docs", BELOW)
    assert rg_lists(home, bundle) == expected
    assert captured(bundle) == expected


def test_a_rule_above_that_ignores_a_folder_above_the_bundle(
    tmp_path: Path, home: dict[str, str]
) -> None:
    root = make_repo(tmp_path / "repo", {".gitignore": "site/\nsite/*.md\n"})
    bundle = write_bundle(root / "site" / "docs", BELOW)
    assert captured(bundle) == rg_lists(home, bundle) == sorted(BELOW)


def test_a_rule_above_naming_what_is_inside_the_bundle_applies(
    tmp_path: Path, home: dict[str, str]
) -> None:
    """`docs/*` names the files and folders inside docs/: when docs/ is the bundle, they are
    ignored, as git has it (ripgrep 13 searches them)."""
    root = make_repo(tmp_path / "repo", {".gitignore": "docs/*\n!docs/sub/\n"})
    bundle = write_bundle(root / "docs", BELOW)
    assert captured(bundle) == ["sub/b.md"]
    git(home, "init", "-q", str(root), cwd=tmp_path)
    assert git_lists(home, root) == ["docs/sub/b.md"]


def test_patterns_are_case_sensitive(tmp_path: Path) -> None:
    """As git's are on Linux (core.ignoreCase is not read: docs/decisions.md)."""
    root = make_repo(tmp_path / "repo", {".gitignore": "Drafts/\nREADME.md\n"})
    bundle = write_bundle(root / "docs", {"drafts/a.md": "x\n", "readme.md": "x\n"})
    assert captured(bundle) == ["drafts/a.md", "readme.md"]


# -- what is read, and how ---------------------------------------------------------------------


def test_ignore_files_that_are_links_are_not_read(tmp_path: Path) -> None:
    real = tmp_path / "rules"
    real.write_text("*.md\n")
    root = make_repo(tmp_path / "repo", {"docs/a.md": "alpha\n", "docs/b.md": "alpha\n"})
    (root / ".gitignore").symlink_to(real)
    (root / ".git" / "info" / "exclude").symlink_to(real)
    assert captured(root / "docs") == ["a.md", "b.md"]
    (root / ".gitignore").unlink()
    (root / ".gitignore").write_text("b.md\n")  # a real file is read
    assert captured(root / "docs") == ["a.md"]


def test_a_git_entry_that_is_a_link_marks_the_root_without_being_followed(
    tmp_path: Path,
) -> None:
    elsewhere = make_repo(tmp_path / "elsewhere", {}, exclude="a.md\n")
    outer = make_repo(tmp_path / "outer", {".gitignore": "*.md\n"})
    root = write_bundle(outer / "repo", {".gitignore": "b.md\n", "docs/a.md": "x\n"})
    write_bundle(root, {"docs/b.md": "x\n", "docs/c.md": "x\n"})
    (root / ".git").symlink_to(elsewhere / ".git", target_is_directory=True)
    # the root is repo/ (outer's *.md does not apply), its .gitignore applies, and the
    # info/exclude behind the link is not read
    assert captured(root / "docs") == ["a.md", "c.md"]


@pytest.mark.parametrize("content", ["", "not a gitdir line\n", "gitdir: /no/such/folder\n"])
def test_a_git_file_naming_no_git_folder_still_marks_the_root(tmp_path: Path, content: str) -> None:
    outer = make_repo(tmp_path / "outer", {".gitignore": "*.md\n"})
    root = write_bundle(outer / "repo", {".git": content, ".gitignore": "b.md\n"})
    bundle = write_bundle(root / "docs", {"a.md": "x\n", "b.md": "x\n"})
    assert captured(bundle) == ["a.md"]


def test_an_info_exclude_that_is_a_fifo_is_not_opened_for_reading(tmp_path: Path) -> None:
    """A FIFO would block a reader until a writer comes: it is no regular file, so it is
    not read (opened non-blocking, checked, closed)."""
    root = make_repo(tmp_path / "repo", {"docs/a.md": "x\n"})
    os.mkfifo(root / ".git" / "info" / "exclude")
    os.mkfifo(root / ".gitignore")
    assert captured(root / "docs") == ["a.md"]


def test_the_folders_are_the_physical_ones(tmp_path: Path) -> None:
    """A bundle reached through a link to a folder of a repository follows that repository's
    rules (as git, which works in the physical folder); the folders of the link's own path
    are not a repository."""
    no_repository_above(tmp_path)
    root = make_repo(tmp_path / "repo", {".gitignore": "drafts/\n"})
    write_bundle(root / "docs" / "guide", {"a.md": "x\n", "drafts/b.md": "x\n"})
    (tmp_path / "alias").symlink_to(root / "docs", target_is_directory=True)
    (tmp_path / ".gitignore").write_text("*.md\n")  # above the link: not a repository
    assert captured(tmp_path / "alias" / "guide") == ["a.md"]


def test_names_that_are_not_utf8(tmp_path: Path) -> None:
    """Folders above and inside the bundle whose names are not valid UTF-8: the patterns
    (read as bytes) still match them."""
    root = make_repo(tmp_path / "repo", {})
    raw = os.fsencode(root)
    above = os.path.join(raw, b"d\xff")
    bundle = os.path.join(above, b"guide")
    os.makedirs(os.path.join(bundle, b"junk\xfe"))
    os.makedirs(os.path.join(bundle, b"kept\xfe"))
    for name in (b"a.md", b"anchored.md", b"junk\xfe/ignored.md"):
        with open(os.path.join(bundle, name), "wb") as fh:
            fh.write(b"alpha\n")
    with open(os.path.join(bundle, b"kept\xfe", b"notes.txt"), "wb") as fh:
        fh.write(b"not markdown\n")
    with open(os.path.join(raw, b".gitignore"), "wb") as fh:
        fh.write(b"/d\xff/guide/anchored.md\njunk\xfe/\n")
    assert captured(Path(os.fsdecode(bundle))) == ["a.md"]


# -- a change is seen by the next request ------------------------------------------------------


def test_one_engine_sees_each_edit_of_the_rules_above(
    tmp_path: Path, file_reads: list[str]
) -> None:
    """A long-lived engine (the language server's, the warm process's) finds every file
    unchanged by its stat and reads none again, yet follows each edit of the repository's
    .gitignore and info/exclude above the bundle."""
    root = make_repo(tmp_path / "repo", {})
    bundle = write_bundle(
        root / "docs", {"a.md": "alpha\n", "drafts/b.md": "alpha\n", "c.md": "alpha\n"}
    )
    time.sleep(0.06)  # past the (short) racy window: the files can be reused
    engine = Engine()

    def hits() -> list[str]:
        found = engine.search(engine.call(bundle, fresh_after=time.monotonic()), {"query": "alpha"})
        return sorted(h["path"] for h in found["hits"])

    assert hits() == ["a.md", "c.md", "drafts/b.md"]
    file_reads.clear()
    (root / ".gitignore").write_text("drafts/\n")
    assert hits() == ["a.md", "c.md"]
    (root / ".git" / "info" / "exclude").write_text("c.md\n")
    assert hits() == ["a.md"]
    assert file_reads == []  # every answer from the bytes read first
    (root / ".gitignore").write_text("!c.md\n")  # above info/exclude: re-includes c.md
    assert hits() == ["a.md", "c.md", "drafts/b.md"]
    # the stat index holds captured files only: those back in the snapshot are read again
    assert sorted(file_reads) == ["c.md", "drafts/b.md"]
    (root / ".git" / "info" / "exclude").unlink()
    (root / ".gitignore").write_text("*.md\n")
    assert hits() == []
    (root / ".gitignore").unlink()
    assert hits() == ["a.md", "c.md", "drafts/b.md"]
    unignored = engine.call(bundle, settings=Settings(use_ignore=False))
    assert engine.search(unignored, {"query": "alpha"})["total"] == 3


def test_two_command_line_calls_sharing_a_cache_see_an_edit_between_them(
    tmp_path: Path,
) -> None:
    root = make_repo(tmp_path / "repo", {})
    bundle = write_bundle(root / "docs", {"a.md": "alpha\n", "drafts/b.md": "alpha\n"})
    time.sleep(0.06)
    env = {"CITELINE_CACHE_DIR": str(tmp_path / "cache")}

    def paths(*flags: str) -> list[str]:
        done = run_cli(["search", bundle, "--query", "alpha", "--json", *flags], env=env)
        assert done.returncode == 0, done.stderr
        return sorted(h["path"] for h in json.loads(done.stdout)["hits"])

    assert paths() == ["a.md", "drafts/b.md"]
    (root / ".gitignore").write_text("drafts/\n")
    assert paths() == paths("--no-cache") == ["a.md"]
    assert paths("--no-ignore") == ["a.md", "drafts/b.md"]
    (root / ".gitignore").write_text("# nothing\n")
    assert paths() == ["a.md", "drafts/b.md"]
    assert (tmp_path / "cache").is_dir()


# -- the matcher --------------------------------------------------------------------------------


def test_pathspec_still_marks_a_match_through_a_folder() -> None:
    """own_patterns relies on the form of pathspec's regexes (engine/capture/ignore.py)."""
    from pathspec import GitIgnoreSpec

    (pattern,) = GitIgnoreSpec.from_lines(["docs/"]).patterns
    assert DIR_MARK in pattern.regex.pattern
    rules = compile_rules(["docs/", "*.md", "!keep.md", "a/**"])
    assert [rules.check(p) for p in ("docs/", "x/docs/", "docs/a.txt", "docs")] == [
        True,
        True,
        None,  # not through its folder: the walk never enters an ignored folder
        None,  # a file named docs: `docs/` names folders only
    ]
    assert [rules.check(p) for p in ("b.md", "x.md/", "x.md/y", "keep.md", "a/b/c")] == [
        True,
        True,
        None,
        False,
        True,
    ]


def test_the_quick_rejection_of_files_changes_no_answer() -> None:
    """Rules skips the regexes for a file whose path ends in none of its patterns' literal
    ends; the answers are those of matching every pattern."""
    lines = [
        *("*.vsix", ".coverage", "build/", "build", "a/**/", "!keep.md", "trail.md   "),
        *("x\\*.md", "[ab].md", "\\#h.md", "docs/*.md", "*.md\r", "/top.md", "ab"),
    ]
    rules = compile_rules(lines)
    assert rules.tails is not None  # every pattern tells: the quick path is taken
    paths = [
        *("a.vsix", "b/.coverage", "keep.md", "x/keep.md", "trail.md", "x*.md", "xy.md"),
        *("a.md", "c.md", "#h.md", "docs/q.md", "q.md", "top.md", "x/top.md", "ab", "x/ab"),
        *("build/", "x/build/", "build", "a/", "a/b/", "a/b.md", "ab/", "trail.md/"),
    ]
    full = [rules.spec.check_file(p).include for p in paths]
    assert [rules.check(p) for p in paths] == full
    assert full.count(None) < len(full) - 5  # (the patterns do match some of them)


SEGMENTS = st.sampled_from(["a", "b", "doc", "x.md", "a.md"])
PATTERN = st.builds(
    lambda neg, lead, body, trail: neg + lead + body + trail,
    st.sampled_from(["", "", "!"]),
    st.sampled_from(["", "/", "**/"]),
    st.sampled_from(
        [
            *("a", "b", "doc", "*.md", "a.md", "d*", "*", "**", "?.md", "[ab].md", "[!a]*"),
            *("a/b", "a/*", "a/**", "a/**/b", "**/a.md", "a/**/*.md", "doc/a", "*/a.md"),
        ]
    ),
    st.sampled_from(["", "", "/", "/**"]),
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    root_rules=st.lists(PATTERN, max_size=5),
    inner_rules=st.lists(PATTERN, max_size=3),
    paths=st.lists(st.lists(SEGMENTS, min_size=1, max_size=3), min_size=1, max_size=8),
)
def test_the_rules_agree_with_git(
    tmp_path_factory: pytest.TempPathFactory,
    root_rules: list[str],
    inner_rules: list[str],
    paths: list[list[str]],
) -> None:
    """Random .gitignore files above and inside a bundle `doc/` of a repository: citeline
    captures what git lists, whenever git does not ignore the bundle's folder itself (then
    citeline still searches it, and git lists nothing)."""
    base = tmp_path_factory.mktemp("agree")
    home = {
        "HOME": str(base),
        "XDG_CONFIG_HOME": str(base / ".config"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    files: dict[str, str | bytes] = {
        ".gitignore": "".join(r + "\n" for r in root_rules),
        "doc/.gitignore": "".join(r + "\n" for r in inner_rules),
    }
    names = {"/".join([*parts[:-1], parts[-1] + ".md"]) for parts in paths}
    for name in names:
        if not any(other.startswith(name + "/") for other in names):  # not also a folder
            files["doc/" + name] = "x\n"
    root = write_bundle(base / "repo", files)
    try:
        git(home, "init", "-q", str(root), cwd=base)
        ignored = subprocess.run(
            [tool("git"), "check-ignore", "-q", "--no-index", "doc/"],
            cwd=root,
            env={**os.environ, **home},
            check=False,
        )
        if ignored.returncode == 0:
            return  # git ignores the bundle's folder: nothing to compare with
        assert captured(root / "doc") == git_lists(home, root / "doc")
        whole = [p.removeprefix("doc/") for p in captured(root) if p.startswith("doc/")]
        assert whole == captured(root / "doc")  # the same rules from above as from inside
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize("every_folder", ["/**/", "**/", "**/**/", "/**/**/"])
@pytest.mark.parametrize("first", ["a", "/a", "a/", "*/", "**/a"])
def test_a_pattern_for_every_folder_re_includes_them_as_git_does(
    tmp_path: Path, first: str, every_folder: str
) -> None:
    """`!/**/` re-includes every folder, a/ too (Hypothesis found citeline reading `/**/`
    as `a/**/` with nothing before it, the folders inside some folder, and so leaving a/
    ignored); `a/**/` keeps its own meaning, the folders inside a/."""
    home = {"HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    files: dict[str, str | bytes] = {
        "doc/.gitignore": f"{first}\n!{every_folder}\n",
        "doc/a/a.md": "x\n",
        "doc/a/b/a.md": "x\n",
        "doc/b.md": "x\n",
    }
    root = write_bundle(tmp_path / "repo", files)
    git(home, "init", "-q", str(root), cwd=tmp_path)
    listed = git_lists(home, root / "doc")
    assert "a/a.md" in listed  # (what git does, so that the comparison below can fail)
    assert captured(root / "doc") == listed
    rules = compile_rules(["a/**/"])
    assert [rules.check(p) for p in ("a/", "a/b/", "a/b/c/")] == [None, True, True]


@pytest.mark.parametrize(
    "rules", ["*/**/", "a\n!*/**/", "**/**/**/", "b/\n!*/**/", "a/**/**/", "*/*/**/"]
)
def test_folders_inside_a_pattern_are_what_git_reads(tmp_path: Path, rules: str) -> None:
    """`X/**/` names the folders inside what X names, unless X is only `**` (every
    folder): `*/**/` keeps the first level, `**/**/**/` does not."""
    home = {"HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    names = ["a/a.md", "a/b/a.md", "a/b/c/a.md", "b.md", "b/x.md"]
    files: dict[str, str | bytes] = {"doc/.gitignore": rules + "\n"}
    files.update({"doc/" + name: "x\n" for name in names})
    root = write_bundle(tmp_path / "repo", files)
    git(home, "init", "-q", str(root), cwd=tmp_path)
    listed = git_lists(home, root / "doc")
    assert listed != names  # (the rules ignore something, so the comparison can fail)
    assert captured(root / "doc") == listed
