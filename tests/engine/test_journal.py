"""The change journal (engine/capture/journal.py): real inotify on this machine, every case it
must name a file in, and every case where it must say it cannot vouch (issue 32)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from citeline.engine.capture import journal as jmod
from citeline.engine.capture.inotify import NETWORK_FS, file_system_type
from citeline.engine.capture.journal import Drained, Journal, open_journal
from citeline.engine.capture.watches import NETWORK, WATCH_LIMIT

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd") or not hasattr(os, "O_NOFOLLOW"),
    reason="inotify is Linux's",
)


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(
        tmp_path / "bundle",
        {"a.md": "a\n", "notes/b.md": "b\n", "notes/deep/c.markdown": "c\n", "x.txt": "x\n"},
    )


def started(root: Path, **kwargs: Any) -> Journal:
    j = open_journal(str(root), **kwargs)
    assert isinstance(j, Journal), j
    first = j.drain()
    assert first == Drained(False, reason=jmod.FIRST)
    return j


def vouched(j: Journal) -> frozenset[str]:
    d = j.drain()
    assert d.vouched, d
    return d.paths


def not_vouched(j: Journal, reason: str) -> None:
    d = j.drain()
    assert not d.vouched, d
    assert d.reason == reason


def test_nothing_changed_is_vouched_and_empty(tree: Path) -> None:
    j = started(tree)
    assert j.watches == 3  # the bundle, notes, notes/deep
    assert vouched(j) == frozenset()
    assert vouched(j) == frozenset()


def test_files_created_written_touched_renamed_and_deleted_are_named(tree: Path) -> None:
    j = started(tree)
    (tree / "new.md").write_text("n\n")
    assert vouched(j) == {"new.md"}
    with open(tree / "notes/b.md", "r+b") as fh:  # same size, same tick: only the event tells
        fh.write(b"B")
    assert vouched(j) == {"notes/b.md"}
    os.utime(tree / "a.md", ns=(1, 1))  # mtime put back: the ctime and the event tell
    assert vouched(j) == {"a.md"}
    os.chmod(tree / "a.md", 0o600)
    assert vouched(j) == {"a.md"}
    os.rename(tree / "notes/deep/c.markdown", tree / "notes/c.MD")
    assert vouched(j) == {"notes/deep/c.markdown", "notes/c.MD"}
    os.unlink(tree / "new.md")
    assert vouched(j) == {"new.md"}
    assert vouched(j) == frozenset()


def test_names_the_capture_never_takes_are_left_out(tree: Path) -> None:
    j = started(tree)
    (tree / "x.txt").write_text("changed\n")
    (tree / ".hidden.md").write_text("h\n")
    (tree / "notes/readme").write_text("r\n")
    os.rename(tree / "x.txt", tree / "y.txt")
    assert vouched(j) == frozenset()
    os.rename(tree / "y.txt", tree / "y.md")  # a file renamed into a captured name
    assert vouched(j) == {"y.md"}
    os.rename(tree / "a.md", tree / "a.txt")  # and out of one
    assert vouched(j) == {"a.md"}


def test_a_link_swapped_for_a_file_is_named(tree: Path, tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", {"secret.md": "s\n"})
    j = started(tree)
    os.symlink(outside / "secret.md", tree / "tmp-link")
    os.rename(tree / "tmp-link", tree / "a.md")  # as an attacker would: atomically
    assert vouched(j) == {"a.md"}


def test_a_folder_swapped_for_a_link_is_not_followed(tree: Path, tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", {"secret.md": "s\n"})
    j = started(tree)
    shutil.rmtree(tree / "notes")
    not_vouched(j, jmod.FOLDER_GONE)
    os.symlink(outside, tree / "notes")
    assert vouched(j) == frozenset()  # a link is no folder: nothing to watch, nothing taken
    assert j.watches == 1
    (outside / "secret.md").write_text("changed\n")
    (outside / "more.md").write_text("m\n")
    assert vouched(j) == frozenset()


def test_a_new_folder_is_not_vouched_then_watched(tree: Path) -> None:
    j = started(tree)
    (tree / "new/inner").mkdir(parents=True)
    (tree / "new/inner/early.md").write_text("e\n")  # before the folder's watch: walked
    not_vouched(j, jmod.NEW_FOLDER)
    assert j.watches == 5
    (tree / "new/inner/late.md").write_text("l\n")
    assert vouched(j) == {"new/inner/late.md"}


def test_a_folder_moved_in_from_outside_is_watched(tree: Path, tmp_path: Path) -> None:
    elsewhere = make_tree(tmp_path / "elsewhere", {"sub/d.md": "d\n"})
    j = started(tree)
    os.rename(elsewhere, tree / "moved")
    not_vouched(j, jmod.NEW_FOLDER)
    (tree / "moved/sub/d.md").write_text("changed\n")
    assert vouched(j) == {"moved/sub/d.md"}


def test_a_folder_renamed_inside_reports_its_new_paths_only(tree: Path) -> None:
    j = started(tree)
    os.rename(tree / "notes", tree / "papers")
    d = j.drain()
    assert not d.vouched and d.reason in (jmod.FOLDER_GONE, jmod.NEW_FOLDER)
    assert j.watches == 3
    (tree / "papers/deep/c.markdown").write_text("changed\n")
    assert vouched(j) == {"papers/deep/c.markdown"}


def test_a_folder_moved_away_is_forgotten(tree: Path, tmp_path: Path) -> None:
    j = started(tree)
    os.rename(tree / "notes", tmp_path / "away")
    not_vouched(j, jmod.FOLDER_GONE)
    assert j.watches == 1
    (tmp_path / "away/b.md").write_text("changed\n")  # no longer in the bundle
    assert vouched(j) == frozenset()


def test_a_folder_deleted_is_not_vouched(tree: Path) -> None:
    j = started(tree)
    shutil.rmtree(tree / "notes/deep")
    d = j.drain()
    assert not d.vouched and d.reason == jmod.FOLDER_GONE
    assert j.watches == 2
    assert vouched(j) == frozenset()


@pytest.mark.parametrize("folder", ["", "notes"])
def test_a_folders_mode_changed_is_not_vouched(tree: Path, folder: str) -> None:
    j = started(tree)
    os.chmod(tree / folder, 0o700)
    not_vouched(j, jmod.FOLDER_ATTRIBUTES)
    assert vouched(j) == frozenset()
    assert j.watches == 3


@pytest.mark.parametrize("where", ["", "notes/", "notes/deep/"])
def test_an_ignore_file_changed_anywhere_is_not_vouched(tree: Path, where: str) -> None:
    j = started(tree)
    (tree / f"{where}.gitignore").write_text("*.md\n")
    not_vouched(j, jmod.RULES)
    (tree / f"{where}.gitignore").write_text("b.md\n")
    not_vouched(j, jmod.RULES)
    os.unlink(tree / f"{where}.gitignore")
    not_vouched(j, jmod.RULES)
    assert vouched(j) == frozenset()


def test_a_repository_made_at_the_bundle_is_not_vouched(tree: Path) -> None:
    j = started(tree)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    not_vouched(j, jmod.RULES)
    # .git is not watched (a dot folder), but its info/exclude is read again and compared
    # by every drain: what it ignores may be a folder, to be watched or no longer
    (tree / ".git/info/exclude").write_text("*.md\n")
    not_vouched(j, jmod.RULES)
    assert vouched(j) == frozenset()
    (tree / ".git/info/exclude").write_text("notes/\n")
    not_vouched(j, jmod.RULES)
    assert j.watches == 1  # notes and notes/deep are ignored now: not watched
    (tree / ".git/info/exclude").write_text("")
    not_vouched(j, jmod.RULES)
    assert j.watches == 3


def test_the_bundle_folder_replaced_is_not_vouched_then_watched_again(
    tree: Path, tmp_path: Path
) -> None:
    j = started(tree)
    os.rename(tree, tmp_path / "old")
    make_tree(tree, {"fresh.md": "f\n"})
    not_vouched(j, jmod.ROOT)
    (tmp_path / "old/a.md").write_text("old\n")  # the old folder is no longer watched
    (tree / "fresh.md").write_text("changed\n")
    assert vouched(j) == {"fresh.md"}


def test_the_bundle_folder_removed_then_made_again(tree: Path) -> None:
    j = started(tree)
    shutil.rmtree(tree)
    not_vouched(j, jmod.ROOT)
    not_vouched(j, jmod.ROOT)  # still missing: nothing can be vouched for
    make_tree(tree, {"back.md": "b\n"})
    not_vouched(j, jmod.ROOT)  # watched again now: this walk is the first
    (tree / "back.md").write_text("again\n")
    assert vouched(j) == {"back.md"}


def test_a_real_queue_overflow_is_not_vouched(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    assert limit <= 1 << 20  # the test writes more events than the queue holds
    # A drain's own bound (test_journal_flood.py) put past the kernel's queue, so that this
    # drain reads up to the overflow the kernel queued.
    monkeypatch.setattr(jmod, "DRAIN_EVENTS", 4 * limit)
    monkeypatch.setattr(jmod, "DRAIN_SECONDS", 60.0)
    j = started(tree)
    # Two files written in turn: the kernel merges an event only with the one queued last.
    with open(tree / "a.md", "wb") as fa, open(tree / "notes/b.md", "wb") as fb:
        for _ in range(limit // 2 + 16):
            fa.write(b"a")
            fa.flush()
            fb.write(b"b")
            fb.flush()
    not_vouched(j, jmod.OVERFLOW)
    (tree / "a.md").write_text("after\n")
    assert vouched(j) == {"a.md"}


def test_a_checkout_of_thousands_of_files_is_named_or_walked(tree: Path) -> None:
    j = started(tree)
    (tree / "many").mkdir()
    not_vouched(j, jmod.NEW_FOLDER)
    names = [f"many/f{i:04}.md" for i in range(5000)]
    for rel in names:
        (tree / rel).write_text("v1\n")
    d = j.drain()
    assert (d.vouched and d.paths == set(names)) or (
        not d.vouched and d.reason in (jmod.OVERFLOW, jmod.BOUND)
    )
    # as git checks out: a new file written, then renamed over the old one
    for rel in names:
        tmp = tree / (rel + ".lock")
        tmp.write_text("v2\n")
        os.rename(tmp, tree / rel)
    d = j.drain()
    assert (d.vouched and d.paths >= set(names)) or (
        not d.vouched and d.reason in (jmod.OVERFLOW, jmod.BOUND)
    )


def test_the_watch_limit_turns_the_journal_off_and_frees_its_watches(tree: Path) -> None:
    assert open_journal(str(tree), max_watches=2) == WATCH_LIMIT
    j = started(tree, max_watches=3)
    (tree / "more").mkdir()  # a fourth folder: over the limit
    not_vouched(j, WATCH_LIMIT)
    assert j.watches == 0
    (tree / "a.md").write_text("changed\n")
    not_vouched(j, WATCH_LIMIT)


def test_enospc_from_the_kernel_is_the_watch_limit(tree: Path) -> None:
    from inotify_simple import INotify

    class Limited(INotify):  # type: ignore[misc]
        def add_watch(self, path: Any, mask: int) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    assert open_journal(str(tree), binding=lambda: Limited(nonblocking=True)) == WATCH_LIMIT


def test_other_add_watch_errors_turn_the_journal_off(tree: Path) -> None:
    from inotify_simple import INotify

    class Broken(INotify):  # type: ignore[misc]
        def add_watch(self, path: Any, mask: int) -> int:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    reason = open_journal(str(tree), binding=lambda: Broken(nonblocking=True))
    assert isinstance(reason, str) and reason.startswith("inotify refused a watch")


def test_a_folder_that_cannot_be_watched_is_watched_once_it_can(tree: Path) -> None:
    from inotify_simple import INotify

    refused = {"on": True}

    class Unreadable(INotify):  # type: ignore[misc]
        """EACCES for notes/deep while `refused` (root reads every folder: the test makes
        the refusal a non-root user gets for a folder without read permission)."""

        def add_watch(self, path: Any, mask: int) -> int:
            if refused["on"] and os.path.samefile(path, tree / "notes/deep"):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
            return int(super().add_watch(path, mask))

    j = started(tree, binding=lambda: Unreadable(nonblocking=True))
    assert j.watches == 2
    refused["on"] = False
    os.chmod(tree / "notes/deep", 0o755)  # readable again: an event of notes' watch
    not_vouched(j, jmod.FOLDER_ATTRIBUTES)
    assert j.watches == 3
    (tree / "notes/deep/c.markdown").write_text("changed\n")
    assert vouched(j) == {"notes/deep/c.markdown"}


def test_no_inotify_instance_left_is_said(tree: Path) -> None:
    def refused() -> Any:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    reason = open_journal(str(tree), binding=refused)
    assert isinstance(reason, str) and "inotify is not available" in reason


@pytest.mark.parametrize("magic", sorted(NETWORK_FS))
def test_a_network_file_system_turns_the_journal_off(tree: Path, magic: int) -> None:
    assert open_journal(str(tree), fs_type=lambda fd: magic) == NETWORK


TMPFS_MAGIC = 0x01021994


def mount_tmpfs(where: Path) -> None:
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "citeline-test", str(where)], check=True
    )


@pytest.fixture
def mounted(tree: Path) -> Any:
    """A tmpfs mounted on notes/deep (another device inside the bundle), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    where = tree / "notes/deep"
    mount_tmpfs(where)
    try:
        (where / "m.md").write_text("m\n")
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_network_mount_inside_the_bundle_turns_it_off(tree: Path, mounted: Path) -> None:
    # Each device's file system is asked once: here the tmpfs stands for an NFS mount.
    def fs_type(fd: int) -> int | None:
        real = file_system_type(fd)
        return 0x6969 if real == TMPFS_MAGIC else real

    assert open_journal(str(tree), fs_type=fs_type) == NETWORK
    # As it is (a local tmpfs), the mount is watched like any folder.
    j = started(tree)
    (mounted / "m.md").write_text("changed\n")
    assert vouched(j) == {"notes/deep/m.md"}


