"""A flood of events in a watched folder holds no request (issue 49, finding 2).

Someone who keeps making events in a watched folder — touching dot files, renaming two
`.txt` files in a loop — once held every request of a long-lived front for as long as they
went on: the drain read the kernel's queue until it was empty, under the engine-wide lock.
Now a drain is bounded (journal.DRAIN_EVENTS events, journal.DRAIN_SECONDS), a drain that
reaches its bound does not vouch (the capture walks), and the engine-wide lock is never
held while the queue is read. Real processes make the flood, bounded in time and count;
every request is timed, and its answer compared with a full read's (never stale).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from citeline.engine import Engine
from citeline.engine.base.limits import Settings
from citeline.engine.capture import journal as jmod
from citeline.engine.capture.journal import Journal, open_journal
from citeline.engine.capture.journals import Journals, Look

pytestmark = pytest.mark.skipif(
    jmod.unsupported_reason() is not None, reason="no synchronous journal on this platform"
)

FLOOD_SECONDS = 4.0  # how long each flood runs at most
FLOOD_STEPS = 3_000_000  # and how many of its steps at most (each process)
FLOODERS = 2  # processes making events at once
FOLDERS = 2000  # folders of the flooded bundle (a large documentation tree has as many)
REQUEST_BOUND = 1.0  # seconds: no request may take longer during a flood (the target)
DRAIN_BOUND = 0.5  # seconds: journal.DRAIN_SECONDS, the watches set again, a loaded machine
READ_EVENTS = 4096  # events one read of the queue may add past the count bound

FLOOD = """
import os, sys, time
folder, seconds, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
me = str(os.getpid())
a, b = os.path.join(folder, me + "-one.txt"), os.path.join(folder, me + "-two.txt")
open(a, "w").close()
# Two dot files written in turn (the kernel merges an event only with the one queued last).
dots = [os.open(os.path.join(folder, f".{me}-dot{i}"), os.O_WRONLY | os.O_CREAT) for i in (0, 1)]
print("flooding", flush=True)
end = time.monotonic() + seconds
i = 0
sub = os.path.join(folder, me + "-folder")
while i < steps and time.monotonic() < end:
    for _ in range(100):
        os.pwrite(dots[0], b"x", 0)
        os.pwrite(dots[1], b"x", 0)
        os.rename(a, b)
        os.rename(b, a)
        os.mkdir(sub)  # a folder made and removed: the journal watches it, then forgets it
        os.rmdir(sub)
    i += 100
