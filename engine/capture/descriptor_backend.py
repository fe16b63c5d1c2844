"""The capture's descriptor backend (Linux, macOS; files.py has both backends behind one
interface): every folder and file is opened relative to its parent's descriptor with
O_NOFOLLOW, so nothing swapped for a link after it was listed can be followed, and no path
is ever longer than one name. A folder handle is a descriptor (int).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

from ..base.platform import GONE_ERRNOS, NATIVE, Platform, strip_trailing_separators
from .reads import S_ISREG, Read, bundle_error, is_markdown, read_all, read_to, unreadable
from .stats import fingerprint

# read_file's flags: this machine's own (with O_NOFOLLOW), also while Windows is forced.
DESCRIPTOR_FLAGS = NATIVE.read_flags


def read_file(
    dir_fd: int, name: str | bytes, rel: str, max_bytes: int, flags: int | None = None
) -> Read | None:
    """The bytes of file `name` in folder `dir_fd` (at most max_bytes + 1 of them) and its
    fingerprint when opened, or None when it is gone, is a link or is no regular file (a
    FIFO, a socket, a device). The descriptor backend's read."""
    try:
        fd = os.open(name, DESCRIPTOR_FLAGS if flags is None else flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in GONE_ERRNOS:
            return None
        raise unreadable("File", rel, exc) from None
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode):
            return None
        return read_to(fd, info.st_size, max_bytes), fingerprint(info)
    except OSError as exc:
        raise unreadable("File", rel, exc) from None
    finally:
        os.close(fd)


class DescriptorBackend:
    """Descriptor-relative opens with O_NOFOLLOW (Linux, macOS)."""

    name = "descriptor"

    def __init__(self, platform: Platform | None = None) -> None:
        platform = platform or NATIVE  # this machine's own flags, never forced ones
        if not (platform.dir_fd and platform.nofollow and platform.directory):
            raise RuntimeError("this platform cannot open files relative to a folder")
        self.flags = platform.read_flags
        self.dir_flags = platform.dir_flags

    def root(self, root: str) -> int:
        raw = os.fsencode(strip_trailing_separators(root) or root)
        try:
            return os.open(raw, self.dir_flags)
        except OSError as exc:
            shown = os.fsdecode(raw)
            if exc.errno == errno.ENOENT:
                raise bundle_error(shown, "missing") from None
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                # Linux says ENOTDIR for a link to a folder (O_DIRECTORY is checked first),
                # ELOOP for a link to anything else, FreeBSD EMLINK: what it is now tells.
                try:
                    link = stat.S_ISLNK(os.lstat(raw).st_mode)
                except OSError:
                    raise bundle_error(shown, "missing") from None
                raise bundle_error(shown, "symlink" if link else "not_a_directory") from None
            raise unreadable("Folder", ".", exc) from None

    def open_path(self, path: str) -> int:
        return os.open(path, self.dir_flags)

    def open_dir(self, parent: int, name: str) -> int:
        return os.open(name, self.dir_flags, dir_fd=parent)

    def close(self, folder: int) -> None:
        os.close(folder)

    def same(self, folder: int) -> bool:
        return True  # a descriptor is the folder it was opened as, wherever it moves

    def entries(self, folder: int) -> Iterator[tuple[str, bool, os.DirEntry[str]]]:
        """In the directory's own order; the entries stat without following links,
        relative to the folder's descriptor.

        A generator: the walk stats each file while the directory is being read, which is
        markedly faster than listing it first (a fifth of a 40,000-file walk here). Dot
        entries, links and anything else are left out (is_dir and is_file do not follow
        links)."""
        with os.scandir(folder) as it:
            for entry in it:
                name = entry.name
                if name[0] == ".":
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        yield name, True, entry
                    elif (name.endswith(".md") or is_markdown(name)) and entry.is_file(
                        follow_symlinks=False
                    ):
                        yield name, False, entry
                except OSError:
                    continue  # vanished

    def read(self, folder: int, name: str, rel: str, max_bytes: int) -> Read | None:
        return read_file(folder, name, rel, max_bytes, self.flags)

    def read_small(self, folder: int, name: str, limit: int) -> bytes | None:
        try:
            fd = os.open(name, self.flags, dir_fd=folder)
        except (OSError, ValueError):
            return None
        try:
            if not S_ISREG(os.fstat(fd).st_mode):
                return None
            return read_all(fd, limit)
        except OSError:
            return None
        finally:
            os.close(fd)


__all__ = ["DESCRIPTOR_FLAGS", "DescriptorBackend", "read_file"]
