"""What the change journal costs (engine/capture/journal.py, issue 32), and the binding's share.

Run by hand; JSON on stdout::

    python tests/benchmarks/journal_cost.py --bundle ../shared/corpora/tldr/docs [--scale 10]

- ``import``: ``import inotify_simple`` against ``import ctypes, struct`` (what a
  hand-written binding imports), timed inside fresh interpreters;
- ``arm``: opening a journal of the bundle: the watches set, the time, the kernel memory
  they hold (``inotify_inode_mark`` objects in /proc/slabinfo, when the kernel keeps that
  cache apart and the reader is root) and the process's VmRSS before and after;
- all of it on a private copy of the bundle (``--scale K``: K distinct copies, bench.py's);
- ``drain``: a drain with nothing queued (median of 2,000), against the stat-walk floor of
  the same files (workspace.py); a drain after N files were touched;
- ``parse``: the same N events read by inotify_simple (``INotify.read``) and by a
  hand-written reader (``os.read`` + ``struct.unpack_from``) from two instances watching the
  same folder: what the thin binding costs over doing it by hand;
- ``links`` (issue 49): a warm ``Engine(journal=True)`` capture with nothing changed, after
  one file written in place (the same bytes), after a hard link of it made and removed
  under a dot name, and after a dot file made and removed (each a name that may hide a
  link: every file is stat'ed again), against a capture by the stat walk;
- ``ignored`` (issue 49): the watches of the copy with ``--ignored`` git-ignored folders
  added (``node_modules/pN/lib``);
- ``flood`` (issue 49): requests (``Engine.capture``) timed while ``--flooders`` processes
  make events in one folder of the copy for ``--flood-seconds`` (dot files written,
  ``.txt`` files renamed, a folder made and removed, in a loop).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import scaled_bundle
from harness import median_ms, ms
from workspace import stat_walk

from citeline.engine import Engine
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.capture.inotify import IN_ATTRIB
from citeline.engine.capture.journal import Journal, open_journal

ROOMY = Settings(limits=Limits(max_files=1_000_000, max_total_bytes=2_000_000_000))

FLOOD = """
import os, sys, time
folder, seconds = sys.argv[1], float(sys.argv[2])
me = str(os.getpid())
a, b = os.path.join(folder, me + "-one.txt"), os.path.join(folder, me + "-two.txt")
open(a, "w").close()
dots = [os.open(os.path.join(folder, f".{me}-dot{i}"), os.O_WRONLY | os.O_CREAT) for i in (0, 1)]
sub = os.path.join(folder, me + "-folder")
print("flooding", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(100):
        os.pwrite(dots[0], b"x", 0)
        os.pwrite(dots[1], b"x", 0)
        os.rename(a, b)
        os.rename(b, a)
        os.mkdir(sub)
        os.rmdir(sub)
"""


def import_seconds(modules: str, runs: int = 15) -> float:
    """The median time a fresh interpreter takes to import `modules` (timed inside it, so
    the machine's load on process start-up does not count)."""
    code = (
        "import time; t = time.perf_counter(); import " + modules + "; "
        "print(time.perf_counter() - t)"
    )
    samples = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        samples.append(float(done.stdout))
    return statistics.median(samples)


def slab_marks() -> tuple[int, int] | None:
    """(objects in use, bytes each) of inotify_inode_mark, or None (not root)."""
    try:
        for line in Path("/proc/slabinfo").read_text().splitlines():
            if line.startswith("inotify_inode_mark "):
                f = line.split()
                return int(f[1]), int(f[3])
    except OSError:
        return None
    return None


def vm_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def own_parse(fd: int) -> int:
    """A hand-written reader: every event until EAGAIN, names decoded."""
    count = 0
    while True:
        try:
            buf = os.read(fd, 1 << 16)
        except BlockingIOError:
            return count
        pos = 0
        while pos < len(buf):
            _wd, _mask, _cookie, size = struct.unpack_from("iIII", buf, pos)
            pos += 16
            os.fsdecode(buf[pos : pos + size].rstrip(b"\0"))
            pos += size
            count += 1


def parse_cost(n: int) -> dict[str, Any]:
    import ctypes

    from inotify_simple import INotify

    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory() as tmp:
        names = [os.path.join(tmp, f"f{i:05}.md") for i in range(n)]
        for name in names:
            Path(name).write_text("x")
        simple = INotify(nonblocking=True)
        simple.add_watch(tmp, IN_ATTRIB)
        raw = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        libc.inotify_add_watch(raw, os.fsencode(tmp), IN_ATTRIB)
        for name in names:
            os.utime(name)
        start = time.perf_counter()
        got_simple = sum(1 for _ in simple.read(timeout=0))
        t_simple = time.perf_counter() - start
        start = time.perf_counter()
        got_own = own_parse(raw)
        t_own = time.perf_counter() - start
        simple.close()
        os.close(raw)
    return {
        "events": n,
        "inotify_simple_ms": ms(t_simple),
        "hand_written_ms": ms(t_own),
        "read": [got_simple, got_own],
    }


@contextmanager
def private_copy(bundle: Path, k: int) -> Iterator[Path]:
    """K copies of the bundle in a temporary folder (one for K = 1): the drains touch files,
    and the shared corpora are never written to."""
    if k > 1:
        with scaled_bundle(bundle, k) as root:
            yield root
        return
    with tempfile.TemporaryDirectory(prefix="citeline-journal-") as tmp:
        root = Path(tmp) / "bundle"
        shutil.copytree(bundle, root, symlinks=True)
        yield root


def timed_captures(engine: Engine, root: Path, runs: int, before: Any = None) -> float:
    """The median time of `runs` captures, `before()` run (untimed) ahead of each, then a
    wait past the racy window (a file read within it of its change is read again by every
    capture until one is not: an edit's request comes later than that)."""
    from citeline.engine.capture import stats

    took = []
    for _ in range(runs):
        if before is not None:
            before()
            time.sleep(stats.RACY_NS / 1e9 + 0.05)
        start = time.perf_counter()
        engine.capture(engine.call(str(root)))
        took.append(time.perf_counter() - start)
    return median_ms(took)


def link_cost(root: Path, runs: int) -> dict[str, Any]:
    """What a capture costs through the journal, and after a name that may hide a link;
    each case with an engine of its own, warmed (two captures, the racy window waited)."""
    from citeline.engine.capture import stats

    target = next(p for p in sorted(root.rglob("*.md")))
    text = target.read_bytes()

    def in_place() -> None:
        target.write_bytes(text)

    def link() -> None:
        os.link(target, root / ".citeline-link")
        os.unlink(root / ".citeline-link")

    def other() -> None:  # a name made and removed: it may have been a link (it was not)
        (root / ".citeline-other").write_bytes(b"x")
        os.unlink(root / ".citeline-other")

    def case(journal: bool, before: Any) -> float:
        engine = Engine(ROOMY, journal=journal, cache=False)
        try:
            engine.capture(engine.call(str(root)))
            time.sleep(stats.RACY_NS / 1e9 + 0.05)
            engine.capture(engine.call(str(root)))
            return timed_captures(engine, root, runs, before)
        finally:
            engine.close()

    return {
        "files": sum(1 for _ in root.rglob("*.md")),
        "nothing_changed_ms": case(True, None),
        "one_file_written_ms": case(True, in_place),
        "a_link_made_and_removed_ms": case(True, link),
        "another_name_made_and_removed_ms": case(True, other),
        "stat_walk_ms": case(False, None),
        "stat_walk_one_file_written_ms": case(False, in_place),
    }


def ignored_watches(root: Path, folders: int) -> dict[str, Any]:
    for i in range(folders):
        (root / f"node_modules/p{i}/lib").mkdir(parents=True)
    (root / ".gitignore").write_text("node_modules/\n")
    start = time.perf_counter()
    journal = open_journal(str(root))
    armed = time.perf_counter() - start
    assert isinstance(journal, Journal), journal
    out = {"ignored_folders": 2 * folders + 1, "watches": journal.watches, "arm_ms": ms(armed)}
    journal.close()
    shutil.rmtree(root / "node_modules")
    (root / ".gitignore").unlink()
    return out


def flood_cost(root: Path, flooders: int, seconds: float) -> dict[str, Any]:
    """Captures timed during a flood of events in one folder of the bundle."""
    folder = next(p for p in sorted(root.rglob("*")) if p.is_dir())
    from citeline.engine.capture import stats

    engine = Engine(ROOMY, journal=True, cache=False)
    engine.capture(engine.call(str(root)))
    time.sleep(stats.RACY_NS / 1e9 + 0.05)  # (files just copied are read again until then)
    engine.capture(engine.call(str(root)))
    quiet = timed_captures(engine, root, 7)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FLOOD, str(folder), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(flooders)
    ]
    took = []
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "flooding"
        while any(p.poll() is None for p in procs):
            start = time.perf_counter()
            engine.capture(engine.call(str(root)))
            took.append(time.perf_counter() - start)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        engine.close()
    took.sort()
    return {
        "flooders": flooders,
        "seconds": seconds,
        "folder": str(folder.relative_to(root)),
        "quiet_capture_ms": quiet,
        "requests": len(took),
        "p50_ms": ms(took[len(took) // 2]) if took else None,
        "max_ms": ms(took[-1]) if took else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--scale", type=int, default=1)
    p.add_argument("--touch", type=int, default=1000, help="files touched before a drain")
    p.add_argument("--runs", type=int, default=7, help="captures timed for each case of links")
    p.add_argument("--ignored", type=int, default=10_000, help="ignored packages added")
    p.add_argument("--flooders", type=int, default=2)
    p.add_argument("--flood-seconds", type=float, default=10.0)
    p.add_argument("--only", choices=["links", "ignored", "flood"], help="this part only")
    args = p.parse_args()
    if args.only:
        with private_copy(args.bundle.resolve(), args.scale) as root:
            if args.only == "links":
                got = link_cost(root, args.runs)
            elif args.only == "ignored":
                got = ignored_watches(root, args.ignored)
            else:
                got = flood_cost(root, args.flooders, args.flood_seconds)
        json.dump({"scale": args.scale, args.only: got}, sys.stdout, indent=1)
        print()
        return 0
    out: dict[str, Any] = {"scale": args.scale}
    out["import"] = {
        "inotify_simple_ms": ms(import_seconds("inotify_simple")),
        "ctypes_struct_ms": ms(import_seconds("ctypes, struct")),
        "note": "timed inside a fresh interpreter; inotify_simple imports ctypes too",
    }
    with private_copy(args.bundle.resolve(), args.scale) as root:
        walks = []
        for _ in range(5):
            start = time.perf_counter()
            files = stat_walk(root)
            walks.append(time.perf_counter() - start)
        out["stat_walk_floor"] = {"median_ms": median_ms(walks), "files": files}
        before_slab = slab_marks()
        rss0 = vm_rss_kib()
        start = time.perf_counter()
        journal = open_journal(str(root))
        armed = time.perf_counter() - start
        assert isinstance(journal, Journal), journal
        rss1 = vm_rss_kib()
        after_slab = slab_marks()
        arm: dict[str, Any] = {
            "watches": journal.watches,
            "ms": ms(armed),
            "vmrss_before_kib": rss0,
            "vmrss_after_kib": rss1,
        }
        if before_slab and after_slab:
            used = after_slab[0] - before_slab[0]
            arm["kernel_marks_added"] = used
            arm["kernel_bytes_per_mark"] = after_slab[1]
            arm["kernel_kib"] = round(used * after_slab[1] / 1024, 1)
        out["arm"] = arm
        journal.drain()
        empty = []
        for _ in range(2000):
            start = time.perf_counter()
            d = journal.drain()
            empty.append(time.perf_counter() - start)
            assert d.vouched
        targets = []
        for dirpath, _dirs, names in os.walk(root):
            targets.extend(os.path.join(dirpath, n) for n in names if n.endswith(".md"))
            if len(targets) >= args.touch:
                break
        targets = targets[: args.touch]
        for path in targets:
            os.utime(path)
        start = time.perf_counter()
        d = journal.drain()
        touched = time.perf_counter() - start
        out["drain"] = {
            "empty_median_us": round(1e6 * statistics.median(empty), 2),
            "empty_vs_stat_walk": round(statistics.median(empty) / statistics.median(walks), 6),
            "after_touching": {
                "files": len(targets),
                "ms": ms(touched),
                "named": len(d.paths),
                "vouched": d.vouched,
            },
        }
        journal.close()
        out["links"] = link_cost(root, args.runs)
        out["ignored"] = ignored_watches(root, args.ignored)
        out["flood"] = flood_cost(root, args.flooders, args.flood_seconds)
    out["parse"] = parse_cost(args.touch * 5)
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
