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

The mode alone does not say who may write: with a POSIX ACL its group bits are the ACL's
mask, so `setfacl -m u:other:rwx` on a folder of the user's private group shows a plain 0770.
On Linux the ACLs are read too (the `system.posix_acl_*` extended attributes), and an entry
that lets anyone else do what the mode may not let them (write a folder, reach a file) counts
as the mode would; so does a folder's default ACL, which every file made in it inherits.
A group is the user's own only when no other account has it as its primary group either.

Only POSIX systems have owners and modes to check; elsewhere (Windows) the folder is made and
used as it is. macOS and the BSDs keep their ACLs elsewhere than extended attributes: there
the modes alone are checked. docs/security.md says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import struct
import sys
from collections.abc import Callable

from ..base.platform import NATIVE

CHECKED = hasattr(os, "geteuid")  # POSIX owners and modes
MOST_LINKS = 40  # links followed on the way, as the kernel's own bound (ELOOP)
# Linux: POSIX ACLs as extended attributes. Looked up, not named: Windows' and macOS's os
# have no getxattr (and mypy checks this module as each platform sees it).
_GETXATTR: Callable[..., bytes] | None = getattr(os, "getxattr", None)
READS_ACLS = _GETXATTR is not None
ACCESS_ACL, DEFAULT_ACL = "system.posix_acl_access", "system.posix_acl_default"
WRITE, ANY = 0o2, 0o7  # an ACL entry's permissions (rwx), as a mode's bits for one class


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
    _check_folder("/", os.lstat("/"), me, not pending, "/")
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
        _check_folder(here, st, me, last, here)
        real.append(name)
    return _join(real)


def _names(path: str) -> list[str]:
    return [n for n in path.split("/") if n and n != "."]


def _join(names: list[str]) -> str:
    return "/" + "/".join(names)


def _check_folder(here: str, st: os.stat_result, me: int, last: bool, where: str | int) -> None:
    """`where`: the folder's path (not followed) or a descriptor of it, to read its ACLs."""
    if not stat.S_ISDIR(st.st_mode):
        raise NotPrivate(f"{here} is not a folder")
    if last:
        if st.st_uid != me:
            raise NotPrivate(f"{here} belongs to user {st.st_uid}")
        if _open_to_others(st, 0o022, me):
            raise NotPrivate(f"{here} is writable by others (mode {stat.S_IMODE(st.st_mode):o})")
        _check_acls(here, where, st, me, ANY, "")  # (its files are to be the user's only)
        return
    if st.st_uid not in (0, me):
        raise NotPrivate(f"{here}, on the way to the folder, belongs to user {st.st_uid}")
    if st.st_mode & stat.S_ISVTX:
        return  # others may write it, not rename or remove what is not theirs (/tmp)
    if _open_to_others(st, 0o022, me):
        raise NotPrivate(
            f"{here}, on the way to the folder, is writable by others "
            f"(mode {stat.S_IMODE(st.st_mode):o}, no sticky bit)"
        )
    _check_acls(here, where, st, me, WRITE, ", on the way to the folder,")


def _check_acls(
    here: str, where: str | int, st: os.stat_result, me: int, inherited: int, way: str
) -> None:
    """A folder's ACLs. Its own may let no one else write it. Its default ACL, which what is
    made in it inherits, may name no other account or group with the permissions `inherited`
    (any, for the cache's own folder: what its files would get). The default's owner, group
    and others entries are left alone: they give a new file no more than the mode it is made
    with (0600, 0700 here; the umask has no say then)."""
    if who := _acl_lets_others(here, where, ACCESS_ACL, WRITE, st.st_gid, me):
        raise NotPrivate(f"{here}{way} is writable by others through its ACL ({who})")
    if who := _acl_lets_others(here, where, DEFAULT_ACL, inherited, st.st_gid, me, named=True):
        raise NotPrivate(
            f"{here}{way} has a default ACL that gives what is made in it to others ({who})"
        )


_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


