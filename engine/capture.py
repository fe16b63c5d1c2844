"""Capture: walk the bundle without following links, read each Markdown file once (SPEC §2)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Protocol

from .cancel import CancelToken
from .errors import CitelineError, printable, quoted
from .ignore import Ignores, name_fold, read_gitignore, repository_rules
from .limits import Limits, Settings, limit_error
from .reuse import stats
from .reuse.stats import Captured, FileState, Fingerprint, Known, fingerprint
from .revision import snapshot_revision

S_ISREG = stat.S_ISREG

Progress = Callable[[str, int, int], None]
OnRead = Callable[[str, str, bytes], None]  # (path, sha256, bytes) of a file just read
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = (
    os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class CapturedFile:
    path: str  # bundle-relative, "/" separators
    size: int
    sha256: str
    reserved: bool  # navigation file: captured, never searched
    # The bytes, when this capture read them (or took them from the editor); None for a
    # file whose bytes were proven unchanged by its stat fingerprint (SPEC §2).
    data: bytes | None = None
    unsaved: bool = False  # the editor's text, not the disk's (SPEC §11 "Unsaved text")


@dataclass(frozen=True, slots=True)
class Snapshot:
    root: str
    files: Sequence[CapturedFile]  # sorted by path (code point order)
    revision: str
    known: Known | None = None  # the stat index after this capture
    read: int = 0  # files this capture read from disk

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
    if stat.S_ISLNK(st.st_mode):
        raise bundle_error(path, "symlink")
    if not stat.S_ISDIR(st.st_mode):
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


def open_root(root: bytes) -> int:
    """The bundle's folder opened without following a link, for the walk and the reads.

    check_bundle looked at the path a moment earlier: a bundle removed, or swapped for a link
    or a file, since then is the same error as it would have been then (never an empty
    snapshot, which would have the revision of no files at all).
    """
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        shown = os.fsdecode(root)
        if exc.errno == errno.ENOENT:
            raise bundle_error(shown, "missing") from None
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            # Linux says ENOTDIR for a link to a folder (O_DIRECTORY is checked first), ELOOP
            # for a link to anything else, FreeBSD EMLINK: what it is now tells which.
            try:
                is_link = stat.S_ISLNK(os.lstat(root).st_mode)
            except OSError:
                raise bundle_error(shown, "missing") from None
            raise bundle_error(shown, "symlink" if is_link else "not_a_directory") from None
        raise _unreadable("Folder", ".", exc) from None


def _unreadable(what: str, path: str, exc: OSError) -> CitelineError:
    """bundle_invalid for a folder or file of the bundle that cannot be opened or read."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return CitelineError(
            "bundle_invalid",
            f"{what} {quoted(path)} in the bundle cannot be read (permission denied). Fix its "
            "permissions, or add it to .gitignore.",
            {"path": path, "reason": "permission_denied"},
        )
    return CitelineError(
        "bundle_invalid",
        f"{what} {quoted(path)} in the bundle cannot be read: {exc.strerror}.",
        {"path": path},
    )


def _open_dir(
    name: str | bytes, dir_fd: int | None, rel_dir: str, limits: Limits, advice: str
) -> int | None:
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
                    "max_path_components",
                    depth + 1,
                    limits.max_path_components,
                    path=shown,
                    advice=advice,
                ) from None
        raise _unreadable("Folder", shown, exc) from None


def is_markdown(name: str) -> bool:
    """Ends in .md or .markdown, ASCII case-insensitively (SPEC §2): Unicode case folding
    would also take the KELVIN SIGN for a k."""
    short = name[-3:]
    if short.isascii() and short.lower() == ".md":
        return True
    long = name[-9:]
    return long.isascii() and long.lower() == ".markdown"


def _entries(dir_fd: int) -> Iterator[tuple[str, bool, os.DirEntry[str]]]:
    """(name, is folder, entry) of the folders and Markdown files in a directory, in its own
    order (the entry stats without following links, relative to the folder's descriptor).

    A generator: the walk stats each file while the directory is being read, which is
    markedly faster than listing it first (a fifth of a 40,000-file walk here).
    Dot entries, links and anything else are left out (is_dir and is_file do not follow links).
    """
    with os.scandir(dir_fd) as it:
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


