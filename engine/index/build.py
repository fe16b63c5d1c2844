"""Analysis: from a snapshot's files to an Index, reusing every block that still holds.

Given the index of an earlier snapshot (from memory or from the cache), only the files that
changed are analysed: the blocks holding none of them are kept as they are, the blocks
holding some are rebuilt from their own arrays without those files, and the new versions go
into a new block. With no earlier index, or when most files changed, every file is analysed,
in blocks of about TARGET_BYTES, on other cores when there is enough to do.

Each file's *structure* (front matter and headings: what markdown-it decides) does not
depend on the relevance options, so it is remembered by SHA-256 in the cache: a second
option set, or a file seen before, costs tokenising only.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..base.cancel import CancelToken
from ..base.codec import Corrupt
from ..capture.capture import Progress
from ..capture.snapshot import CapturedFile
from ..text.analysis import (
    AnalysisOptions,
    FileAnalysis,
    analyse,
    analyse_parsed,
    decode_structure,
    encode_structure,
)
from .blocks import Block, Input, build
from .index import Index

TARGET_BYTES = 1 << 20  # Markdown per block: an edit rebuilds about this much
REBUILD_SHARE = 0.5  # above this share of changed files, everything is analysed afresh
PARALLEL_MIN_BYTES = 2 << 20  # below this much to analyse, other processes cost more

Fetch = Callable[[CapturedFile], bytes]


class StructureStore(Protocol):
    """Structures by SHA-256: looked up before parsing, stored after; and blocks stored as
    they arrive from worker processes, already encoded (reuse.Structures, StructureCache)."""

    def get_many(self, shas: Sequence[str]) -> dict[str, bytes]: ...

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None: ...

    def put_block(self, key: str, blob: bytes) -> None: ...


class StructureCache:
    """A StructureStore that keeps nothing."""

    def get_many(self, shas: Sequence[str]) -> dict[str, bytes]:
        return {}

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        return None

    def put_block(self, key: str, blob: bytes) -> None:
        return None


Item = tuple[str, str, bytes, bytes | None]  # path, sha256, bytes, known structure
Flying = tuple[int, list[Item], Any]  # files, the items, the worker's parallel.Result


class Settled:
    """A run built ahead whose answer was taken in as it came: its block, decoded and
    stored, standing where the worker's Result stood (the same take, done and cancel)."""

    __slots__ = ("block",)

    def __init__(self, block: Block) -> None:
        self.block = block

    def take(self, cancel: CancelToken | None = None) -> Block:
        return self.block

    def done(self) -> bool:
        return True

    def cancel(self) -> None:
        return None


def _take_in(structures: StructureStore, got: tuple[bytes, list[tuple[str, bytes]]]) -> Block:
    """A worker's answer taken in: its structures and its block stored, the block decoded.
    The blob goes to the store (or nowhere) and is not kept: only the block is."""
    blob, fresh = got
    structures.put_many(fresh)
    block = Block.decode(blob)
    structures.put_block(block.key, blob)  # as it came, not encoded again later
    return block


class Ahead:
    """Blocks built while the capture is still reading: on a cold build, each run of about
    TARGET_BYTES of files just read goes to the worker processes at once, so their analysis
    overlaps the rest of the walk (the workers would otherwise wait for it).

    What the capture hears of is not yet a snapshot (a later file may break a limit, a file
    may change before the end): update() uses a block built ahead only when every file in
    it is in the snapshot with the digest it was built from, and builds the rest as usual.
    Reserved files are never searched, so they are left out of the runs.

    As in _in_workers, at most _most_in_flight runs are out, and the rest wait here: a job
    the pool has not yet handed to a worker would stay pending, and Python 3.11's pool
    fails on a cancelled pending job if a worker dies (a Ctrl-C reaches the workers too),
    which once hung the CLI at exit.
    """

    def __init__(
        self,
        options: AnalysisOptions,
        pool: object,
        structures: StructureStore,
        reserved: frozenset[str],
    ) -> None:
        self.options = options
        self.pool = pool
        self.structures = structures
        self.reserved = reserved
        self.run: list[tuple[str, str, bytes]] = []
        self.size = 0
        self.total = 0
        self.waiting: list[list[tuple[str, str, bytes]]] = []  # runs not yet worth a pool
        self.flying: list[Flying] = []

    def add(self, path: str, sha256: str, data: bytes) -> None:
        """capture's on_read: one file read (its path, digest and bytes)."""
        if path in self.reserved:
            return
        self.run.append((path, sha256, data))
        self.size += len(data)
        self.total += len(data)
        if self.size < TARGET_BYTES:
            return
        self.waiting.append(self.run)
        self.run, self.size = [], 0
        if self.total < PARALLEL_MIN_BYTES:
            return  # a small bundle is analysed in this process: no pool for it
        self._settle()
        busy = sum(not result.done() for _, _, result in self.flying)
        most = _most_in_flight(self.pool)
        while self.waiting and busy < most:
            run = self.waiting.pop(0)
            known = self.structures.get_many([sha for _, sha, _ in run])
            items: list[Item] = [(p, sha, d, known.get(sha)) for p, sha, d in run]
            self.flying.append(_send(self.pool, self.options, items))
            busy += 1

    def _settle(self) -> None:
        """Takes in the answers that came. A worker's answer is its block encoded and the
        structures it parsed, about as many bytes as the block decoded; kept until the
        build ended (its Result stays in the list of runs), the answers of a tldr-sized
        cold build were 24 MiB of the heap at its peak, beside the blocks themselves."""
        for i, (count, items, result) in enumerate(self.flying):
            if isinstance(result, Settled) or not result.done():
                continue
            got = result.take()
            if got is not None:  # (None: the pool broke; _in_workers builds it here)
                self.flying[i] = (count, items, Settled(_take_in(self.structures, got)))

    def take(self, todo: Sequence[CapturedFile]) -> tuple[list[Flying], list[CapturedFile]]:
        """The blocks in flight whose files are all among `todo` with the same digests, and
        the files of `todo` they do not cover (runs never sent are left to update()); the
        others are cancelled."""
        wanted = {f.path: f.sha256 for f in todo}
        usable: list[Flying] = []
        covered: set[str] = set()
        for flying in self.flying:
            if all(wanted.get(path) == sha for path, sha, _, _ in flying[1]):
                usable.append(flying)
                covered.update(path for path, _, _, _ in flying[1])
            else:
                flying[2].cancel()
        self.flying, self.waiting = [], []
        return usable, [f for f in todo if f.path not in covered]

    def close(self) -> None:
        """Cancel what was not taken (a capture that failed, or was not used)."""
        for _, _, result in self.flying:
            result.cancel()
        self.flying = []