def _acl(here: str, where: str | int, name: str) -> list[tuple[int, int, int]]:
    """The entries (tag, permissions, id) of the ACL `name` of `where`, [] without one. The
    form is the kernel's (linux/posix_acl_xattr.h): a little-endian u32 version, 2, then
    8-byte entries (u16 tag, u16 permissions, u32 id)."""
    if _GETXATTR is None:
        return []
    try:
        if isinstance(where, int):
            data = _GETXATTR(where, name)
        else:
            data = _GETXATTR(where, name, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            return []  # none, or a file system without POSIX ACLs
        raise NotPrivate(f"{here}: its ACL cannot be read ({exc.strerror})") from exc
    if len(data) < 4 or (len(data) - 4) % 8 or struct.unpack_from("<I", data)[0] != 2:
        raise NotPrivate(f"{here}: its ACL is of an unknown form")
    return list(struct.iter_unpack("<HHI", data[4:]))


def _acl_lets_others(
    here: str, where: str | int, name: str, bits: int, gid: int, me: int, named: bool = False
) -> str | None:
    """Whom else the ACL `name` lets have any of the permissions `bits` ("user 65534: rwx"),
    as the kernel decides: the mask bounds the named entries and the owning group's (`gid`);
    root, the user and the user's private group are the user. Only the named entries when
    `named`. None when no one."""
    entries = _acl(here, where, name)
    mask = next((perms for tag, perms, _ in entries if tag == _MASK), ANY)
    for tag, perms, ident in entries:
        if tag in (_USER_OBJ, _MASK) or (named and tag not in (_USER, _GROUP)):
            continue
        granted = perms if tag == _OTHER else perms & mask  # (the mask leaves others be)
        if not granted & bits:
            continue
        if tag == _USER:
            if ident in (0, me):
                continue
            who = f"user {ident}"
        elif tag == _OTHER:
            who = "others"
        else:
            group = ident if tag == _GROUP else gid
            if _private_group(group, me):
                continue
            who = f"group {group}"
        return f"{who}: " + "".join("rwx"[i] if granted & 4 >> i else "-" for i in range(3))
    return None


def _open_to_others(st: os.stat_result, bits: int, me: int) -> bool:
    """Whether the permission `bits` (0o022: write, 0o077: any) reach someone else: any of
    them for others, and for the group unless it is the user's private group."""
    if st.st_mode & bits & 0o007:
        return True
    return bool(st.st_mode & bits & 0o070) and not _private_group(st.st_gid, me)


def _private_group(gid: int, me: int) -> bool:
    """Whether group `gid` is the user's own: their primary group, named as they are, with
    no other member, and no other account's primary group (whose members the group's list
    does not name).

    Asked again at each check, never remembered: a group's members may change while a
    process lives, and only a folder or file with group permission bits reaches here (the
    cache's own are 0700/0600), where one answer costs a third of a millisecond."""
    if sys.platform == "win32" or gid != os.getegid():
        return False
    try:
        import grp
        import pwd

        group, user = grp.getgrgid(gid), pwd.getpwuid(me)
        found = (
            group.gr_name == user.pw_name
            and set(group.gr_mem) <= {user.pw_name}
            and not any(p.pw_gid == gid and p.pw_uid != me for p in pwd.getpwall())
        )
    except (ImportError, KeyError):
        found = False
    return found


def open_folder(real: str) -> int:
    """A descriptor of the checked folder `real` (a path private_folder gave), checked again
    through the descriptor."""
    if sys.platform == "win32":
        raise NotPrivate("folders cannot be opened as descriptors here")
    fd = os.open(real, os.O_RDONLY | NATIVE.directory | NATIVE.nofollow | NATIVE.cloexec)
    try:
        _check_folder(real, os.fstat(fd), os.geteuid(), True, fd)
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
    if READS_ACLS:  # its ACL, read through a descriptor of what was just looked at
        fd = os.open(name, NATIVE.read_flags, dir_fd=folder_fd)
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                raise NotPrivate(f"{name} in it changed while it was checked")
            if who := _acl_lets_others(name, fd, ACCESS_ACL, ANY, now.st_gid, os.geteuid()):
                raise NotPrivate(f"{name} in it is open to others through its ACL ({who})")
        finally:
            os.close(fd)


__all__ = ["CHECKED", "READS_ACLS", "NotPrivate", "check_file", "open_folder", "private_folder"]
