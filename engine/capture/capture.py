"""Capture (SPEC §2): the snapshot of a bundle, composed of the walk and the reads.

The walk (walk.py) lists every Markdown file without following links, with git's ignore
rules, and reads what the stat index does not vouch for while it is in the file's folder;
the backend (files.py) opens and reads for it on this platform. Here the two are composed
in SPEC §2's order of checks: the bundle path, then the walk's limits (files), the path
limits, the bytes of each file in path order, and the overlay of unsaved text, into
records, a revision and the stat index for the next capture.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.cancel import CancelToken
from ..base.errors import CitelineError
from ..base.limits import Limits, Settings, limit_error
from . import files as reading
from .descriptor_backend import read_file
from .files import Changed, Fetcher, Folders, check_bundle, read_inside
from .journaled import list_changed, rules_above
from .reads import bundle_error, is_markdown
from .revision import snapshot_revision
from .snapshot import CapturedFile, Snapshot, Walked
from .stats import Captured, FileState, StatIndex, interned
from .walk import (
    UNREAD,
    FileRead,
    HeldBytes,
    OnRead,
    Prefetch,
    above_signature,
    list_markdown,
)

if TYPE_CHECKING:
    from .journals import Look

Progress = Callable[[str, int, int], None]
_path = itemgetter(0)


def _check_paths(
    found: list[tuple[str, object]],
    limits: Limits,
    known: StatIndex | None = None,
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
            more = _check_paths(new, limits)
            return max(longest, more[0]), max(deepest, more[1])
        longest, deepest = 0, 0
    for rel, _ in found:
        size = len(rel.encode("utf-8")) if not rel.isascii() else len(rel)
        if size > limits.max_path_bytes:
            raise limit_error("max_path_bytes", size, limits.max_path_bytes, path=rel)
        parts = rel.count("/") + 1
        if parts > limits.max_path_components:
            raise limit_error("max_path_components", parts, limits.max_path_components, path=rel)
        longest = max(longest, size)
        deepest = max(deepest, parts)
    return longest, deepest


def capture(
    bundle: str | os.PathLike[str],
    settings: Settings,
    cancel: CancelToken | None = None,
    progress: Progress | None = None,
    held: HeldBytes | None = None,
    *,
    known: StatIndex | None = None,
    marked: frozenset[str] = frozenset(),
    overlay: Mapping[str, bytes] | None = None,
    on_read: OnRead | None = None,
    look: Look | None = None,
) -> Snapshot:
    """Every Markdown file of the bundle: its record, and its bytes when they were read.

    With `known` (the stat index of an earlier capture), a file whose fingerprint is
    unchanged and whose last read was not racy is not read again; paths in `marked`
    (editor notifications; "*" for all) are read whatever their stat. `overlay` maps paths
    to the editor's unsaved text, used instead of the disk's bytes. `held` maps SHA-256s to
    bytes already in memory: a file read with one of those digests keeps the held bytes.
    `on_read(path, sha256, bytes)` hears of each file as the walk reads it (the analysis
    may start before the walk ends); what it hears is not yet checked against any limit.

    `look` (a change journal's drain just before this capture, capture/journal.py): when it
    names what may have changed since `known` was made, only those files, the `marked`
    ones, the racy ones and those with other links are stat'ed (and read if they differ),
    instead of every file; the snapshot is the one the full walk would make.
    """
    root = check_bundle(bundle)
    limits = settings.limits
    reads = Prefetch(limits.max_total_bytes, held, on_read)
    overlay = overlay or {}
    previous = known.files if known is not None and "*" not in marked else None
    backend = reading.BACKEND
    found = None
    if look is not None and look.changed is not None and known is not None and previous:
        before = look.above
        assert isinstance(before, Walked)
        check = look.changed | marked | look.racy | before.linked
        # A second name of a captured file may have been made, written through or removed
        # (journal.Drained.restat): every file is stat'ed, and those that changed with no
        # event naming them are kept stat'ed (journaled.list_changed).
        named = look.changed | marked if look.restat else None
        if named is not None:
            check = check.union(previous)
        if (
            not check
            and not overlay
            and known.captured is not None
            and known.captured.settings == (settings.reserved, settings.limits, settings.globs)
            and above_signature(rules_above(root, settings, backend)) == before.above
        ):
            # Nothing changed that the journal saw, none racy or linked, the rules above the
            # bundle the same: the snapshot of the capture that made `known`.
            return Snapshot(str(Path(root)), known.captured.files, known.revision, known, 0, before)
        found = list_changed(
            root, settings, cancel, reads, previous, check, marked, before, backend, named
        )
    if found is None:
        journaled = look is not None and look.generation > 0
        found = list_markdown(root, settings, cancel, reads, previous, marked, backend, journaled)
    if (
        known is not None
        and previous is not None
        and not overlay
        and len(found) == len(previous)
        and known.captured is not None
        and known.captured.settings == (settings.reserved, settings.limits, settings.globs)
        and not found.unread
    ):
        # Nothing read, nothing added, nothing removed (every path found was in `known`, and
        # as many): the snapshot of the capture that made `known`, already checked against
        # these same limits.
        return Snapshot(
            str(Path(root)), known.captured.files, known.revision, known, 0, found.walked
        )
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
        _check_known(known, limits, found)
        records = Records(list(previous), list(previous.values()), frozenset(settings.reserved))
        made = Captured(records, (settings.reserved, settings.limits, settings.globs))
        after = StatIndex(previous, known.revision, made, known.paths_max, known.sizes)
        return Snapshot(str(Path(root)), records, known.revision, after, 0, found.walked)
    found.sort(key=_path)
    paths_max = _check_paths(found, limits, known, previous)
    reserved = set(settings.reserved)
    files = []
    states: dict[str, FileState] = {}
    devices: dict[int, int] = {}  # see stats.interned
    total = 0
    read = 0
    max_file = limits.max_file_bytes
    with ExitStack() as later:
        folders: Folders | None = None
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
                if content is UNREAD:
                    if folders is None:
                        folders = later.enter_context(Folders(root, backend))
                    started = time.time_ns()
                    late = folders.read(rel, max_file)
                    if late is None:
                        content = None
                    else:
                        kept, digest = reads.keep(late[0])
                        content = FileRead(kept, digest, late[1], started)
                elif isinstance(content, CitelineError):
                    raise content
                if content is None:
                    continue
                assert isinstance(content, FileRead)
                size, digest, data = len(content.data), content.sha256, content.data
                states[rel] = FileState.read(
                    interned(content.stat, devices), digest, content.read_ns
                )
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
                raise limit_error("max_file_bytes", size, max_file, path=rel)
            total += size
            if total > limits.max_total_bytes:
                raise limit_error("max_total_bytes", total, limits.max_total_bytes)
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
    captured: Captured | None = None
    if not overlay:
        bare = tuple(
            f if f.data is None else CapturedFile(f.path, f.size, f.sha256, f.reserved)
            for f in files
        )
        captured = Captured(bare, (settings.reserved, settings.limits, settings.globs))
    # (with unsaved text the sizes read are the editor's: kept only for the disk's)
    sizes = None if overlay else (total, max((f.size for f in files), default=0))
    after = StatIndex(states, disk, captured, paths_max, sizes)
    return Snapshot(str(Path(root)), tuple(files), revision, after, read, found.walked)


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


def _check_known(known: StatIndex, limits: Limits, found: list[tuple[str, object]]) -> None:
    """SPEC §2's capture limits for the files `known` holds, from the maxima it keeps; the
    full checks (in path order) when one is over, to report the file that is."""
    assert known.paths_max is not None and known.sizes is not None
    longest, deepest = known.paths_max
    total, biggest = known.sizes
    # max_files needs no check here: the walk that made `found` raised it already.
    if longest > limits.max_path_bytes or deepest > limits.max_path_components:
        found.sort(key=_path)
        _check_paths(found, limits)
    if biggest > limits.max_file_bytes or total > limits.max_total_bytes:
        running = 0
        for rel, state in known.files.items():
            size = state.stat[2]
            if size > limits.max_file_bytes:
                raise limit_error("max_file_bytes", size, limits.max_file_bytes, path=rel)
            running += size
            if running > limits.max_total_bytes:
                raise limit_error("max_total_bytes", running, limits.max_total_bytes)


def _disk_records(files: list[CapturedFile], states: Mapping[str, FileState]) -> list[CapturedFile]:
    return [
        f
        if not f.unsaved
        else CapturedFile(f.path, states[f.path].size, states[f.path].sha256, f.reserved)
        for f in files
    ]


__all__ = [
    "Changed",
    "Fetcher",
    "HeldBytes",
    "OnRead",
    "Progress",
    "Records",
    "bundle_error",
    "capture",
    "check_bundle",
    "is_markdown",
    "read_file",
    "read_inside",
]
