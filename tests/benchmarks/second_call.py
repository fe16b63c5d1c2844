"""The CLI's second call with and without the warm process (issue 26: Windows has none, so
every call there pays what CITELINE_DAEMON=0 pays here). Run by hand, never by pytest:

    python tests/benchmarks/second_call.py BUNDLE QUERIES_FILE N

Each query is asked of the warm process, then of a process of its own, then of `rg -c -i -w`
(its first word), alternately, after a first call that fills the cache and one that starts
the warm process; prints one JSON object with the medians and their ratios."""

import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

bundle, queries_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(queries_file, encoding="utf-8") as lines:
    queries = [q.strip() for q in lines if q.strip() and not q.startswith("#")][:n]
tmp = tempfile.mkdtemp(prefix="pf-bench-")
os.mkdir(f"{tmp}/run")
base = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
base |= {
    "CITELINE_CACHE_DIR": f"{tmp}/cache",
    "XDG_RUNTIME_DIR": f"{tmp}/run",
    "CITELINE_LOG": "debug",
}
cmd = [
    sys.executable,
    "-m",
    "citeline.cli.entry",
    "search",
    bundle,
    "--json",
    "--raise-limits",
    "--skip-invalid",
    "-q",
]


def call(q, warm):
    env = dict(base, CITELINE_DAEMON="1" if warm else "0")
    t = time.perf_counter()
    p = subprocess.run([*cmd, q], env=env, capture_output=True)
    dt = (time.perf_counter() - t) * 1000
    return dt, b"answered by the warm process" in p.stderr, p.returncode


call(queries[0], False)  # first call: fills the cache
call(queries[0], True)  # starts the warm process
deadline = time.time() + 60
while not glob.glob(f"{tmp}/run/citeline-*/*.sock") and time.time() < deadline:
    time.sleep(0.1)
call(queries[0], True)  # its first answer loads the index
rg = []
warm, cold, answered = [], [], 0
for q in queries:
    dt, w, _ = call(q, True)
    warm.append(dt)
    answered += w
    dt, _, _ = call(q, False)
    cold.append(dt)
    t = time.perf_counter()
    subprocess.run(
        ["rg", "-c", "-i", "-w", "--no-require-git", "--iglob", "*.md", "-e", q.split()[0], bundle],
        capture_output=True,
    )
    rg.append((time.perf_counter() - t) * 1000)
for s in glob.glob(f"{tmp}/run/citeline-*/*.sock"):
    os.unlink(s)
med = statistics.median
print(
    json.dumps(
        {
            "bundle": bundle,
            "queries": len(queries),
            "answered_by_warm_process": answered,
            "warm_process_p50_ms": round(med(warm), 1),
            "own_process_p50_ms": round(med(cold), 1),
            "rg_p50_ms": round(med(rg), 1),
            "own_over_warm": round(med(cold) / med(warm), 2),
            "warm_over_rg": round(med(warm) / med(rg), 2),
            "own_over_rg": round(med(cold) / med(rg), 2),
        }
    )
)
