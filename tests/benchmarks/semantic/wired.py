"""What semantic mode and `profile: hybrid` cost through the wired paths (issue 27): the
real `citeline` processes and the language server, each on a private empty cache folder.

    python tests/benchmarks/semantic/wired.py > semantic-wired.json       # progress on stderr
    python tests/benchmarks/semantic/wired.py --corpora docs-conceptual --first 2 --rounds 2

Run by hand, never by pytest. Measured with public tools only, on docs-conceptual
(../shared/corpora/powershell-docs/docs/reference/docs-conceptual) and tldr
(../shared/corpora/tldr/docs), the queries being the first dev questions of the relevance
sets written for them (tests/benchmarks/relevance/judged_en.json, judged_tldr.json):

- ``first``: a process of its own per call (CITELINE_DAEMON=0), wall time from spawn to
  exit and its ru_maxrss: ``citeline search --profile recall Q``, ``citeline search --profile
  hybrid Q`` and ``citeline lines --semantic Q``, in a rotating order per query;
  ``empty``: each with a fresh empty cache folder (capture, index, the 20 candidates'
  vectors, the query's); ``index_cached``: a copy of the cache the recall call left (the
  index is cached, no vector is); ``all_cached``: the same call again on the cache it left
  (every vector cached: what a second call pays without the warm process);
- ``warm``: one ``citeline lsp`` over stdio (VS Code's initializationOptions, the client of
  tests/benchmarks/harness.py): a recall search to load the index, each query's hybrid and
  semantic request once (its first semantic answer in a long-lived process, and the
  candidates' vectors cached), then ``--rounds`` rounds of every query as recall, hybrid
  and semantic requests, the order rotated per query, so that the load of the machine falls
  on the three alike; p50/p90 and the ratios to recall. The server's background embedder
  (one thread at nice 19, paused while a request runs) works meanwhile, as it would for a
  user;
- ``embedding`` (docs-conceptual only): that server then left alone ``--embed-seconds``
  seconds: the vectors its background embedder wrote to the cache (counted in the cache's
  SQLite file, read-only), hence sections/s; the cache's growth per 1,000 sections (the
  database's pages, WAL included, before and after, divided); and an estimate of what
  embedding all of each corpus costs (its sections ÷ that rate);
- memory: every CLI call's ru_maxrss and the server's VmHWM (and its descendants').

The children get OMP_NUM_THREADS=--threads (default 1: the machine's 2 cores are shared,
docs/semantic.md says what two threads change) and the load average is recorded before and
after each part.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "relevance"))

from harness import LspClient, TreeMemory, load_average, ms, percentile, ratio, say  # noqa: E402
from locate import bundle_path  # noqa: E402
from workspace import (  # noqa: E402
    Caches,
    Launcher,
    child_env,
    initialize_params,
    launcher,
    search_params,
    vscode_options,
)

CORPORA = {  # name -> (bundle as the judged sets name it, the judged set of its queries)
    "docs-conceptual": ("../shared/corpora/powershell-docs/docs/reference/docs-conceptual", "en"),
    "tldr": ("../shared/corpora/tldr/docs", "tldr"),
}
VARIANTS = ("recall", "hybrid", "semantic")
CACHE_FILE = "citeline-cache.sqlite3"  # engine/store/store.py FILE_NAME
TARGET_FIRST_S = 15.0  # issue 27: first hybrid or semantic answer, empty cache, docs-conceptual
TARGET_WARM_RATIO = 3.0  # issue 27: warm hybrid p50 <= 3 x warm recall p50


def queries_of(judged: str, n: int) -> list[str]:
    data = json.loads((BENCH / "relevance" / f"judged_{judged}.json").read_text("utf-8"))
    dev = [q["query"] for q in data["queries"] if q["split"] == "dev"]
    return dev[:n]


def rotated(i: int) -> list[str]:
    return [*VARIANTS[i % 3 :], *VARIANTS[: i % 3]]


# -- one CLI process ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    seconds: float
    rss_mib: float
    ok: bool
    detail: str  # the hits' or matches' count, or what went wrong


def cli_argv(
    run: Launcher, variant: str, root: Path, query: str, flags: Sequence[str]
) -> list[str]:
    if variant == "semantic":
        return run.cmd("lines", str(root), "--semantic", query, "--json", *flags)
    extra = ["--profile", variant]  # recall or hybrid (the CLI's default is contract)
    return run.cmd("search", str(root), "-q", query, "--json", *extra, *flags)


def cli(
    run: Launcher,
    variant: str,
    root: Path,
    query: str,
    cache: str,
    flags: Sequence[str],
    env: dict[str, str],
) -> Run:
    """One whole process, timed from spawn to its exit (CITELINE_DAEMON=0)."""
    import subprocess

    argv = cli_argv(run, variant, root, query, flags)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env={**child_env(cache), **env},
        )
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.stdout.close()
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-300:]
    code = os.waitstatus_to_exitcode(status)
    try:
        body = json.loads(out)
    except ValueError:
        return Run(seconds, usage.ru_maxrss / 1024.0, False, f"exit {code}: {tail!r}")
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return Run(seconds, usage.ru_maxrss / 1024.0, False, str(body["error"].get("code")))
    found = body.get("matches") if variant == "semantic" else body.get("hits")
    return Run(seconds, round(usage.ru_maxrss / 1024.0, 1), True, f"{len(found or [])} results")


def copy_cache(source: str, target: str) -> None:
    """A copy of a cache folder (its mode kept: the engine uses only a private folder)."""
    shutil.copytree(source, target, copy_function=shutil.copy2)


def first_answers(
    run: Launcher,
    root: Path,
    queries: Sequence[str],
    flags: Sequence[str],
    env: dict[str, str],
    store: Caches,
) -> dict[str, Any]:
    runs: dict[str, dict[str, list[Run]]] = {
        state: {v: [] for v in VARIANTS} for state in ("empty", "index_cached", "all_cached")
    }
    for i, q in enumerate(queries):
        order = rotated(i)
        caches: dict[str, str] = {}
        for v in order:  # empty caches
            caches[v] = store.fresh()
            r = cli(run, v, root, q, caches[v], flags, env)
            runs["empty"][v].append(r)
            say(f"  empty {v:<8} {r.seconds:6.2f} s {r.rss_mib:6.1f} MiB {r.detail}  ({q})")
        for v in order:  # the index cached (recall's cache), no vector
            if v == "recall":
                continue
            cache = store.fresh()
            copy_cache(caches["recall"], cache)
            r = cli(run, v, root, q, cache, flags, env)
            runs["index_cached"][v].append(r)
            say(f"  index  {v:<8} {r.seconds:6.2f} s {r.detail}")
        for v in order:  # the same call again, on the cache it left
            r = cli(run, v, root, q, caches[v], flags, env)
            runs["all_cached"][v].append(r)
            say(f"  again  {v:<8} {r.seconds:6.2f} s {r.detail}")
    out: dict[str, Any] = {}
    for state, by in runs.items():
        out[state] = {}
        for v, rs in by.items():
            if not rs:
                continue
            out[state][v] = {
                "median_s": round(statistics.median(r.seconds for r in rs), 3),
                "runs_s": [round(r.seconds, 3) for r in rs],
                "peak_rss_mib": max(r.rss_mib for r in rs),
                "failed": [r.detail for r in rs if not r.ok],
                "results": [r.detail for r in rs if r.ok],
            }
    # the peer: recall in the same state; with the index cached, recall's call on its cache
    peer = {"empty": "empty", "index_cached": "all_cached", "all_cached": "all_cached"}
    for state in out:
        base = out[peer[state]]["recall"]["median_s"]
        for v in ("hybrid", "semantic"):
            if v in out[state]:
                out[state][v]["over_recall"] = ratio(out[state][v]["median_s"], base)
                out[state][v]["minus_recall_s"] = round(out[state][v]["median_s"] - base, 3)
    return out


# -- the language server ------------------------------------------------------------------


def vector_rows(cache: str) -> tuple[int, int]:
    """(vectors in the cache, the database's bytes as pages, WAL included), read-only."""
    path = Path(cache) / CACHE_FILE
    if not path.exists():
        return 0, 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        (count,) = db.execute("SELECT count(*) FROM entries WHERE kind = 'vector'").fetchone()
        (pages,) = db.execute("PRAGMA page_count").fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
        return int(count), int(pages) * int(size)
    except sqlite3.Error:
        return 0, 0
    finally:
        db.close()


def disk_bytes(cache: str) -> int:
    return sum(
        (Path(cache) / f"{CACHE_FILE}{s}").stat().st_size
        for s in ("", "-wal", "-shm")
        if (Path(cache) / f"{CACHE_FILE}{s}").exists()
    )


def lines_params(root: Path, query: str) -> dict[str, Any]:
    request = {"mode": "semantic", "query": query, "root": root.as_uri()}
    return {"command": "citeline.lines", "arguments": [request]}


def params(variant: str, root: Path, query: str) -> dict[str, Any]:
    if variant == "semantic":
        return lines_params(root, query)
    return search_params(root, query, variant)


def summary(samples: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(samples),
        "p50_ms": ms(percentile(samples, 50)),
        "p90_ms": ms(percentile(samples, 90)),
    }


def warm_server(
    run: Launcher,
    root: Path,
    queries: Sequence[str],
    rounds: int,
    embed_seconds: float,
    env: dict[str, str],
    store: Caches,
) -> dict[str, Any]:
    cache = store.fresh()
    started = time.perf_counter()
    client = LspClient(run.cmd("lsp"), {**child_env(cache), **env})
    memory = TreeMemory(client.pid)
    out: dict[str, Any] = {}
    try:
        client.request("initialize", initialize_params(root, vscode_options("recall")))
        client.notify("initialized", {})
        seconds, _ = client.request("workspace/executeCommand", params("recall", root, queries[0]))
        out["first_recall_ms"] = ms(seconds)
        out["spawn_to_first_recall_ms"] = ms(time.perf_counter() - started)
        firsts: dict[str, list[float]] = {"hybrid": [], "semantic": []}
        paired: dict[str, list[float]] = {"first_of_query": [], "other_mode_next": []}
        for i, q in enumerate(queries):  # the candidates' vectors: cached from here on
            for j, v in enumerate(("hybrid", "semantic") if i % 2 == 0 else ("semantic", "hybrid")):
                seconds, _ = client.request("workspace/executeCommand", params(v, root, q))
                firsts[v].append(seconds)
                paired["other_mode_next" if j else "first_of_query"].append(seconds)
        out["first_in_server"] = {
            **{v: {**summary(s), "runs_ms": [ms(x) for x in s]} for v, s in firsts.items()},
            **{k: summary(s) for k, s in paired.items()},
            "note": "each query's first hybrid and semantic request in the warm server, the "
            "index loaded, the two modes alternately first (the runs in the order asked): "
            "the first of a query embeds its candidates (those not yet cached by an earlier "
            "query or the background embedder) and the query; the other mode right after "
            "finds them cached",
        }
        say(
            f"  first in server: {out['first_in_server']['first_of_query']['p50_ms']} ms, "
            f"the other mode next {out['first_in_server']['other_mode_next']['p50_ms']} ms"
        )
        samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
        sizes: dict[str, list[int]] = {v: [] for v in VARIANTS}
        for _ in range(rounds):
            for i, q in enumerate(queries):
                for v in rotated(i):
                    seconds, result = client.request("workspace/executeCommand", params(v, root, q))
                    samples[v].append(seconds)
                    found = result.get("matches" if v == "semantic" else "hits") or []
                    sizes[v].append(len(found))
        warm = {
            v: {**summary(s), "results_median": statistics.median(sizes[v])}
            for v, s in samples.items()
        }
        base = percentile(samples["recall"], 50)
        for v in ("hybrid", "semantic"):
            warm[v]["p50_over_recall"] = ratio(percentile(samples[v], 50), base)
            warm[v]["p90_over_recall"] = ratio(
                percentile(samples[v], 90), percentile(samples["recall"], 90)
            )
        out["warm"] = warm
        say("  warm p50: " + ", ".join(f"{v} {warm[v]['p50_ms']} ms" for v in VARIANTS))
        if embed_seconds > 0:
            out["embedding"] = idle_embedding(cache, embed_seconds)
    finally:
        out["memory"] = memory.stop()
        client.close()
        if client.stderr_lines:
            out["stderr_tail"] = client.stderr_lines[-5:]
    return out


def idle_embedding(cache: str, seconds: float) -> dict[str, Any]:
    """The background embedder alone for `seconds`: its rate and the cache's growth."""
    count0, pages0 = vector_rows(cache)
    disk0 = disk_bytes(cache)
    t0 = time.perf_counter()
    trace = []
    while time.perf_counter() - t0 < seconds:
        time.sleep(10)
        count, _ = vector_rows(cache)
        trace.append([round(time.perf_counter() - t0, 1), count])
    count1, pages1 = vector_rows(cache)
    disk1 = disk_bytes(cache)
    elapsed = time.perf_counter() - t0
    done = count1 - count0
    rate = done / elapsed if elapsed else 0.0
    say(f"  background embedder: {done} vectors in {elapsed:.0f} s ({rate:.2f}/s)")
    return {
        "seconds": round(elapsed, 1),
        "vectors_before": count0,
        "vectors_after": count1,
        "sections_per_s": round(rate, 3),
        "db_bytes_before": pages0,
        "db_bytes_after": pages1,
        "db_growth_per_1000_sections_bytes": round((pages1 - pages0) / done * 1000)
        if done
        else None,
        "disk_bytes_before": disk0,
        "disk_bytes_after": disk1,
        "disk_growth_per_1000_sections_bytes": round((disk1 - disk0) / done * 1000)
        if done
        else None,
        "trace": trace,
        "note": "vectors counted in the cache's SQLite file (read-only) while the server is "
        "idle; db bytes are its pages (WAL included, as a reader sees them), disk bytes the "
        "three files' sizes",
    }


def sections_of(root: Path, flags: Sequence[str]) -> int:
    """The corpus's sections (what the background embedder has to embed), in process."""
    from citeline.engine import Engine
    from citeline.engine.answer.requests import Relevance
    from citeline.engine.base.limits import Limits, Settings

    engine = Engine(Settings(limits=Limits.editor(), skip_invalid=True))
    snapshot = engine.capture(engine.call(root))
    index = engine.index(
        snapshot, Relevance.from_mapping({"profile": "recall"}).analysis, bundle=root
    )
    return int(index.n)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--first", type=int, default=3, help="queries of the first-answer runs")
    parser.add_argument("--queries", type=int, default=10, help="queries of the warm server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--embed-seconds", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of the children")
    parser.add_argument("--parts", default="first,warm", help="first, warm or both")
    args = parser.parse_args(argv)
    run = launcher(use_repo=True)
    env = {"OMP_NUM_THREADS": str(args.threads)}
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": run.how,
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "load_average_start": load_average(),
        "corpora": {},
    }
    store = Caches()
    try:
        for name in args.corpora.split(","):
            relative, judged = CORPORA[name]
            root = bundle_path(relative)
            flags = ["--raise-limits"] if name == "tldr" else []
            queries = queries_of(judged, max(args.first, args.queries))
            sections = sections_of(root, flags)
            say(f"{name}: {sections} sections; first answers ({args.first} queries)")
            part: dict[str, Any] = {"bundle": relative, "sections": sections, "flags": flags}
            part["load_average_before"] = load_average()
            if "first" in args.parts:
                part["first"] = first_answers(run, root, queries[: args.first], flags, env, store)
                part["first"]["queries"] = queries[: args.first]
            if "warm" in args.parts:
                say(f"{name}: warm server ({args.queries} queries, {args.rounds} rounds)")
                part["server"] = warm_server(
                    run,
                    root,
                    queries[: args.queries],
                    args.rounds,
                    args.embed_seconds if name == "docs-conceptual" else 0.0,
                    env,
                    store,
                )
                part["server"]["queries"] = queries[: args.queries]
            part["load_average_after"] = load_average()
            report["corpora"][name] = part
    finally:
        store.close()
    rate = None
    if "server" in report["corpora"].get("docs-conceptual", {}):
        rate = (
            report["corpora"]["docs-conceptual"]["server"]
            .get("embedding", {})
            .get("sections_per_s")
        )
    report["whole_corpus_estimate"] = {
        name: {
            "sections": part["sections"],
            "hours_at_measured_rate": round(part["sections"] / rate / 3600, 2) if rate else None,
        }
        for name, part in report["corpora"].items()
    }
    report["targets"] = targets(report)
    report["load_average_end"] = load_average()
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    print(file=sys.stdout)
    return 0


def targets(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dc = report["corpora"].get("docs-conceptual")
    if dc and "first" in dc:
        empty = dc["first"]["empty"]
        worst = max(empty["hybrid"]["median_s"], empty["semantic"]["median_s"])
        out["first_answer_empty_cache_docs_conceptual_s"] = {
            "value": worst,
            "limit": TARGET_FIRST_S,
            "pass": worst <= TARGET_FIRST_S,
        }
    for name, part in report["corpora"].items():
        if "server" not in part:
            continue
        got = part["server"]["warm"]["hybrid"]["p50_over_recall"]
        out[f"warm_hybrid_over_recall_{name}"] = {
            "value": got,
            "limit": TARGET_WARM_RATIO,
            "pass": got is not None and got <= TARGET_WARM_RATIO,
        }
    return out


if __name__ == "__main__":
    raise SystemExit(main())
