"""Never stale (issue 32's target): a capture through the change journal is the capture a
full read makes, after every step of a seeded random walk of edits — created, deleted,
renamed files, same-size rewrites with the mtime put back, folders moved within, out and
in, files and folders swapped for links and back, .gitignore edits, and a checkout that
rewrites 5,000 files at once — with the journal on, with its queue overflowing (a queue
that holds a few events: the journal's test hook) and at the watch limit (likewise).

The racy rule is turned off (RACY_NS = 0) so that the journal alone must name every
change: with it on, every file this fast test writes would be read again anyway, hiding
a file the journal failed to name. The one-tick case the racy rule exists for is tested
apart, under a coarse clock.
"""

from __future__ import annotations

import os
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from citeline.engine import CitelineError, Engine
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.capture import journal as jmod
from citeline.engine.capture import stats
from citeline.engine.capture.journal import open_journal
from citeline.engine.capture.journals import Journals, Look
from citeline.engine.capture.watches import WATCH_LIMIT

pytestmark = pytest.mark.skipif(
    jmod.unsupported_reason() is not None, reason="no synchronous journal on this platform"
)

SETTINGS = Settings(limits=Limits(max_files=100_000))
FOLDERS = ["", "d0", "d1", "d1/s", "d2/s/t"]
PATTERNS = ["d1/", "f1.md", "*3.md", "!f3.md", "s/", "d2/s/t/*.md", "moved*/"]


def outcome(engine: Engine, root: Path) -> tuple[Any, ...]:
    """What a capture gives, or the error it raises (both must be the full read's)."""
    try:
        snap = engine.capture(engine.call(str(root), settings=SETTINGS))
    except CitelineError as exc:
        return ("error", exc.code, str(exc))
    return ("ok", [(f.path, f.size, f.sha256, f.reserved) for f in snap.files], snap.revision)