class Held(Protocol):
    """Bytes already in memory, by SHA-256 (reuse.Held)."""

    def get(self, sha256: str) -> bytes | None: ...


class _Prefetch:
    """Files read and hashed while the walk is in their folder: one open, relative to the
    folder's descriptor, instead of reopening every folder of the path later.

    Errors are kept, not raised, so the order of checks stays that of SPEC §2 (the walk and
    its limits first, then paths, then files in path order). Reading stops once more than
    max_total_bytes were read; the files left are read in path order afterwards, only until
    the limit is reported, so a bundle far over the limit is never read whole.
    """

    __slots__ = ("budget", "held", "on_read", "read")

    def __init__(self, budget: int, held: Held | None, on_read: OnRead | None = None) -> None:
        self.budget = budget
        self.held = held
        self.read = 0
        self.on_read = on_read

    def keep(self, data: bytes) -> tuple[bytes, str]:
        """The bytes to keep for a file just read, and their SHA-256."""
        self.read += len(data)
        digest = hashlib.sha256(data).hexdigest()
        # An unchanged file's bytes may already be in memory (same SHA-256, same bytes):
        # keep that copy and let this read's buffer go at once.
        kept = self.held.get(digest) if self.held is not None else None
        return (data if kept is None else kept), digest


@dataclass(frozen=True, slots=True)
class _Read:
    """What reading one file gave: its bytes, their SHA-256, and the fingerprint and time
    of the read (for the stat index)."""

    data: bytes
    sha256: str
    stat: Fingerprint
    read_ns: int


_UNREAD = object()  # a file the walk left for the path-order pass


class Found(list):  # type: ignore[type-arg]
    """The walk's (path, content) pairs, and whether the stat index failed to vouch for any
    of them (so a capture knows at once whether anything at all must be read)."""

    unread = False


