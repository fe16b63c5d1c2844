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
blocking. The watches themselves (set folder by folder, dropped, all given back when the
journal turns off) are watches.py's; this module says what each event means.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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
    Binding,
    file_system_type,
    open_inotify,
    read_events,
)
from .watched import DIR_FLAGS, Seen
from .watches import Watches, skipped

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

# Reasons a drain does not vouch (Drained.reason; the watches' own, WATCH_LIMIT and NETWORK, are
# watches.py's).
FIRST = "first drain"
OVERFLOW = "queue overflow"
NEW_FOLDER = "folder created or moved in"
FOLDER_GONE = "folder moved away or deleted"
RULES = "ignore rules changed"
ROOT = "bundle folder moved, deleted or replaced"
UNMOUNTED = "file system unmounted"
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
        self._lock = threading.Lock()
        self._watches = Watches(root, membership, binding, max_watches, fs_type)
        self._identity: tuple[int, int] | None = None  # the bundle folder's (dev, ino)
        self._pending = FIRST  # why the next drain cannot vouch ("" when it can)
        self._rearm = False  # the watches must be set again (the bundle folder moved)
        # A file system mounted over a watched folder changes what is there without an
        # event: the mount table is compared on every drain (a read of ~20 lines).
        self._mounts = self._mount_table()
        self._start()

    @property
    def off(self) -> str:
        """A reason the journal stays off (watch limit, network fs), "" while it is on."""
        return self._watches.off

    # -- watches ---------------------------------------------------------------------------

    def _start(self) -> None:
        """(Re)arm: every folder of the bundle watched, then the next drain does not vouch."""
        w = self._watches
        w.drop_all()
        self._pending = self._pending or ROOT
        w.rules.refresh()  # the rules above the bundle the watches follow
        try:
            fd = os.open(self.root, DIR_FLAGS)
        except OSError:
            self._identity = None
            return  # the bundle is not there: the capture reports it; try again next drain
        try:
            st = os.fstat(fd)
            self._identity = (st.st_dev, st.st_ino)
            if w.begin():
                w.tree(b"", fd, w.rules.top())
        finally:
            os.close(fd)

    @property
    def watches(self) -> int:
        return len(self._watches.wd)

    def close(self) -> None:
        with self._lock:
            self._watches.drop_all()
            self._watches.off = self._watches.off or "closed"

    # -- the queue -------------------------------------------------------------------------

    def drain(self) -> Drained:
        """What was queued until now, within the drain's bound: the files named, or why
        they cannot be trusted."""
        with self._lock:
            if self.off:
                return Drained(False, reason=self.off)
            if self._watches.inotify is None or not self._same_root():
                self._not_vouched(ROOT)
                self._start()
                return self._result(frozenset(), 0)
            deadline = time.monotonic() + DRAIN_SECONDS
            mounts = self._mount_table()
            if mounts != self._mounts:
                self._mounts = mounts
                self._not_vouched(MOUNTS)
            if self._watches.rules.changed_above():
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
        return read_events(self._watches.inotify, READ_BYTES)

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
        folder = self._watches.wd.get(event.wd)
        if folder is None:
            return  # a watch dropped already (its last events, IN_IGNORED)
        if mask & IN_IGNORED:  # the kernel dropped the watch: its folder went
            self._watches.dropped(event.wd, folder)
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
                self._watches.forget(folder)
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
            self._rearm = self._rearm or self._watches.rules.use_ignore
            return
        if skipped(name):
            return  # never captured, and nothing under it is either
        rel = folder + b"/" + name if folder else name
        if mask & IN_ISDIR:
            if mask & IN_ATTRIB:
                # A subfolder's mode changed: one that could not be listed (nor watched)
                # may be readable now, so it is watched again, and walked.
                self._not_vouched(FOLDER_ATTRIBUTES)
                self._watches.new(rel)
            elif mask & (IN_CREATE | IN_MOVED_TO):
                self._not_vouched(NEW_FOLDER)
                self._watches.new(rel)
            elif mask & (IN_DELETE | IN_MOVED_FROM):
                self._not_vouched(FOLDER_GONE)
                self._watches.forget(rel)
            return
        if is_markdown(name):
            paths.add(os.fsdecode(rel))

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