@dataclass(frozen=True, slots=True)
class Built:
    index: Index
    new_blocks: tuple[Block, ...]  # blocks this update made (to store)
    stored: frozenset[str] = frozenset()  # keys of those already stored, as they arrived


def update(
    previous: Index | None,
    files: Sequence[CapturedFile],
    options: AnalysisOptions,
    *,
    fetch: Fetch,
    structures: StructureStore,
    workers: object = None,
    cancel: CancelToken | None = None,
    progress: Progress | None = None,
    ahead: Ahead | None = None,
) -> Built:
    """The index of `files` (a snapshot's searchable files, in path order); `ahead`: blocks
    the workers started while the capture was reading (used on a build from scratch)."""
    by_path = {f.path: f for f in files}
    kept: list[Block] = []
    partial: list[tuple[Block, list[int]]] = []
    covered: set[str] = set()
    for block in previous.blocks if previous is not None else ():
        keep = []
        for i, (path, sha) in enumerate(zip(block.paths, block.shas, strict=True)):
            f = by_path.get(path)
            if f is not None and f.sha256 == sha:
                keep.append(i)
        if len(keep) == len(block.paths):
            kept.append(block)
        elif keep:
            partial.append((block, keep))
        covered.update(block.paths[i] for i in keep)
    todo = [f for f in files if f.path not in covered]
    early: list[Flying] = []
    if previous is None or len(todo) > REBUILD_SHARE * len(files):
        kept, partial, todo = [], [], list(files)
        if ahead is not None:
            early, todo = ahead.take(todo)
    if not todo and not partial and not early:
        if previous is not None and len(kept) == len(previous.blocks):
            return Built(previous, ())
        return Built(Index(kept, previous=previous), ())

    stored: set[str] = set()
    analysed = _analyse(todo, options, fetch, structures, workers, cancel, progress, stored, early)
    new_blocks: list[Block] = []
    # A block that lost most of its files is merged into the new one rather than kept small.
    small = [(b, keep) for b, keep in partial if _bytes(b, keep) < TARGET_BYTES // 4]
    large = [(b, keep) for b, keep in partial if _bytes(b, keep) >= TARGET_BYTES // 4]
    for block, keep in large:
        if cancel is not None:
            cancel.check()
        new_blocks.append(build((), options, [(block, keep)]))
    pending: list[tuple[Input, FileAnalysis]] = []
    size = 0
    for item in analysed:
        if isinstance(item, Block):
            new_blocks.append(item)
            continue
        pending.append(item)
        size += item[0].size
        if size >= TARGET_BYTES:
            new_blocks.append(build(pending, options))
            pending, size = [], 0
    if pending or small:
        new_blocks.append(build(pending, options, small))
    index = Index([*kept, *new_blocks], previous=previous)
    return Built(index, tuple(new_blocks), frozenset(stored))


def _bytes(block: Block, keep: Sequence[int]) -> int:
    return sum(block.sizes[i] for i in keep)


def chunks(files: Sequence[CapturedFile]) -> Iterator[list[CapturedFile]]:
    """Consecutive runs of files of about TARGET_BYTES each."""
    run: list[CapturedFile] = []
    size = 0
    for f in files:
        run.append(f)
        size += f.size
        if size >= TARGET_BYTES:
            yield run
            run, size = [], 0
    if run:
        yield run


def _analyse(
    todo: Sequence[CapturedFile],
    options: AnalysisOptions,
    fetch: Fetch,
    structures: StructureStore,
    workers: object,
    cancel: CancelToken | None,
    progress: Progress | None,
    stored: set[str],
    early: Sequence[Flying] = (),
) -> Iterator[tuple[Input, FileAnalysis] | Block]:
    """Each file's analysis, or whole blocks when worker processes built them (`early`:
    blocks they started while the capture was reading)."""
    known = structures.get_many([f.sha256 for f in todo])
    pool = workers if workers is not None and getattr(workers, "count", 0) >= 2 else None
    if pool is not None and (early or sum(f.size for f in todo) >= PARALLEL_MIN_BYTES):
        yield from _in_workers(
            todo, options, fetch, known, structures, pool, cancel, progress, stored, early
        )
        return
    fresh: list[tuple[str, bytes]] = []
    for i, f in enumerate(todo):
        if cancel is not None:
            cancel.check()
        data = fetch(f)
        yield Input(f.path, f.sha256, f.size), _analysis(data, f.sha256, options, known, fresh)
        if progress is not None:
            progress("analyse", i + 1, len(todo))
    structures.put_many(fresh)


def _analysis(
    data: bytes,
    sha256: str,
    options: AnalysisOptions,
    known: dict[str, bytes],
    fresh: list[tuple[str, bytes]],
) -> FileAnalysis:
    blob = known.get(sha256)
    if blob is not None:
        try:
            return analyse(data, options, decode_structure(blob))
        except Corrupt:
            pass  # parse afresh
    result, found, worth = analyse_parsed(data, options)
    if worth:
        blob = encode_structure(found)
        known[sha256] = blob
        fresh.append((sha256, blob))
    return result


def build_chunk(
    options: AnalysisOptions, items: list[tuple[str, str, bytes, bytes | None]]
) -> tuple[bytes, list[tuple[str, bytes]]]:
    """A worker process's job: the block over (path, sha256, bytes, known structure) items,
    encoded, and the structures it parsed.

    Without the cyclic garbage collector: a chunk makes millions of small objects and no
    reference cycles (counting frees them all), and the collections their allocations
    trigger walk the worker's memos of words again and again: 20% of a chunk's time.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        known = {sha: blob for _, sha, _, blob in items if blob is not None}
        fresh: list[tuple[str, bytes]] = []
        analysed = [
            (Input(path, sha, len(data)), _analysis(data, sha, options, known, fresh))
            for path, sha, data, _ in items
        ]
        return build(analysed, options).encode(), fresh
    finally:
        if collecting:
            gc.enable()


def _most_in_flight(pool: object) -> int:
    """Runs sent to the workers and not yet back, at most: each waits in the pool's queue as
    a pickled copy of its files' bytes (a big workspace's bytes should not all be copied at
    once), and one the pool has not handed to a worker stays pending (see Ahead)."""
    return 2 * getattr(pool, "count", 2)


def _send(pool: object, options: AnalysisOptions, items: list[Item]) -> Flying:
    """One run to a worker: (its files, its items, the worker's Result)."""
    (result,) = pool.run(build_chunk, [(options, items)])  # type: ignore[attr-defined]
    return len(items), items, result


def _in_workers(
    todo: Sequence[CapturedFile],
    options: AnalysisOptions,
    fetch: Fetch,
    known: dict[str, bytes],
    structures: StructureStore,
    pool: object,
    cancel: CancelToken | None,
    progress: Progress | None,
    stored: set[str],
    early: Sequence[Flying] = (),
) -> Iterator[Block]:
    flight: deque[Flying] = deque(early)
    total = len(todo) + sum(count for count, _, _ in early)
    done = 0
    later = chunks(todo)
    most = _most_in_flight(pool)

    def top_up() -> None:
        while len(flight) < most:
            run = next(later, None)
            if run is None:
                return
            if cancel is not None:
                cancel.check()
            items: list[Item] = [(f.path, f.sha256, fetch(f), known.get(f.sha256)) for f in run]
            flight.append(_send(pool, options, items))

    try:
        top_up()
        while flight:
            count, items, result = flight.popleft()
            got = result.take(cancel)  # (`early`'s list still holds the Result)
            top_up()  # keep the workers busy while this block is decoded
            if isinstance(got, Block):  # taken in while the capture read (Ahead)
                block = got
            else:  # (None: the pool broke; this chunk is done here)
                block = _take_in(structures, got or build_chunk(options, items))
            stored.add(block.key)
            yield block
            done += count
            if progress is not None:
                progress("analyse", done, total)
    finally:
        for _, _, result in flight:
            result.cancel()
