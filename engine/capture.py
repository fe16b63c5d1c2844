"""Capture: walk the bundle without following links, read each Markdown file once (SPEC §2)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from .cancel import CancelToken
from .errors import CitelineError
from .limits import Limits, Settings, limit_error
from .revision import snapshot_revision

Progress = Callable[[str, int, int], None]
_SUFFIXES = (b".md", b".markdown")
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = (
    os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class CapturedFile:
    path: str  # bundle-relative, "/" separators
    data: bytes
    sha256: str
    reserved: bool  # navigation file: captured, never searched

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class Snapshot:
    root: str
    files: tuple[CapturedFile, ...]  # sorted by path (code point order)
    revision: str

    @property
    def searchable(self) -> tuple[CapturedFile, ...]:
        return tuple(f for f in self.files if not f.reserved)


def check_bundle(bundle: str | os.PathLike[str]) -> str:
    path = os.fspath(bundle)
    # A trailing "/" would make lstat follow a link named by the last component; the
    # bundle "link/" is still the symbolic link "link" (SPEC §2: bundle_invalid).
    bare = path.rstrip(os.sep) or path
    try:
        st = os.lstat(bare)
    except FileNotFoundError:
        raise CitelineError(
            "bundle_not_found",
            f"Bundle {path!r} does not exist. Give the path of a folder of Markdown files.",
            {"bundle": path},
        ) from None
    except OSError as exc:
        raise CitelineError(
            "bundle_invalid",
            f"Bundle {path!r} cannot be examined: {exc.strerror}.",
            {"bundle": path},
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise CitelineError(
            "bundle_invalid",
            f"Bundle {path!r} is a symbolic link; give the real folder instead.",
            {"bundle": path, "reason": "symlink"},
        )
    if not stat.S_ISDIR(st.st_mode):
        raise CitelineError(
            "bundle_invalid",
            f"Bundle {path!r} is not a directory; give a folder of Markdown files.",
            {"bundle": path, "reason": "not_a_directory"},
        )
    return path


class _Ignores:
    """git's .gitignore rules: nested files, deeper ones win, last matching pattern wins."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, GitIgnoreSpec]] = []

    def ignored(self, rel: str) -> bool:
        decision = None
        for base, spec in self.stack:
            result = spec.check_file(rel[len(base) :]).include
            if result is not None:
                decision = result
        return bool(decision)


