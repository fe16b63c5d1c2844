"""The stat index: what the engine knows of each file's bytes without reading them again.

SPEC §2 "Reuse without reading again": a file's bytes are taken as unchanged when its stat
fingerprint (device, inode, size, mtime, ctime) equals the one recorded when they were read,
that read was not *racy* (the file's mtime was strictly older than the moment of the read,
allowing for timestamp granularity, as git treats a "racily clean" index entry), and no
editor notification has marked the file changed since.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..base.codec import I64, Reader, Writer, expect
from ..base.platform import PLATFORM

# A file modified less than this long before it was read is read again next time: the file
# system's timestamps are coarser than the clock (kernel ticks of 1-10 ms on Linux, 2 s on
# FAT), and a network file system's clock may run a little ahead of ours.
RACY_NS = 2_000_000_000

Fingerprint = tuple[int, int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns


# Tests set this to see the file system as one with coarse timestamps (many write in the
# same tick of the kernel's clock; Linux 6.13+ gives a fine-grained time to a write that
# follows a stat, so this machine alone would never show the case the racy rule is for).
COARSE_NS = 0

# Whether st_ctime is the inode's change time, which nothing can set (POSIX), so the racy
# rule may trust it too; on Windows it is the creation time (the platform seam decides).
CTIME_CHANGES = PLATFORM.ctime_changes


def fingerprint(st: object) -> Fingerprint:
    dev, ino, size = st.st_dev, st.st_ino, st.st_size  # type: ignore[attr-defined]
    mtime, ctime = st.st_mtime_ns, st.st_ctime_ns  # type: ignore[attr-defined]
    if COARSE_NS:
        mtime -= mtime % COARSE_NS
        ctime -= ctime % COARSE_NS
    return (dev, ino, size, mtime, ctime)


def interned(stat: Fingerprint, devices: dict[int, int]) -> Fingerprint:
    """`stat` holding the one int object of its device that `devices` (a capture's) keeps:
    each stat makes a new one, and the stat index keeps a fingerprint per file (1.2 MiB for
    the tldr pages' 38,365 files on one device)."""
    dev = devices.setdefault(stat[0], stat[0])
    return stat if dev is stat[0] else (dev, stat[1], stat[2], stat[3], stat[4])


class FileState(NamedTuple):
    """The bytes last read for one path: their fingerprint, digest and when they were read.

    A named tuple rather than a dataclass: a workspace holds one per file (40,000 in a big
    one), made again from the cache by every new process, where tuples cost a third.
    """

    stat: Fingerprint
    sha256: str
    read_ns: int  # time.time_ns() just before the file was opened
    # The fingerprint under which these bytes may be reused: `stat`, unless the read was
    # racy (the file had been modified or its inode changed in the last RACY_NS before it),
    # then None: no stat can vouch for bytes that may have changed within the same tick.
    reuse_if: Fingerprint | None

    @classmethod
    def read(cls, stat: Fingerprint, sha256: str, read_ns: int) -> FileState:
        # ctime too, not only mtime as git does: anyone can put an mtime back (touch -d),
        # but setting it changes the ctime, which nothing can set. Not where ctime is a
        # creation time (Windows): an old creation time says nothing of the last write.
        changed = max(stat[3], stat[4]) if CTIME_CHANGES else stat[3]
        trusted = changed < read_ns - RACY_NS
        return cls(stat, sha256, read_ns, stat if trusted else None)

    @property
    def size(self) -> int:
        return self.stat[2]

    def trusted(self) -> bool:
        """Not racy: the file had not changed in the last RACY_NS before the read."""
        return self.reuse_if is not None


@dataclass(frozen=True, slots=True)
class Captured:
    """A capture's files (records, no bytes) and the settings they were checked against."""

    files: Sequence[Any]  # snapshot.CapturedFile, in path order
    settings: tuple[Any, ...]  # (reserved names, limits)


@dataclass(frozen=True, slots=True)
class StatIndex:
    """One bundle's stat index after a capture: each captured path's state, in path order,
    and the snapshot_revision of those records (an unchanged bundle needs no new one).

    `captured` (in memory only) is that capture's list of files, so that a capture finding
    nothing changed under the same settings hands it back instead of building it again.
    """

    files: Mapping[str, FileState]
    revision: str
    captured: Captured | None = None
    # The longest path in UTF-8 bytes and the most components of any path (SPEC §2's path
    # limits), so that a new process need not measure every path again.
    paths_max: tuple[int, int] | None = None
    # The bytes of all files and of the biggest (the byte limits), for the same reason.
    sizes: tuple[int, int] | None = None

    def encode(self) -> bytes:
        paths = list(self.files)
        states = list(self.files.values())
        numbers = array(I64)
        for s in states:
            dev, ino, size, mtime, ctime = s.stat
            # The inode as two 64-bit words: Windows' file ids are 128-bit on ReFS.
            ino = _held_inode(ino)
            numbers.extend((_signed(dev), _signed(ino & _WORD), _signed(ino >> 64)))
            numbers.extend((size, mtime, ctime, s.read_ns, s.reuse_if is not None))
        w = Writer().strs(paths).strs([s.sha256 for s in states]).ints(numbers, I64)
        w.ints(self.paths_max or (-1, -1), I64).ints(self.sizes or (-1, -1), I64)
        return w.text(self.revision).finish(_KIND)

    @classmethod
    def decode(cls, blob: bytes) -> StatIndex:
        r = Reader(blob, _KIND)
        paths = r.strs()
        shas = r.strs()
        numbers = r.ints(I64)
        longest = r.ints(I64)
        sizes = r.ints(I64)
        revision = r.text()
        r.end()
        n = _COLUMNS
        expect(len(shas) == len(paths) and len(numbers) == n * len(paths), "stat index size")
        expect(len(revision) == 64 and all(len(s) == 64 for s in shas), "digests")
        expect(len(longest) == 2 and len(sizes) == 2, "maxima")
        # Column by column, tuples made in C: a new process decodes 40,000 of these at once.
        # Whether each read was racy was decided when it happened (against its own clock
        # reading), and is kept with it.
        devs, los, his, sizes_, mtimes, ctimes, reads, trusted = (numbers[k::n] for k in range(n))
        if min(devs, default=0) < 0:
            devs = list(map(_unsigned, devs))  # type: ignore[assignment]
        inos: Any = los
        if his.count(0) != len(his) or min(los, default=0) < 0:
            inos = [_unsigned(lo) | _unsigned(hi) << 64 for lo, hi in zip(los, his, strict=True)]
        stats = list(zip(devs, inos, sizes_, mtimes, ctimes, strict=True))
        reuse = [stat if ok else None for stat, ok in zip(stats, trusted, strict=True)]
        files = dict(
            zip(
                paths,
                map(FileState._make, zip(stats, shas, reads, reuse, strict=True)),
                strict=True,
            )
        )
        paths_max = (longest[0], longest[1]) if longest[0] >= 0 else None
        size_max = (sizes[0], sizes[1]) if sizes[0] >= 0 else None
        return cls(files, revision, None, paths_max, size_max)


_KIND = b"F"  # (b"K" held the inode in one 64-bit word)
_COLUMNS = 8  # dev, inode low word, inode high word, size, mtime, ctime, read time, trusted
_WORD = (1 << 64) - 1


def _held_inode(ino: int) -> int:
    """`ino` when it fits 128 bits (every file system's ids do); else a 128-bit digest of
    it, which no stat will equal again: such a file is simply read every time."""
    if ino >> 128 == 0:
        return ino
    import hashlib

    return int.from_bytes(hashlib.sha256(str(ino).encode()).digest()[:16], "little")


def _signed(value: int) -> int:
    """A word of st_dev or st_ino is unsigned 64-bit; stored as signed (two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


class Marks:
    """Paths an editor reported changed: read again at the next capture, whatever the stat.

    A mark is cleared only by a capture that started after it was made, so a notification
    that arrives while a capture is running is not lost.
    """

    def __init__(self) -> None:
        self._marks: dict[str, dict[str, int]] = {}
        self._clock = 0
        self._lock = threading.Lock()

    def mark(self, bundle: str, paths: Iterable[str] | None) -> None:
        """Mark `paths` of `bundle` (bundle-relative); None marks every file."""
        with self._lock:
            self._clock += 1
            marks = self._marks.setdefault(bundle, {})
            for path in ["*"] if paths is None else paths:
                marks[path] = self._clock

    def current(self, bundle: str) -> tuple[int, frozenset[str]]:
        """The clock now, and the marked paths ("*": all)."""
        with self._lock:
            return self._clock, frozenset(self._marks.get(bundle, ()))

    def clear(self, bundle: str, upto: int) -> None:
        """Forget marks made before a capture that started at `upto`."""
        with self._lock:
            marks = self._marks.get(bundle)
            if not marks:
                return
            for path in [p for p, t in marks.items() if t <= upto]:
                del marks[path]
