"""The capture's path backend (Windows, and Linux under CITELINE_PLATFORM=windows; files.py
has both backends behind one interface): Windows has neither `dir_fd` nor O_NOFOLLOW, and a
directory junction is a folder to lstat. Links and every name-surrogate reparse point are
skipped as the walk lists them; each file is opened by its (extended-length) path in binary
mode, and its bytes are taken only if the file's identity from fstat is the one lstat gave
and the open file's final path is the bundle's joined with the names walked (PathBackend).
Each folder's identity is checked after it was listed, after its files were read and before
a folder in it is entered: a mismatch is a change during the walk (what came from that
folder is dropped, as for a folder removed meanwhile). docs/security.md has what this rules
out, and what not where the system cannot tell an open file's path.

A folder handle is a PathFolder.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from typing import Any

from ..base.errors import CitelineError, quoted
from ..base.platform import (
    GONE_ERRNOS,
    PLATFORM,
    Platform,
    is_link,
    is_sharing_violation,
    long_path,
    strip_trailing_separators,
)
from .final_paths import final_folder, final_path
from .reads import S_ISDIR, S_ISREG, Read, bundle_error, is_markdown, read_all, read_to, unreadable
from .stats import fingerprint

# Seconds waited before each new try to open a file another program holds open without
# sharing it (Windows' sharing violation: an editor or a virus scanner, for a moment).
SHARING_WAITS = (0.02, 0.05, 0.1, 0.2)
# Opens of one path that found a file other than the one lstat had just seen (replaced in
# between, as an editor's save replaces it) before it counts as changed during the walk.
IDENTITY_TRIES = 3


def _short_read(rel: str, got: int, size: int) -> CitelineError:
    return CitelineError(
        "bundle_invalid",
        f"File {quoted(rel)} in the bundle gave {got} bytes when read, but holds {size}: the "
        "system did not hand over its bytes as stored.",
        {"path": rel, "reason": "short_read"},
    )


def _read_checked(fd: int, info: os.stat_result, rel: str, max_bytes: int) -> bytes:
    """read_to, and a read shorter than the file's size while its stat stays the same is
    read once more, then refused: the bytes were not handed over as stored (a descriptor in
    text mode turns CRLF into LF and stops at Ctrl-Z), and no SHA-256 of them could verify.
    A file that shrank meanwhile has another stat: what was read is what it held."""
    data = read_to(fd, info.st_size, max_bytes)
    expected = min(info.st_size, max_bytes + 1)
    if len(data) >= expected:
        return data
    for attempt in range(2):
        now = os.fstat(fd)
        if (now.st_size, now.st_mtime_ns) != (info.st_size, info.st_mtime_ns):
            return data
        if attempt:
            raise _short_read(rel, len(data), info.st_size)
        os.lseek(fd, 0, os.SEEK_SET)
        data = read_to(fd, info.st_size, max_bytes)
        if len(data) >= expected:
            return data
    return data  # (not reached)


def _open_by_path(path: str, flags: int, rel: str) -> int | None:
    """os.open, retried for a moment while another program holds the file unshared
    (Windows' sharing violation), then the error naming the file (reason "locked")."""
    for wait in (*SHARING_WAITS, None):
        try:
            return os.open(path, flags)
        except OSError as exc:
            if exc.errno in GONE_ERRNOS:
                return None
            if wait is None or not is_sharing_violation(exc):
                raise unreadable("File", rel, exc) from None
        time.sleep(wait)
    return None  # (not reached)


class PathFolder:
    """A folder of the path backend: its path, its identity (st_dev, st_ino) when the walk
    entered it, and its final path (final_paths.final_path; None where the system cannot tell
    one)."""

    __slots__ = ("final", "ident", "path")

    def __init__(self, path: str, ident: tuple[int, int], final: str | None = None) -> None:
        self.path = path
        self.ident = ident
        self.final = final

    def __repr__(self) -> str:
        return f"PathFolder({self.path!r})"


class _Listed:
    """A listed file whose stat must come from lstat, not from the listing (Windows'
    entries report st_ino and st_dev 0, and NTFS updates a listing's size and times of a
    file open for writing only later)."""

    __slots__ = ("_stat", "name", "path")

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self.name = entry.name
        self.path = entry.path
        self._stat: os.stat_result | None = None

    def stat(self, *, follow_symlinks: bool = False) -> os.stat_result:
        if self._stat is None:
            self._stat = os.lstat(self.path)
        return self._stat


class PathBackend:
    """Opens by path, proving where each open led (Windows; see the module's docstring).

    With paths only, an open goes wherever the path leads at that instant: a folder on it
    swapped for a link (a junction) and back leads it out of the bundle, and no look
    before or after can tell, since each look is another instant (a loop that swaps
    without pause beat every sequence of identity checks tried: docs/security.md). The
    open file itself can: the path it has now (final_paths.final_path) must be the bundle's
    own (its final path, taken from a handle on the folder lstat saw) joined with the
    names walked. Where the system cannot tell a handle's path, identities are all there
    is: the file's fstat must match the lstat taken before a check of its folder's path,
    and the folder's path must still lead to the folder walked right after the open (its
    path resolves through every folder above it, so a swap there shows as well), so no
    single swap-and-back wins; a loop of them does now and then."""

    name = "path"

    def __init__(self, platform: Platform | None = None) -> None:
        platform = platform or PLATFORM
        self.flags = platform.read_flags
        self.reparse = platform.reparse_points
        self.entry_ids = platform.entry_ids
        self.finals = platform.final_paths
        self.folds_case = platform.folds_case

    def _final(self, path: str, ident: tuple[int, int]) -> tuple[bool, str | None]:
        """(whether the folder at `path` still is `ident`, its final path or None)."""
        if not self.finals:
            return True, None
        got = final_folder(path)
        if got is None:
            return True, None  # this volume cannot tell: identities only
        return got[1] == ident, got[0]

    def _folder(
        self, path: str, parent: PathFolder | None = None, final: str | None = None
    ) -> PathFolder:
        st = os.lstat(path)
        if is_link(st):
            raise OSError(errno.ELOOP, "a link", path)
        if not S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, "not a folder", path)
        ident = (st.st_dev, st.st_ino)
        if parent is None:
            same, final = self._final(path, ident)
        else:
            # (identities only) the parent's path led elsewhere after it was entered: that
            # lstat may have seen a folder outside, whose identity no later check may trust
            same = self.same(parent)
        if not same:
            raise FileNotFoundError(errno.ENOENT, "changed while entered", path)
        return PathFolder(path, ident, final)

    def root(self, root: str) -> PathFolder:
        shown = strip_trailing_separators(root) or root
        path = long_path(shown)
        for _ in range(IDENTITY_TRIES):
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                raise bundle_error(shown, "missing") from None
            except OSError as exc:
                raise unreadable("Folder", ".", exc) from None
            if is_link(st):
                raise bundle_error(shown, "symlink")
            if not S_ISDIR(st.st_mode):
                raise bundle_error(shown, "not_a_directory")
            ident = (st.st_dev, st.st_ino)
            try:
                same, final = self._final(path, ident)
            except OSError as exc:
                if exc.errno in GONE_ERRNOS:
                    continue  # gone or swapped since the lstat: look again
                raise unreadable("Folder", ".", exc) from None
            if same:
                return PathFolder(path, ident, final)
        raise CitelineError(
            "bundle_invalid",
            f"Bundle {shown!r} was replaced at every look while it was opened; try again.",
            {"bundle": shown, "reason": "changed"},
        )

    def open_path(self, path: str) -> PathFolder:
        return self._folder(long_path(path))

    def open_dir(self, parent: PathFolder, name: str) -> PathFolder:
        final = None if parent.final is None else os.path.join(parent.final, name)
        return self._folder(os.path.join(parent.path, name), parent, final)

    def close(self, folder: PathFolder) -> None:
        pass

    def same(self, folder: PathFolder) -> bool:
        """Whether the folder's path leads to it now: the same identity, a folder, no link.
        (The path resolves through every folder above it, so a swap above shows too.)"""
        try:
            st = os.lstat(folder.path)
        except (OSError, ValueError):
            return False
        return (st.st_dev, st.st_ino) == folder.ident and S_ISDIR(st.st_mode) and not is_link(st)

    def entries(self, folder: PathFolder) -> Iterator[tuple[str, bool, Any]]:
        """Listed whole, then the folder's identity checked again: a folder swapped (for a
        junction, say) while it was listed is treated as gone (FileNotFoundError), so no
        name or stat from elsewhere enters the walk. Name-surrogate reparse points (links,
        junctions, mount points) are left out like links; cloud-file placeholders are
        files."""
        with os.scandir(folder.path) as it:
            listed = list(it)
        if not self.same(folder):
            raise FileNotFoundError(errno.ENOENT, "changed while listed", folder.path)
        reparse = self.reparse
        for entry in listed:
            name = entry.name
            if name[0] == ".":
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if reparse and is_link(entry.stat(follow_symlinks=False)):
                        continue
                    yield name, True, entry
                elif (name.endswith(".md") or is_markdown(name)) and entry.is_file(
                    follow_symlinks=False
                ):
                    if reparse and is_link(entry.stat(follow_symlinks=False)):
                        continue
                    yield name, False, (entry if self.entry_ids else _Listed(entry))
            except OSError:
                continue  # vanished

    def _open(self, folder: PathFolder, name: str, rel: str) -> tuple[int, os.stat_result] | None:
        """File `name` of `folder` open, with its fstat: the file lstat saw, proven to be
        in the bundle (see the class's docstring); None when it is gone, a link, no regular
        file, or the open led elsewhere (changed during the walk)."""
        path = os.path.join(folder.path, name)
        final = None if folder.final is None else os.path.join(folder.final, name)
        for _ in range(IDENTITY_TRIES):
            try:
                seen = os.lstat(path)
            except OSError as exc:
                if exc.errno in GONE_ERRNOS:
                    return None
                raise unreadable("File", rel, exc) from None
            if is_link(seen) or not S_ISREG(seen.st_mode):
                return None
            if final is None and not self.same(folder):
                return None
            fd = _open_by_path(path, self.flags, rel)
            if fd is None:
                return None
            try:
                inside = self.same(folder) if final is None else self._inside(fd, final)
                info = os.fstat(fd) if inside else None
            except OSError as exc:
                os.close(fd)
                raise unreadable("File", rel, exc) from None
            if info is None:
                os.close(fd)
                return None
            if (info.st_dev, info.st_ino) == (seen.st_dev, seen.st_ino):
                return fd, info
            os.close(fd)  # another file than the one lstat saw (an editor's save): again
        return None  # replaced at every look: changed during the walk

    def _inside(self, fd: int, expected: str) -> bool:
        """Whether open file `fd` has the path `expected` now (the volume's case rule)."""
        got = final_path(fd)
        if got is None:
            return False  # the folder's volume told its path: a file elsewhere did not
        return got == expected or (self.folds_case and got.lower() == expected.lower())

    def read(self, folder: PathFolder, name: str, rel: str, max_bytes: int) -> Read | None:
        got = self._open(folder, name, rel)
        if got is None:
            return None
        fd, info = got
        try:
            if not S_ISREG(info.st_mode):
                return None
            return _read_checked(fd, info, rel, max_bytes), fingerprint(info)
        except OSError as exc:
            raise unreadable("File", rel, exc) from None
        finally:
            os.close(fd)

    def read_small(self, folder: PathFolder, name: str, limit: int) -> bytes | None:
        try:
            got = self._open(folder, name, name)
        except (CitelineError, ValueError):
            return None
        if got is None:
            return None
        fd = got[0]
        try:
            return read_all(fd, limit)
        except OSError:
            return None
        finally:
            os.close(fd)


__all__ = ["IDENTITY_TRIES", "SHARING_WAITS", "PathBackend", "PathFolder"]
