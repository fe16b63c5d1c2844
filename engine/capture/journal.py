"""A change journal of one bundle's folders (Linux inotify): what may have changed since the
last look, so that a warm request stats only that (SPEC §2, "Reuse without reading again").

Pure: no printing, no threads of its own, nothing written anywhere. A long-lived front (the
language server, the warm process, the MCP server) holds one per bundle; a one-shot CLI call
never makes one (setting the watches costs more than the walk it would save).

Why a drain is a sync point: the kernel queues an inotify event before the system call that
made the change returns. A change that finished before `drain()` began is in the queue when
`drain()` reads it to the end (non-blocking, until EAGAIN), so the paths it returns name every
file that may differ from what an earlier capture saw, provided that capture's walk began
after the watches of its folders were set ("watch it, then walk it").

A drain is bounded: it reads at most DRAIN_EVENTS events, for at most DRAIN_SECONDS (checked
after each read of at most READ_BYTES). Past either it stops reading and does not vouch
(BOUND): the events left are dropped with the inotify instance, every watch is set again
(as after an overflow), and that request walks — the walk sees every change made before
it began, so nothing is lost. Someone who keeps making events in a watched folder can make
requests walk, never wait for the end of their flood.

Which folders are watched: those the walk enters (capture/watched.py) — no dot names, no
links, none that git's ignore rules exclude under the settings the journal was made for
(each set of settings that decides membership has its own journal, capture/journals.py).
An ignore file's change anywhere in the bundle makes the drain set every watch again (a
folder no longer ignored is watched, then walked); the rules above the bundle are read
again on every drain and compared.

Hard links: a write is reported under the name it went through, a link count's change only
to a watch of the file itself. Every non-folder name an event names is checked at the end
of the drain (watched.suspect: made and gone again, made twice, written after a removal,
or a regular file with other links now); one that may be or have been a second name of a
captured file sets `Drained.restat`: the capture stats every captured file again (and reads
those whose fingerprint changed). Watches leave out IN_EXCL_UNLINK, so that a write through
a descriptor kept open after its link was removed is still reported (under the removed
name).

What the journal cannot vouch for, it says (`Drained.vouched` false, with the reason), and the
capture falls back to the full stat walk:
- the first drain (nothing is known from before the watches);
- the kernel dropped events: the queue overflowed (`IN_Q_OVERFLOW`,
  /proc/sys/fs/inotify/max_queued_events);
- a watch could not be set: the user's watches are used up (`ENOSPC`,
  /proc/sys/fs/inotify/max_user_watches) or the kernel is out of memory; the journal then
  gives back every watch it holds (others on the machine need them) and stays off;
- a folder was created, moved in, moved away or deleted: it is watched (then walked by the
  capture), or its watches are dropped;
- an ignore file changed (`.gitignore` anywhere in the bundle) or a `.git` entry appeared or
  went (the repository, hence the rules above the bundle, changed); the repository's own
  `info/exclude` and the `.gitignore` files above the bundle are outside it: the capture
  reads those afresh on every request and compares them itself;
- the bundle folder itself was moved, deleted or replaced (its device and inode are checked
  on every drain), or a file system was mounted or unmounted (the mount table is compared
  on every drain: mounting over a watched folder sends no event);
- a folder lies on a file system whose changes need not pass through this kernel (NFS, SMB,
  FUSE, 9p, Ceph, …: `statfs`'s `f_type`): the journal is off for the bundle;
- the platform has no synchronous journal (macOS FSEvents and Windows' change notifications
  are delivered asynchronously, with no point at which "everything before now" is known):
  `open_journal` says so and the capture keeps the stat walk.

What inotify does not report at all, and a full stat walk would have seen: writes through a
shared memory map (mmap(2), msync(2)), and writes through another hard link of a file made
in a folder that is not watched (outside the bundle, in a dot folder such as `.git`, in an
ignored folder). The capture keeps stating files seen with more than one link, or changed
without an event naming them; docs/security.md says what stays open.

The binding (inotify.py) is inotify_simple (docs/decisions.md says why), read without
blocking.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .ignore import Ignores
from .inotify import (
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    NETWORK_FS,
    WATCHED,
    Binding,
    file_system_type,
    open_inotify,
    read_events,
)
from .watched import DIR_FLAGS, FolderRules, Seen, open_folder

# A drain's bound (per request): events read, time spent, and one read's size. Reading and
# weighing 8,192 events takes about the 50 ms here (5.8 µs each at a load of 3 on 2 cores);
# a checkout bigger than that costs less walked than drained.
DRAIN_EVENTS = 8192
DRAIN_SECONDS = 0.05
READ_BYTES = 64 * 1024  # ~2,000 events of a short name (an event is 16 bytes and its name)

# Names whose change alters what the capture takes (engine/capture/ignore.py): the rules, and the
# entry that makes a folder a repository's root.
RULE_NAMES = frozenset({b".gitignore", b".git"})
MARKDOWN_SUFFIXES = (b".md", b".markdown")

# Reasons a drain does not vouch (Drained.reason).
FIRST = "first drain"
OVERFLOW = "queue overflow"
WATCH_LIMIT = "watch limit"
NEW_FOLDER = "folder created or moved in"
FOLDER_GONE = "folder moved away or deleted"
RULES = "ignore rules changed"
ROOT = "bundle folder moved, deleted or replaced"
UNMOUNTED = "file system unmounted"
NETWORK = "network file system"
UNSUPPORTED = "no synchronous journal on this platform"
FOLDER_ATTRIBUTES = "a folder's attributes changed"
BOUND = "drain bound reached"
MOUNTS = "mounts changed"
MOUNTINFO = "/proc/self/mountinfo"


@dataclass(frozen=True, slots=True)
class Drained:
    """What a drain found. `vouched`: only the files in `paths` (bundle-relative, "/"
    separators, Markdown names only) may have changed since the previous drain; otherwise
    `reason` says why the journal cannot tell, and everything must be walked."""

    vouched: bool
    paths: frozenset[str] = frozenset()
    reason: str = ""
    events: int = 0  # events read (for the fronts' logs and the benchmark)
    # A name an event named may be (or have been) a second name of a captured file: every
    # captured file must be stat'ed, not only `paths` (watched.suspect).
    restat: bool = False


def is_markdown(name: bytes) -> bool:
    """SPEC §2's captured names (.md, .markdown, ASCII case-insensitive)."""
    return name.lower().endswith(MARKDOWN_SUFFIXES)


