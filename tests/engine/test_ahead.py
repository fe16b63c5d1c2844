"""Blocks built while the capture reads (engine/index/build.py Ahead): a cold build on several cores
hands each run of files to the workers as soon as the walk has read it. Whatever was built
ahead, the index and every answer equal those of a build in this process; a run holding a
file the snapshot does not hold with the same digest is dropped, never used."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from citeline.engine import CitelineError, Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.capture.snapshot import CapturedFile
from citeline.engine.index import build
from citeline.engine.index.build import PARALLEL_MIN_BYTES, TARGET_BYTES, Ahead
from citeline.engine.text.options import AnalysisOptions

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "install",
    "configure",
    "proxyServer",
    "getItem42",
    "日本語",
    "ключ",
]
QUERIES = ["alpha", "install configure", "proxy server", "get item", "ключ", "日本"]
ROOMY = Settings(limits=Limits(max_tokens=10_000_000))  # the bundle holds 1.2 M tokens


def page(rng: random.Random, n: int) -> str:
    lines = [f"# Page {n} {rng.choice(WORDS)}", ""]
    for s in range(rng.randint(1, 4)):
        lines += [f"## Part {s} {rng.choice(WORDS)}", ""]
        lines += [" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(rng.randint(2, 9))]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def big_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 3 × PARALLEL_MIN_BYTES of Markdown whose walk order is not its path order (files
    at the root come before the folders' in the walk, after some of them in path order)."""
    rng = random.Random(7)
    root = tmp_path_factory.mktemp("ahead")
    size, n = 0, 0
    while size < 3 * PARALLEL_MIN_BYTES:
        folder = root / f"f{n % 7}" if n % 5 else root
        folder.mkdir(exist_ok=True)
        text = page(rng, n)
        (folder / f"p{n:05}.md").write_text(text)
        size += len(text.encode())
        n += 1
    (root / "index.md").write_text("# Index\nalpha " * 20_000)  # reserved: never searched
    (root / "zz.md").write_text("# Last\nalpha at the end of the path order\n")
    return root


def answers(engine: Engine, bundle: Path, profile: str) -> list[object]:
    out: list[object] = []
    for q in QUERIES:
        request = {"query": q, "limit": 50, "profile": profile}
        out.append(engine.search(engine.call(bundle, settings=ROOMY), request))
    listing = engine.symbols(engine.call(bundle, settings=ROOMY), "", list_cap=100_000)
    out.append([(h.concept_id, h.line_start) for h in listing])
    return out


