"""The change journals of one engine (capture/journal.py holds one bundle's): which drain each
stat index follows, so that a request is told every path changed since the walk that made
the stat index it starts from, whatever other requests drained meanwhile.

A long-lived front turns them on with `Engine(journal=True)`; a one-shot call has none.

Locks: the engine-wide one guards only the map of bundles (never held over a drain, nor
while watches are set); each bundle has its own, held over its one bounded drain and the
bookkeeping of its drains, so that a flooded or freshly watched bundle holds no request of
another (issue 49).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .journal import Journal, open_journal

LOG_KEPT = 64  # drains remembered per bundle: a stat index older than that is walked again
TAGS_KEPT = 2  # stat indexes per bundle whose drain is known (two captures ending together)


@dataclass(frozen=True, slots=True)
class Look:
    """One request's drain, before its capture: the paths that may have changed since the
    stat index `known` was made (None: the journal cannot tell, walk everything), and what
    that index's walk knew (the rules above the bundle, the files with other links)."""

    generation: int
    membership: tuple[bool, bool, bool]  # the settings that decide which files a walk takes
    changed: frozenset[str] | None = None
    above: object = None  # snapshot.Walked of the walk that made `known`
    racy: frozenset[str] = frozenset()  # files of `known` whose read was racy
    reason: str = ""  # why `changed` is None (for logs and tests)
    # A drain since may have seen a second name of a captured file (journal.Drained.restat):
    # every file of `known` is stat'ed again, not only `changed`.
    restat: bool = False
    globs: tuple[str, ...] = ()  # the user's globs of the capture (which journal slot)


@dataclass(slots=True)
class _Tag:
    known: Any  # stats.StatIndex, by identity
    generation: int
    membership: tuple[bool, bool, bool]
    walked: object  # snapshot.Walked
    racy: frozenset[str] | None = None

    def racy_paths(self) -> frozenset[str]:
        """The files whose read was racy (no fingerprint vouches for them): read again on
        every request until a read is not racy. Found once per stat index."""
        if self.racy is None:
            self.racy = frozenset(p for p, s in self.known.files.items() if s.reuse_if is None)
        return self.racy


class _Bundle:
    __slots__ = ("generation", "journal", "lock", "log", "tags")

    def __init__(self) -> None:
        self.journal: Journal | str | None = None  # made by the first look, under `lock`
        self.lock = threading.Lock()
        self.generation = 0
        # (generation, paths or None when that drain did not vouch, whether it asked for a
        # stat of every file)
        self.log: list[tuple[int, frozenset[str] | None, bool]] = []
        self.tags: list[_Tag] = []

    def close(self) -> None:
        with self.lock:
            if isinstance(self.journal, Journal):
                self.journal.close()


class Journals:
    """The change journals of an engine's bundles (a long-lived front turns them on with
    `Engine(journal=True)`), and which drain each stat index follows.

    A stat index made by a capture whose walk began after drain g is exact as of g: the
    changes since are those of the drains after g (their union), unless one of them could
    not vouch. Drains are numbered per bundle; the last LOG_KEPT are remembered, so that
    requests under several settings, each with its own stat index, each see everything.

    A bundle has one journal per membership (the settings that decide which folders the
    walk enters, hence which the journal watches); `make(root, membership)` makes one."""

    def __init__(
        self,
        make: Callable[[str, tuple[bool, bool, bool]], Journal | str] | None = None,
        kept: int = 8,
    ) -> None:
        self._make = make or (lambda root, membership: open_journal(root, membership=membership))
        self._kept = kept
        self._bundles: dict[tuple[str, tuple[bool, bool, bool], tuple[str, ...]], _Bundle] = {}
        self._lock = threading.Lock()

    def look(self, key: str, root: str, known: object, settings: Any) -> Look:
        """Drain the bundle's journal (watching it first, the first time), and say what may
        have changed since `known` was made (under `settings`: limits.Settings)."""
        # What decides which files a walk takes; the other settings act on what it found.
        membership = (settings.use_ignore, settings.ignore_case, settings.ignore_nfc)
        with self._lock:
            # The user's globs decide membership too, but not which folders are watched
            # (watching more only costs events): a changed glob list has its own drains and
            # tags, so its first capture walks afresh.
            slot = (key, membership, settings.globs)
            bundle = self._bundles.pop(slot, None) or _Bundle()
            self._bundles[slot] = bundle  # the most recent last
            evicted = []
            while len(self._bundles) > self._kept:
                evicted.append(self._bundles.pop(next(iter(self._bundles))))
        for old in evicted:
            old.close()
        with bundle.lock:
            if bundle.journal is None:
                bundle.journal = self._make(root, membership)
            # The engine keeps one stat index per bundle (`known`): a tag of another is stale
            # and would only keep that index's tens of thousands of states alive.
            bundle.tags = [t for t in bundle.tags if t.known is known]
            journal = bundle.journal
            if isinstance(journal, str):
                return Look(0, membership, reason=journal, globs=settings.globs)
            drained = journal.drain()
            bundle.generation += 1
            generation = bundle.generation
            paths = drained.paths if drained.vouched else None
            bundle.log.append((generation, paths, drained.restat))
            del bundle.log[:-LOG_KEPT]
            if not drained.vouched:
                return Look(generation, membership, reason=drained.reason, globs=settings.globs)
            tag = bundle.tags[0] if bundle.tags else None
            if known is None or tag is None:
                return Look(
                    generation,
                    membership,
                    reason="no stat index from a watched walk",
                    globs=settings.globs,
                )
            if tag.membership != membership:
                return Look(generation, membership, reason="other settings", globs=settings.globs)
            changed: set[str] = set()
            restat = False
            first = bundle.log[0][0]
            if tag.generation < first - 1:
                return Look(
                    generation,
                    membership,
                    reason="stat index older than the log",
                    globs=settings.globs,
                )
            for gen, named, everything in bundle.log:
                if gen <= tag.generation:
                    continue
                if named is None:
                    return Look(
                        generation,
                        membership,
                        reason="a drain since did not vouch",
                        globs=settings.globs,
                    )
                changed |= named
                restat = restat or everything
            return Look(
                generation,
                membership,
                frozenset(changed),
                tag.walked,
                tag.racy_paths(),
                restat=restat,
                globs=settings.globs,
            )

    def made(self, key: str, look: Look, known: object, walked: object) -> None:
        """The capture after `look` made the stat index `known`; its walk: `walked`."""
        if not look.generation or known is None or walked is None:
            return
        with self._lock:
            bundle = self._bundles.get((key, look.membership, look.globs))
        if bundle is None:
            return
        with bundle.lock:
            for tag in bundle.tags:
                if tag.known is known:
                    if look.generation > tag.generation and tag.membership == look.membership:
                        # the same index, vouched for again up to this later drain
                        tag.generation, tag.walked = look.generation, walked
                    return
            bundle.tags.append(_Tag(known, look.generation, look.membership, walked))
            del bundle.tags[:-TAGS_KEPT]

    def watches(self) -> int:
        """inotify watches held (the benchmark's memory figure)."""
        with self._lock:
            bundles = list(self._bundles.values())
        return sum(b.journal.watches for b in bundles if isinstance(b.journal, Journal))

    def close(self) -> None:
        with self._lock:
            bundles = list(self._bundles.values())
            self._bundles.clear()
        for bundle in bundles:
            bundle.close()


__all__ = ["Journals", "Look"]