def _read_gitignore(dir_fd: int) -> GitIgnoreSpec | None:
    try:
        fd = os.open(b".gitignore", _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            lines = fh.read(16 * 1024 * 1024).decode("utf-8", "surrogateescape").splitlines()
    finally:
        os.close(fd)
    return GitIgnoreSpec.from_lines(lines)


def _unreadable(what: str, path: str, exc: OSError) -> CitelineError:
    """bundle_invalid for a folder or file of the bundle that cannot be opened or read."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return CitelineError(
            "bundle_invalid",
            f"{what} {path!r} in the bundle cannot be read (permission denied). Fix its "
            "permissions, or add it to .gitignore.",
            {"path": path, "reason": "permission_denied"},
        )
    return CitelineError(
        "bundle_invalid",
        f"{what} {path!r} in the bundle cannot be read: {exc.strerror}.",
        {"path": path},
    )


def _open_dir(name: bytes, dir_fd: int | None, rel_dir: str, limits: Limits) -> int | None:
    """A directory opened without following a link (None when it vanished or became one).

    Directories are opened relative to their parent's descriptor, so neither a path longer
    than PATH_MAX nor a folder swapped for a link during the walk can lead outside the bundle.
    """
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        shown = rel_dir.rstrip("/") or "."
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            return None
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            depth = rel_dir.count("/")
            if depth >= limits.max_path_components:
                # Every file this deep is over the limit; the walk cannot go deeper anyway.
                raise limit_error(
                    "max_path_components", depth + 1, limits.max_path_components, path=shown
                ) from None
        raise _unreadable("Folder", shown, exc) from None


def _entries(dir_fd: int) -> list[tuple[bytes, int]]:
    """(name, kind) of a directory's entries sorted by name; kind 1 folder, 2 file, 0 other."""
    out = []
    with os.scandir(dir_fd) as it:
        for entry in it:
            name = os.fsencode(entry.name)
            try:
                if entry.is_symlink():
                    continue
                kind = 1 if entry.is_dir(follow_symlinks=False) else 0
                if not kind and entry.is_file(follow_symlinks=False):
                    kind = 2
            except OSError:
                continue  # vanished
            out.append((name, kind))
    out.sort()
    return out


def list_markdown(
    root: str, settings: Settings, cancel: CancelToken | None
) -> list[tuple[str, bytes]]:
    """(relative path, absolute fs path) of every capturable file, sorted by path.

    The walk is iterative (no recursion limit) and holds one descriptor per level.
    """
    limits = settings.limits
    found: list[tuple[str, bytes]] = []
    ignores = _Ignores()
    root_fs = os.fsencode(root).rstrip(b"/") or b"/"
    prefix = root_fs if root_fs.endswith(b"/") else root_fs + b"/"
    # Each frame: (descriptor, bundle-relative folder "a/b/", pending entries, pushed ignores).
    stack: list[tuple[int, str, list[tuple[bytes, int]], bool]] = []

    def enter(name: bytes, parent: int | None, rel_dir: str) -> None:
        fd = _open_dir(name, parent, rel_dir, limits)
        if fd is None:
            return
        try:
            if cancel is not None:
                cancel.check()
            pushed = False
            if settings.use_ignore:
                spec = _read_gitignore(fd)
                if spec is not None:
                    ignores.stack.append((rel_dir, spec))
                    pushed = True
            try:
                entries = _entries(fd)
            except PermissionError as exc:
                raise _unreadable("Folder", rel_dir.rstrip("/") or ".", exc) from None
            except (FileNotFoundError, NotADirectoryError):
                entries = []  # vanished during the walk
        except BaseException:
            os.close(fd)
            raise
        entries.reverse()  # popped from the end: name order
        stack.append((fd, rel_dir, entries, pushed))

    try:
        enter(root_fs, None, "")
        while stack:
            fd, rel_dir, entries, pushed = stack[-1]
            if not entries:
                stack.pop()
                os.close(fd)
                if pushed:
                    ignores.stack.pop()
                continue
            name, kind = entries.pop()
            if name.startswith(b".") or not kind:
                continue
            rel_name = os.fsdecode(name)
            if kind == 1:
                rel = rel_dir + rel_name + "/"
                if not ignores.stack or not ignores.ignored(rel):
                    enter(name, fd, rel)
            elif name.lower().endswith(_SUFFIXES):
                rel = rel_dir + rel_name
                if ignores.stack and ignores.ignored(rel):
                    continue
                try:
                    os.fsencode(rel).decode("utf-8")
                except UnicodeDecodeError:
                    shown = rel_dir.rstrip("/") or "."
                    raise CitelineError(
                        "bundle_invalid",
                        f"A Markdown file in folder {shown!r} has a path that is not valid "
                        "UTF-8; rename it.",
                        {"path": shown, "reason": "path_not_utf8"},
                    ) from None
                found.append((rel, prefix + os.fsencode(rel)))
                if len(found) > limits.max_files:
                    raise limit_error("max_files", len(found), limits.max_files)
    finally:
        for fd, *_ in stack:
            os.close(fd)
    found.sort(key=lambda item: item[0])
    return found


def _check_paths(found: list[tuple[str, bytes]], limits: Limits) -> None:
    for rel, _ in found:
        size = len(rel.encode("utf-8"))
        if size > limits.max_path_bytes:
            raise limit_error("max_path_bytes", size, limits.max_path_bytes, path=rel)
        parts = rel.count("/") + 1
        if parts > limits.max_path_components:
            raise limit_error("max_path_components", parts, limits.max_path_components, path=rel)


def _open_beneath(fs_path: bytes, rel: str) -> int:
    """Open the file `rel` of the bundle that `fs_path` ends with, one component at a time.

    Every component is opened relative to its parent without following links (O_NOFOLLOW),
    so a folder or file swapped for a link after listing is never followed.
    """
    root = fs_path[: len(fs_path) - len(os.fsencode(rel))].rstrip(b"/") or b"/"
    with _Folders(root) as folders:
        return folders.open(rel)


class _Folders:
    """Opens bundle files component by component, keeping the folders of the last path open.

    Files are read in path order, and every path sharing a folder prefix is contiguous in
    that order, so each folder is opened once per capture (not once per file beneath it).
    """

    def __init__(self, root: bytes) -> None:
        self.root = root
        self.names: list[bytes] = []  # folder names below the root, outermost first
        self.fds: list[int] = []  # their descriptors, the root's first

    def __enter__(self) -> _Folders:
        self.fds.append(os.open(self.root, _DIR_FLAGS))
        return self

    def __exit__(self, *_: object) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()

    def open(self, rel: str) -> int:
        *dirs, name = os.fsencode(rel).split(b"/")
        keep = 0
        while keep < len(dirs) and keep < len(self.names) and dirs[keep] == self.names[keep]:
            keep += 1
        while len(self.names) > keep:
            self.names.pop()
            os.close(self.fds.pop())
        for part in dirs[keep:]:
            self.fds.append(os.open(part, _DIR_FLAGS, dir_fd=self.fds[-1]))
            self.names.append(part)
        return os.open(name, _OPEN_FLAGS, dir_fd=self.fds[-1])


def read_once(
    fs_path: bytes, rel: str, max_bytes: int, folders: _Folders | None = None
) -> bytes | None:
    """The file's bytes, or None when it is gone, became a link or is no regular file."""
    try:
        fd = folders.open(rel) if folders is not None else _open_beneath(fs_path, rel)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            return None
        raise _unreadable("File", rel, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        chunks = []
        got = 0
        expected = info.st_size + 1  # one past the size: a file that grew is noticed
        # Read one byte past the limit, so a file that grew past it is caught.
        while got <= max_bytes:
            ask = min(expected - got if got < expected else _CHUNK, max_bytes + 1 - got)
            chunk = os.read(fd, ask)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if len(chunk) < ask:
                break  # a short read of a regular file is its end: no extra read for EOF
        return b"".join(chunks)
    except OSError as exc:
        raise _unreadable("File", rel, exc) from None
    finally:
        os.close(fd)


def capture(
    bundle: str | os.PathLike[str],
    settings: Settings,
    cancel: CancelToken | None = None,
    progress: Progress | None = None,
) -> Snapshot:
    root = check_bundle(bundle)
    limits = settings.limits
    found = list_markdown(root, settings, cancel)
    _check_paths(found, limits)
    reserved = set(settings.reserved)
    files = []
    total = 0
    try:
        folders = _Folders(os.fsencode(root).rstrip(b"/") or b"/").__enter__()
    except OSError as exc:
        raise CitelineError(
            "bundle_invalid", f"Bundle {root!r} cannot be opened: {exc.strerror}.", {"bundle": root}
        ) from None
    with folders:
        for i, (rel, fs_path) in enumerate(found):
            if cancel is not None:
                cancel.check()
            data = read_once(fs_path, rel, limits.max_file_bytes, folders)
            if data is None:
                continue
            if len(data) > limits.max_file_bytes:
                raise limit_error("max_file_bytes", len(data), limits.max_file_bytes, path=rel)
            total += len(data)
            if total > limits.max_total_bytes:
                raise limit_error("max_total_bytes", total, limits.max_total_bytes)
            digest = hashlib.sha256(data).hexdigest()
            files.append(CapturedFile(rel, data, digest, rel in reserved))
            if progress is not None:
                progress("capture", i + 1, len(found))
    return Snapshot(str(Path(root)), tuple(files), snapshot_revision(files))
