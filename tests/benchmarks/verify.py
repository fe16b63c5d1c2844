"""verify (issue 53) against search on a warm engine, and the memory of the section-hash tables.

Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    python tests/benchmarks/verify.py --bundle ../shared/corpora/tldr/docs --scale 1
    python tests/benchmarks/verify.py --bundle ../shared/corpora/tldr/docs --scale 10 --rounds 5

Per scale: one engine as the long-lived fronts have it (files held, no cache), warmed by a
first search of each query; then --rounds rounds of, for each query, a recall search of 100
hits and a verify of those 100 hits (each round alternating which goes first). Reported:
the p50 of each (the issue's target: verify's ≤ search's).

Memory: a second engine that holds no file bytes builds the recall index under tracemalloc
(what the index holds once built; `--memory-by rss`: the resident set's growth instead, fast
enough for ×10, an upper bound: it counts what the allocator keeps too), then one verify
whose citation's text is in no file asks for the look-up by hash across the bundle, which
makes every block's table (what that adds, always under tracemalloc, and the tables' own
payload). Target: under 5% of the index.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import scaled_bundle
from harness import say

from citeline.engine import Engine
from citeline.lsp.settings import editor_defaults  # the workspace limits the fronts use


def settings() -> Any:
    """The fronts' workspace settings, with bench.py's generous limits (×10 of tldr is more
    than the workspace's 200,000 files)."""
    from dataclasses import replace

    from bench import GENEROUS

    return replace(editor_defaults(), limits=GENEROUS)


QUERIES = ["git commit", "docker run", "tar archive", "ssh key", "change permissions", "ffmpeg"]
RECALL = {"profile": "recall"}


def timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def speed(root: Path, rounds: int) -> dict[str, Any]:
    engine = Engine(settings())
    call = engine.call(root)
    cites: dict[str, list[dict[str, Any]]] = {}
    for q in QUERIES:  # warm: the index built, the hits' files held
        cites[q] = engine.search(call, {"query": q, "limit": 100, **RECALL})["hits"]
    searches: list[float] = []
    verifies: list[float] = []
    statuses: dict[str, int] = {}
    for r in range(rounds):
        for q in QUERIES:
            if not cites[q]:
                continue
            steps = [
                ("search", lambda q=q: engine.search(call, {"query": q, "limit": 100, **RECALL})),
                ("verify", lambda q=q: engine.verify(call, {"citations": cites[q]})),
            ]
            for kind, fn in steps if r % 2 == 0 else steps[::-1]:
                ms, out = timed(fn)
                (searches if kind == "search" else verifies).append(ms)
                if kind == "verify":
                    for x in out["results"]:
                        statuses[x["status"]] = statuses.get(x["status"], 0) + 1
    engine.close()
    return {
        "citations_per_verify": {q: len(c) for q, c in cites.items()},
        "search_p50_ms": round(statistics.median(searches), 2),
        "verify_p50_ms": round(statistics.median(verifies), 2),
        "verify_over_search": round(statistics.median(verifies) / statistics.median(searches), 3),
        "statuses": statuses,
    }


def resident() -> int:
    """This process's resident bytes now (Linux), after a collection."""
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Meter:
    """What an allocation-heavy step adds: under tracemalloc (exact Python allocations, but
    it slows the build several times: over 15 minutes at ×10 here), or as the growth of the
    resident set (fast; counts what the allocator keeps too, so an upper bound)."""

    def __init__(self, by: str) -> None:
        self.by = by

    def measure(self, fn: Any) -> tuple[float, int, Any]:
        if self.by == "rss":
            base = resident()
            ms, out = timed(fn)
            return ms, resident() - base, out
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        ms, out = timed(fn)
        added = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        return ms, added, out


def memory(root: Path, by: str) -> dict[str, Any]:
    from citeline.engine.answer.requests import Relevance

    meter = Meter(by)
    engine = Engine(settings(), hold_bytes=0)
    call = engine.call(root)
    options = Relevance.from_mapping(RECALL).analysis
    ms, index_bytes, index = meter.measure(lambda: engine.prepare(call, options))
    hit = engine.search(call, {"query": "tar", "limit": 1, **RECALL})["hits"][0]
    gone = {**hit, "section_sha256": "0" * 64, "content_sha256": "1" * 64}
    # The tables always under tracemalloc (a minute at ×10): the resident set's growth would
    # count the decoding of every file, which the allocator keeps but nothing holds.
    first, added, out = Meter("tracemalloc").measure(
        lambda: engine.verify(call, {"citations": [gone]})
    )
    assert out["results"][0]["status"] in ("missing", "changed")
    again, _ = timed(lambda: engine.verify(call, {"citations": [gone]}))
    live = engine.prepare(call, options)
    payload = live.hashes.nbytes()
    engine.close()
    return {
        "measured_by": by,
        "sections": index.n,
        f"index_build_ms_{by}": round(ms),
        "index_bytes": index_bytes,
        "hash_tables_added_bytes": added,
        "hash_tables_payload_bytes": payload,
        "hash_share_of_index": round(added / index_bytes, 4),
        "payload_share_of_index": round(payload / index_bytes, 4),
        "hash_table_bytes_per_section": round(added / index.n, 2),
        "index_bytes_per_section": round(index_bytes / index.n, 1),
        "first_cross_file_lookup_ms_under_tracemalloc": round(first),
        "later_cross_file_lookup_ms": round(again, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument(
        "--memory-by",
        choices=["tracemalloc", "rss"],
        default="tracemalloc",
        help="rss: the resident set's growth (fast enough for ×10; an upper bound)",
    )
    args = ap.parse_args()
    with scaled_bundle(args.bundle.resolve(), args.scale) as root:
        say(f"speed on ×{args.scale}")
        report: dict[str, Any] = {"scale": args.scale}
        if not args.skip_speed:
            report["speed"] = speed(root, args.rounds)
        if not args.skip_memory:
            say(f"memory on ×{args.scale}")
            report["memory"] = memory(root, args.memory_by)
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
