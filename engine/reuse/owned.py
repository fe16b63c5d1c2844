"""A folder only this user can change, and files in it only this user can use (SPEC §2
"Cache": only the user's own cache is used).

SQLite opens its database, `-wal` and `-shm` files by name, and first turns the name into a
path without links by reading each link it meets on the way (so a descriptor held on the
folder cannot be handed to it: `/proc/self/fd/N` is a link too, read back into a path). What
is checked is therefore the path itself, as OpenSSH's StrictModes checks ~/.ssh: every folder
from `/` down belongs to this user or to root and no one else may write it (or, like /tmp,
has the sticky bit, so that no one else may rename or remove what is not theirs), every link
on the way belongs to this user or to root, and the folder itself belongs to this user, is a
real folder (not a link) and is writable by no one else. No other user can then change what
the path leads to between the check and SQLite's open: the check holds for as long as the
files are used, not only at the moment it is made. The files are then looked at without
following links (owner, mode, a regular file with one name) before SQLite opens them.

Only POSIX systems have owners and modes to check; elsewhere (Windows) the folder is made and
used as it is, and docs/security.md says so.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys

from ..platform import NATIVE

CHECKED = hasattr(os, "geteuid")  # POSIX owners and modes
MOST_LINKS = 40  # links followed on the way, as the kernel's own bound (ELOOP)


class NotPrivate(Exception):
    """The folder or a file in it is not this user's only; the message says why."""


def private_folder(path: str | os.PathLike[str], make: bool = True) -> str:
    """The path of the folder `path` leads to, without links, once it is checked (see the
    module's docstring); the folders missing on the way are made user-only (0700) when `make`
    (else only what exists is checked). Raises NotPrivate."""
    given = os.path.abspath(os.fspath(path))
    if sys.platform == "win32" or not CHECKED:  # (the name too: for the type checkers)
        if make:
            os.makedirs(given, exist_ok=True)
        return given
    me = os.geteuid()
    pending = _names(given)[::-1]  # a stack: the next name last
    real: list[str] = []
    _check_folder("/", os.lstat("/"), me, last=not pending)
    links = 0
    while pending:
        name = pending.pop()
        if name == "..":
            if real:
                real.pop()
            continue
        here = _join([*real, name])
        last = not pending
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            if not make:
                return _join([*real, name, *pending[::-1]])
            with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
                os.mkdir(here, 0o700)
            st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode):
            if last:
                raise NotPrivate(f"{here} is a link (a cache folder must be a real folder)")
            if st.st_uid not in (0, me):
                raise NotPrivate(f"{here} is a link of user {st.st_uid}")
            links += 1
            if links > MOST_LINKS:
                raise NotPrivate(f"{given}: too many links on the way")
            target = os.readlink(here)
            if target.startswith("/"):
                real.clear()
            pending.extend(_names(target)[::-1])
            continue
        _check_folder(here, st, me, last)
        real.append(name)
    return _join(real)


def _names(path: str) -> list[str]:
    return [n for n in path.split("/") if n and n != "."]


def _join(names: list[str]) -> str:
    return "/" + "/".join(names)


def _check_folder(here: str, st: os.stat_result, me: int, last: bool) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise NotPrivate(f"{here} is not a folder")
    if last:
        if st.st_uid != me:
            raise NotPrivate(f"{here} belongs to user {st.st_uid}")
        if _open_to_others(st, 0o022, me):
            raise NotPrivate(f"{here} is writable by others (mode {stat.S_IMODE(st.st_mode):o})")
        return
    if st.st_uid not in (0, me):
        raise NotPrivate(f"{here}, on the way to the folder, belongs to user {st.st_uid}")
    if _open_to_others(st, 0o022, me) and not st.st_mode & stat.S_ISVTX:
        raise NotPrivate(
            f"{here}, on the way to the folder, is writable by others "
            f"(mode {stat.S_IMODE(st.st_mode):o}, no sticky bit)"
        )


def _open_to_others(st: os.stat_result, bits: int, me: int) -> bool:
    """Whether the permission `bits` (0o022: write, 0o077: any) reach someone else: any of
    them for others, and for the group unless it is the user's private group."""
    if st.st_mode & bits & 0o007:
        return True
    return bool(st.st_mode & bits & 0o070) and not _private_group(st.st_gid, me)


_PRIVATE_GROUPS: dict[int, bool] = {}


def _private_group(gid: int, me: int) -> bool:
    """Whether group `gid` is the user's own: their primary group, named as they are, with
    no other member."""
    if sys.platform == "win32" or gid != os.getegid():
        return False
    found = _PRIVATE_GROUPS.get(gid)
    if found is None:
        try:
            import grp
            import pwd

            group, user = grp.getgrgid(gid), pwd.getpwuid(me)
        except (ImportError, KeyError):
            found = False
        else:
            found = group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}
        _PRIVATE_GROUPS[gid] = found
    return found


def open_folder(real: str) -> int:
    """A descriptor of the checked folder `real` (a path private_folder gave), checked again
    through the descriptor."""
    if sys.platform == "win32":
        raise NotPrivate("folders cannot be opened as descriptors here")
    fd = os.open(real, os.O_RDONLY | NATIVE.directory | NATIVE.nofollow | NATIVE.cloexec)
    try:
        _check_folder(real, os.fstat(fd), os.geteuid(), last=True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_file(folder_fd: int, name: str, create: bool) -> None:
    """Check the file `name` in the folder held as `folder_fd` without following a link: a
    regular file of this user with no other name, that no one else may read or write (what
    the cache creates is 0600). Missing, it is created so (`create`) or left to SQLite, which
    gives the files it makes the database file's mode. Raises NotPrivate."""
    if sys.platform == "win32":
        return
    try:
        st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        if not create:
            return
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | NATIVE.nofollow | NATIVE.cloexec
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
            os.close(os.open(name, flags, 0o600, dir_fd=folder_fd))
        st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        raise NotPrivate(f"{name} in it is a link")
    if not stat.S_ISREG(st.st_mode):
        raise NotPrivate(f"{name} in it is not a regular file")
    if st.st_uid != os.geteuid():
        raise NotPrivate(f"{name} in it belongs to user {st.st_uid}")
    if _open_to_others(st, 0o077, os.geteuid()):
        raise NotPrivate(f"{name} in it is open to others (mode {stat.S_IMODE(st.st_mode):o})")
    if st.st_nlink != 1:
        raise NotPrivate(f"{name} in it has other names (hard links)")


__all__ = ["CHECKED", "NotPrivate", "check_file", "open_folder", "private_folder"]
