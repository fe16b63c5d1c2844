"""The Linux inotify binding of the change journal (journal.py): the kernel's event masks,
the mask each folder's watch asks for, an inotify instance and one non-blocking read of the
events queued on it, and statfs(2)'s type of a folder's file system (those whose files may
change without this kernel seeing it).

The binding is inotify_simple (docs/decisions.md says why): a thin, maintained wrapper of
inotify_init1/inotify_add_watch/inotify_rm_watch over ctypes, read without blocking here.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

# inotify(7) masks (the kernel's ABI, the same on every architecture).
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

WATCHED = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
# (not IN_EXCL_UNLINK: a write through a descriptor of a removed hard link must be reported)

# statfs(2) f_type of file systems whose files may change without this kernel seeing it.
NETWORK_FS = {
    0x6969: "nfs",
    0x517B: "smb",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x65735546: "fuse",
    0x00C36400: "ceph",
    0x01021997: "9p",
    0x5346414F: "afs",
    0x6B414653: "afs",
    0x73757245: "coda",
    0x564C: "ncp",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x786F4256: "vboxsf",
    0x6A656A63: "virtiofs",  # FUSE-based, but reported as its own magic on some kernels
}


class Binding(Protocol):
    """What the journal needs of an inotify instance (inotify_simple.INotify)."""

    def add_watch(self, path: str | bytes, mask: int) -> int: ...
    def rm_watch(self, wd: int) -> None: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...


def open_inotify() -> Binding:
    """A new inotify instance, read without blocking."""
    from inotify_simple import INotify

    return INotify(nonblocking=True)


def file_system_type(fd: int) -> int | None:
    """statfs(2)'s f_type of the file system holding the open folder `fd`, or None when it
    cannot be asked. f_type is the first field of struct statfs on every Linux ABI; only
    it is read (the rest of the buffer is room for the whole struct)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(512)
        if libc.fstatfs(fd, buf) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF


def read_events(inotify: Binding | None, size: int) -> list[Any]:
    """The next events queued on `inotify` (one read of at most `size` bytes), [] once there
    are none."""
    if inotify is None:
        return []
    try:
        data = os.read(inotify.fileno(), size)
    except (BlockingIOError, InterruptedError):
        return []
    except (OSError, ValueError):
        return []  # (closed under us: the drain after says so)
    from inotify_simple import parse_events

    return parse_events(data)  # type: ignore[no-any-return]


__all__ = [
    "IN_ATTRIB",
    "IN_CLOSE_WRITE",
    "IN_CREATE",
    "IN_DELETE",
    "IN_DELETE_SELF",
    "IN_EXCL_UNLINK",
    "IN_IGNORED",
    "IN_ISDIR",
    "IN_MODIFY",
    "IN_MOVED_FROM",
    "IN_MOVED_TO",
    "IN_MOVE_SELF",
    "IN_ONLYDIR",
    "IN_Q_OVERFLOW",
    "IN_UNMOUNT",
    "NETWORK_FS",
    "WATCHED",
    "Binding",
    "file_system_type",
    "open_inotify",
    "read_events",
]