"""


class Flood:
    """FLOODERS processes making events in one folder, each for at most FLOOD_SECONDS."""

    def __init__(self, procs: list[subprocess.Popen[str]]) -> None:
        self.procs = procs

    def on(self) -> bool:
        return any(p.poll() is None for p in self.procs)


@contextmanager
def flood(folder: Path) -> Iterator[Flood]:
    """The flood, ended after the block."""
    args = [str(folder), str(FLOOD_SECONDS), str(FLOOD_STEPS)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(FLOOD), *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(FLOODERS)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "flooding"
        yield Flood(procs)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)


def make_bundle(root: Path, files: int = 30, folders: int = FOLDERS) -> Path:
    """Files in notes/, and `folders` more folders (each watched, each a little work when
    one is made or removed)."""
    (root / "notes").mkdir(parents=True)
    for i in range(files):
        (root / f"notes/n{i}.md").write_text(f"# Note {i}\n\nalpha words {i}\n")
    for i in range(folders):
        (root / f"tree/d{i // 50}/s{i}").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha first\n")
    return root


class Recorded(Journals):
    """Journals that keep every Look: which requests the bound sent to the walk."""

    def __init__(self) -> None:
        super().__init__()
        self.looks: list[Look] = []

    def look(self, key: str, root: str, known: object, settings: object) -> Look:
        got = super().look(key, root, known, settings)  # type: ignore[arg-type]
        self.looks.append(got)
        return got


def files_of(engine: Engine, root: Path) -> dict[str, str]:
    return {
        f.path: f.sha256 for f in engine.capture(engine.call(str(root), settings=Settings())).files
    }


def test_requests_during_a_flood_are_bounded_and_never_stale(tmp_path: Path) -> None:
    root = make_bundle(tmp_path / "bundle")
    engine = Engine(journal=True)
    recorded = engine.reuse.journals = Recorded()
    full = Engine(reread=True)
    try:
        engine.search(engine.call(str(root)), {"query": "alpha"})
        engine.search(engine.call(str(root)), {"query": "alpha"})
        took: list[float] = []
        with flood(root / "notes") as flooding:
            step = 0
            while flooding.on() and step < 400:
                step += 1
                (root / "a.md").write_text(f"# A\n\nalpha edit {step}\n")
                t = time.monotonic()
                got = files_of(engine, root)
                took.append(time.monotonic() - t)
                assert got == files_of(full, root), step
                t = time.monotonic()
                result = engine.search(engine.call(str(root)), {"query": "alpha edit"})
                took.append(time.monotonic() - t)
                assert f"alpha edit {step}" in result["hits"][0]["snippet"], step
        assert max(took) < REQUEST_BOUND, sorted(took)[-5:]
        assert step >= 3, "the flood ended before three requests"
        reasons = Counter(look.reason for look in recorded.looks)
        assert reasons[jmod.BOUND] >= 1, reasons  # the bound was met, and walked around
        # and once the flood is over, the journal vouches again
        (root / "a.md").write_text("# A\n\nalpha after\n")
        assert files_of(engine, root) == files_of(full, root)
        (root / "a.md").write_text("# A\n\nalpha later\n")
        assert files_of(engine, root) == files_of(full, root)
        assert recorded.looks[-1].changed == {"a.md"}, recorded.looks[-1]
    finally:
        engine.close()


def test_a_flooded_bundle_does_not_hold_another_bundles_requests(tmp_path: Path) -> None:
    """One engine, two bundles: requests on a quiet bundle go on while the other one's
    queue is flooded and drained (the engine-wide lock is not held over a drain)."""
    loud = make_bundle(tmp_path / "loud")
    quiet = make_bundle(tmp_path / "quiet", folders=0)
    engine = Engine(journal=True)
    stop = threading.Event()
    errors: list[BaseException] = []

    def hammer() -> None:
        try:
            while not stop.is_set():
                engine.capture(engine.call(str(loud)))
        except BaseException as exc:
            errors.append(exc)

    try:
        for root in (loud, quiet, loud, quiet):
            engine.capture(engine.call(str(root)))
        took: list[float] = []
        with flood(loud / "notes") as flooding:
            worker = threading.Thread(target=hammer)
            worker.start()
            try:
                while flooding.on() and len(took) < 200:
                    t = time.monotonic()
                    engine.capture(engine.call(str(quiet)))
                    took.append(time.monotonic() - t)
                    time.sleep(0.01)
            finally:
                stop.set()
                worker.join(timeout=60)
        assert not errors, errors
        assert len(took) >= 3
        assert max(took) < REQUEST_BOUND, sorted(took)[-5:]
    finally:
        engine.close()


def test_a_drain_stops_at_its_bound_and_the_next_vouches(tmp_path: Path) -> None:
    root = make_bundle(tmp_path / "bundle", files=2, folders=0)
    j = open_journal(str(root))
    assert isinstance(j, Journal)
    j.drain()
    # More events than one drain reads, fewer than the kernel's queue holds (no overflow):
    # two files written in turn (the kernel merges an event only with the one queued last).
    pairs = jmod.DRAIN_EVENTS // 2 + 500
    with open(root / "x.txt", "wb") as fa, open(root / ".y", "wb") as fb:
        for _ in range(pairs):
            fa.write(b"a")
            fa.flush()
            fb.write(b"b")
            fb.flush()
    t = time.monotonic()
    d = j.drain()
    took = time.monotonic() - t
    assert not d.vouched and d.reason == jmod.BOUND, d
    assert jmod.DRAIN_EVENTS <= d.events <= jmod.DRAIN_EVENTS + READ_EVENTS, d.events
    assert took < DRAIN_BOUND + 0.5  # (the watches set again, beside the drain's own bound)
    (root / "a.md").write_text("changed\n")
    d = j.drain()  # the queue's backlog went with the old instance
    assert d.vouched and d.paths == {"a.md"} and d.events < 10, d
    j.close()


def test_each_drain_is_bounded_during_a_flood(tmp_path: Path) -> None:
    """A drain past its bound sets every watch again (as after an overflow): a few hundred
    folders here, so that what is timed is the drain's own bound (the requests above time
    the rest, with 2,000 folders)."""
    root = make_bundle(tmp_path / "bundle", files=2, folders=200)
    j = open_journal(str(root))
    assert isinstance(j, Journal)
    j.drain()
    took: list[float] = []
    events = []
    with flood(root / "notes") as flooding:
        while flooding.on() and len(took) < 2000:
            t = time.monotonic()
            d = j.drain()
            took.append(time.monotonic() - t)
            events.append(d.events)
    # The bound in time, with room for one read and a scheduler's slice of a loaded machine.
    assert max(took) < DRAIN_BOUND, sorted(took)[-5:]
    assert max(events) <= jmod.DRAIN_EVENTS + READ_EVENTS, max(events)
    for _ in range(3):  # the flood's last events, and the watches set again if need be
        j.drain()
    (root / "a.md").write_text("changed\n")
    d = j.drain()
    assert d.vouched and d.paths == {"a.md"}, d
    j.close()