def test_an_unmount_under_the_bundle_is_not_vouched(tree: Path, mounted: Path) -> None:
    j = started(tree)
    subprocess.run(["umount", str(mounted)], check=True)
    d = j.drain()
    assert not d.vouched and d.reason in (jmod.MOUNTS, jmod.UNMOUNTED, jmod.FOLDER_GONE)
    mount_tmpfs(mounted)  # for the fixture to unmount


def test_a_mount_over_a_watched_folder_is_not_vouched(tree: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    j = started(tree)
    mount_tmpfs(tree / "notes")  # no inotify event says this
    try:
        not_vouched(j, jmod.MOUNTS)
    finally:
        subprocess.run(["umount", "-l", str(tree / "notes")], check=True)
    not_vouched(j, jmod.MOUNTS)


def test_the_file_system_type_is_statfs_f_type(tree: Path) -> None:
    fd = os.open(tree, os.O_RDONLY)
    try:
        got = file_system_type(fd)
    finally:
        os.close(fd)
    shown = subprocess.run(
        ["stat", "-f", "-c", "%t", str(tree)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert got == int(shown, 16)
    assert got not in NETWORK_FS


@pytest.mark.parametrize("platform", ["darwin", "win32", "cygwin", "freebsd14"])
def test_platforms_without_a_synchronous_journal(platform: str) -> None:
    assert jmod.unsupported_reason(platform) == jmod.UNSUPPORTED
    assert jmod.unsupported_reason("linux") is None


def test_a_missing_bundle_has_no_watches(tmp_path: Path) -> None:
    j = Journal(str(tmp_path / "nowhere"))
    assert j.watches == 0
    not_vouched(j, jmod.FIRST)
    not_vouched(j, jmod.ROOT)


def test_closed_journal_vouches_for_nothing(tree: Path) -> None:
    j = started(tree)
    j.close()
    assert j.watches == 0
    d = j.drain()
    assert not d.vouched and d.reason == "closed"


def test_concurrent_drains_lose_nothing(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Concurrency only: a drain's time bound (50 ms, test_journal_flood.py) is reached on a
    # loaded machine, and a drain cut short is not vouched (its caller walks).
    monkeypatch.setattr(jmod, "DRAIN_SECONDS", 60.0)
    j = started(tree)
    names = [f"t{i:03}.md" for i in range(300)]
    seen: set[str] = set()
    failed: list[Any] = []
    lock = threading.Lock()
    done = threading.Event()

    def drainer() -> None:
        while True:
            finished = done.is_set()
            d = j.drain()
            with lock:
                if not d.vouched:
                    failed.append(d)
                seen.update(d.paths)
            if finished:
                return

    threads = [threading.Thread(target=drainer) for _ in range(3)]
    for t in threads:
        t.start()
    for name in names:
        (tree / name).write_text("x\n")
    done.set()
    for t in threads:
        t.join()
    seen.update(j.drain().paths)
    assert not failed
    assert seen == set(names)
