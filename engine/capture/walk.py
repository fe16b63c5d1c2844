"""The walk of a capture (SPEC §2): every Markdown file of the bundle, found without
following links, with git's ignore rules and the walk's own limits, each file either vouched
for by the stat index or read while the walk is in its folder.

The walk only decides *what* is listed and read; how folders are opened and files read is
the backend's (files.py), so the same walk runs on Linux, macOS and Windows.
"""

from __future__ import annotations

import errno
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..base.cancel import CancelToken
from ..base.errors import CitelineError, quoted
from ..base.limits import Limits, Settings, limit_error
from . import files, stats
from .files import Backend
from .globs import globs_of
from .ignore import Above, Ignores, name_fold, read_gitignore, repository_rules
from .reads import unreadable
from .snapshot import Walked
from .stats import FileState, Fingerprint, fingerprint

OnRead = Callable[[str, str, bytes], None]  # (path, sha256, bytes) of a file just read


class HeldBytes(Protocol):
    """Bytes already in memory, by SHA-256 (reuse.RecentBytes is one)."""

    def get(self, sha256: str) -> bytes | None: ...


class Prefetch:
    """Files read and hashed while the walk is in their folder: one open, relative to the
    folder, instead of reopening every folder of the path later.

    Errors are kept, not raised, so the order of checks stays that of SPEC §2 (the walk and
    its limits first, then paths, then files in path order). Reading stops once more than
    max_total_bytes were read; the files left are read in path order afterwards, only until
    the limit is reported, so a bundle far over the limit is never read whole.
    """

    __slots__ = ("budget", "held", "on_read", "read")

    def __init__(self, budget: int, held: HeldBytes | None, on_read: OnRead | None = None) -> None:
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
class FileRead:
    """What reading one file gave: its bytes, their SHA-256, and the fingerprint and time
    of the read (for the stat index)."""

    data: bytes
    sha256: str
    stat: Fingerprint
    read_ns: int


UNREAD = object()  # a file the walk left for the path-order pass


class Listing(list):  # type: ignore[type-arg]
    """The walk's (path, content) pairs, and whether the stat index failed to vouch for any
    of them (so a capture knows at once whether anything at all must be read).

    `walked`, when the walk was asked for it (a change journal is on): what the next
    journaled capture must know of this one (see Walked)."""

    unread = False
    walked: Walked | None = None


