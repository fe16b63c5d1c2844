"""What a change journal (capture/journal.py) watches, and what its events may hide.

- **Which folders.** Those the walk enters (walk.py): no dot names, no links, none that
  git's ignore rules exclude under the request's settings — the rules above the bundle
  (read afresh and compared on every drain: they lie outside the watches) and each watched
  folder's own `.gitignore` (an edit of one is an event of its folder's watch, which makes
  the journal set its watches again). An ignored folder costs no watch: 20,000 ignored
  `node_modules` folders cost none, where each used to take one of the user's
  `max_user_watches`.
- **Which names may be a second name of a captured file.** inotify reports a write under
  the name it was made through, and a link count's change only to a watch of the file
  itself. A write through a hard link made inside the bundle under any name (`ln g.md .g`)
  therefore names `.g`, never `g.md`. `History` keeps what one drain saw of each non-folder
  name, and `suspect` says whether that name may have been, at some time since the last
  drain, a second name of another file: then the capture stats every captured file again
  (reads only those whose fingerprint changed). See `suspect` for the rule.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from typing import Any

from .ignore import Above, Ignores, name_fold, read_gitignore, repository_rules
from .inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_MODIFY,
    IN_MOVED_FROM,
    IN_MOVED_TO,
)

# What one drain saw of a name (History's bits), in the order the events came.
MADE = 1  # created or moved in (IN_CREATE, IN_MOVED_TO: a move may replace the name)
MADE_AGAIN = 2  # made more than once: an earlier inode under it is gone
GONE_AFTER_MADE = 4  # removed or moved away after it was made: what it was is unknown
REMOVED = 8  # removed or moved away (IN_DELETE, IN_MOVED_FROM)
WRITTEN_AFTER_REMOVAL = 16  # a write (or attribute change) after a removal
WRITTEN = 32  # written, or its attributes changed (IN_MODIFY, IN_CLOSE_WRITE, IN_ATTRIB)
MOVED_ON = 64  # moved away to a name of a watched folder: that name is looked at instead


def note(history: int, mask: int) -> int:
    """`history` after one more event (its inotify mask) on the same name."""
    if mask & (IN_CREATE | IN_MOVED_TO):
        if history & MADE:
            history |= MADE_AGAIN
        history = (history | MADE) & ~GONE_AFTER_MADE
    if mask & (IN_DELETE | IN_MOVED_FROM):
        if history & MADE:
            history |= GONE_AFTER_MADE
        history |= REMOVED
    if mask & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB):
        if history & REMOVED:
            history |= WRITTEN_AFTER_REMOVAL
        history |= WRITTEN
    return history


class Seen:
    """What one drain saw of each non-folder name: (folder, name) → History bits. A move
    within the watched folders (IN_MOVED_FROM, then IN_MOVED_TO with its cookie: the kernel
    queues the two together) hands the inode over: the name it left is not "gone after
    made", the name it reached is looked at — an editor's or git's save (write a temporary
    file, rename it over the file) costs no stat of every file."""

    __slots__ = ("moves", "names")

    def __init__(self) -> None:
        self.names: dict[tuple[bytes, bytes], int] = {}
        self.moves: dict[int, tuple[bytes, bytes]] = {}  # cookie → the name moved from

    def event(self, folder: bytes, name: bytes, mask: int, cookie: int) -> None:
        key = (folder, name)
        self.names[key] = note(self.names.get(key, 0), mask)
        if mask & IN_MOVED_FROM and cookie:
            self.moves[cookie] = key
        elif mask & IN_MOVED_TO and cookie in self.moves:
            left = self.moves.pop(cookie)
            history = self.names[left]
            if history & GONE_AFTER_MADE:
                self.names[left] = (history & ~GONE_AFTER_MADE) | MOVED_ON

    def any_suspect(self, root: bytes, deadline: float) -> bool:
        """Whether a name seen may be, or have been, a second name of a captured file
        (`suspect`), each looked at where it is now, in the bundle `root`; True, without
        looking further, once `deadline` (time.monotonic) has passed."""
        opened: dict[bytes, int | None] = {}
        try:
            for (folder, name), history in self.names.items():
                now = None
                if needs_look(history):
                    if time.monotonic() >= deadline:
                        return True
                    if folder not in opened:
                        opened[folder] = open_folder(root, folder)
                    fd = opened[folder]
                    if fd is None:
                        return True  # its folder is gone: what the name was is unknown
                    try:
                        now = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        now = None
                if suspect(history, now):
                    return True
            return False
        finally:
            for fd in opened.values():
                if fd is not None:
                    os.close(fd)


def suspect(history: int, now: os.stat_result | None) -> bool:
    """Whether the name may have been a second name of a captured file since the last
    drain, from what this drain saw of it and what it is now (`now`: its lstat, None when
    it is gone).

    A name's inode changes only when the name is made (created or moved in): a name made
    in an earlier drain was looked at then. So a name is harmless when nothing made it in
    this drain and nothing was written through it after a removal (writes and removals of
    an inode looked at before), or when it was made once, is still there, and is not a
    regular file with more than one link. Anything else may hide a link: a name made and
    gone again (`ln g.md .g`, written through, `rm .g`), made twice, written after a
    removal (a descriptor kept open through a removed link writes under the removed name),
    gone although only written, or a regular file with other links now.
    """
    if history & (MADE_AGAIN | GONE_AFTER_MADE | WRITTEN_AFTER_REMOVAL):
        return True
    if history & MOVED_ON or (not history & MADE and (history & REMOVED or not history & WRITTEN)):
        return False
    if now is None:
        return True
    return stat.S_ISREG(now.st_mode) and now.st_nlink > 1


def needs_look(history: int) -> bool:
    """Whether `suspect` needs the name's lstat (its verdict depends on what is there)."""
    if history & (MADE_AGAIN | GONE_AFTER_MADE | WRITTEN_AFTER_REMOVAL | MOVED_ON):
        return False
    return bool(history & MADE or (history & WRITTEN and not history & REMOVED))


DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def open_folder(root: bytes, rel: bytes) -> int | None:
    """The bundle folder `rel` ("a/b", b"" for the bundle), opened component by component
    from `root` without following a link; None when it is gone or not a folder."""
    try:
        fd = os.open(root, DIR_FLAGS)
    except OSError:
        return None
    try:
        for part in rel.split(b"/") if rel else ():
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError:
        # (every descriptor closed: a folder gone half-way used to leak its parent's, one
        # per event, until a flood of folders made and removed ran out of them)
        os.close(fd)
        return None
    return fd


class FolderRules:
    """git's ignore rules as the walk applies them to folders, for one bundle and one
    request's settings (`use_ignore`, `ignore_case`, `ignore_nfc`)."""

    __slots__ = ("above", "fold", "root", "signature", "use_ignore")

    def __init__(self, root: str, membership: Sequence[bool] = (True, False, False)) -> None:
        self.root = root
        self.use_ignore, case, nfc = membership
        self.fold = name_fold(case, nfc)
        self.above: tuple[Above, ...] = ()  # (read by refresh, when the watches are set)
        self.signature: tuple[Any, ...] = ()

    def read_above(self) -> tuple[tuple[Above, ...], tuple[Any, ...]]:
        """The rules above the bundle now, and their comparable signature."""
        if not self.use_ignore:
            return (), ()
        above = repository_rules(self.root, _descriptors())
        return above, tuple((a.prefix, tuple(a.rules.lines)) for a in above)

    def refresh(self) -> None:
        self.above, self.signature = self.read_above()

    def changed_above(self) -> bool:
        """Whether the rules above the bundle differ from those the watches were set by."""
        return self.use_ignore and self.read_above()[1] != self.signature

    def top(self) -> Ignores:
        return Ignores(self.above, fold=self.fold)

    def inside(self, ignores: Ignores, rel: bytes, fd: int) -> Ignores:
        """The rules in force inside the folder `rel` (open as `fd`): `ignores`, and its own
        `.gitignore` when it has one."""
        if not self.use_ignore:
            return ignores
        own = read_gitignore(fd, backend=_descriptors())
        if own is None:
            return ignores
        got = Ignores(ignores.above, fold=self.fold)
        got.stack.extend(ignores.stack)
        got.stack.append((_folder(rel), own))
        return got

    def skips(self, ignores: Ignores, rel: bytes) -> bool:
        """Whether the walk leaves out the folder `rel` (bundle-relative, no final "/")."""
        return self.use_ignore and ignores.active and ignores.ignored(_folder(rel))


def _descriptors() -> Any:
    """The capture's descriptor backend (a journal exists only where there is one)."""
    from . import files
    from .descriptor_backend import DescriptorBackend

    bk = files.BACKEND
    return bk if getattr(bk, "name", "") == "descriptor" else DescriptorBackend()


def _folder(rel: bytes) -> str:
    """A folder's path as the walk's rules see it: "a/b/" ("" for the bundle)."""
    return os.fsdecode(rel) + "/" if rel else ""


__all__ = ["FolderRules", "Seen", "needs_look", "note", "open_folder", "suspect"]
