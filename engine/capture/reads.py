"""What the capture's two backends share (files.py has them behind one interface): SPEC §2's
errors for a bundle, a folder or a file that cannot be opened or read, which names are
Markdown files, and bounded reads of one open file.
"""

from __future__ import annotations

import errno
import os
import stat

from ..base.errors import CitelineError, quoted
from ..base.platform import is_sharing_violation
from .stats import Fingerprint

S_ISREG = stat.S_ISREG
S_ISDIR = stat.S_ISDIR
_CHUNK = 1 << 20

Read = tuple[bytes, Fingerprint]


# -- what cannot be opened or read -------------------------------------------------------------


def bundle_error(path: str, why: str) -> CitelineError:
    """SPEC §2's error for a bundle that is missing, a link or not a directory."""
    if why == "missing":
        return CitelineError(
            "bundle_not_found",
            f"Bundle {path!r} does not exist. Give the path of a folder of Markdown files.",
            {"bundle": path},
        )
    if why == "symlink":
        return CitelineError(
            "bundle_invalid",
            f"Bundle {path!r} is a symbolic link; give the real folder instead.",
            {"bundle": path, "reason": "symlink"},
        )
    return CitelineError(
        "bundle_invalid",
        f"Bundle {path!r} is not a directory; give a folder of Markdown files.",
        {"bundle": path, "reason": "not_a_directory"},
    )


def unreadable(what: str, path: str, exc: OSError) -> CitelineError:
    """bundle_invalid for a folder or file of the bundle that cannot be opened or read."""
    if is_sharing_violation(exc):
        return CitelineError(
            "bundle_invalid",
            f"{what} {quoted(path)} in the bundle is open in another program that does not "
            "let others read it; close it there and try again, or add it to .gitignore.",
            {"path": path, "reason": "locked"},
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return CitelineError(
            "bundle_invalid",
            f"{what} {quoted(path)} in the bundle cannot be read (permission denied). Fix its "
            "permissions, or add it to .gitignore.",
            {"path": path, "reason": "permission_denied"},
        )
    if exc.errno == errno.ENAMETOOLONG:
        return CitelineError(
            "bundle_invalid",
            f"{what} {quoted(path)} in the bundle cannot be read: its full path is longer "
            "than this system opens.",
            {"path": path, "reason": "path_too_long"},
        )
    return CitelineError(
        "bundle_invalid",
        f"{what} {quoted(path)} in the bundle cannot be read: {exc.strerror}.",
        {"path": path},
    )


# -- reading one open file ------------------------------------------------------------------


def read_to(fd: int, size: int, max_bytes: int) -> bytes:
    """The bytes of `fd` from where it stands: its `size` (from fstat) and one more, so a
    file that grew is noticed, read on to its end but to one byte past max_bytes at most."""
    want = min(size, max_bytes) + 1
    data = os.read(fd, want)
    if len(data) < want:
        return data  # a short read of a regular file is its end: no extra read for EOF
    chunks = [data]
    got = len(data)
    while got <= max_bytes:
        chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_all(fd: int, limit: int) -> bytes:
    chunks = []
    got = 0
    while got < limit:
        chunk = os.read(fd, min(_CHUNK, limit - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def is_markdown(name: str) -> bool:
    """Ends in .md or .markdown, ASCII case-insensitively (SPEC §2): Unicode case folding
    would also take the KELVIN SIGN for a k."""
    short = name[-3:]
    if short.isascii() and short.lower() == ".md":
        return True
    long = name[-9:]
    return long.isascii() and long.lower() == ".markdown"


__all__ = [
    "S_ISDIR",
    "S_ISREG",
    "Read",
    "bundle_error",
    "is_markdown",
    "read_all",
    "read_to",
    "unreadable",
]