def list_markdown(
    root: str,
    settings: Settings,
    cancel: CancelToken | None,
    prefetch: _Prefetch | None = None,
    known: Mapping[str, FileState] | None = None,
    marked: frozenset[str] = frozenset(),
) -> Found:
    """(relative path, content) of every capturable file, in the walk's order.

    The content is the FileState from `known` when the file's stat fingerprint still equals
    it, its read was not racy and the path is not `marked` (bytes unchanged: nothing read);
    else what the walk read (a _Read, None for a file that is gone or no longer a regular
    file, or the CitelineError reading it raised), or _UNREAD. The walk is iterative (no
    recursion limit) and holds one descriptor per level.
    """
    limits = settings.limits
    max_bytes = limits.max_file_bytes
    max_files = limits.max_files
    found = Found()
    # The repository's rules above the bundle are read afresh by every capture: an edit to
    # one of them is an input of this capture like the bundle's own files.
    ignores = Ignores(
        repository_rules(root) if settings.use_ignore else (),
        fold=name_fold(settings.ignore_case, settings.ignore_nfc),
    )
    root_fs = os.fsencode(root).rstrip(b"/") or b"/"
    previous = known or {}
    get = previous.get
    budget = prefetch.budget if prefetch is not None else 0
    # Each frame: (descriptor, bundle-relative folder "a/b/", folders left, pushed ignores).
    stack: list[tuple[int, str, list[str], bool]] = []

    def scan(fd: int, rel_dir: str, folders: list[str], unread: list[tuple[str, str]]) -> None:
        """One folder's entries: subfolders to `folders`, files whose bytes the stat index
        vouches for to `found`, the others to `unread`."""
        ignoring = ignores.active
        coarse = stats.COARSE_NS
        for name, is_folder, entry in _entries(fd):
            if is_folder:
                folders.append(name)
                continue
            rel = rel_dir + name
            if ignoring and ignores.ignored(rel):
                continue
            # The stat index (SPEC §2): reused when the fingerprint is the one recorded at a
            # read that was not racy, and no editor marked the file since. (Equal fingerprints
            # mean the same inode, so still a regular file, and a path already checked.)
            state = get(rel)
            if state is not None:
                trusted = state[3]  # reuse_if
                if trusted is not None and (not marked or rel not in marked):
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # vanished since the listing
                    if trusted == (
                        fingerprint(st)
                        if coarse
                        else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                    ):
                        found.append((rel, state))
                        continue
            if not rel.isascii():
                _check_utf8(rel, rel_dir)
            unread.append((name, rel))

    def enter(name: str | bytes, parent: int | None, rel_dir: str) -> None:
        if parent is None:
            fd: int | None = open_root(root_fs)
        else:
            fd = _open_dir(name, parent, rel_dir, limits, settings.advice)
        if fd is None:
            return
        try:
            if cancel is not None:
                cancel.check()
            pushed = False
            if settings.use_ignore:
                rules = read_gitignore(fd)
                if rules is not None:
                    ignores.stack.append((rel_dir, rules))
                    pushed = True
            folders: list[str] = []
            unread: list[tuple[str, str]] = []
            try:
                scan(fd, rel_dir, folders, unread)
            except PermissionError as exc:
                raise _unreadable("Folder", rel_dir.rstrip("/") or ".", exc) from None
            except (FileNotFoundError, NotADirectoryError):
                pass  # vanished during the walk
            if len(found) > max_files:
                raise limit_error("max_files", max_files + 1, max_files, advice=settings.advice)
            # What must be read, in name order: reads (and what a limit stops at) do not
            # depend on the directory's own order.
            unread.sort()
            for name, rel in unread:
                content: object = _UNREAD
                if prefetch is not None and prefetch.read <= budget:
                    if cancel is not None:
                        cancel.check()
                    content = _read(fd, name, rel, max_bytes, prefetch)
                found.append((rel, content))
                found.unread = True
                if len(found) > max_files:
                    raise limit_error("max_files", max_files + 1, max_files, advice=settings.advice)
        except BaseException:
            os.close(fd)
            raise
        folders.sort(reverse=True)  # popped from the end: name order
        stack.append((fd, rel_dir, folders, pushed))

    try:
        enter(root_fs, None, "")
        while stack:
            fd, rel_dir, folders, pushed = stack[-1]
            if not folders:
                stack.pop()
                os.close(fd)
                if pushed:
                    ignores.stack.pop()
                continue
            name = folders.pop()
            rel = rel_dir + name + "/"
            if not ignores.active or not ignores.ignored(rel):
                enter(name, fd, rel)
    finally:
        for fd, *_ in stack:
            os.close(fd)
    return found


_path = itemgetter(0)