def skipped(name: bytes) -> bool:
    """Entries the capture never takes (SPEC §2: a name starting with a dot)."""
    return name.startswith(b".")


def unsupported_reason(platform: str | None = None) -> str | None:
    """Why this platform has no journal (the platform seam's capability), or None."""
    if platform is None:
        from ..base.platform import PLATFORM

        return None if PLATFORM.change_journal else UNSUPPORTED
    return None if platform.startswith("linux") else UNSUPPORTED


class Journal:
    """The inotify watches of one bundle's folders, and what they saw since the last drain.

    `membership`: the settings that decide which folders the walk enters (use_ignore,
    ignore_case, ignore_nfc). Thread-safe: one lock around the watches and the queue, held
    for one bounded drain. `binding` and `max_watches` are for tests (a fake inotify; a
    watch limit reached after so many watches)."""

    def __init__(
        self,
        root: str,
        *,
        membership: Sequence[bool] = (True, False, False),
        binding: Callable[[], Binding] = open_inotify,
        max_watches: int | None = None,
        fs_type: Callable[[int], int | None] = file_system_type,
        max_events: int | None = None,
    ) -> None:
        self.root = os.fsencode(root)
        # (tests) a queue that holds this many events: more in one drain is an overflow,
        # as the kernel's would be past /proc/sys/fs/inotify/max_queued_events
        self._max_events = max_events
        self._binding = binding
        self._max_watches = max_watches
        self._fs_type = fs_type
        self._lock = threading.Lock()
        self._inotify: Binding | None = None
        self._wd: dict[int, bytes] = {}  # watch descriptor → folder (bundle-relative)
        self._folder: dict[bytes, int] = {}  # folder → watch descriptor
        self._rules = FolderRules(root, membership)
        self._ignores: dict[bytes, Ignores] = {}  # watched folder → the rules inside it
        self._devices: dict[int, bool] = {}  # st_dev → whether its file system is local
        self._identity: tuple[int, int] | None = None  # the bundle folder's (dev, ino)
        self.off: str = ""  # a reason the journal stays off (watch limit, network fs)
        self._pending = FIRST  # why the next drain cannot vouch ("" when it can)
        self._rearm = False  # the watches must be set again (the bundle folder moved)
        # A file system mounted over a watched folder changes what is there without an
        # event: the mount table is compared on every drain (a read of ~20 lines).
        self._mounts = self._mount_table()
        self._start()

    # -- watches ---------------------------------------------------------------------------

    def _start(self) -> None:
        """(Re)arm: every folder of the bundle watched, then the next drain does not vouch."""
        self._drop_all()
        self._pending = self._pending or ROOT
        self._rules.refresh()  # the rules above the bundle the watches follow
        try:
            fd = os.open(self.root, DIR_FLAGS)
        except OSError:
            self._identity = None
            return  # the bundle is not there: the capture reports it; try again next drain
        try:
            st = os.fstat(fd)
            self._identity = (st.st_dev, st.st_ino)
            if self._inotify is None:
                try:
                    self._inotify = self._binding()
                except OSError as exc:  # EMFILE: the user's inotify instances are used up
                    self._turn_off(f"inotify is not available ({os.strerror(exc.errno or 0)})")
                    return
            self._watch_tree(b"", fd, self._rules.top())
        finally:
            os.close(fd)

    def _watch_tree(self, rel: bytes, fd: int, ignores: Ignores) -> None:
        """Watch the folder open as `fd` (bundle-relative `rel`; `ignores`: the rules in
        force where it is), then the subfolders the walk enters: each watch is set before
        the folder's ignore file is read and the folder listed, so nothing made or changed
        in it afterwards is missed."""
        todo = [(rel, os.dup(fd), ignores)]
        while todo:
            rel, fd, ignores = todo.pop()
            try:
                if not self._watch(rel, fd):
                    break
                ignores = self._ignores[rel] = self._rules.inside(ignores, rel, fd)
                with os.scandir(fd) as entries:
                    names = [
                        os.fsencode(e.name)
                        for e in entries
                        if e.is_dir(follow_symlinks=False) and not skipped(os.fsencode(e.name))
                    ]
                for name in names:
                    sub = rel + b"/" + name if rel else name
                    if self._rules.skips(ignores, sub):
                        continue  # the walk does not enter it: no watch (issue 49)
                    try:
                        child = os.open(name, DIR_FLAGS, dir_fd=fd)
                    except OSError:
                        continue  # gone, or swapped for a link: not a folder the capture walks
                    todo.append((sub, child, ignores))
            except OSError:
                pass  # a folder removed while being watched: its events say so
            finally:
                os.close(fd)
        for _, fd, _ in todo:
            os.close(fd)

    def _watch(self, rel: bytes, fd: int) -> bool:
        """One folder's watch, set through its open descriptor (/proc/self/fd/N names the
        very folder opened without following links: no path is resolved again). False when
        the journal had to turn itself off."""
        if self.off or self._inotify is None:
            return False
        dev = os.fstat(fd).st_dev
        local = self._devices.get(dev)
        if local is None:
            kind = self._fs_type(fd)
            local = self._devices[dev] = kind not in NETWORK_FS
        if not local:
            self._turn_off(NETWORK)
            return False
        if self._max_watches is not None and len(self._wd) >= self._max_watches:
            self._turn_off(WATCH_LIMIT)
            return False
        try:
            wd = self._inotify.add_watch(f"/proc/self/fd/{fd}", WATCHED)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.ENOMEM):
                self._turn_off(WATCH_LIMIT)
                return False
            if exc.errno in (errno.EACCES, errno.ENOENT, errno.ENOTDIR):
                # A folder this user cannot list (the capture cannot either), or one gone:
                # a change of its mode, or its removal, is an event of its parent's.
                return True
            self._turn_off(f"inotify refused a watch ({os.strerror(exc.errno or 0)})")
            return False
        old = self._wd.get(wd)
        if old is not None and old != rel:  # the same folder under another name
            self._folder.pop(old, None)
        self._wd[wd] = rel
        self._folder[rel] = wd
        return True

    def _forget(self, rel: bytes) -> None:
        """Drop the watches of a folder and of everything under it."""
        inside = rel + b"/"
        for folder in [f for f in self._folder if f == rel or f.startswith(inside)]:
            self._ignores.pop(folder, None)
            wd = self._folder.pop(folder)
            self._wd.pop(wd, None)
            if self._inotify is not None:
                with contextlib.suppress(OSError):  # already gone with its folder
                    self._inotify.rm_watch(wd)

    def _drop_all(self) -> None:
        if self._inotify is not None:
            self._inotify.close()  # every watch goes with the instance
            self._inotify = None
        self._wd.clear()
        self._folder.clear()
        self._ignores.clear()

    def _turn_off(self, reason: str) -> None:
        self.off = reason
        self._drop_all()

    @property
    def watches(self) -> int:
        return len(self._wd)

    def close(self) -> None:
        with self._lock:
            self._drop_all()
            self.off = self.off or "closed"

    # -- the queue -------------------------------------------------------------------------

    def drain(self) -> Drained:
        """What was queued until now, within the drain's bound: the files named, or why
        they cannot be trusted."""
        with self._lock:
            if self.off:
                return Drained(False, reason=self.off)
            if self._inotify is None or not self._same_root():
                self._not_vouched(ROOT)
                self._start()
                return self._result(frozenset(), 0)
            deadline = time.monotonic() + DRAIN_SECONDS
            mounts = self._mount_table()
            if mounts != self._mounts:
                self._mounts = mounts
                self._not_vouched(MOUNTS)
            if self._rules.changed_above():
                self._not_vouched(RULES)  # a folder may be ignored, or no longer: watch anew
                self._rearm = True
            paths: set[str] = set()
            seen = Seen()  # what this drain saw of each non-folder name
            count = 0
            while batch := self._batch():
                for event in batch:
                    count += 1
                    self._take(event, paths, seen)
                    if self.off:
                        return Drained(False, reason=self.off, events=count)
                if self._max_events is not None and count > self._max_events:
                    # (tests) what the kernel does past its limit: the rest dropped, one
                    # overflow, and every watch set again
                    while self._batch() and time.monotonic() < deadline:
                        pass
                    self._not_vouched(OVERFLOW)
                    self._rearm = True
                    break
                if count >= DRAIN_EVENTS or time.monotonic() >= deadline:
                    # This request walks; what is left in the queue is dropped with the
                    # instance and every watch set again before the walk (as after an
                    # overflow), so that a backlog of slow events — folders made and
                    # removed — holds no later request either. (The reason said, whatever
                    # else this drain saw: it was not read to its end.)
                    self._pending = BOUND
                    self._rearm = True
                    break
            restat = not self._pending and seen.any_suspect(self.root, deadline)
            if self._rearm:
                self._rearm = False
                self._start()
            return self._result(frozenset(paths), count, restat)

    def _batch(self) -> list[Any]:
        """The next events queued (one read of at most READ_BYTES), [] once there are none."""
        return read_events(self._inotify, READ_BYTES)

    def _result(self, paths: frozenset[str], count: int, restat: bool = False) -> Drained:
        if self.off:
            return Drained(False, reason=self.off, events=count)
        reason, self._pending = self._pending, ""
        if reason:
            return Drained(False, reason=reason, events=count)
        return Drained(True, paths, events=count, restat=restat)

    @staticmethod
    def _mount_table() -> bytes:
        try:
            with open(MOUNTINFO, "rb") as fh:
                return fh.read()
        except OSError:
            return b""

    def _same_root(self) -> bool:
        try:
            st = os.stat(self.root, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == self._identity

    def _take(self, event: Any, paths: set[str], seen: Seen) -> None:
        mask = event.mask
        if mask & IN_Q_OVERFLOW:
            # The events dropped may have been folders made: they would stay unwatched, so
            # every watch is set again (after the queue is read), then the capture walks.
            self._not_vouched(OVERFLOW)
            self._rearm = True
            return
        folder = self._wd.get(event.wd)
        if folder is None:
            return  # a watch dropped already (its last events, IN_IGNORED)
        if mask & IN_IGNORED:  # the kernel dropped the watch: its folder went
            self._wd.pop(event.wd, None)
            self._folder.pop(folder, None)
            self._ignores.pop(folder, None)
            self._not_vouched(FOLDER_GONE)
            return
        if mask & IN_UNMOUNT:
            self._not_vouched(UNMOUNTED)
            return
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
            self._not_vouched(ROOT if folder == b"" else FOLDER_GONE)
            if folder == b"":
                self._rearm = True  # once the queue is read: the old watches' events first
            else:
                self._forget(folder)
            return
        name = os.fsencode(event.name)
        if not name:
            # The watched folder's own mode or owner changed: whether the capture may list
            # it, and so what it takes, may have too.
            self._not_vouched(FOLDER_ATTRIBUTES)
            return
        if not mask & IN_ISDIR:
            # Any name, taken or not: a second name of a captured file may be any of them.
            seen.event(folder, name, mask, event.cookie)
        if name in RULE_NAMES:
            self._not_vouched(RULES)
            # What is ignored may have changed: every watch set again under the new rules
            # (a folder no longer ignored is watched before the capture walks it).
            self._rearm = self._rearm or self._rules.use_ignore
            return
        if skipped(name):
            return  # never captured, and nothing under it is either
        rel = folder + b"/" + name if folder else name
        if mask & IN_ISDIR:
            if mask & IN_ATTRIB:
                # A subfolder's mode changed: one that could not be listed (nor watched)
                # may be readable now, so it is watched again, and walked.
                self._not_vouched(FOLDER_ATTRIBUTES)
                self._watch_new(rel)
            elif mask & (IN_CREATE | IN_MOVED_TO):
                self._not_vouched(NEW_FOLDER)
                self._watch_new(rel)
            elif mask & (IN_DELETE | IN_MOVED_FROM):
                self._not_vouched(FOLDER_GONE)
                self._forget(rel)
            return
        if is_markdown(name):
            paths.add(os.fsdecode(rel))

    def _watch_new(self, rel: bytes) -> None:
        """A folder that appeared: its subtree watched now (the capture walks it after),
        unless the walk leaves it out (ignored where it is)."""
        ignores = self._ignores.get(rel.rpartition(b"/")[0])
        if ignores is None or self._rules.skips(ignores, rel):
            return  # its parent is not watched (gone meanwhile), or it is ignored
        fd = open_folder(self.root, rel)
        if fd is None:
            return  # gone again, or not a folder: the capture's walk will see
        try:
            self._forget(rel)  # a folder moved over another one's name
            self._watch_tree(rel, fd, ignores)
        finally:
            os.close(fd)

    def _not_vouched(self, reason: str) -> None:
        if not self._pending:
            self._pending = reason


def open_journal(root: str, **kwargs: Any) -> Journal | str:
    """A journal of `root`, or the reason there is none (the platform has no synchronous
    journal, inotify is not available, the bundle is on a network file system, the user's
    watches are used up). The capture then keeps the stat walk."""
    reason = unsupported_reason()
    if reason:
        return reason
    try:
        journal = Journal(root, **kwargs)
    except ImportError:
        return "inotify_simple is not installed"
    except OSError as exc:  # inotify_init1: EMFILE (max_user_instances), ENOSYS
        return f"inotify is not available ({os.strerror(exc.errno or 0)})"
    return journal.off or journal


__all__ = ["Drained", "Journal", "open_journal"]
