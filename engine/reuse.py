"""Reuse: what an engine remembers so that a request reads and analyses only what changed.

One stage of the pipeline (capture → reuse → analysis → rank), in three layers:

- the **stat index** (stats.py): each bundle's file fingerprints, digests and read times,
  and the marks editors' notifications leave, so capture reads only what it must;
- the **live indexes**: the last Index of each bundle and option set, in memory, and the
  bytes of files recently read (for snippets and line search), both bounded;
- the **persistent cache** (store.py): the same stat index, blocks, per-file structures and
  each bundle's last list of blocks, in SQLite, so that a new process (a CLI call, a
  server start) starts where the last one stopped.

Nothing here decides a result: every value is checked against the bytes' SHA-256 or
rebuilt, and the results are byte-identical with the cache, without it and with a broken one.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base.codec import I32, I64, Corrupt, Reader, Writer, expect
from .capture.stats import Marks, StatIndex
from .index.blocks import ANALYSIS_VERSION, Block
from .index.index import Checked, Index
from .store.store import Store

if TYPE_CHECKING:
    from .capture.journals import Journals

log = logging.getLogger("citeline.reuse")

BUNDLES_KEPT = 8  # stat indexes kept in memory
INDEXES_KEPT = 4  # e.g. the contract's and the recall profile's index of two folders


@dataclass(frozen=True, slots=True)
class Live:
    revision: str
    index: Index


class RecentBytes:
    """Bytes of files recently read, by SHA-256; least recently used dropped past a budget."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, sha256: str) -> bytes | None:
        with self._lock:
            data = self._items.get(sha256)
            if data is not None:
                self._items.move_to_end(sha256)
            return data

    def put(self, items: Sequence[tuple[str, bytes]]) -> None:
        if self.max_bytes <= 0:
            return
        with self._lock:
            for sha, data in items:
                if sha in self._items:
                    self._items.move_to_end(sha)
                    continue
                if len(data) > self.max_bytes:
                    continue
                self._items[sha] = data
                self._size += len(data)
            while self._size > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self._size -= len(old)


