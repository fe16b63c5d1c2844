"""The platform seam: what this operating system gives citeline, decided once (SPEC §16).

Everything else in the engine (and the fronts) asks this module instead of reading `os`
facts itself: an `os.O_NOFOLLOW` read at import is an AttributeError on Windows, and an
`os.kill(pid, 0)` there sends Ctrl+C. Each fact is found by testing the capability itself
(`os.open in os.supports_dir_fd`, `hasattr(os, "O_NOFOLLOW")`, the start methods
multiprocessing offers), by the platform's name only where no such test exists (whether
`st_ctime` is a change time, whether scandir entries carry file ids).

`CITELINE_PLATFORM=windows` (tests, CI) makes Linux take Windows' portable paths: the
path-based capture backend without `O_NOFOLLOW`, spawned workers, the Windows stat
fingerprint (file ids from a stat, the racy rule on mtime alone) and no warm process; the
flags that keep this machine safe while it pretends (`O_NONBLOCK`, `O_CLOEXEC`) are kept.

Importing this costs next to nothing (the command line's fast path may ask it before
anything else): the values are named tuples, not dataclasses (whose import brings
`inspect`), and multiprocessing, ctypes, socket and unicodedata are imported by the
functions that need them.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

FORCE_VARIABLE = "CITELINE_PLATFORM"
FORCED_NAMES = ("windows",)
PROC_FDS = "/proc/self/fd"  # Linux: each open descriptor, a link to what it has open

# A reparse point whose tag has this bit stands for another path (symbolic links,
# directory junctions, mount points, WSL links); cloud-file placeholders do not have it.
NAME_SURROGATE = 0x20000000
IO_REPARSE_TAG_MOUNT_POINT = getattr(stat, "IO_REPARSE_TAG_MOUNT_POINT", 0xA0000003)
IO_REPARSE_TAG_SYMLINK = getattr(stat, "IO_REPARSE_TAG_SYMLINK", 0xA000000C)
IO_REPARSE_TAG_CLOUD = 0x9000001A  # IO_REPARSE_TAG_CLOUD_1 (OneDrive "Files On-Demand")
ERROR_SHARING_VIOLATION = 32  # winerror: another process opened the file without sharing it
ERROR_LOCK_VIOLATION = 33


class Platform(NamedTuple):
    """What the platform gives, as flags and choices the engine and the fronts use."""

    system: str  # "linux", "darwin", "windows" or sys.platform's own name
    forced: bool  # CITELINE_PLATFORM made Linux take another platform's paths
    # descriptor-relative opens and listings: os.open(…, dir_fd=), os.scandir(fd)
    dir_fd: bool
    nofollow: int  # O_NOFOLLOW, or 0 where opening never refuses a link
    directory: int  # O_DIRECTORY, or 0
    nonblock: int  # O_NONBLOCK, or 0 (Windows: no FIFOs on disk to block on)
    cloexec: int  # O_CLOEXEC, or Windows' O_NOINHERIT, or 0
    binary: int  # O_BINARY on Windows (without it a read turns CRLF into LF), else 0
    # stat results carry st_reparse_tag (Windows): junctions are links although lstat
    # reports them as folders
    reparse_points: bool
    # scandir entries' stat carry the file id (st_ino, st_dev); Windows' report 0
    entry_ids: bool
    # st_ctime is the inode change time (nobody can set it); on Windows it is the creation
    ctime_changes: bool
    # the default volume folds case (macOS, Windows) / folds Unicode normalisation (macOS):
    # the fallback of volume_rules() where a folder's own names cannot tell
    folds_case: bool
    folds_normalisation: bool
    # an open file tells its path (final_paths.py): the path backend's proof that what it
    # opened lies in the bundle (Linux's /proc/self/fd stands in for Windows' call)
    final_paths: bool

    @property
    def backend(self) -> str:
        """The capture backend: "descriptor" (Linux, macOS) or "path" (Windows)."""
        return "descriptor" if self.dir_fd and self.nofollow and self.directory else "path"

    @property
    def read_flags(self) -> int:
        """os.open's flags for a file to read: never blocking, never inherited, binary,
        without following a link where the platform can refuse one."""
        return os.O_RDONLY | self.nofollow | self.nonblock | self.cloexec | self.binary

    @property
    def dir_flags(self) -> int:
        """os.open's flags for a folder (the descriptor backend only)."""
        return os.O_RDONLY | self.directory | self.nofollow | self.nonblock | self.cloexec

    @property
    def change_journal(self) -> bool:
        """Whether a synchronous change journal can stand in for the stat walk (engine/
        capture/journal.py): Linux's inotify queues an event before the change returns.
        macOS FSEvents and Windows' change notifications arrive later, with no point at
        which everything before now is known; the forced Windows configuration has none."""
        return self.system == "linux" and not self.forced

    @property
    def warm_process(self) -> bool:
        """Whether the CLI may use a warm process (the fronts decide the rest): not under
        the forced Windows configuration, whose portable path has none."""
        return not (self.forced and self.system == "windows")


def _system() -> str:
    if sys.platform == "win32":
        return "windows"
    if sys.platform.startswith("linux"):
        return "linux"
    return sys.platform


