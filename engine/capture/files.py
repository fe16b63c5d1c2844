"""Reading the bundle's files (SPEC §2, §16): the capture backends, bounded reads, late reads.

A *backend* is how folders are opened and listed and how files are read without ever
following a link out of the bundle. There are two, behind one interface, and the platform
seam (platform.py) picks one:

- **descriptor** (Linux, macOS): every folder and file is opened relative to its parent's
  descriptor with O_NOFOLLOW, so nothing swapped for a link after it was listed can be
  followed, and no path is ever longer than one name;
- **path** (Windows, and Linux under CITELINE_PLATFORM=windows): Windows has neither
  `dir_fd` nor O_NOFOLLOW, and a directory junction is a folder to lstat. Links and every
  name-surrogate reparse point are skipped as the walk lists them; each file is opened by
  its (extended-length) path in binary mode, and its bytes are taken only if the file's
  identity from fstat is the one lstat gave and the open file's final path is the
  bundle's joined with the names walked (PathBackend). Each folder's identity is checked
  after it was listed, after its files were read and before a folder in it is entered: a
  mismatch is a change during the walk (what came from that folder is dropped, as for a
  folder removed meanwhile). docs/security.md has what this rules out, and what not
  where the system cannot tell an open file's path.

A folder *handle* is a descriptor (int) for the first, a PathFolder for the second; code
outside this module only passes handles back to the backend that gave them.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

from ..base.errors import CitelineError, printable, quoted
from ..base.platform import (
    GONE_ERRNOS,
    NATIVE,
    PLATFORM,
    Platform,
    is_link,
    is_sharing_violation,
    long_path,
    strip_trailing_separators,
)
from .final_paths import final_folder, final_path
from .stats import Fingerprint, fingerprint

if TYPE_CHECKING:
    from .snapshot import CapturedFile, Snapshot

S_ISREG = stat.S_ISREG
S_ISDIR = stat.S_ISDIR
_CHUNK = 1 << 20
# Seconds waited before each new try to open a file another program holds open without
# sharing it (Windows' sharing violation: an editor or a virus scanner, for a moment).
SHARING_WAITS = (0.02, 0.05, 0.1, 0.2)
# Opens of one path that found a file other than the one lstat had just seen (replaced in
# between, as an editor's save replaces it) before it counts as changed during the walk.
IDENTITY_TRIES = 3

Read = tuple[bytes, Fingerprint]


# -- the bundle --------------------------------------------------------------------------------


def check_bundle(bundle: str | os.PathLike[str]) -> str:
    path = os.fspath(bundle)
    # A trailing separator would make lstat follow a link named by the last component; the
    # bundle "link/" is still the symbolic link "link" (SPEC §2: bundle_invalid). A root
    # keeps its own ("C:\\" is not "C:", the current folder of drive C).
    bare = strip_trailing_separators(path) or path
    try:
        st = os.lstat(bare)
    except ValueError:  # a NUL byte: no such path can exist (a client can still send one)
        raise CitelineError(
            "bundle_not_found",
            f"Bundle {quoted(path)} cannot exist: it holds a NUL character.",
            {"bundle": printable(path)},
        ) from None
    except FileNotFoundError:
        raise bundle_error(path, "missing") from None
    except OSError as exc:
        raise CitelineError(
            "bundle_invalid",
            f"Bundle {path!r} cannot be examined: {exc.strerror}.",
            {"bundle": path},
        ) from None
    if is_link(st):
        raise bundle_error(path, "symlink")
    if not S_ISDIR(st.st_mode):
        raise bundle_error(path, "not_a_directory")
    return path


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


def _short_read(rel: str, got: int, size: int) -> CitelineError:
    return CitelineError(
        "bundle_invalid",
        f"File {quoted(rel)} in the bundle gave {got} bytes when read, but holds {size}: the "
        "system did not hand over its bytes as stored.",
        {"path": rel, "reason": "short_read"},
    )


# -- reading one open file ------------------------------------------------------------------


def _read_to(fd: int, size: int, max_bytes: int) -> bytes:
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


def _read_checked(fd: int, info: os.stat_result, rel: str, max_bytes: int) -> bytes:
    """_read_to, and a read shorter than the file's size while its stat stays the same is
    read once more, then refused: the bytes were not handed over as stored (a descriptor in
    text mode turns CRLF into LF and stops at Ctrl-Z), and no SHA-256 of them could verify.
    A file that shrank meanwhile has another stat: what was read is what it held."""
    data = _read_to(fd, info.st_size, max_bytes)
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
        data = _read_to(fd, info.st_size, max_bytes)
        if len(data) >= expected:
            return data
    return data  # (not reached)


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
        return _read_to(fd, info.st_size, max_bytes), fingerprint(info)
    except OSError as exc:
        raise unreadable("File", rel, exc) from None
    finally:
        os.close(fd)


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


# -- backends --------------------------------------------------------------------------------


class Backend(Protocol):
    """How the capture opens, lists and reads the bundle (see the module's docstring)."""

    name: str

    def root(self, root: str) -> Any:
        """The bundle's folder, without following a link: the SPEC §2 bundle errors when it
        is gone, a link or no folder (as check_bundle would have said a moment earlier)."""
        ...

    def open_path(self, path: str) -> Any:
        """A folder by absolute path, not following a link at its last component (the
        repository's folders above the bundle). Raises OSError."""
        ...

    def open_dir(self, parent: Any, name: str) -> Any:
        """Folder `name` of `parent`; OSError (ENOENT, ELOOP, ENOTDIR, …) when it is gone,
        a link or no folder."""
        ...

    def close(self, folder: Any) -> None: ...

    def same(self, folder: Any) -> bool:
        """Whether `folder` is still the folder that was opened (always, for a descriptor)."""
        ...

    def entries(self, folder: Any) -> Iterator[tuple[str, bool, Any]]:
        """(name, is folder, entry) of the folders and Markdown files in `folder`, dot
        entries and links left out; `entry.stat(follow_symlinks=False)` is the stat the
        stat index compares (with the file's id)."""
        ...

    def read(self, folder: Any, name: str, rel: str, max_bytes: int) -> Read | None:
        """The bytes (at most max_bytes + 1) and fingerprint of file `name`, None when it is
        gone, a link, no regular file or changed while being opened; a CitelineError when
        it cannot be read."""
        ...

    def read_small(self, folder: Any, name: str, limit: int) -> bytes | None:
        """At most `limit` bytes of a small regular file (an ignore file), None on any
        problem: a missing or unreadable ignore file is no ignore file."""
        ...


def is_markdown(name: str) -> bool:
    """Ends in .md or .markdown, ASCII case-insensitively (SPEC §2): Unicode case folding
    would also take the KELVIN SIGN for a k."""
    short = name[-3:]
    if short.isascii() and short.lower() == ".md":
        return True
    long = name[-9:]
    return long.isascii() and long.lower() == ".markdown"


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
            return _read_all(fd, limit)
        except OSError:
            return None
        finally:
            os.close(fd)


def _read_all(fd: int, limit: int) -> bytes:
    chunks = []
    got = 0
    while got < limit:
        chunk = os.read(fd, min(_CHUNK, limit - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


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
            return _read_all(fd, limit)
        except OSError:
            return None
        finally:
            os.close(fd)


def make_backend(platform: Platform = PLATFORM) -> Backend:
    return (
        DescriptorBackend(platform) if platform.backend == "descriptor" else PathBackend(platform)
    )


# read_file's flags: this machine's own (with O_NOFOLLOW), also while Windows is forced.
DESCRIPTOR_FLAGS = NATIVE.read_flags
# The backend every capture uses (tests put the other one here to compare them).
BACKEND: Backend = make_backend()


# -- later reads of a captured bundle ---------------------------------------------------------


class Folders:
    """Opens bundle files component by component, keeping the folders of the last path open.

    Every component is opened as the backend opens folders (relative to its parent without
    following links, or by path with the identity checks), so a folder or file swapped for
    a link after listing is never followed. Files are read in path order, and every path
    sharing a folder prefix is contiguous in that order, so each folder is opened once per
    pass (not once per file beneath it).
    """

    def __init__(self, root: str, backend: Backend | None = None) -> None:
        self.root = root
        self.backend = backend or BACKEND
        self.names: list[str] = []  # folder names below the root, outermost first
        self.handles: list[Any] = []  # their handles, the root's first

    def __enter__(self) -> Folders:
        self.handles.append(self.backend.root(self.root))
        return self

    def __exit__(self, *_: object) -> None:
        for handle in self.handles:
            self.backend.close(handle)
        self.handles.clear()

    def folder(self, dirs: list[str]) -> Any:
        """The handle of the folder `dirs` (names below the root)."""
        keep = 0
        names = self.names
        while keep < len(dirs) and keep < len(names) and dirs[keep] == names[keep]:
            keep += 1
        while len(names) > keep:
            names.pop()
            self.backend.close(self.handles.pop())
        for part in dirs[keep:]:
            self.handles.append(self.backend.open_dir(self.handles[-1], part))
            names.append(part)
        return self.handles[-1]

    def read(self, rel: str, max_bytes: int) -> Read | None:
        *dirs, name = rel.split("/")
        try:
            folder = self.folder(dirs)
        except OSError as exc:
            if exc.errno in GONE_ERRNOS:
                return None
            raise unreadable("File", rel, exc) from None
        got = self.backend.read(folder, name, rel, max_bytes)
        if got is not None and not self.backend.same(folder):
            return None  # the folder was swapped under the read: changed during the walk
        return got


def read_inside(root: str, rel: str, max_bytes: int, sha256: str | None = None) -> bytes | None:
    """A file of the bundle read after its capture, with the capture's rules: every component
    of the bundle-relative path `rel` opened as the backend opens folders, never following a
    link, non-blocking, a regular file only, at most `max_bytes` read; and, given `sha256`,
    only bytes with that digest (SPEC §2: bytes "read and checked against that SHA-256").

    None when the file is gone, is a link, a FIFO or a device, is larger than `max_bytes`,
    cannot be read, has other bytes, or when `rel` is not a plain relative path (empty
    components, "." or ".." would lead outside the folders the rules are checked for).
    """
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    try:
        with Folders(root) as folders:
            got = folders.read(rel, max_bytes)
    except (CitelineError, OSError, ValueError):  # ValueError: a NUL in a name
        return None
    if got is None or len(got[0]) > max_bytes:
        return None
    data = got[0]
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        return None
    return data


class Changed(Exception):
    """A file's bytes differ from its record: it changed during the request."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class Fetcher:
    """The bytes of a snapshot's files when a stage needs them: those the capture read,
    else bytes held in memory with the same SHA-256, else read again (without following
    links) and checked against the record's SHA-256 — a mismatch raises Changed, and the
    request captures again (SPEC §2: every snippet comes from bytes with the recorded digest).
    """

    def __init__(self, snapshot: Snapshot, held: Callable[[str], bytes | None] | None = None):
        self.snapshot = snapshot
        self.held = held
        self.read: list[tuple[str, bytes]] = []  # (sha256, bytes) read here, to hold
        self._stack = ExitStack()
        self._folders: Folders | None = None

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()

    def __call__(self, file: CapturedFile) -> bytes:
        if file.data is not None:
            return file.data
        if self.held is not None:
            data = self.held(file.sha256)
            if data is not None:
                return data
        if self._folders is None:
            self._folders = self._stack.enter_context(Folders(self.snapshot.root))
        got = self._folders.read(file.path, file.size)
        if got is None or len(got[0]) != file.size:
            raise Changed(file.path)
        data = got[0]
        if hashlib.sha256(data).hexdigest() != file.sha256:
            raise Changed(file.path)
        self.read.append((file.sha256, data))
        return data


__all__ = [
    "BACKEND",
    "Backend",
    "Changed",
    "DescriptorBackend",
    "Fetcher",
    "Folders",
    "PathBackend",
    "PathFolder",
    "bundle_error",
    "check_bundle",
    "is_markdown",
    "make_backend",
    "read_file",
    "read_inside",
]