def _check_utf8(rel: str, rel_dir: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = rel_dir.rstrip("/") or "."
        raise CitelineError(
            "bundle_invalid",
            f"A Markdown file in folder {quoted(shown)} has a path that is not valid UTF-8; "
            "rename it.",
            {"path": shown, "reason": "path_not_utf8"},
        ) from None


def _read(dir_fd: int, name: str | bytes, rel: str, max_bytes: int, prefetch: _Prefetch) -> object:
    """A _Read of one file, None when it is gone, or the CitelineError reading it raised."""
    started = time.time_ns()
    try:
        got = read_file(dir_fd, name, rel, max_bytes)
    except CitelineError as exc:
        return exc
    if got is None:
        return None
    data, stat = got
    kept, digest = prefetch.keep(data)
    if prefetch.on_read is not None:
        prefetch.on_read(rel, digest, kept)
    return _Read(kept, digest, stat, started)


def _check_paths(
    found: list[tuple[str, object]],
    limits: Limits,
    advice: str,
    known: Known | None = None,
    previous: Mapping[str, FileState] | None = None,
) -> tuple[int, int]:
    """SPEC §2's path limits, in path order; the longest path (bytes) and the most components.

    Paths the stat index already holds were measured when it was made: when its maxima are
    within the limits, only new paths are measured (a new process need not measure 40,000
    paths again); otherwise every path is, to report the first one over in path order.
    """
    longest, deepest = 0, 0
    if known is not None and previous is not None and known.paths_max is not None:
        longest, deepest = known.paths_max
        if longest <= limits.max_path_bytes and deepest <= limits.max_path_components:
            new = [(rel, c) for rel, c in found if rel not in previous]
            more = _check_paths(new, limits, advice)
            return max(longest, more[0]), max(deepest, more[1])
        longest, deepest = 0, 0
    for rel, _ in found:
        size = len(rel.encode("utf-8")) if not rel.isascii() else len(rel)
        if size > limits.max_path_bytes:
            raise limit_error(
                "max_path_bytes", size, limits.max_path_bytes, path=rel, advice=advice
            )
        parts = rel.count("/") + 1
        if parts > limits.max_path_components:
            raise limit_error(
                "max_path_components", parts, limits.max_path_components, path=rel, advice=advice
            )
        longest = max(longest, size)
        deepest = max(deepest, parts)
    return longest, deepest


class _Folders:
    """Opens bundle files component by component, keeping the folders of the last path open.

    Every component is opened relative to its parent without following links (O_NOFOLLOW),
    so a folder or file swapped for a link after listing is never followed. Files are read in
    path order, and every path sharing a folder prefix is contiguous in that order, so each
    folder is opened once per pass (not once per file beneath it).
    """

    def __init__(self, root: bytes) -> None:
        self.root = root
        self.names: list[bytes] = []  # folder names below the root, outermost first
        self.fds: list[int] = []  # their descriptors, the root's first

    def __enter__(self) -> _Folders:
        self.fds.append(open_root(self.root))
        return self

    def __exit__(self, *_: object) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()

    def folder(self, dirs: list[bytes]) -> int:
        """The descriptor of the folder `dirs` (names below the root)."""
        keep = 0
        while keep < len(dirs) and keep < len(self.names) and dirs[keep] == self.names[keep]:
            keep += 1
        while len(self.names) > keep:
            self.names.pop()
            os.close(self.fds.pop())
        for part in dirs[keep:]:
            self.fds.append(os.open(part, _DIR_FLAGS, dir_fd=self.fds[-1]))
            self.names.append(part)
        return self.fds[-1]

    def read(self, rel: str, max_bytes: int) -> tuple[bytes, Fingerprint] | None:
        *dirs, name = os.fsencode(rel).split(b"/")
        try:
            dir_fd = self.folder(dirs)
        except OSError as exc:
            if exc.errno in _GONE:
                return None
            raise _unreadable("File", rel, exc) from None
        return read_file(dir_fd, name, rel, max_bytes)


_GONE = (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.ENXIO)


def read_file(
    dir_fd: int, name: str | bytes, rel: str, max_bytes: int
) -> tuple[bytes, Fingerprint] | None:
    """The bytes of file `name` in folder `dir_fd` (at most max_bytes + 1 of them) and its
    fingerprint when opened, or None when it is gone, is a link or is no regular file (a
    FIFO, a socket, a device)."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _GONE:
            return None
        raise _unreadable("File", rel, exc) from None
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode):
            return None
        # One byte past the size, so a file that grew is noticed, and one past the limit,
        # so a file that grew past it is caught.
        want = min(info.st_size, max_bytes) + 1
        data = os.read(fd, want)
        if len(data) < want:
            # a short read of a regular file is its end: no extra read for EOF
            return data, fingerprint(info)
        chunks = [data]
        got = len(data)
        while got <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), fingerprint(info)
    except OSError as exc:
        raise _unreadable("File", rel, exc) from None
    finally:
        os.close(fd)


def read_inside(root: str, rel: str, max_bytes: int, sha256: str | None = None) -> bytes | None:
    """A file of the bundle read after its capture, with the capture's rules: every component
    of the bundle-relative path `rel` opened relative to its parent without following links,
    non-blocking, a regular file only, at most `max_bytes` read; and, given `sha256`, only
    bytes with that digest (SPEC §2: bytes "read and checked against that SHA-256").

    None when the file is gone, is a link, a FIFO or a device, is larger than `max_bytes`,
    cannot be read, has other bytes, or when `rel` is not a plain relative path (empty
    components, "." or ".." would lead outside the folders the rules are checked for).
    """
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    try:
        with _Folders(os.fsencode(root).rstrip(b"/") or b"/") as folders:
            got = folders.read(rel, max_bytes)
    except (CitelineError, OSError, ValueError):  # ValueError: a NUL in a name
        return None
    if got is None or len(got[0]) > max_bytes:
        return None
    data = got[0]
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        return None
    return data


def capture(
    bundle: str | os.PathLike[str],
    settings: Settings,
    cancel: CancelToken | None = None,
    progress: Progress | None = None,
    held: Held | None = None,
    *,
    known: Known | None = None,
    marked: frozenset[str] = frozenset(),
    overlay: Mapping[str, bytes] | None = None,
    on_read: OnRead | None = None,
) -> Snapshot:
    """Every Markdown file of the bundle: its record, and its bytes when they were read.

    With `known` (the stat index of an earlier capture), a file whose fingerprint is
    unchanged and whose last read was not racy is not read again; paths in `marked`
    (editor notifications; "*" for all) are read whatever their stat. `overlay` maps paths
    to the editor's unsaved text, used instead of the disk's bytes. `held` maps SHA-256s to
    bytes already in memory: a file read with one of those digests keeps the held bytes.
    `on_read(path, sha256, bytes)` hears of each file as the walk reads it (the analysis
    may start before the walk ends); what it hears is not yet checked against any limit.
    """
    root = check_bundle(bundle)
    limits = settings.limits
    reads = _Prefetch(limits.max_total_bytes, held, on_read)
    overlay = overlay or {}
    previous = known.files if known is not None and "*" not in marked else None
    found = list_markdown(root, settings, cancel, reads, previous, marked)
    if (
        known is not None
        and previous is not None
        and not overlay
        and len(found) == len(previous)
        and known.captured is not None
        and known.captured.settings == (settings.reserved, settings.limits)
        and not found.unread
    ):
        # Nothing read, nothing added, nothing removed (every path found was in `known`, and
        # as many): the snapshot of the capture that made `known`, already checked against
        # these same limits.
        return Snapshot(str(Path(root)), known.captured.files, known.revision, known, 0)
    if (
        known is not None
        and previous is not None
        and not overlay
        and len(found) == len(previous)
        and not found.unread
        and known.paths_max is not None
        and known.sizes is not None
    ):
        # The same, in a new process (or under new settings): the records are `known`'s,
        # in its order, and the limits are checked against the maxima it keeps.
        _check_known(known, limits, settings.advice, found)
        records = Records(list(previous), list(previous.values()), frozenset(settings.reserved))
        captured = Captured(records, (settings.reserved, settings.limits))
        after = Known(previous, known.revision, captured, known.paths_max, known.sizes)
        return Snapshot(str(Path(root)), records, known.revision, after, 0)
    found.sort(key=_path)
    paths_max = _check_paths(found, limits, settings.advice, known, previous)
    reserved = set(settings.reserved)
    files = []
    states: dict[str, FileState] = {}
    total = 0
    read = 0
    max_file = limits.max_file_bytes
    with ExitStack() as later:
        folders: _Folders | None = None
        for i, (rel, content) in enumerate(found):
            if not i & 255:
                if cancel is not None:
                    cancel.check()
                if progress is not None and i:
                    progress("capture", i, len(found))
            data = None
            if type(content) is FileState:  # the common case: nothing read
                size, digest = content.stat[2], content.sha256
                states[rel] = content
            else:
                if content is _UNREAD:
                    if folders is None:
                        root_fs = os.fsencode(root).rstrip(b"/") or b"/"
                        folders = later.enter_context(_Folders(root_fs))
                    started = time.time_ns()
                    late = folders.read(rel, max_file)
                    if late is None:
                        content = None
                    else:
                        kept, digest = reads.keep(late[0])
                        content = _Read(kept, digest, late[1], started)
                elif isinstance(content, CitelineError):
                    raise content
                if content is None:
                    continue
                assert isinstance(content, _Read)
                size, digest, data = len(content.data), content.sha256, content.data
                states[rel] = FileState.read(content.stat, digest, content.read_ns)
                read += 1
            unsaved = False
            if overlay and rel in overlay:
                data = overlay[rel]
                size, digest, unsaved = len(data), hashlib.sha256(data).hexdigest(), True
            if size > max_file:
                # A read stops just past the limit: the value reached is the file's size from
                # its stat, as a reused file reports it (the answer may not depend on a cache).
                if not unsaved and states.get(rel) is not None:
                    size = max(size, states[rel].stat[2])
                raise limit_error(
                    "max_file_bytes", size, max_file, path=rel, advice=settings.advice
                )
            total += size
            if total > limits.max_total_bytes:
                raise limit_error(
                    "max_total_bytes", total, limits.max_total_bytes, advice=settings.advice
                )
            files.append(CapturedFile(rel, size, digest, rel in reserved, data, unsaved))
    if progress is not None:
        progress("capture", len(found), len(found))
    unchanged = (
        known is not None
        and read == 0
        and len(states) == len(known.files)
        and all(a is b for a, b in zip(states.values(), known.files.values(), strict=True))
    )
    if unchanged and known is not None:
        # Every file reused, none added or removed: the disk's records, and so their
        # revision, are those `known` was made with (a new process, say, or new settings).
        states, disk = known.files, known.revision  # type: ignore[assignment]
        revision = snapshot_revision(files) if overlay else disk
    else:
        revision = snapshot_revision(files)
        # With unsaved text the revision describes the editor's text, not the disk's.
        disk = snapshot_revision(_disk_records(files, states)) if overlay else revision
    captured = None
    if not overlay:
        records = tuple(
            f if f.data is None else CapturedFile(f.path, f.size, f.sha256, f.reserved)
            for f in files
        )
        captured = Captured(records, (settings.reserved, settings.limits))
    # (with unsaved text the sizes read are the editor's: kept only for the disk's)
    sizes = None if overlay else (total, max((f.size for f in files), default=0))
    after = Known(states, disk, captured, paths_max, sizes)
    return Snapshot(str(Path(root)), tuple(files), revision, after, read)


class Records(Sequence[CapturedFile]):
    """A capture's files, made from the stat index when asked for: a new process that finds
    every file unchanged needs a handful of them (the files holding hits), not 40,000."""

    __slots__ = ("paths", "reserved", "states")

    def __init__(self, paths: list[str], states: list[FileState], reserved: frozenset[str]) -> None:
        self.paths = paths
        self.states = states
        self.reserved = reserved

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> CapturedFile:  # type: ignore[override]
        path = self.paths[i]
        state = self.states[i]
        return CapturedFile(path, state.stat[2], state.sha256, path in self.reserved)


def _check_known(
    known: Known, limits: Limits, advice: str, found: list[tuple[str, object]]
) -> None:
    """SPEC §2's capture limits for the files `known` holds, from the maxima it keeps; the
    full checks (in path order) when one is over, to report the file that is."""
    assert known.paths_max is not None and known.sizes is not None
    longest, deepest = known.paths_max
    total, biggest = known.sizes
    # max_files needs no check here: the walk that made `found` raised it already.
    if longest > limits.max_path_bytes or deepest > limits.max_path_components:
        found.sort(key=_path)
        _check_paths(found, limits, advice)
    if biggest > limits.max_file_bytes or total > limits.max_total_bytes:
        running = 0
        for rel, state in known.files.items():
            size = state.stat[2]
            if size > limits.max_file_bytes:
                raise limit_error(
                    "max_file_bytes", size, limits.max_file_bytes, path=rel, advice=advice
                )
            running += size
            if running > limits.max_total_bytes:
                raise limit_error("max_total_bytes", running, limits.max_total_bytes, advice=advice)


def _disk_records(files: list[CapturedFile], states: Mapping[str, FileState]) -> list[CapturedFile]:
    return [
        f
        if not f.unsaved
        else CapturedFile(f.path, states[f.path].size, states[f.path].sha256, f.reserved)
        for f in files
    ]


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
        self._folders: _Folders | None = None

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
            root = os.fsencode(self.snapshot.root).rstrip(b"/") or b"/"
            self._folders = self._stack.enter_context(_Folders(root))
        got = self._folders.read(file.path, file.size)
        if got is None or len(got[0]) != file.size:
            raise Changed(file.path)
        data = got[0]
        if hashlib.sha256(data).hexdigest() != file.sha256:
            raise Changed(file.path)
        self.read.append((file.sha256, data))
        return data