@pytest.mark.parametrize("profile", ["contract", "recall"])
def test_a_cold_build_with_blocks_built_ahead_answers_as_one_in_process(
    big_bundle: Path, profile: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    taken: list[int] = []
    real_take = Ahead.take

    def take(self, todo):  # type: ignore[no-untyped-def]
        usable, rest = real_take(self, todo)
        taken.append(len(usable))
        return usable, rest

    monkeypatch.setattr(Ahead, "take", take)
    pooled = Engine(workers=2, cache=tmp_path / "cache")
    try:
        got = answers(pooled, big_bundle, profile)
    finally:
        pooled.close(wait=True)
    # the runs read before the walk ended were built ahead (the check can fail: without
    # the hook, or with runs that do not match the snapshot, nothing is taken)
    assert taken and taken[0] >= 2
    alone = answers(Engine(), big_bundle, profile)
    assert got == alone
    assert all(r["hits"] for r in got[:2])  # type: ignore[index]


def test_no_workers_for_a_small_cold_build(make_bundle) -> None:
    bundle = make_bundle({f"a{i}.md": "# A\n" + "alpha " * 1000 for i in range(100)})
    engine = Engine(workers=2)
    try:
        assert engine.search(engine.call(bundle), {"query": "alpha"})["total"] == 100
        assert not engine.workers.started
    finally:
        engine.close()


def test_a_capture_that_fails_leaves_nothing_running(
    big_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Ahead] = []
    real = Engine._ahead

    def spy(self, *args):  # type: ignore[no-untyped-def]
        ahead = real(self, *args)
        made.append(ahead)
        return ahead

    monkeypatch.setattr(Engine, "_ahead", spy)
    cancelled: list[object] = []
    real_cancel = build.Ahead.close

    def close(self) -> None:  # type: ignore[no-untyped-def]
        cancelled.extend(self.flying)
        real_cancel(self)

    monkeypatch.setattr(Ahead, "close", close)
    engine = Engine(workers=2)
    tight = Settings(limits=Limits(max_total_bytes=int(2.5 * PARALLEL_MIN_BYTES)))
    try:
        with pytest.raises(CitelineError) as err:
            engine.search(engine.call(big_bundle, settings=tight), {"query": "alpha"})
        assert err.value.code == "resource_limit"
    finally:
        engine.close(wait=True)
    assert len(made) == 1 and made[0] is not None
    assert len(cancelled) >= 2  # runs were under way when the limit was found: cancelled
    assert made[0].flying == []


class FakeResult:
    """A worker's Result: `answer` is what the worker gave (None: as a broken pool)."""

    def __init__(self, answer: object = None) -> None:
        self.cancelled = False
        self.finished = False
        self.answer = answer

    def done(self) -> bool:
        return self.finished

    def take(self, cancel: object = None) -> object:
        answer, self.answer = self.answer, None
        return answer

    def cancel(self) -> None:
        self.cancelled = True


class FakePool:
    count = 2

    def __init__(self, work: bool = False) -> None:
        self.jobs: list[list[tuple[str, str, bytes, bytes | None]]] = []
        self.work = work  # each job done at once, in this process, and its answer kept

    def run(self, fn, jobs):  # type: ignore[no-untyped-def]
        assert fn is build.build_chunk
        out = []
        for options, items in jobs:
            self.jobs.append(items)
            out.append(FakeResult(fn(options, items) if self.work else None))
        return out


class Recorded(build.StructureCache):
    def __init__(self) -> None:
        self.blocks: dict[str, bytes] = {}
        self.structures: dict[str, bytes] = {}

    def put_many(self, items):  # type: ignore[no-untyped-def]
        self.structures.update(items)

    def put_block(self, key: str, blob: bytes) -> None:
        self.blocks[key] = blob


def record(path: str, data: bytes, reserved: bool = False) -> CapturedFile:
    return CapturedFile(path, len(data), hashlib.sha256(data).hexdigest(), reserved, data)


def test_runs_are_sent_once_there_is_enough_and_reserved_files_stay_out() -> None:
    pool = FakePool()
    ahead = Ahead(AnalysisOptions(), pool, build.StructureCache(), frozenset({"index.md"}))
    chunk = b"x" * (TARGET_BYTES // 2)
    ahead.add("index.md", hashlib.sha256(chunk * 4).hexdigest(), chunk * 4)
    files = [record(f"{i:03}.md", chunk + bytes([i])) for i in range(9)]
    sent_after: list[int] = []
    for f in files:
        assert f.data is not None
        ahead.add(f.path, f.sha256, f.data)
        sent_after.append(len(pool.jobs))
    # nothing until PARALLEL_MIN_BYTES were read (a small bundle starts no pool), then every
    # full run at once; the last half run is left for update()
    assert sent_after == [0, 0, 0, 2, 2, 3, 3, 4, 4]
    sent = [path for job in pool.jobs for path, _, _, _ in job]
    assert sent == [f.path for f in files[:8]]
    assert "index.md" not in sent


def test_a_run_with_a_file_the_snapshot_holds_otherwise_is_dropped() -> None:
    pool = FakePool()
    ahead = Ahead(Relevance().analysis, pool, build.StructureCache(), frozenset())
    chunk = b"y" * TARGET_BYTES
    files = [record(f"{i}.md", chunk + bytes([i])) for i in range(4)]
    for f in files:
        assert f.data is not None
        ahead.add(f.path, f.sha256, f.data)
    results = list(ahead.flying)
    assert len(results) == 4
    changed = record("2.md", b"other bytes")  # read again by a later attempt: new digest
    todo = [files[0], files[1], changed, files[3], record("new.md", b"# New\n")]
    usable, rest = ahead.take(todo)
    assert [items[0][0] for _, items, _ in usable] == ["0.md", "1.md", "3.md"]
    assert [f.path for f in rest] == ["2.md", "new.md"]
    assert [r[2].cancelled for r in results] == [False, False, True, False]
    assert ahead.flying == []
    ahead.close()  # nothing left to cancel: the usable ones belong to update() now
    assert [r[2].cancelled for r in results] == [False, False, True, False]


def test_answers_that_came_are_taken_in_while_the_capture_reads() -> None:
    """A worker's answer (the block encoded, the structures it parsed) left waiting until the
    capture ended was a cold build's largest transient: each one that came is decoded and
    stored as the next run goes out, and only its block is kept."""
    pool = FakePool(work=True)
    store = Recorded()
    ahead = Ahead(AnalysisOptions(), pool, store, frozenset())
    text = "# Title\n\n" + "alpha beta gamma " * (TARGET_BYTES // 17 + 1)
    files = [record(f"{i}.md", (text + str(i)).encode()) for i in range(5)]
    for f in files[:4]:
        assert f.data is not None
        ahead.add(f.path, f.sha256, f.data)
    waiting = [result for _, _, result in ahead.flying]
    assert len(waiting) == 4 and not store.blocks  # none came back yet
    answers = [result.answer for result in waiting]
    for result in waiting[:2]:
        result.finished = True
    assert files[4].data is not None
    ahead.add(files[4].path, files[4].sha256, files[4].data)
    settled = [result for _, _, result in ahead.flying[:2]]
    assert all(isinstance(r, build.Settled) for r in settled)
    assert not any(isinstance(r, build.Settled) for _, _, r in ahead.flying[2:])
    for (_, items, r), answer, result in zip(ahead.flying, answers, waiting[:2], strict=False):
        blob, fresh = answer
        assert result.answer is None  # the answer is not kept beside the block
        assert store.blocks[r.block.key] == blob and r.block.encode() == blob
        assert list(r.block.paths) == [path for path, _, _, _ in items]
        assert dict(fresh).items() <= store.structures.items()
    assert len(store.blocks) == 2
    usable, rest = ahead.take(files)
    assert [r for _, _, r in usable[:2]] == settled and len(usable) == 5 and rest == []


def test_at_most_a_few_runs_in_flight_the_rest_wait() -> None:
    """Twice the workers, as update() keeps: a job the pool holds pending when cancelled
    breaks Python 3.11's pool if a worker then dies (a Ctrl-C hung the CLI so)."""
    pool = FakePool()
    ahead = Ahead(AnalysisOptions(), pool, build.StructureCache(), frozenset())
    chunk = b"z" * TARGET_BYTES
    files = [record(f"{i}.md", chunk + bytes([i])) for i in range(7)]
    for f in files[:6]:
        assert f.data is not None
        ahead.add(f.path, f.sha256, f.data)
    assert len(pool.jobs) == 4 and len(ahead.waiting) == 2
    for _, _, result in ahead.flying[:2]:
        result.finished = True  # two blocks came back: room for two more
    assert files[6].data is not None
    ahead.add(files[6].path, files[6].sha256, files[6].data)
    assert len(pool.jobs) == 6 and len(ahead.waiting) == 1
    usable, rest = ahead.take(files)
    assert len(usable) == 6
    assert [f.path for f in rest] == ["6.md"]  # never sent: built by update()
    assert ahead.waiting == []