class Structures:
    """build.StructureCache over the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get_many(self, shas: Sequence[str]) -> dict[str, bytes]:
        if not self.store.enabled:
            return {}
        prefix = ANALYSIS_VERSION + ":"
        found = self.store.get_many("structure", [prefix + s for s in dict.fromkeys(shas)])
        return {key[len(prefix) :]: blob for key, blob in found.items()}

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if items and self.store.enabled:
            self.store.put(("structure", f"{ANALYSIS_VERSION}:{sha}", blob) for sha, blob in items)

    def put_block(self, key: str, blob: bytes) -> None:
        if self.store.enabled:
            self.store.put([("block", key, blob)])


class Reuse:
    def __init__(self, store: Store, hold_bytes: int) -> None:
        self.store = store
        self.marks = Marks()
        self.held = RecentBytes(hold_bytes)
        self.structures = Structures(store)
        # The change journals of a long-lived engine (Engine(journal=True)), else None.
        self.journals: Journals | None = None
        self._known: OrderedDict[str, StatIndex] = OrderedDict()
        self._live: OrderedDict[tuple[str, str, tuple[str, ...]], Live] = OrderedDict()
        self._lock = threading.Lock()
        # Files this engine parsed into blocks (not those reused from memory or the cache):
        # what a log or a test reads to tell a request that analysed files from one that
        # used an index already built.
        self.files_analysed = 0

    # -- the stat index ------------------------------------------------------------------

    def known(self, bundle: str) -> StatIndex | None:
        with self._lock:
            found = self._known.get(bundle)
            if found is not None:
                self._known.move_to_end(bundle)
                return found
        blob = self.store.get("state", _text_key(bundle))
        if blob is None:
            return None
        try:
            found = StatIndex.decode(blob)
        except Corrupt as exc:
            log.info("ignoring the cached stat index of %s: %s", bundle, exc)
            return None
        self._keep_known(bundle, found)
        return found

    def remember(self, bundle: str, known: StatIndex | None) -> None:
        if known is None:
            return
        with self._lock:
            before = self._known.get(bundle)
        if before is known:
            return
        self._keep_known(bundle, known)
        if before is None or before.files is not known.files:
            # (the same states with a new list of captured files need no new store entry)
            self.store.put([("state", _text_key(bundle), known.encode())])

    def _keep_known(self, bundle: str, known: StatIndex) -> None:
        with self._lock:
            self._known[bundle] = known
            self._known.move_to_end(bundle)
            while len(self._known) > BUNDLES_KEPT:
                self._known.popitem(last=False)

    # -- live indexes --------------------------------------------------------------------

    def index(self, key: tuple[str, str, tuple[str, ...]]) -> Live | None:
        with self._lock:
            found = self._live.get(key)
            if found is not None:
                self._live.move_to_end(key)
                return found
        blob = self.store.get("manifest", _manifest_key(key))
        if blob is None:
            return None
        try:
            revision, block_keys, checked = _decode_manifest(blob)
            blocks = []
            # One blob at a time, each decoded before the next is read: all of a big
            # workspace's blobs at once (25 MiB for tldr) raised the process's peak by as
            # much, and the allocator kept their pages after they were freed.
            for bkey in block_keys:
                data = self.store.get("block", bkey)
                if data is None:
                    return None
                blocks.append(Block.decode(data, bkey))
                del data
        except Corrupt as exc:
            log.info("ignoring a cached index: %s", exc)
            return None
        live = Live(revision, Index(blocks, checked))
        self._keep_live(key, live)
        return live

    def remember_index(
        self,
        key: tuple[str, str, tuple[str, ...]],
        revision: str,
        index: Index,
        new_blocks: Sequence[Block],
        stored: frozenset[str] = frozenset(),
    ) -> None:
        live = Live(revision, index)
        self._keep_live(key, live)
        with self._lock:
            self.files_analysed += sum(len(b.paths) for b in new_blocks)
        if self.store.enabled:
            for block in new_blocks:  # one at a time: a big workspace's blocks are many MiB
                if block.key not in stored:
                    self.store.put([("block", block.key, block.encode())])
            manifest = _encode_manifest(revision, [b.key for b in index.blocks], index.checked())
            self.store.put([("manifest", _manifest_key(key), manifest)])

    def _keep_live(self, key: tuple[str, str, tuple[str, ...]], live: Live) -> None:
        with self._lock:
            self._live[key] = live
            self._live.move_to_end(key)
            while len(self._live) > INDEXES_KEPT:
                self._live.popitem(last=False)

    def indexes(self) -> list[Index]:
        """The indexes kept in memory (Engine.close stops what they started)."""
        with self._lock:
            return [live.index for live in self._live.values()]

    def use_store(self, store: Store) -> None:
        """Switch the persistent cache (the memory layers stay: they are exact)."""
        old = self.store
        self.store = store
        self.structures = Structures(store)
        if old is not store:
            old.close()


def _manifest_key(key: tuple[str, str, tuple[str, ...]]) -> str:
    bundle, options, reserved = key
    return "\x00".join([ANALYSIS_VERSION, _text_key(bundle), options, *map(_text_key, reserved)])


def _text_key(name: str) -> str:
    """A path as a store key: itself when it is valid Unicode text, else its bytes in hex
    (a folder name that is not UTF-8 arrives with surrogate escapes SQLite cannot store)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "bytes:" + os.fsencode(name).hex()
    return name


def _encode_manifest(revision: str, block_keys: list[str], checked: Checked) -> bytes:
    duplicate, long = checked
    w = Writer().text(revision).strs(block_keys).ints([len(block_keys)])
    w.strs(list(duplicate) if duplicate else [])
    w.strs([long[0], long[3]] if long else []).ints([long[1], long[2]] if long else [], I64)
    return w.finish(b"M")


def _decode_manifest(blob: bytes) -> tuple[str, list[str], Checked]:
    r = Reader(blob, b"M")
    revision = r.text()
    keys = r.strs()
    count = r.ints(I32)
    duplicate = r.strs()
    long_text, long_numbers = r.strs(), r.ints(I64)
    r.end()
    expect(len(count) == 1 and count[0] == len(keys), "manifest")
    expect(len(revision) == 64, "manifest revision")
    expect(len(duplicate) in (0, 3) and len(long_text) == len(long_numbers) in (0, 2), "checks")
    checked: Checked = (
        (duplicate[0], duplicate[1], duplicate[2]) if duplicate else None,
        (long_text[0], long_numbers[0], long_numbers[1], long_text[1]) if long_text else None,
    )
    return revision, keys, checked


def bundle_key(bundle: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(bundle))


__all__ = ["Live", "RecentBytes", "Reuse", "Store", "bundle_key"]