def detect(environ: Any = None) -> Platform:
    """This platform, or the one CITELINE_PLATFORM forces (`environ`: os.environ)."""
    env = os.environ if environ is None else environ
    system = _system()
    real = Platform(
        system=system,
        forced=False,
        dir_fd=os.open in os.supports_dir_fd and os.scandir in os.supports_fd,
        nofollow=getattr(os, "O_NOFOLLOW", 0),
        directory=getattr(os, "O_DIRECTORY", 0),
        nonblock=getattr(os, "O_NONBLOCK", 0),
        cloexec=getattr(os, "O_CLOEXEC", 0) or getattr(os, "O_NOINHERIT", 0),
        binary=getattr(os, "O_BINARY", 0),
        reparse_points=hasattr(os.stat_result, "st_reparse_tag"),
        # no capability test short of listing a folder: by name
        entry_ids=system != "windows",
        ctime_changes=system != "windows",
        folds_case=system in ("windows", "darwin"),
        folds_normalisation=system == "darwin",
        final_paths=system == "windows" or (system == "linux" and os.path.isdir(PROC_FDS)),
    )
    forced = (env.get(FORCE_VARIABLE) or "").strip().lower()
    if not forced or forced == system:
        return real
    if forced not in FORCED_NAMES:
        raise ValueError(
            f"{FORCE_VARIABLE}={forced!r}: only {', '.join(FORCED_NAMES)} can be forced"
        )
    # Windows' portable paths, on this machine: no descriptor-relative walk, no O_NOFOLLOW
    # (the identity checks must hold on their own), file ids from a stat, ctime ignored.
    # The names' case rules stay this machine's: its volumes are what the walk reads.
    return real._replace(
        system="windows",
        forced=True,
        dir_fd=False,
        nofollow=0,
        directory=0,
        entry_ids=False,
        ctime_changes=False,
    )


PLATFORM = detect()
# This machine's own facts, never forced: for code whose safety the emulation must not
# weaken (the private cache folder's checks keep O_NOFOLLOW under CITELINE_PLATFORM).
NATIVE = detect({})


# -- links and reparse points ----------------------------------------------------------------


def is_link(st: os.stat_result) -> bool:
    """A symbolic link, or a reparse point standing for another path (a junction, a mount
    point): never followed by the capture. A cloud-file placeholder is not one."""
    return stat.S_ISLNK(st.st_mode) or bool(getattr(st, "st_reparse_tag", 0) & NAME_SURROGATE)


def is_sharing_violation(exc: OSError) -> bool:
    """Windows: another process holds the file open without letting others read it."""
    return getattr(exc, "winerror", None) in (ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION)


GONE_ERRNOS = frozenset(
    e
    for e in (
        errno.ENOENT,
        errno.ELOOP,
        errno.ENOTDIR,
        errno.ENXIO,  # Linux: a socket opened as a file
        getattr(errno, "EOPNOTSUPP", None),  # macOS: the same
        getattr(errno, "EMLINK", None),  # FreeBSD: O_NOFOLLOW on a link
    )
    if e is not None
)


# -- paths -------------------------------------------------------------------------------------


def strip_trailing_separators(path: str, module: Any = os.path) -> str:
    """`path` without separators at its end, but never its root: "C:\\" stays "C:\\" (a bare
    "C:" is the current folder on drive C), "/" stays "/", "a/" is "a". `module`: os.path,
    or ntpath/posixpath in tests."""
    drive, rest = module.splitdrive(path)
    seps = module.sep + (module.altsep or "")
    bare = rest.rstrip(seps)
    if not bare and rest:
        bare = rest[0]  # the root itself
    return drive + bare


def long_path(path: str, module: Any = os.path) -> str:
    """An absolute Windows path in its extended form (`\\\\?\\C:\\…`, `\\\\?\\UNC\\server\\…`),
    which the path backend opens: up to 32,767 characters, and no name is read as a device
    (`aux.md`, `nul.md`) or loses its trailing dots and spaces. Other platforms' paths, and
    paths already in that form, are given back absolute and otherwise unchanged."""
    absolute = module.abspath(path)
    if module.sep != "\\" or absolute.startswith(("\\\\?\\", "\\\\.\\")):
        return absolute
    if absolute.startswith("\\\\"):  # \\server\share\…
        return "\\\\?\\UNC\\" + absolute[2:]
    return "\\\\?\\" + absolute


class VolumeRules(NamedTuple):
    """How a volume compares names: whether it folds case, and Unicode normalisation."""

    folds_case: bool
    folds_normalisation: bool

    @property
    def exact(self) -> bool:
        return not (self.folds_case or self.folds_normalisation)

    def key(self, path: str) -> str:
        """A form of `path` equal for every spelling this volume takes for the same name
        (for comparing editor paths with folders; never for records or revisions).

        Case is compared by str.lower(), the closest Python has to the one-to-one mapping
        NTFS and APFS use: casefold() would also make "ß.md" and "ss.md" one name."""
        if self.folds_normalisation:
            import unicodedata

            path = unicodedata.normalize("NFC", path)
        return path.lower() if self.folds_case else path


