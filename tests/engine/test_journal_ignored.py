"""The change journal watches only the folders the walk enters (issue 49, finding 7).

A bundle with thousands of git-ignored folders (`node_modules`) once cost one inotify watch
each — a per-user budget the editor's own file watcher shares. Ignored folders are not
watched now; an edit of a `.gitignore` (in the bundle, or above it in the repository) that
stops ignoring a folder makes the next request walk, and that folder watched from then on.
Real folders, real inotify, a real long-lived engine, each answer compared with a full
read's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.engine import Engine
from citeline.engine.base.limits import Settings
from citeline.engine.capture import journal as jmod
from citeline.engine.capture import stats
from citeline.engine.capture.journal import Journal, open_journal
from citeline.engine.capture.journals import Journals, Look

pytestmark = pytest.mark.skipif(
    jmod.unsupported_reason() is not None, reason="no synchronous journal on this platform"
)

PACKAGES = 2000


class Recorded(Journals):
    def __init__(self) -> None:
        super().__init__()
        self.looks: list[Look] = []

    def look(self, key: str, root: str, known: object, settings: object) -> Look:
        got = super().look(key, root, known, settings)  # type: ignore[arg-type]
        self.looks.append(got)
        return got


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Engine, Recorded]]:
    monkeypatch.setattr(stats, "RACY_NS", 0)  # the journal alone must name every change
    e = Engine(journal=True)
    recorded = e.reuse.journals = Recorded()
    yield e, recorded
    e.close()


def files_of(engine: Engine, root: Path, settings: Settings | None = None) -> dict[str, str]:
    snap = engine.capture(engine.call(str(root), settings=settings or Settings()))
    return {f.path: f.sha256 for f in snap.files}


def truth(root: Path, settings: Settings | None = None) -> dict[str, str]:
    return files_of(Engine(reread=True), root, settings)


def make_bundle(root: Path, packages: int) -> Path:
    """docs/ and guide/ (watched), node_modules/ with `packages` packages of two folders
    each and build/ (ignored by the bundle's .gitignore), cache/ in guide (ignored by
    guide's own .gitignore)."""
    for rel in ["docs/a.md", "guide/b.md", "guide/cache/c.md", "build/out.md"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n\nwords\n")
    for i in range(packages):
        (root / f"node_modules/p{i}/lib").mkdir(parents=True)
    if packages:
        (root / "node_modules/p0/README.md").write_text("# p0\n")
    (root / ".gitignore").write_text("node_modules/\nbuild/\n")
    (root / "guide/.gitignore").write_text("cache/\n")
    return root


def test_ignored_folders_cost_no_watch(tmp_path: Path) -> None:
    few = open_journal(str(make_bundle(tmp_path / "few", 0)))
    many = open_journal(str(make_bundle(tmp_path / "many", PACKAGES)))
    assert isinstance(few, Journal) and isinstance(many, Journal)
    try:
        assert few.watches == 3  # the bundle, docs, guide
        assert many.watches == few.watches  # not 3 + 1 + 2 * 2,000 + 1 + 1
    finally:
        few.close()
        many.close()


def test_through_the_engine_watches_do_not_grow_with_ignored_folders(
    tmp_path: Path, engine: tuple[Engine, Recorded]
) -> None:
    e, recorded = engine
    root = make_bundle(tmp_path / "bundle", PACKAGES)
    assert files_of(e, root) == truth(root)
    assert e.reuse.journals is not None and e.reuse.journals.watches() == 3
    (root / "node_modules/p7/new").mkdir()  # inside an ignored folder: no event at all
    (root / "docs/more").mkdir()  # a folder the walk enters: watched
    (root / "docs/more/m.md").write_text("# M\n")
    assert files_of(e, root) == truth(root)
    assert e.reuse.journals.watches() == 4
    (root / "docs/more/m.md").write_text("# M changed\n")
    assert files_of(e, root) == truth(root)
    assert recorded.looks[-1].changed == {"docs/more/m.md"}


@pytest.mark.parametrize("where", ["bundle", "folder"])
def test_a_gitignore_edit_that_stops_ignoring_a_folder_is_seen_and_watched(
    tmp_path: Path, engine: tuple[Engine, Recorded], where: str
) -> None:
    e, recorded = engine
    root = make_bundle(tmp_path / "bundle", 20)
    assert files_of(e, root) == truth(root)
    assert files_of(e, root) == truth(root)
    if where == "bundle":
        (root / ".gitignore").write_text("node_modules/\n")  # build/ no longer ignored
        now_in, inside = "build/out.md", "build"
    else:
        (root / "guide/.gitignore").write_text("")  # guide/cache/ no longer ignored
        now_in, inside = "guide/cache/c.md", "guide/cache"
    got = files_of(e, root)
    assert got == truth(root)
    assert now_in in got
    assert recorded.looks[-1].changed is None  # the journal did not vouch: walked
    # watched from now on: a change in it is named by the journal
    files_of(e, root)
    (root / now_in).write_text("# changed\n")
    (root / inside / "new.md").write_text("# new\n")
    assert files_of(e, root) == truth(root)
    assert recorded.looks[-1].changed == {now_in, f"{inside}/new.md"}
    # and ignored again: no longer watched, its files gone from the answer
    watches = e.reuse.journals.watches() if e.reuse.journals else 0
    (root / ".gitignore").write_text("node_modules/\nbuild/\n")
    (root / "guide/.gitignore").write_text("cache/\n")
    got = files_of(e, root)
    assert got == truth(root) and now_in not in got
    assert e.reuse.journals is not None and e.reuse.journals.watches() == watches - 1


def test_a_rule_above_the_bundle_that_stops_ignoring_a_folder_is_watched_after(
    tmp_path: Path, engine: tuple[Engine, Recorded]
) -> None:
    e, recorded = engine
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    root = make_bundle(repo / "site", 0)
    (root / "vendor/lib").mkdir(parents=True)
    (root / "vendor/lib/v.md").write_text("# vendored\n")
    (repo / ".gitignore").write_text("site/vendor/\n")
    assert "vendor/lib/v.md" not in files_of(e, root)
    assert e.reuse.journals is not None and e.reuse.journals.watches() == 3
    (repo / ".gitignore").write_text("")
    got = files_of(e, root)
    assert got == truth(root) and "vendor/lib/v.md" in got
    assert e.reuse.journals.watches() == 5
    files_of(e, root)
    (root / "vendor/lib/v.md").write_text("# vendored, changed\n")
    assert files_of(e, root) == truth(root)
    assert recorded.looks[-1].changed == {"vendor/lib/v.md"}


def test_a_request_without_ignore_rules_has_a_journal_of_its_own(
    tmp_path: Path, engine: tuple[Engine, Recorded]
) -> None:
    """use_ignore off: the walk enters every folder, so its journal watches them all."""
    e, recorded = engine
    root = make_bundle(tmp_path / "bundle", 3)
    everything = Settings(use_ignore=False)
    assert files_of(e, root) == truth(root)
    assert files_of(e, root, everything) == truth(root, everything)
    files_of(e, root, everything)
    (root / "build/out.md").write_text("# build, changed\n")
    os.makedirs(root / "node_modules/p1/lib/deep")
    (root / "node_modules/p1/lib/deep/d.md").write_text("# d\n")
    got = files_of(e, root, everything)
    assert got == truth(root, everything)
    assert "node_modules/p1/lib/deep/d.md" in got
    files_of(e, root, everything)
    (root / "node_modules/p1/lib/deep/d.md").write_text("# d, changed\n")
    assert files_of(e, root, everything) == truth(root, everything)
    assert recorded.looks[-1].changed == {"node_modules/p1/lib/deep/d.md"}
    assert files_of(e, root) == truth(root)
