"""What a capture makes (SPEC §2): a snapshot of a bundle, its files, and what the next
journaled capture needs of its walk. Types only, so that every part of capture (the
backends behind files.py, the walk, the journal) may name them without importing capture.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .stats import StatIndex


@dataclass(frozen=True, slots=True)
class Walked:
    """What a journaled capture needs of the walk before it, besides the stat index: the
    rules above the bundle it applied (read afresh, compared: they lie outside the watched
    folders), and the files that had more than one link (a write through a link outside
    the bundle raises no event in its folders, so those are stat'ed on every request)."""

    above: tuple[tuple[str, tuple[str, ...]], ...]
    linked: frozenset[str]


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
    known: StatIndex | None = None  # the stat index after this capture
    read: int = 0  # files this capture read from disk
    # With a change journal on: what the next journaled capture needs of this one's walk.
    walked: Walked | None = None

    @property
    def searchable(self) -> tuple[CapturedFile, ...]:
        return tuple(f for f in self.files if not f.reserved)


__all__ = ["CapturedFile", "Snapshot", "Walked"]