def above_signature(above: Sequence[Above]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The rules above the bundle as comparable values: each file's lines and prefix."""
    return tuple((a.prefix, tuple(a.rules.lines)) for a in above)


def list_markdown(
    root: str,
    settings: Settings,
    cancel: CancelToken | None,
    prefetch: Prefetch | None = None,
    known: Mapping[str, FileState] | None = None,
    marked: frozenset[str] = frozenset(),
    backend: Backend | None = None,
    journaled: bool = False,
) -> Listing:
    """(relative path, content) of every capturable file, in the walk's order.

    The content is the FileState from `known` when the file's stat fingerprint still equals
    it, its read was not racy and the path is not `marked` (bytes unchanged: nothing read);
    else what the walk read (a FileRead, None for a file that is gone or no longer a regular
    file, or the CitelineError reading it raised), or UNREAD. The walk is iterative (no
    recursion limit) and holds one folder handle per level.
    """
    bk = backend or files.BACKEND
    limits = settings.limits
    max_bytes = limits.max_file_bytes
    max_files = limits.max_files
    found = Listing()
    # The repository's rules above the bundle are read afresh by every capture: an edit to
    # one of them is an input of this capture like the bundle's own files.
    above = repository_rules(root, bk) if settings.use_ignore else ()
    ignores = Ignores(above, fold=name_fold(settings.ignore_case, settings.ignore_nfc))
    # The user's globs leave files out as ignored ones are: before any stat, read or limit.
    globs = globs_of(settings.globs)
    # With a journal on, the files with other links (stat'ed on every journaled request).
    linked: set[str] | None = set() if journaled else None
    previous = known or {}
    get = previous.get
    budget = prefetch.budget if prefetch is not None else 0
    # Each frame: (folder handle, bundle-relative folder "a/b/", folders left, pushed ignores).
    stack: list[tuple[Any, str, list[str], bool]] = []

    def scan(folder: Any, rel_dir: str, folders: list[str], unread: list[tuple[str, str]]) -> None:
        """One folder's entries: subfolders to `folders`, files whose bytes the stat index
        vouches for to `found`, the others to `unread`."""
        ignoring = ignores.active
        coarse = stats.COARSE_NS
        for name, is_folder, entry in bk.entries(folder):
            if is_folder:
                folders.append(name)
                continue
            rel = rel_dir + name
            if ignoring and ignores.ignored(rel):
                continue
            if globs is not None and not globs.takes(rel):
                continue
            # The stat index (SPEC §2): reused when the fingerprint is the one recorded at a
            # read that was not racy, and no editor marked the file since. (Equal fingerprints
            # mean the same inode, so still a regular file, and a path already checked.)
            if linked is not None:
                try:
                    if entry.stat(follow_symlinks=False).st_nlink > 1:
                        linked.add(rel)
                except OSError:
                    pass  # (what the walk does with such a file is decided below)
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
                check_utf8(rel, rel_dir)
            unread.append((name, rel))

    def enter(name: str, parent: Any, rel_dir: str) -> None:
        if parent is None:
            folder: Any = bk.root(root)
        else:
            folder = _open_dir(bk, parent, name, rel_dir, limits)
        if folder is None:
            return
        try:
            if cancel is not None:
                cancel.check()
            pushed = False
            if settings.use_ignore:
                rules = read_gitignore(folder, backend=bk)
                if rules is not None:
                    ignores.stack.append((rel_dir, rules))
                    pushed = True
            folders: list[str] = []
            unread: list[tuple[str, str]] = []
            start = len(found)
            try:
                scan(folder, rel_dir, folders, unread)
            except PermissionError as exc:
                raise unreadable("Folder", rel_dir.rstrip("/") or ".", exc) from None
            except (FileNotFoundError, NotADirectoryError):
                pass  # vanished during the walk
            if len(found) > max_files:
                raise limit_error("max_files", max_files + 1, max_files)
            # What must be read, in name order: reads (and what a limit stops at) do not
            # depend on the directory's own order.
            unread.sort()
            for name, rel in unread:
                content: object = UNREAD
                if prefetch is not None and prefetch.read <= budget:
                    if cancel is not None:
                        cancel.check()
                    content = read_listed(bk, folder, name, rel, max_bytes, prefetch)
                found.append((rel, content))
                found.unread = True
                if len(found) > max_files:
                    raise limit_error("max_files", max_files + 1, max_files)
            if (unread or folders) and not bk.same(folder):
                # (the path backend) the folder was swapped while its files were read: what
                # came from it may be from elsewhere; it is treated as removed meanwhile
                del found[start:]
                folders.clear()
        except BaseException:
            bk.close(folder)
            raise
        folders.sort(reverse=True)  # popped from the end: name order
        stack.append((folder, rel_dir, folders, pushed))

    try:
        enter("", None, "")
        while stack:
            folder, rel_dir, folders, pushed = stack[-1]
            if not folders:
                stack.pop()
                bk.close(folder)
                if pushed:
                    ignores.stack.pop()
                continue
            name = folders.pop()
            rel = rel_dir + name + "/"
            if (not ignores.active or not ignores.ignored(rel)) and (
                globs is None or not globs.prunes(rel)
            ):
                enter(name, folder, rel)
    finally:
        for folder, *_ in stack:
            bk.close(folder)
    if linked is not None:
        found.walked = Walked(above_signature(above), frozenset(linked))
    return found


def _open_dir(backend: Backend, parent: Any, name: str, rel_dir: str, limits: Limits) -> Any:
    """A folder opened without following a link (None when it vanished or became one).

    Folders are opened as the backend opens them (relative to their parent's descriptor, or
    by path with identity checks), so a folder swapped for a link during the walk cannot
    lead outside the bundle.
    """
    try:
        return backend.open_dir(parent, name)
    except OSError as exc:
        shown = rel_dir.rstrip("/") or "."
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            return None
        depth = rel_dir.count("/")
        if exc.errno in (errno.EMFILE, errno.ENFILE) and depth >= limits.max_path_components:
            # Every file this deep is over the limit; the walk cannot go deeper anyway.
            raise limit_error(
                "max_path_components",
                depth + 1,
                limits.max_path_components,
                path=shown,
            ) from None
        if exc.errno == errno.ENAMETOOLONG:
            size = len(rel_dir.encode("utf-8", "surrogateescape"))
            if size >= limits.max_path_bytes:
                # (a path-based walk: the system's longest path was reached) every file
                # below this folder is over the limit as well
                raise limit_error(
                    "max_path_bytes", size + 1, limits.max_path_bytes, path=shown
                ) from None
        raise unreadable("Folder", shown, exc) from None


def check_utf8(rel: str, rel_dir: str) -> None:
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


def read_listed(
    backend: Backend, folder: Any, name: str, rel: str, max_bytes: int, prefetch: Prefetch
) -> object:
    """A FileRead of one file, None when it is gone, or the CitelineError reading it raised."""
    started = time.time_ns()
    try:
        got = backend.read(folder, name, rel, max_bytes)
    except CitelineError as exc:
        return exc
    if got is None:
        return None
    data, stat = got
    kept, digest = prefetch.keep(data)
    if prefetch.on_read is not None:
        prefetch.on_read(rel, digest, kept)
    return FileRead(kept, digest, stat, started)


__all__ = [
    "UNREAD",
    "FileRead",
    "HeldBytes",
    "Listing",
    "OnRead",
    "Prefetch",
    "above_signature",
    "list_markdown",
]
