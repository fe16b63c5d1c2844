"""The capture's cost on each backend (issue 26), against another checkout and the stat walk.

Run by hand (never by pytest)::

    python tests/benchmarks/capture_backends.py --bundle ../shared/corpora/tldr/docs \\
        [--base /path/to/a/checkout/of/main] [--rounds 5] [--out results.json]

Each round runs, one after the other and each in a fresh process: the `--base` checkout's
capture (when given: on the descriptor backend and on the path backend), this checkout's
capture on the descriptor backend, and on the path backend (`CITELINE_PLATFORM=windows`:
what Windows runs, measured on Linux), in an order that rotates from round to round. Each
process times three cold captures (every file walked, read and hashed: `capture.capture`,
no analysis; the median), then warm captures
with the stat index of a cold one (nothing read), and the stat-walk floor (`os.walk` +
`os.lstat` of every captured file) right before each warm capture, so every ratio
compares the same machine state; wall-clock and CPU times. Medians over the rounds, and
ratios to the base (of the medians, and the median of each round's pair) and to the floor,
are printed as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

MEASURE = """
import json, os, statistics, sys, time
from citeline.engine.capture.capture import capture
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.capture import files

bundle, warm_runs = sys.argv[1], int(sys.argv[2])
big = 1 << 40
settings = Settings(limits=Limits(max_files=10**7, max_total_bytes=big, max_file_bytes=big))

def markdown(name):
    return name.lower().endswith((".md", ".markdown"))

def floor():
    n = 0
    for top, dirs, names in os.walk(bundle):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith(".") and markdown(name):
                os.lstat(os.path.join(top, name))
                n += 1
    return n

colds, cold_cpus = [], []
for _ in range(3):
    start, cpu = time.perf_counter(), time.process_time()
    snap = capture(bundle, settings)
    colds.append(time.perf_counter() - start)
    cold_cpus.append(time.process_time() - cpu)
cold = statistics.median(colds)
warm, warm_cpus, floors = [], [], []
for _ in range(warm_runs):
    start = time.perf_counter()
    floor()
    floors.append(time.perf_counter() - start)
    start, cpu = time.perf_counter(), time.process_time()
    again = capture(bundle, settings, known=snap.known)
    warm.append(time.perf_counter() - start)
    warm_cpus.append(time.process_time() - cpu)
    assert again.read == 0 and again.revision == snap.revision
print(json.dumps({
    "backend": files.BACKEND.name if hasattr(files, "BACKEND") else "descriptor",
    "files": len(snap.files),
    "revision": snap.revision,
    "cold_ms": cold * 1000,
    # this process's CPU time: less moved than the wall clock by other work on the machine
    "cold_cpu_ms": statistics.median(cold_cpus) * 1000,
    "warm_cpu_ms": statistics.median(warm_cpus) * 1000,
    "warm_ms": statistics.median(warm) * 1000,
    "floor_ms": statistics.median(floors) * 1000,
}))
"""


def bootstrap(repo: Path) -> str:
    """Python that maps citeline.engine and citeline.lsp onto `repo` (as bench.py does)."""
    where = {
        f"citeline.{p}": str(repo / f)
        for p, f in (
            ("engine", "engine"),
            ("lsp", "lsp"),
            ("cli", "cli"),
            ("mcp_server", "mcp_server"),
            ("fronts", "fronts"),
        )
    }
    return f"""
import importlib.abc, importlib.util, sys
class _Finder(importlib.abc.MetaPathFinder):
    MAP = {where!r}
    def find_spec(self, fullname, path, target=None):
        w = self.MAP.get(fullname)
        if w is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, w + "/__init__.py", submodule_search_locations=[w])
sys.meta_path.insert(0, _Finder())
"""


def run(repo: Path, platform: str | None, bundle: Path, warm: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    if platform:
        env["CITELINE_PLATFORM"] = platform
    out = subprocess.run(
        [sys.executable, "-c", bootstrap(repo) + MEASURE, str(bundle), str(warm)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--base", type=Path, default=None, help="another checkout to compare with")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warm", type=int, default=5, help="warm captures per process")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    variants: list[tuple[str, Path, str | None]] = []
    if args.base is not None:
        variants.append(("base", args.base.resolve(), None))
        variants.append(("base_path", args.base.resolve(), "windows"))
    variants += [("descriptor", REPO, None), ("path", REPO, "windows")]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in variants}
    for i in range(args.rounds):
        for name, repo, platform in variants[i % len(variants) :] + variants[: i % len(variants)]:
            got = run(repo, platform, args.bundle.resolve(), args.warm)
            runs[name].append(got)
            print(f"round {i + 1} {name}: {got}", file=sys.stderr, flush=True)
    revisions = {r["revision"] for rs in runs.values() for r in rs}
    report: dict[str, Any] = {
        "bundle": str(args.bundle),
        "rounds": args.rounds,
        "files": runs["descriptor"][0]["files"],
        "same_revision_everywhere": len(revisions) == 1,
        "median_ms": {},
        "ratios": {},
    }
    for name, rs in runs.items():
        report["median_ms"][name] = {
            k: round(statistics.median(r[k] for r in rs), 1)
            for k in ("cold_ms", "warm_ms", "floor_ms", "cold_cpu_ms", "warm_cpu_ms")
        }
        report["ratios"][f"{name}_warm_vs_floor"] = round(
            statistics.median(r["warm_ms"] / r["floor_ms"] for r in rs), 3
        )
    med = report["median_ms"]
    for name in runs:
        # each backend against the base on the same backend, by medians and pair by pair
        # (the runs of one round follow each other, so a pair shares the machine's state)
        base = "base_path" if name == "path" else "base"
        if name not in ("base", "base_path") and base in runs:
            for k in ("cold_ms", "warm_ms", "cold_cpu_ms", "warm_cpu_ms"):
                report["ratios"][f"{name}_{k[:-3]}_vs_base"] = round(med[name][k] / med[base][k], 3)
                pairs = zip(runs[name], runs[base], strict=True)
                report["ratios"][f"{name}_{k[:-3]}_vs_base_paired"] = round(
                    statistics.median(r[k] / b[k] for r, b in pairs), 3
                )
    text = json.dumps(report, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