def volume_rules(folder: str) -> VolumeRules:
    """The rules of the volume holding `folder`, tested on its own names where they can
    tell (its name with the case swapped is the same folder or nothing; its NFD or NFC
    spelling likewise), else the platform's default volumes' rules. Tested at each call (a
    few stats), never remembered: a folder may be another volume's by the next request."""
    folds_case = folds_spelling(folder, str.swapcase)
    folds_norm = folds_spelling(folder, other_normalisation)
    return VolumeRules(
        PLATFORM.folds_case if folds_case is None else folds_case,
        PLATFORM.folds_normalisation if folds_norm is None else folds_norm,
    )


def other_normalisation(name: str) -> str:
    """`name` in the other Unicode normalisation (NFD if it is NFC, else NFC)."""
    import unicodedata

    nfd = unicodedata.normalize("NFD", name)
    return nfd if nfd != name else unicodedata.normalize("NFC", name)


def folds_spelling(folder: str, spell: Callable[[str], str]) -> bool | None:
    """Whether another spelling (`spell`) of the deepest name of `folder`'s path that has
    one stats as the same entry; None when no name has another spelling or it cannot be
    told (a folder that is gone, one we may not stat)."""
    path = os.path.abspath(folder)
    while True:
        parent, name = os.path.split(path)
        if not name or parent == path:
            return None
        other = spell(name)
        if other != name:
            try:
                mine = os.lstat(path)
                theirs = os.lstat(os.path.join(parent, other))
            except FileNotFoundError:
                return False if os.path.lexists(path) else None
            except (OSError, ValueError):
                return None
            return os.path.samestat(mine, theirs)
        path = parent


# -- processes ---------------------------------------------------------------------------------


@cache
def start_method() -> str:
    """Worker processes start by forkserver on Linux where multiprocessing offers it, else
    by spawn (SPEC §16); never fork: a forked child inherits locks other threads hold (the
    language server's stdin reader holds stdin's). macOS lists forkserver too, but spawn is
    Python's own choice there (system frameworks are not safe across a fork), and no
    machine here could show forkserver safe on it."""
    from multiprocessing import get_all_start_methods

    if PLATFORM.system == "linux" and "forkserver" in get_all_start_methods():
        return "forkserver"
    return "spawn"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (under any user). Never os.kill(pid, 0) on Windows:
    there signal 0 is CTRL_C_EVENT, sent to every process of the console."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_pid_alive(pid)
    if PLATFORM.forced:
        return _proc_pid_alive(pid)
    return _signal_pid_alive(pid)


def _signal_pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # POSIX: signal 0 sends nothing, it only checks existence
    except PermissionError:
        return True  # it exists, under another user
    except (ProcessLookupError, OverflowError):
        return False
    return True


def _proc_pid_alive(pid: int) -> bool:
    """The forced Windows configuration on Linux: no signal at all, as on Windows (a zombie
    counts as alive, as a process handle not yet closed does there)."""
    try:
        os.stat(f"/proc/{pid}")
    except (OSError, ValueError, OverflowError):
        return False
    return True


SYNCHRONIZE = 0x00100000
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
WAIT_TIMEOUT = 0x102
ERROR_ACCESS_DENIED = 5


def _windows_pid_alive(pid: int, kernel32: Any = None) -> bool:
    """A process handle: alive while waiting on it times out. A process we may not open
    exists (access denied); any other failure (ERROR_INVALID_PARAMETER) means no process.
    `kernel32`: ctypes' WinDLL("kernel32"), or a fake in tests."""
    if kernel32 is None:
        import ctypes

        kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009
    if pid > 0xFFFFFFFF:
        return False
    handle = kernel32.OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return _last_error(kernel32) == ERROR_ACCESS_DENIED
    try:
        return bool(kernel32.WaitForSingleObject(handle, 0) == WAIT_TIMEOUT)
    finally:
        kernel32.CloseHandle(handle)


def _last_error(kernel32: Any) -> int:
    getter = getattr(kernel32, "last_error", None)
    if getter is not None:
        return int(getter())
    import ctypes

    return int(getattr(ctypes, "get_last_error")())  # noqa: B009


@cache
def peer_credentials() -> str | None:
    """How a Unix socket tells its peer's user: "SO_PEERCRED" (Linux), "LOCAL_PEERCRED"
    (macOS, BSD), or None (Windows, or no way: the fronts then use no warm process)."""
    import socket

    if not hasattr(socket, "AF_UNIX"):
        return None
    if hasattr(socket, "SO_PEERCRED"):
        return "SO_PEERCRED"
    if hasattr(socket, "LOCAL_PEERCRED"):
        return "LOCAL_PEERCRED"
    return None


__all__ = [
    "FORCE_VARIABLE",
    "GONE_ERRNOS",
    "NAME_SURROGATE",
    "NATIVE",
    "PLATFORM",
    "Platform",
    "VolumeRules",
    "detect",
    "is_link",
    "is_sharing_violation",
    "long_path",
    "peer_credentials",
    "pid_alive",
    "start_method",
    "strip_trailing_separators",
    "volume_rules",
]
