"""Reading the bundle's files (SPEC §2, §16): the capture backends' one interface, the one
chosen for this platform, the bundle's check, late reads.

A *backend* is how folders are opened and listed and how files are read without ever
following a link out of the bundle. There are two, behind one interface (Backend), and the
platform seam (platform.py) picks one (BACKEND, which tests swap):

- **descriptor** (Linux, macOS; descriptor_backend.py): every folder and file is opened
  relative to its parent's descriptor with O_NOFOLLOW, so nothing swapped for a link after
  it was listed can be followed, and no path is ever longer than one name;
- **path** (Windows, and Linux under CITELINE_PLATFORM=windows; path_backend.py): Windows
  has neither `dir_fd` nor O_NOFOLLOW, and a directory junction is a folder to lstat.
  Links and every name-surrogate reparse point are skipped as the walk lists them; each
  file is opened by its (extended-length) path in binary mode, and its bytes are taken
  only if the file's identity from fstat is the one lstat gave and the open file's final
  path is the bundle's joined with the names walked (PathBackend). Each folder's identity
  is checked after it was listed, after its files were read and before a folder in it is
  entered: a mismatch is a change during the walk (what came from that folder is dropped,
  as for a folder removed meanwhile). docs/security.md has what this rules out, and what
  not where the system cannot tell an open file's path.

What both share (the errors, bounded reads, which names are Markdown) is reads.py.

A folder *handle* is a descriptor (int) for the first, a PathFolder for the second; code
outside the backends only passes handles back to the backend that gave them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

from ..base.errors import CitelineError, printable, quoted
from ..base.platform import GONE_ERRNOS, PLATFORM, Platform, is_link, strip_trailing_separators
from .descriptor_backend import DescriptorBackend
from .path_backend import PathBackend
from .reads import S_ISDIR, Read, bundle_error, unreadable

if TYPE_CHECKING:
    from .snapshot import CapturedFile, Snapshot


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


def make_backend(platform: Platform = PLATFORM) -> Backend:
    return (
        DescriptorBackend(platform) if platform.backend == "descriptor" else PathBackend(platform)
    )


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
    "Fetcher",
    "Folders",
    "check_bundle",
    "make_backend",
    "read_inside",
]
