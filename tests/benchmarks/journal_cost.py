"""What the change journal costs (engine/reuse/journal.py, issue 32), and the binding's share.

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
  same folder: what the thin binding costs over doing it by hand.
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

from citeline.engine.reuse.journal import IN_ATTRIB, Journal, open_journal


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


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--scale", type=int, default=1)
    p.add_argument("--touch", type=int, default=1000, help="files touched before a drain")
    args = p.parse_args()
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
    out["parse"] = parse_cost(args.touch * 5)
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
