"""Where an open file is (SPEC §16): the path the system holds for an open handle, which
the path backend (path_backend.PathBackend) compares with the bundle's own to prove that a file
it opened by path lies in the bundle. An open by path goes wherever the path leads at
that instant, a folder on it swapped for a link or junction and back included, and no
look before or after the open can tell; the handle can (docs/security.md).

Linux tells it by the link in /proc/self/fd (which stands in for Windows' call under
CITELINE_PLATFORM=windows), Windows by GetFinalPathNameByHandleW; whether this system
can is platform.PLATFORM.final_paths.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

from ..base.platform import NATIVE, PROC_FDS, is_sharing_violation


def final_path(fd: int) -> str | None:
    """The path open file `fd` has now (every link and junction its open went through
    resolved, as renamed since), None where the system cannot tell: the link in
    /proc/self/fd on Linux, GetFinalPathNameByHandleW on Windows (`\\\\?\\C:\\…`)."""
    if sys.platform == "win32":
        import msvcrt

        try:
            return _windows_final_path(msvcrt.get_osfhandle(fd))
        except OSError:
            return None
    try:
        path = os.readlink(f"{PROC_FDS}/{fd}")
    except (OSError, ValueError):
        return None
    return path if path.startswith("/") else None  # not "pipe:[…]", "anon_inode:…"


FINAL_PATH_CHARS = 32768  # an extended-length path's longest, and its NUL


@cache
def _kernel32() -> Any:
    import ctypes

    kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009
    call = kernel32.GetFinalPathNameByHandleW
    call.argtypes = (ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_uint32, ctypes.c_uint32)
    call.restype = ctypes.c_uint32
    return kernel32


def _windows_final_path(handle: int, kernel32: Any = None) -> str | None:
    """GetFinalPathNameByHandleW with flags 0 (FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
    as CPython's os.path.realpath asks), None on failure; `kernel32` a fake in tests."""
    import ctypes

    buffer = ctypes.create_unicode_buffer(FINAL_PATH_CHARS)
    got = (kernel32 or _kernel32()).GetFinalPathNameByHandleW(handle, buffer, FINAL_PATH_CHARS, 0)
    return str(buffer.value) if 0 < got < FINAL_PATH_CHARS else None  # else: the size needed


def final_folder(path: str) -> tuple[str, tuple[int, int]] | None:
    """The final path of the folder at `path` and the identity (st_dev, st_ino) of the
    folder it names, None where the system cannot tell; the caller compares the identity
    with its lstat's. Linux refuses a link at the path's end (OSError, as for a folder
    gone); Windows' way (final_folder_by_name) follows a junction there."""
    if sys.platform == "win32":
        return final_folder_by_name(path)
    fd = os.open(path, NATIVE.dir_flags)
    try:
        st = os.fstat(fd)
        final = final_path(fd)
    finally:
        os.close(fd)
    return None if final is None else (final, (st.st_dev, st.st_ino))


def final_folder_by_name(path: str) -> tuple[str, tuple[int, int]] | None:
    """os.path.realpath, strict (GetFinalPathNameByHandleW with final_path's flags, so the
    forms agree), and a stat of what it names; None on failure, but a sharing violation
    (a folder held open unshared) is raised, as the backend reports one."""
    try:
        final = os.path.realpath(path, strict=True)
        st = os.stat(final)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and is_sharing_violation(exc):
            raise
        return None
    return final, (st.st_dev, st.st_ino)


__all__ = ["final_folder", "final_folder_by_name", "final_path"]
