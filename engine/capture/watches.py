"""The inotify watches of one bundle's folders, as the change journal (journal.py) keeps
them: the inotify instance, which folder each watch stands for, the ignore rules in force
inside each watched folder, whether each file system met is local. A folder's watch is set
before it is listed, then those of the subfolders the walk enters; a folder's watches are
dropped with it; all of them are given back when the journal turns itself off (the watch
limit, a network file system, a watch inotify refused).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Sequence

from .ignore import Ignores
from .inotify import NETWORK_FS, WATCHED, Binding
from .watched import DIR_FLAGS, FolderRules, open_folder

# Reasons the watches turn the journal off (Drained.reason; journal.py has the others).
WATCH_LIMIT = "watch limit"
NETWORK = "network file system"


def skipped(name: bytes) -> bool:
    """Entries the capture never takes (SPEC §2: a name starting with a dot)."""
    return name.startswith(b".")


class Watches:
    """One bundle's watches (see the module's docstring); not thread-safe: the journal's
    lock is held around every use. `binding`, `max_watches` and `fs_type` as Journal's."""

    def __init__(
        self,
        root: str,
        membership: Sequence[bool],
        binding: Callable[[], Binding],
        max_watches: int | None,
        fs_type: Callable[[int], int | None],
    ) -> None:
        self.root = os.fsencode(root)
        self._binding = binding
        self._max_watches = max_watches
        self._fs_type = fs_type
        self.inotify: Binding | None = None
        self.wd: dict[int, bytes] = {}  # watch descriptor → folder (bundle-relative)
        self.folder: dict[bytes, int] = {}  # folder → watch descriptor
        self.rules = FolderRules(root, membership)
        self.ignores: dict[bytes, Ignores] = {}  # watched folder → the rules inside it
        self._devices: dict[int, bool] = {}  # st_dev → whether its file system is local
        self.off: str = ""  # a reason the journal stays off (watch limit, network fs)

    def begin(self) -> bool:
        """An inotify instance to set watches on (a new one after drop_all); False when
        none can be had: the journal is off."""
        if self.inotify is None:
            try:
                self.inotify = self._binding()
            except OSError as exc:  # EMFILE: the user's inotify instances are used up
                self.turn_off(f"inotify is not available ({os.strerror(exc.errno or 0)})")
                return False
        return True

    def tree(self, rel: bytes, fd: int, ignores: Ignores) -> None:
        """Watch the folder open as `fd` (bundle-relative `rel`; `ignores`: the rules in
        force where it is), then the subfolders the walk enters: each watch is set before
        the folder's ignore file is read and the folder listed, so nothing made or changed
        in it afterwards is missed."""
        todo = [(rel, os.dup(fd), ignores)]
        while todo:
            rel, fd, ignores = todo.pop()
            try:
                if not self.watch(rel, fd):
                    break
                ignores = self.ignores[rel] = self.rules.inside(ignores, rel, fd)
                with os.scandir(fd) as entries:
                    names = [
                        os.fsencode(e.name)
                        for e in entries
                        if e.is_dir(follow_symlinks=False) and not skipped(os.fsencode(e.name))
                    ]
                for name in names:
                    sub = rel + b"/" + name if rel else name
                    if self.rules.skips(ignores, sub):
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

    def watch(self, rel: bytes, fd: int) -> bool:
        """One folder's watch, set through its open descriptor (/proc/self/fd/N names the
        very folder opened without following links: no path is resolved again). False when
        the journal had to turn itself off."""
        if self.off or self.inotify is None:
            return False
        dev = os.fstat(fd).st_dev
        local = self._devices.get(dev)
        if local is None:
            kind = self._fs_type(fd)
            local = self._devices[dev] = kind not in NETWORK_FS
        if not local:
            self.turn_off(NETWORK)
            return False
        if self._max_watches is not None and len(self.wd) >= self._max_watches:
            self.turn_off(WATCH_LIMIT)
            return False
        try:
            wd = self.inotify.add_watch(f"/proc/self/fd/{fd}", WATCHED)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.ENOMEM):
                self.turn_off(WATCH_LIMIT)
                return False
            if exc.errno in (errno.EACCES, errno.ENOENT, errno.ENOTDIR):
                # A folder this user cannot list (the capture cannot either), or one gone:
                # a change of its mode, or its removal, is an event of its parent's.
                return True
            self.turn_off(f"inotify refused a watch ({os.strerror(exc.errno or 0)})")
            return False
        old = self.wd.get(wd)
        if old is not None and old != rel:  # the same folder under another name
            self.folder.pop(old, None)
        self.wd[wd] = rel
        self.folder[rel] = wd
        return True

    def new(self, rel: bytes) -> None:
        """A folder that appeared: its subtree watched now (the capture walks it after),
        unless the walk leaves it out (ignored where it is)."""
        ignores = self.ignores.get(rel.rpartition(b"/")[0])
        if ignores is None or self.rules.skips(ignores, rel):
            return  # its parent is not watched (gone meanwhile), or it is ignored
        fd = open_folder(self.root, rel)
        if fd is None:
            return  # gone again, or not a folder: the capture's walk will see
        try:
            self.forget(rel)  # a folder moved over another one's name
            self.tree(rel, fd, ignores)
        finally:
            os.close(fd)

    def forget(self, rel: bytes) -> None:
        """Drop the watches of a folder and of everything under it."""
        inside = rel + b"/"
        for folder in [f for f in self.folder if f == rel or f.startswith(inside)]:
            self.ignores.pop(folder, None)
            wd = self.folder.pop(folder)
            self.wd.pop(wd, None)
            if self.inotify is not None:
                with contextlib.suppress(OSError):  # already gone with its folder
                    self.inotify.rm_watch(wd)

    def dropped(self, wd: int, folder: bytes) -> None:
        """The kernel dropped watch `wd` of `folder` (IN_IGNORED: its folder went)."""
        self.wd.pop(wd, None)
        self.folder.pop(folder, None)
        self.ignores.pop(folder, None)

    def drop_all(self) -> None:
        if self.inotify is not None:
            self.inotify.close()  # every watch goes with the instance
            self.inotify = None
        self.wd.clear()
        self.folder.clear()
        self.ignores.clear()

    def turn_off(self, reason: str) -> None:
        self.off = reason
        self.drop_all()


__all__ = ["NETWORK", "WATCH_LIMIT", "Watches", "skipped"]