class Recorded(Journals):
    """Journals that keep every Look, to prove the journal was used and not walked around."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(make=lambda root, membership: open_journal(root, **kwargs))
        self.looks: list[Look] = []

    def look(self, key: str, root: str, known: object, settings: Any) -> Look:
        got = super().look(key, root, known, settings)
        self.looks.append(got)
        return got


def journaled(**kwargs: Any) -> tuple[Engine, Recorded]:
    engine = Engine(SETTINGS, journal=True)
    recorded = Recorded(**kwargs)
    engine.reuse.journals = recorded
    return engine, recorded


class Walker:
    """Random edits of a bundle (and of a folder beside it, for moves in and out)."""

    def __init__(self, root: Path, outside: Path, seed: int) -> None:
        self.root = root
        self.outside = outside
        self.rng = random.Random(seed)
        self.made = 0
        for folder in FOLDERS:
            (root / folder).mkdir(parents=True, exist_ok=True)
            for i in range(4):
                self.write(root / folder / f"f{i}.md")
        (outside / "away").mkdir(parents=True)
        self.write(outside / "target.md")

    def text(self) -> str:
        self.made += 1
        words = " ".join(self.rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(3))
        return f"# Note {self.made}\n\n{words}\n"

    def write(self, path: Path, text: str | None = None) -> None:
        path.write_text(self.text() if text is None else text)

    def files(self) -> list[Path]:
        found = []
        for top, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for n in names:
                p = Path(top) / n
                if n.endswith(".md") and not p.is_symlink():
                    found.append(p)
        return sorted(found)

    def folders(self) -> list[Path]:
        found = []
        for top, dirs, _ in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += [Path(top) / d for d in dirs if not (Path(top) / d).is_symlink()]
        return sorted(found)

    def links(self) -> list[Path]:
        found = []
        for top, dirs, names in os.walk(self.root):
            found += [Path(top) / n for n in dirs + names if (Path(top) / n).is_symlink()]
        return sorted(found)

    def some_folder(self) -> Path:
        return self.rng.choice([self.root, *self.folders()])

    # -- the edits: each returns its name (the test counts them) --------------------------

    def create(self) -> str:
        self.write(self.some_folder() / f"n{self.made}.md")
        return "create"

    def delete(self) -> str:
        files = self.files()
        if files:
            self.rng.choice(files).unlink()
        return "delete"

    def rename(self) -> str:
        files = self.files()
        if files:
            src = self.rng.choice(files)
            dst = self.some_folder() / self.rng.choice([f"r{self.made}.md", "f0.md", "x.txt"])
            if not dst.is_dir():
                os.replace(src, dst)
            self.made += 1
        return "rename"

    def same_size(self) -> str:
        files = self.files()
        if files:
            path = self.rng.choice(files)
            before = os.stat(path)
            data = bytearray(path.read_bytes())
            if data:
                data[-2] = ord("x") if data[-2] != ord("x") else ord("y")
            path.write_bytes(bytes(data))
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back
        return "same-size rewrite"

    def move_folder(self) -> str:
        folders = self.folders()
        if not folders:
            return "folder move"
        folder = self.rng.choice(folders)
        kind = self.rng.randrange(3)
        if kind == 0:  # within the bundle
            dst = self.root / f"moved{self.made}"
            self.made += 1
            os.rename(folder, dst)
        elif kind == 1:  # out of it
            os.rename(folder, self.outside / "away" / f"{folder.name}{self.made}")
            self.made += 1
        else:  # in from outside (a folder of files the journal never watched)
            away = sorted((self.outside / "away").iterdir())
            if away:
                os.rename(away[0], self.some_folder() / f"back{self.made}")
                self.made += 1
        return "folder move"

    def link_swap(self) -> str:
        kind = self.rng.randrange(3)
        links = self.links()
        if kind == 0 and links:  # a link swapped back for a file or folder
            link = self.rng.choice(links)
            link.unlink()
            if self.rng.randrange(2):
                self.write(link)
            else:
                link.mkdir()
                self.write(link / "inside.md")
        elif kind == 1 and self.files():  # a file swapped for a link (inside or out)
            path = self.rng.choice(self.files())
            others = [p for p in self.files() if p != path]
            target = self.rng.choice([*others, self.outside / "target.md"])
            path.unlink()
            path.symlink_to(target)
        elif self.folders():  # a folder swapped for a link to one outside
            folder = self.rng.choice(self.folders())
            away = self.outside / "away" / f"{folder.name}{self.made}"
            self.made += 1
            os.rename(folder, away)
            folder.symlink_to(away, target_is_directory=True)
        return "link swap"

    def gitignore(self) -> str:
        where = self.some_folder() / ".gitignore"
        if where.exists() and self.rng.randrange(2):
            where.unlink()
        else:
            where.write_text("\n".join(self.rng.sample(PATTERNS, 2)) + "\n")
        return ".gitignore edit"

    def new_folders(self, count: int) -> str:
        """Folders made at once, each with a file (past a small watch limit)."""
        for _ in range(count):
            folder = self.some_folder() / f"new{self.made}"
            self.made += 1
            folder.mkdir()
            self.write(folder / "page.md")
        return "new folders"

    def checkout(self, count: int = 5000) -> str:
        """As git checks out a branch: each file written beside, then renamed over."""
        folder = self.root / "checkout"
        folder.mkdir(exist_ok=True)
        for i in range(count):
            tmp = folder / f".c{i:04}.md.lock"
            tmp.write_text(f"# Page {i}\n\nrevision {self.made}\n")
            os.rename(tmp, folder / f"c{i:04}.md")
        self.made += 1
        return "checkout"

    def step(self) -> str:
        edits = [
            self.create,
            self.delete,
            self.rename,
            self.same_size,
            self.move_folder,
            self.link_swap,
            self.gitignore,
        ]
        weights = [4, 2, 3, 3, 1, 2, 1]
        return self.rng.choices(edits, weights)[0]()


MODES = {
    "journal on": {},
    "queue overflow": {"max_events": 2},
    "watch limit": {"max_watches": 9},
}


@pytest.mark.parametrize("mode", list(MODES))
def test_every_step_is_the_full_reads_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(stats, "RACY_NS", 0)
    root, outside = tmp_path / "bundle", tmp_path / "outside"
    walker = Walker(root, outside, seed=32)
    engine, recorded = journaled(**MODES[mode])
    full = Engine(SETTINGS, reread=True)
    edits: Counter[str] = Counter()
    assert outcome(engine, root) == outcome(full, root)
    for step in range(160):
        if step in (80, 120):
            edits[walker.checkout(5000 if step == 80 else 40)] += 1
        elif step == 81:  # and back (a tree of 5,000 more files makes every step slow)
            shutil.rmtree(root / "checkout")
        elif step == 40:
            edits[walker.new_folders(12)] += 1
        else:
            edits[walker.step()] += 1
        assert outcome(engine, root) == outcome(full, root), (step, edits)
        if step % 7 == 0:  # and a request with nothing changed since the last
            assert outcome(engine, root) == outcome(full, root), (step, "again")
    engine.close()
    assert set(edits) >= {
        "create",
        "delete",
        "rename",
        "same-size rewrite",
        "folder move",
        "link swap",
        ".gitignore edit",
        "checkout",
        "new folders",
    }
    used = [look for look in recorded.looks if look.changed is not None]
    reasons = Counter(look.reason for look in recorded.looks if look.changed is None)
    if mode == "journal on":
        # Most requests went through the journal, with files named in many of them.
        assert len(used) > len(recorded.looks) // 2, reasons
        assert sum(1 for look in used if look.changed) > 40
        assert reasons[jmod.NEW_FOLDER] and reasons[jmod.RULES]
    elif mode == "queue overflow":
        assert reasons[jmod.OVERFLOW] > 5, reasons
        assert used, reasons  # and a step with few events still used it
    else:
        assert reasons[WATCH_LIMIT] > 10, reasons


def test_a_same_size_rewrite_in_one_tick_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under timestamps of whole 20 ms ticks, a same-size rewrite right after a read has
    the fingerprint that read recorded: the journal names the file, and the racy rule (its
    read was that close to its change) makes the capture read it, not trust the stat."""
    monkeypatch.setattr(stats, "COARSE_NS", 20_000_000)
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    (root / "b.md").write_text("# B\n\nbeta\n")
    engine, recorded = journaled()
    full = Engine(SETTINGS, reread=True)
    assert outcome(engine, root) == outcome(full, root)
    for text in ["# A\n\nomega\n", "# A\n\nsigma\n", "# A\n\nalpha\n"]:
        (root / "a.md").write_text(text)  # the same size, the same (coarse) mtime
        assert outcome(engine, root) == outcome(full, root)
        assert recorded.looks[-1].changed == {"a.md"}
        assert "a.md" in recorded.looks[-1].racy
    engine.close()


