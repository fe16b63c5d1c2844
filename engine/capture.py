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


def _read_gitignore(dir_fs: bytes) -> GitIgnoreSpec | None:
    try:
        fd = os.open(os.path.join(dir_fs, b".gitignore"), _OPEN_FLAGS)
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


def list_markdown(
    root: str, settings: Settings, cancel: CancelToken | None
) -> list[tuple[str, bytes]]:
    """(relative path, absolute fs path) of every capturable file, sorted by path."""
    limits = settings.limits
    found: list[tuple[str, bytes]] = []
    ignores = _Ignores()

    def walk(dir_fs: bytes, rel_dir: str) -> None:
        if cancel is not None:
            cancel.check()
        pushed = False
        if settings.use_ignore:
            spec = _read_gitignore(dir_fs)
            if spec is not None:
                ignores.stack.append((rel_dir, spec))
                pushed = True
        try:
            with os.scandir(dir_fs) as it:
                entries = sorted(it, key=lambda e: e.name)
        except PermissionError:
            raise CitelineError(
                "bundle_invalid",
                f"Folder {rel_dir or '.'!r} in the bundle cannot be read (permission denied).",
                {"path": rel_dir or ".", "reason": "permission_denied"},
            ) from None
        except (FileNotFoundError, NotADirectoryError):
            entries = []  # vanished during the walk
        for entry in entries:
            name = entry.name
            if name.startswith(b".") or entry.is_symlink():
                continue
            rel_name = os.fsdecode(name)
            if entry.is_dir(follow_symlinks=False):
                rel = rel_dir + rel_name + "/"
                if not ignores.stack or not ignores.ignored(rel):
                    walk(entry.path, rel)
            elif entry.is_file(follow_symlinks=False) and name.lower().endswith(_SUFFIXES):
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
                found.append((rel, entry.path))
                if len(found) > limits.max_files:
                    raise limit_error("max_files", len(found), limits.max_files)
        if pushed:
            ignores.stack.pop()

    walk(os.fsencode(root), "")
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


def read_once(fs_path: bytes, rel: str, max_bytes: int) -> bytes | None:
    """The file's bytes, or None when it is gone, became a link or is no regular file."""
    try:
        fd = os.open(fs_path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            return None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise CitelineError(
                "bundle_invalid",
                f"File {rel!r} cannot be read (permission denied). Fix its permissions, "
                "or add it to .gitignore.",
                {"path": rel, "reason": "permission_denied"},
            ) from None
        raise CitelineError(
            "bundle_invalid", f"File {rel!r} cannot be read: {exc.strerror}.", {"path": rel}
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        got = 0
        # Read one byte past the limit, so a file that grew past it is caught.
        while got <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise CitelineError(
            "bundle_invalid", f"File {rel!r} cannot be read: {exc.strerror}.", {"path": rel}
        ) from None
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
    for i, (rel, fs_path) in enumerate(found):
        if cancel is not None:
            cancel.check()
        data = read_once(fs_path, rel, limits.max_file_bytes)
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