def test_a_rule_above_the_bundle_edited_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository's .gitignore above the bundle lies outside the watched folders: read
    afresh and compared by every journaled request."""
    monkeypatch.setattr(stats, "RACY_NS", 0)
    repo = tmp_path / "repo"
    root = repo / "docs"
    root.mkdir(parents=True)
    (repo / ".git").mkdir()
    (root / "a.md").write_text("# A\n")
    (root / "b.md").write_text("# B\n")
    engine, recorded = journaled()
    full = Engine(SETTINGS, reread=True)
    assert outcome(engine, root) == outcome(full, root)
    assert outcome(engine, root) == outcome(full, root)
    assert recorded.looks[-1].changed == frozenset()
    for rules in ["docs/b.md\n", "", "*.md\n!a.md\n"]:
        (repo / ".gitignore").write_text(rules)
        got = outcome(engine, root)
        assert got == outcome(full, root)
    assert [p for p, *_ in got[1]] == ["a.md"]
    engine.close()


def test_a_file_with_another_link_is_stated_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write through a hard link outside the bundle raises no event in its folders: a
    file with more than one link is stat'ed on every request."""
    monkeypatch.setattr(stats, "RACY_NS", 0)
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    os.link(root / "a.md", tmp_path / "elsewhere.md")
    engine, recorded = journaled()
    full = Engine(SETTINGS, reread=True)
    assert outcome(engine, root) == outcome(full, root)
    with open(tmp_path / "elsewhere.md", "a") as fh:
        fh.write("more\n")
    got = outcome(engine, root)
    assert recorded.looks[-1].changed == frozenset()  # the journal saw nothing
    assert got == outcome(full, root)
    assert got[1][0][1] == len("# A\n\nalpha\nmore\n")
    engine.close()


def test_editor_marks_are_read_through_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the editor reported is read again although the journal names nothing."""
    monkeypatch.setattr(stats, "RACY_NS", 0)
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    (root / "b.md").write_text("# B\n\nbeta\n")
    engine, recorded = journaled()
    engine.capture(engine.call(str(root), settings=SETTINGS))
    assert engine.capture(engine.call(str(root), settings=SETTINGS)).read == 0
    engine.changed(str(root), ["a.md"])
    snap = engine.capture(engine.call(str(root), settings=SETTINGS))
    assert recorded.looks[-1].changed == frozenset()
    assert snap.read == 1 and [f.path for f in snap.files if f.data is not None] == ["a.md"]
    engine.close()


def test_a_one_shot_engine_holds_no_journal(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    engine = Engine(SETTINGS)
    engine.capture(engine.call(str(root)))
    assert engine.reuse.journals is None
    held = Engine(SETTINGS, journal=True)
    held.capture(held.call(str(root)))
    assert held.reuse.journals is not None and held.reuse.journals.watches() == 1
    held.close()
    assert held.reuse.journals.watches() == 0


def test_the_forced_windows_platform_has_no_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.engine.base import platform

    assert platform.detect({}).change_journal
    forced = platform.detect({"CITELINE_PLATFORM": "windows"})
    assert not forced.change_journal
    assert not platform.detect({})._replace(system="darwin").change_journal
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    monkeypatch.setattr(platform, "PLATFORM", forced)
    assert open_journal(str(root)) == jmod.UNSUPPORTED
    engine = Engine(SETTINGS, journal=True)
    assert [f.path for f in engine.capture(engine.call(str(root))).files] == ["a.md"]
    assert engine.reuse.journals is not None and engine.reuse.journals.watches() == 0
    engine.close()
