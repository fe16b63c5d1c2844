"""Performance benchmark of citeline against its peers, on one bundle and one query set.

Run by hand (pytest does not collect tests/benchmarks)::

    python tests/benchmarks/bench.py --bundle ../shared/corpora/apisix-zh/docs \
        --queries tests/benchmarks/queries/apisix.txt [--repeat 5] [--scale K | --compare-scale K]
        [--no-lsp] [--workspace | --workspace-only] [--cli-flags '...'] [--out FILE]

Prints ONE JSON object on stdout (progress goes to stderr) with:

- ``cold_search``: a fresh ``Engine()`` (no persistent cache) per run and one search (the
  set's first query);
- ``warm_search``: one engine, files unchanged, every query of the set (``--repeat`` rounds);
- ``workspace_symbol``: round trips of ``workspace/symbol`` through a real stdio ``citeline lsp``
  session, for every query and every prefix of its last word (as-you-type);
- ``peak_rss_mib`` of this process and of the server (VmHWM);
- peers measured in the same run on the same captured files: ``capture_floor`` (walk + read +
  SHA-256 in plain Python, one run right before each warm search, so the ratio compares
  like with like), ``markdown_it_parse``, ``sqlite_fts5`` (build + bm25 queries over the
  engine's own sections) and ``rg`` (``rg -c -i -w`` for each query's first term);
- ``ratios`` and ``targets`` (pass/fail), the files a warm capture read and the load average.

``--workspace`` adds ``workspace`` (workspace.py: the CLI and the language server as whole
processes, as their users start them, against the stat-walk, read+hash and markdown-it
block-parse floors; issue 13's ratios and targets), whose server session then also gives
``workspace_symbol`` (with the editor defaults instead of raised limits).
``--workspace-only`` measures only that (and ``rg``), without an engine in this process.

``--compare-scale K`` runs scale 1 and scale K as above, then both again alternately (each
scale-K search right after the same scale-1 search): the ``scale_ratios`` (and, with the
workspace measurements, ``workspace_scale``) come from these pairs, which see the same
machine state.

In this process every engine limit is raised generously (see ``limits`` in the output) and
unparsable files are skipped, so large corpora and ``--scale`` copies fit; no engine here
has a persistent cache (the "no reuse" peers use ``reread=True, hold_bytes=0``), and every
server or CLI started has a private temporary cache folder. ``--scale K`` copies the bundle
K times into a temporary folder (``copy0/`` … ``copy{K-1}/``); copy *i* gets *i* extra
trailing newlines in every Markdown file and a ``~copy{i}`` suffix on front-matter ids
(which would otherwise collide), so the copies have distinct SHA-256s (as K distinct
corpora would: no copy is served from another's cache entries) and the same tokens and
sections.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import os
import platform
import pstats
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (
    BOOTSTRAP,
    REPO,
    LspClient,
    load_average,
    ms,
    percentile,
    ratio,
    read_queries,
    rss_self_mib,
    say,
    summary_ms,
    symbol_queries,
    timed,
    verdict,
)

if "--use-installed" not in sys.argv:
    exec(BOOTSTRAP)

import workspace

import citeline.engine as citeline_engine
from citeline.engine import Engine, Limits, Settings, Snapshot
from citeline.engine.capture.stats import RACY_NS
from citeline.engine.index.parallel import default_workers
from citeline.engine.text.layout import decode
from citeline.engine.text.terms import query_terms

SUFFIXES = (".md", ".markdown")

# Targets of the "Performance" issue.
TARGET_WARM_VS_CAPTURE = 1.5
TARGET_COLD_VS_MARKDOWN_IT = 1.0
TARGET_SYMBOL_P50_MS = 200.0
TARGET_PEAK_RSS_MIB = 400.0
TARGET_SCALE_RATIO = 4.5  # for K = 4

# Raised far beyond any corpus benchmarked here (the defaults are SPEC §2's).
GENEROUS = Limits(
    max_files=10_000_000,
    max_total_bytes=1 << 40,
    max_file_bytes=1 << 36,
    max_sections=1_000_000_000,
    max_tokens=10**10,
    max_path_components=4096,
    max_path_bytes=1 << 20,
    max_response_bytes=1 << 34,
)
SETTINGS = Settings(limits=GENEROUS, skip_invalid=True)
# Worker processes for cold parses, as the fronts (CLI, LSP, MCP) use; --workers 0 for one core.
WORKERS = 0
# How the workspace measurements start `citeline` (set in main).
LAUNCHER = workspace.Launcher((sys.executable, "-m", "citeline.cli.cli"), sys.executable, "")


# -- small helpers ----------------------------------------------------------------------------


def git_output(folder: Path, *args: str) -> str | None:
    """What `git -C folder ARGS` prints, or None when git or the checkout is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def git_commit(repo: Path) -> str | None:
    return git_output(repo, "rev-parse", "HEAD") or None


def git_dirty(folder: Path) -> bool | None:
    """Whether the folder has uncommitted changes (None when it is not in a git checkout)."""
    out = git_output(folder, "status", "--porcelain", "--", ".")
    return None if out is None else bool(out)


# -- the bundle (and its --scale copies) ------------------------------------------------------


@contextmanager
def scaled_bundle(bundle: Path, k: int) -> Iterator[Path]:
    """The bundle itself for k == 1, else a temporary folder with k distinct copies of it."""
    if k <= 1:
        yield bundle
        return
    with tempfile.TemporaryDirectory(prefix=f"citeline-bench-x{k}-") as tmp:
        root = Path(tmp) / "bundle"
        root.mkdir()
        for i in range(k):
            dest = root / f"copy{i}"
            shutil.copytree(bundle, dest, symlinks=True)
            if i == 0:
                continue
            for dirpath, _dirs, names in os.walk(dest):
                for name in names:
                    full = os.path.join(dirpath, name)
                    if name.lower().endswith(SUFFIXES) and not os.path.islink(full):
                        distinct_copy(Path(full), i)
        # Files written less than RACY_NS before a capture read them are read again by the
        # next one (git's racy-clean rule, SPEC §2): let the copies age past that first, as
        # a workspace's files have.
        time.sleep(RACY_NS / 1e9 + 0.5)
        say(f"scaled bundle: {k} copies under {root}")
        yield root


_FRONT_ID = re.compile(rb"^id:[^\n]*$", re.MULTILINE)


def distinct_copy(path: Path, i: int) -> None:
    """Make copy i of a file distinct (new SHA-256, new front-matter id) with the same tokens.

    Front matter ids would collide across copies (bundle_invalid), so an ``id:`` line gets a
    ``~copy{i}`` suffix (ids are not indexed); i trailing newlines change the bytes of every
    file, and only extend the last section with blank lines.
    """
    os.chmod(path, os.stat(path).st_mode | 0o200)
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[0].rstrip(b"\r").lstrip(b"\xef\xbb\xbf") == b"---":
        close = next((n for n in range(1, len(lines)) if lines[n] in (b"---", b"...")), None)
        if close is not None:
            head = b"\n".join(lines[1:close])
            found = _FRONT_ID.search(head)
            if found is not None:
                try:
                    value = yaml.safe_load(found.group(0).decode("utf-8")).get("id")
                except (yaml.YAMLError, UnicodeDecodeError, AttributeError):
                    value = None
                if isinstance(value, str) and value:
                    new_id = b"id: " + json.dumps(f"{value}~copy{i}").encode("ascii")
                    head = head[: found.start()] + new_id + head[found.end() :]
                    data = b"\n".join([lines[0], head, *lines[close:]])
    path.write_bytes(data + b"\n" * i)


# -- peers ------------------------------------------------------------------------------------


def capture_floor(root: Path) -> tuple[int, int]:
    """Walk (no links, no dot entries) + read + SHA-256 of every Markdown file: the I/O floor."""
    files = 0
    total = 0

    def walk(path: str) -> None:
        nonlocal files, total
        with os.scandir(path) as it:
            entries = list(it)
        for entry in entries:
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path)
            elif entry.name.lower().endswith(SUFFIXES) and entry.is_file(follow_symlinks=False):
                with open(entry.path, "rb") as fh:
                    data = fh.read()
                hashlib.sha256(data).hexdigest()
                files += 1
                total += len(data)

    walk(str(root))
    return files, total


def decoded_texts(snapshot: Snapshot) -> list[str]:
    """The decoded text of every searchable file of a snapshot that read every file
    (an engine with ``reread=True``: a reusing engine holds no bytes for unchanged files)."""
    out = []
    for f in snapshot.searchable:
        assert f.data is not None, "decoded_texts needs a snapshot that read every file"
        data = f.data[3:] if f.data.startswith(b"\xef\xbb\xbf") else f.data
        out.append(data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", " "))
    return out


def markdown_it_parse(texts: Sequence[str]) -> int:
    md = MarkdownIt("commonmark")
    tokens = 0
    for text in texts:
        tokens += len(md.parse(text))
    return tokens


def section_rows(engine: Engine, snapshot: Snapshot) -> list[tuple[str, str, str]]:
    """(path, heading, text) of every searchable section, cut as the engine cuts them.

    `snapshot` must hold every file's bytes (captured by an engine with ``reread=True``)."""
    idx = engine.index(snapshot)
    data = {f.path: f.data for f in snapshot.searchable}
    texts: dict[str, str] = {}
    rows = []
    for g in range(idx.n):
        sec = idx.section(g)
        text = texts.get(sec.path)
        if text is None:
            raw = data[sec.path]
            assert raw is not None, "section_rows needs a snapshot that read every file"
            decoded = decode(raw)
            assert isinstance(decoded, str)  # only parseable files have sections
            text = texts[sec.path] = decoded
        rows.append((sec.path, sec.heading, text[sec.start : sec.end]))
    return rows


def fts5_match(query: str) -> str | None:
    """The query as an FTS5 AND of quoted words (unicode61 splits like \\w runs)."""
    words = re.findall(r"\w+", query)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words) or None


def sqlite_fts5(
    rows: Sequence[tuple[str, str, str]], queries: Sequence[str], repeat: int
) -> dict[str, Any]:
    builds: list[float] = []
    query_samples: list[float] = []
    query_sums: list[float] = []
    hits: dict[str, int] = {}
    for _ in range(repeat):
        db = sqlite3.connect(":memory:")
        start = time.perf_counter()
        db.execute(
            "create virtual table s using fts5(path unindexed, heading, body, "
            "tokenize='unicode61 remove_diacritics 0')"
        )
        with db:
            db.executemany("insert into s(path, heading, body) values (?, ?, ?)", rows)
        builds.append(time.perf_counter() - start)
        total = 0.0
        for q in queries:
            expr = fts5_match(q)
            if expr is None:
                continue
            start = time.perf_counter()
            found = db.execute(
                "select path, heading, bm25(s, 0.0, 3.0, 1.0) as score from s "
                "where s match ? order by score limit 20",
                (expr,),
            ).fetchall()
            count = db.execute("select count(*) from s where s match ?", (expr,)).fetchone()[0]
            spent = time.perf_counter() - start
            query_samples.append(spent)
            total += spent
            hits[q] = count
            del found
        query_sums.append(total)
        db.close()
    build = statistics.median(builds)
    qsum = statistics.median(query_sums)
    return {
        "sections": len(rows),
        "build_ms": ms(build),
        "build_runs_ms": [ms(b) for b in builds],
        "query": summary_ms(query_samples),
        "queries_sum_ms": ms(qsum),
        "build_plus_queries_ms": ms(build + qsum),
        "note": "in-memory FTS5 (unicode61), columns heading (weight 3) and body; each query "
        "is an AND of its words, top 20 by bm25() plus a count(*) of all matches",
        "matches_per_query": hits,
    }


def rg_peer(root: Path, queries: Sequence[str], repeat: int) -> dict[str, Any] | None:
    rg = shutil.which("rg")
    if rg is None:
        return None
    samples: list[float] = []
    counts: dict[str, int] = {}
    for _ in range(repeat):
        for q in queries:
            terms = query_terms(q)
            term = terms[0]
            cmd = [
                rg,
                "-c",
                "-i",
                "-w",
                "--no-require-git",
                "--iglob",
                "*.md",
                "--iglob",
                "*.markdown",
                "-e",
                term,
                str(root),
            ]
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, check=False)
            samples.append(time.perf_counter() - start)
            counts[term] = sum(
                int(line.rsplit(b":", 1)[1]) for line in done.stdout.splitlines() if b":" in line
            )
    return {
        "command": "rg -c -i -w --no-require-git --iglob '*.md' --iglob '*.markdown' -e TERM "
        "BUNDLE (first term of each query; a fresh process per query)",
        "per_query": summary_ms(samples),
        "matching_lines_per_term": counts,
    }


# -- the language server, over stdio ----------------------------------------------------------


def lsp_bench(
    root: Path, queries: Sequence[str], profile: str, min_prefix: int, use_repo: bool
) -> dict[str, Any]:
    # A private, empty persistent cache (the server's default would be the user's).
    cache = tempfile.mkdtemp(prefix="citeline-bench-lsp-cache-")
    # No CITELINE_LOG: at INFO the server logs every message it sends (pygls), which costs
    # time an editor's server does not spend.
    env = dict(os.environ, CITELINE_CACHE_DIR=cache)
    env.pop("CITELINE_LOG", None)
    cmd = [sys.executable, "-m", "citeline.cli.cli", "lsp"]
    if use_repo:
        launch = "import sys\nfrom citeline.cli.cli import main\nsys.exit(main(['lsp']))\n"
        cmd = [sys.executable, "-c", BOOTSTRAP + launch]
    options = {
        "limits": asdict(GENEROUS),
        "skip_invalid": True,
        "profile": profile,
        "symbols": {"cap": 100},
    }
    uri = root.resolve().as_uri()
    client = LspClient(cmd, env)
    try:
        started = time.perf_counter()
        init_s, _ = client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": root.name}],
                "capabilities": {"workspace": {"symbol": {}, "workspaceFolders": True}},
                "initializationOptions": options,
            },
        )
        client.notify("initialized", {})
        client.wait_idle()  # the warm-up, then the diagnostics check
        warm_up_s = time.perf_counter() - started
        first_s, _ = client.request("workspace/symbol", {"query": queries[0]})  # discarded
        idle_s = client.wait_idle()
        say(
            f"lsp: warm-up {warm_up_s:.2f}s (until idle), first request "
            f"{first_s * 1000:.0f} ms, then idle after {idle_s:.1f}s"
        )
        samples: dict[str, list[float]] = {"full": [], "prefix": []}
        per_query: dict[str, dict[str, Any]] = {}
        every: list[tuple[float, str, int]] = []
        for kind, text in symbol_queries(queries, min_prefix):
            spent, result = client.request("workspace/symbol", {"query": text})
            samples[kind].append(spent)
            every.append((spent, text, len(result or [])))
            if kind == "full":
                per_query[text] = {"ms": ms(spent), "symbols": len(result or [])}
        hwm = client.vm_hwm_mib()
    finally:
        client.close()
        shutil.rmtree(cache, ignore_errors=True)
    everything = samples["full"] + samples["prefix"]
    return {
        "settings": options,
        "initialize_ms": ms(init_s),
        "warm_up_s": round(warm_up_s, 3),
        "warm_up_note": "spawn to the server's first 0.5 s without CPU after initialized",
        "first_request_ms_discarded": ms(first_s),
        "all": summary_ms(everything),
        "full_queries": summary_ms(samples["full"]),
        "prefixes": summary_ms(samples["prefix"]),
        "min_prefix": min_prefix,
        "per_query": per_query,
        "slowest": [
            {"query": text, "ms": ms(spent), "symbols": n}
            for spent, text, n in sorted(every, reverse=True)[:10]
        ],
        "server_peak_rss_mib": hwm,
        "server_pid_note": "VmHWM of the server read from /proc before shutdown",
    }


# -- the engine -------------------------------------------------------------------------------


def search_request(query: str, profile: str) -> dict[str, Any]:
    req: dict[str, Any] = {"query": query}
    if profile != "contract":
        req["profile"] = profile
    return req


def bench_engine(
    root: Path, queries: Sequence[str], repeat: int, profile: str
) -> tuple[dict[str, Any], Engine]:
    first = search_request(queries[0], profile)
    cold: list[float] = []
    engine: Engine | None = None
    for i in range(repeat):
        if engine is not None:
            engine.close()
        # No persistent cache: each cold engine starts from nothing (engine.cache=None).
        engine = Engine(SETTINGS, workers=WORKERS, cache=None)
        gc.collect()
        spent, result = timed(lambda e=engine: e.search(e.call(root), first))
        cold.append(spent)
        say(f"cold run {i + 1}/{repeat}: {spent:.3f}s ({result['total']} hits)")
    assert engine is not None

    # warm: the last cold engine, files unchanged. Each search is paired with one run of the
    # capture floor just before it, so both see the same machine (load, page cache, CPU
    # frequency): on a shared 2-core machine, phases minutes apart differ by ±30%.
    samples: list[float] = []
    floors: list[float] = []
    per_query: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        for q in queries:
            floors.append(timed(lambda: capture_floor(root))[0])
            req = search_request(q, profile)
            spent, result = timed(lambda r=req: engine.search(engine.call(root), r))
            samples.append(spent)
            slot = per_query.setdefault(q, {"totals": result["total"], "runs_ms": []})
            slot["runs_ms"].append(ms(spent))
    for slot in per_query.values():
        slot["median_ms"] = round(statistics.median(slot.pop("runs_ms")), 3)

    # where a warm search spends its time
    capture_s: list[float] = []
    index_s: list[float] = []
    read_by_warm_capture = []
    for _ in range(max(3, repeat)):
        t_cap, snap = timed(lambda: engine.capture(engine.call(root)))
        t_idx, _ = timed(lambda s=snap: engine.index(s))
        capture_s.append(t_cap)
        index_s.append(t_idx)
        read_by_warm_capture.append(snap.read)
    snap = engine.capture(engine.call(root))
    cold_median = statistics.median(cold)
    return (
        {
            "query": queries[0],
            "profile": profile,
            "capture_floor_paired": [ms(f) for f in floors],
            "cold_search": {
                "median_ms": ms(cold_median),
                "runs_ms": [ms(c) for c in cold],
                "engine": "Engine(SETTINGS, workers=WORKERS, cache=None): nothing reused",
            },
            "warm_search": {
                **summary_ms(samples),
                "rounds": repeat,
                "files_read_by_each_warm_capture": read_by_warm_capture,
                "breakdown_median_ms": {
                    "capture": ms(statistics.median(capture_s)),
                    "index_reused": ms(statistics.median(index_s)),
                },
                "per_query": per_query,
            },
            "corpus": {
                "files": len(snap.files),
                "searchable": len(snap.searchable),
                "bytes": sum(f.size for f in snap.files),
                "skipped_unparsable": len(
                    engine.search(engine.call(root), first).get("skipped", [])
                ),
            },
        },
        engine,
    )


def profile_top(fn: Callable[[], Any], top: int) -> list[dict[str, Any]]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in raw.items():
        rows.append(
            {
                "function": f"{Path(filename).name}:{line}({name})",
                "calls": calls,
                "tottime_ms": ms(tottime),
                "cumtime_ms": ms(cumtime),
            }
        )
    rows.sort(key=lambda r: -r["tottime_ms"])
    return rows[:top]


# -- one scale --------------------------------------------------------------------------------


def bench_paired(
    small: Path, big: Path, queries: Sequence[str], repeat: int, profile: str
) -> dict[str, Any]:
    """Scale 1 and scale K measured alternately: each scale-K search right after the same
    scale-1 search, so both see the same machine; phases minutes apart differ by ±30% here."""
    first = search_request(queries[0], profile)
    cold: dict[str, list[float]] = {"1": [], "k": []}
    for i in range(repeat):
        for label, root in (("1", small), ("k", big)):
            engine = Engine(SETTINGS, workers=WORKERS)
            gc.collect()
            cold[label].append(timed(lambda e=engine, r=root: e.search(e.call(r), first))[0])
            engine.close()
            del engine
        say(f"paired cold {i + 1}/{repeat}: x1 {cold['1'][-1]:.3f}s, xK {cold['k'][-1]:.3f}s")
    engines = {"1": Engine(SETTINGS, workers=WORKERS), "k": Engine(SETTINGS, workers=WORKERS)}
    roots = {"1": small, "k": big}
    for label, engine in engines.items():
        engine.search(engine.call(roots[label]), first)
    warm: dict[str, list[float]] = {"1": [], "k": []}
    for _ in range(repeat):
        for q in queries:
            req = search_request(q, profile)
            for label, engine in engines.items():
                warm[label].append(
                    timed(lambda e=engine, r=req, b=roots[label]: e.search(e.call(b), r))[0]
                )
    for engine in engines.values():
        engine.close()
    out: dict[str, Any] = {}
    for name, samples in (("cold", cold), ("warm", warm)):
        one, k = statistics.median(samples["1"]), statistics.median(samples["k"])
        out[name] = {
            "scale_1_median_ms": ms(one),
            "scale_k_median_ms": ms(k),
            "ratio": ratio(k, one),
            "pairs": len(samples["1"]),
        }
    return out


def bench_scale(
    args: argparse.Namespace, queries: Sequence[str], k: int, root: Path | None = None
) -> dict[str, Any]:
    with scaled_bundle(args.bundle, k) if root is None else nullcontext(root) as root:
        out: dict[str, Any] = {"scale": k}
        if not args.workspace_only:
            out.update(bench_in_process(args, queries, root))
        else:
            say("peer: rg")
            out["rg"] = rg_peer(root, queries, 1)
        if args.workspace or args.workspace_only:
            out["workspace"] = workspace.measure(
                root,
                queries,
                rg=out["rg"],
                repeat=args.repeat,
                run=LAUNCHER,
                profile=args.lsp_profile,
                min_prefix=args.min_prefix,
                given_flags=args.cli_flags,
                no_lsp=args.no_lsp,
            )
            sym = out["workspace"].get("lsp", {}).get("warm_symbol")
            if sym and not args.workspace_only:
                out["workspace_symbol"] = sym  # the session with the editor defaults
        if not args.workspace_only:
            out["ratios"] = ratios(out)
            out["targets"] = targets(out)
        return out


def bench_in_process(
    args: argparse.Namespace, queries: Sequence[str], root: Path
) -> dict[str, Any]:
    """The engine in this process (cold, warm), its peers, and (unless --workspace, whose
    session replaces it) the workspace/symbol session with every limit raised."""
    say(f"engine in process (repeat {args.repeat})")
    out, engine = bench_engine(root, queries, args.repeat, args.profile)
    out["rss_after_engine_mib"] = rss_self_mib()

    floors = out.pop("capture_floor_paired")
    files, total = capture_floor(root)
    out["capture_floor"] = {
        "median_ms": round(statistics.median(floors), 3),
        "p95_ms": round(percentile(floors, 95), 3),
        "runs": len(floors),
        "files": files,
        "bytes": total,
        "note": "os.scandir walk (no links, no dot entries, no .gitignore) + read + "
        "hashlib.sha256 of every .md/.markdown file; one run right before each warm search",
    }

    # "No reuse": an engine that reads every file (its snapshot holds all the bytes) and
    # holds none between requests, without a persistent cache.
    noreuse = Engine(SETTINGS, reread=True, hold_bytes=0, cache=None)
    snapshot = noreuse.capture(noreuse.call(root))
    texts = decoded_texts(snapshot)
    say("peer: markdown-it parse")
    parses = []
    for _ in range(args.repeat):
        spent, tokens = timed(lambda t=texts: markdown_it_parse(t))
        parses.append(spent)
    out["markdown_it_parse"] = {
        "median_ms": ms(statistics.median(parses)),
        "runs_ms": [ms(p) for p in parses],
        "files": len(texts),
        "tokens": tokens,
        "note": 'MarkdownIt("commonmark").parse of every searchable file\'s decoded text',
    }
    del texts

    say("peer: sqlite fts5")
    rows = section_rows(noreuse, snapshot)
    noreuse.close()
    out["sqlite_fts5"] = sqlite_fts5(rows, queries, args.repeat)
    del rows, snapshot, noreuse

    say("peer: rg")
    out["rg"] = rg_peer(root, queries, 1)
    out["rss_after_peers_mib"] = rss_self_mib()

    if args.profile_top:
        say("cProfile: cold and warm search")
        first = search_request(queries[0], args.profile)
        fresh = Engine(SETTINGS, workers=WORKERS, cache=None)
        out["profile_cold_top"] = profile_top(
            lambda: fresh.search(fresh.call(root), first), args.top
        )
        out["profile_warm_top"] = profile_top(
            lambda e=engine: e.search(e.call(root), first), args.top
        )
        fresh.close()

    engine.close()
    del engine
    gc.collect()
    if not args.no_lsp and not args.workspace:
        say(f"lsp: workspace/symbol, profile {args.lsp_profile}")
        out["workspace_symbol"] = lsp_bench(
            root, queries, args.lsp_profile, args.min_prefix, not args.use_installed
        )
    return out


def scale_ratios(
    base: dict[str, Any], big: dict[str, Any], paired: dict[str, Any], k: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    out = {
        "k": k,
        "cold": paired["cold"]["ratio"],
        "warm_p50": paired["warm"]["ratio"],
        "paired": paired,
        "note": "cold and warm_p50 from the paired runs (each scale-K run right after a "
        "scale-1 run); the *_phases ratios compare the two separate runs above",
        "cold_phases": ratio(big["cold_search"]["median_ms"], base["cold_search"]["median_ms"]),
        "warm_p50_phases": ratio(big["warm_search"]["p50_ms"], base["warm_search"]["p50_ms"]),
        "capture_floor": ratio(
            big["capture_floor"]["median_ms"], base["capture_floor"]["median_ms"]
        ),
        "markdown_it_parse": ratio(
            big["markdown_it_parse"]["median_ms"], base["markdown_it_parse"]["median_ms"]
        ),
    }
    if "workspace_symbol" in base and "workspace_symbol" in big:
        out["workspace_symbol_p50"] = ratio(
            big["workspace_symbol"]["all"]["p50_ms"], base["workspace_symbol"]["all"]["p50_ms"]
        )
    limit = TARGET_SCALE_RATIO * k / 4
    checks = {
        "note": f"target <= {TARGET_SCALE_RATIO}x for K=4 (scaled as {TARGET_SCALE_RATIO}*K/4)",
        "cold": verdict(out["cold"], limit),
        "warm_p50": verdict(out["warm_p50"], limit),
    }
    return out, checks


def workspace_peer_ratios(base: dict[str, Any], big: dict[str, Any]) -> dict[str, Any]:
    """Scale K ÷ scale 1 of the workspace peers, from the two separate runs."""
    out: dict[str, Any] = {}
    for name in ("stat_walk_floor", "read_hash_floor", "markdown_it_block_parse"):
        out[name] = ratio(big[name]["median_ms"], base[name]["median_ms"])
    out["corpus_bytes"] = ratio(big["corpus"]["bytes"], base["corpus"]["bytes"])
    return out


def peak_rss_summary(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"bench_process_final": rss_self_mib()}
    runs = report["runs"].values() if "runs" in report else [report]
    for run in runs:
        if "rss_after_engine_mib" in run:
            out["bench_process_after_engine"] = max(
                out.get("bench_process_after_engine") or 0.0, run["rss_after_engine_mib"]
            )
        sym = run.get("workspace_symbol")
        if sym and sym.get("server_peak_rss_mib") is not None:
            out["server"] = max(out.get("server") or 0.0, sym["server_peak_rss_mib"])
        memory = run.get("workspace", {}).get("lsp", {}).get("memory")
        if memory:
            out["workspace_server"] = max(
                out.get("workspace_server") or 0.0, memory["server_vmhwm_mib"] or 0.0
            )
            out["workspace_server_plus_workers"] = max(
                out.get("workspace_server_plus_workers") or 0.0,
                memory["server_plus_descendants_vmhwm_sum_mib"] or 0.0,
            )
    return out


def ratios(run: dict[str, Any]) -> dict[str, Any]:
    cold = run["cold_search"]["median_ms"]
    warm = run["warm_search"]["p50_ms"]
    fts = run["sqlite_fts5"]
    out: dict[str, Any] = {
        "warm_p50_vs_capture_floor": ratio(warm, run["capture_floor"]["median_ms"]),
        "cold_vs_markdown_it_parse": ratio(cold, run["markdown_it_parse"]["median_ms"]),
        "cold_vs_capture_floor": ratio(cold, run["capture_floor"]["median_ms"]),
        "cold_vs_fts5_build_plus_one_query": ratio(
            cold, fts["build_ms"] + (fts["query"]["p50_ms"] or 0.0)
        ),
        "warm_p50_vs_fts5_query_p50": ratio(warm, fts["query"]["p50_ms"]),
        "warm_p50_vs_rg_p50": ratio(warm, run["rg"]["per_query"]["p50_ms"])
        if run.get("rg")
        else None,
        "peak_rss_mib_vs_400": ratio(peak_rss(run), TARGET_PEAK_RSS_MIB),
    }
    sym = run.get("workspace_symbol")
    if sym:
        out["workspace_symbol_p50_ms"] = sym["all"]["p50_ms"]
        out["workspace_symbol_p50_vs_200ms"] = ratio(sym["all"]["p50_ms"], TARGET_SYMBOL_P50_MS)
    return out


def peak_rss(run: dict[str, Any]) -> float:
    """The engine's peak: this process after engine work, and the server's VmHWM."""
    values = [run["rss_after_engine_mib"]]
    sym = run.get("workspace_symbol")
    if sym and sym.get("server_peak_rss_mib") is not None:
        values.append(sym["server_peak_rss_mib"])
    return max(values)


def targets(run: dict[str, Any]) -> dict[str, Any]:
    r = run["ratios"]
    sym = run.get("workspace_symbol")
    return {
        "warm_p50_le_1.5x_capture_floor": verdict(
            r["warm_p50_vs_capture_floor"], TARGET_WARM_VS_CAPTURE
        ),
        "cold_le_1.0x_markdown_it_parse": verdict(
            r["cold_vs_markdown_it_parse"], TARGET_COLD_VS_MARKDOWN_IT
        ),
        "workspace_symbol_p50_le_200ms": verdict(
            sym["all"]["p50_ms"] if sym else None, TARGET_SYMBOL_P50_MS
        ),
        "peak_rss_le_400MiB": verdict(peak_rss(run), TARGET_PEAK_RSS_MIB),
    }


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True, help="folder of Markdown files")
    p.add_argument("--queries", type=Path, required=True, help="one query per line, # comments")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument("--scale", type=int, default=1, help="benchmark K copies of the bundle")
    scale.add_argument(
        "--compare-scale", type=int, default=None, help="benchmark scale 1 and scale K; ratios"
    )
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement (default 3)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes for cold parses (default: as the fronts use, one per core)",
    )
    p.add_argument("--no-lsp", action="store_true", help="skip the language-server round trips")
    p.add_argument(
        "--profile", default="contract", choices=("contract", "recall"), help="search profile"
    )
    p.add_argument(
        "--lsp-profile",
        default="recall",
        choices=("contract", "recall"),
        help="server setting 'profile' (editors default to recall)",
    )
    p.add_argument("--min-prefix", type=int, default=1, help="shortest last-word prefix typed")
    p.add_argument("--profile-top", action="store_true", help="cProfile a cold and a warm search")
    p.add_argument("--top", type=int, default=10, help="functions listed per profile")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    p.add_argument(
        "--use-installed",
        action="store_true",
        help="measure the installed citeline instead of this checkout's engine/ and lsp/",
    )
    p.add_argument(
        "--workspace",
        action="store_true",
        help="also measure the CLI and the language server as whole processes against their "
        "floors (workspace.py; issue 13)",
    )
    p.add_argument(
        "--workspace-only",
        action="store_true",
        help="measure only the workspace part (and rg): no engine in this process",
    )
    p.add_argument(
        "--cli-flags",
        default=None,
        help="the CLI's flags for this corpus, e.g. '--raise-limits --skip-invalid' (default: "
        "found by trying, from none)",
    )
    args = p.parse_args(argv)
    if args.cli_flags is not None:
        args.cli_flags = args.cli_flags.split()
    if args.repeat < 1 or args.scale < 1 or (args.compare_scale or 2) < 2:
        p.error("--repeat and --scale must be >= 1, --compare-scale >= 2")
    args.bundle = args.bundle.resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global WORKERS, LAUNCHER
    args = parse_args(argv)
    WORKERS = default_workers() if args.workers is None else args.workers
    if args.workspace or args.workspace_only:
        LAUNCHER = workspace.launcher(not args.use_installed)
    queries = read_queries(args.queries)
    started = time.time()
    report: dict[str, Any] = {
        "benchmark": "citeline",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "bundle": str(args.bundle),
        "queries_file": str(args.queries),
        "queries": len(queries),
        "repeat": args.repeat,
        "workers": WORKERS,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "sqlite": sqlite3.sqlite_version,
            "git_commit": git_commit(REPO),
            "engine_source": str(Path(citeline_engine.__file__).parent),
            "engine_source_dirty": git_dirty(Path(citeline_engine.__file__).parent),
            "load_average_start": load_average(),
        },
    }
    if not args.workspace_only:
        report["limits"] = {
            "note": "in this process, every engine limit raised far above the SPEC §2 defaults; "
            "unparsable files skipped (skip_invalid)",
            **asdict(GENEROUS),
            "skip_invalid": True,
        }
    if args.workspace or args.workspace_only:
        report["workspace_launcher"] = LAUNCHER.how
    if args.compare_scale:
        k = args.compare_scale
        with scaled_bundle(args.bundle, k) as big_root:
            base = bench_scale(args, queries, 1)
            big = bench_scale(args, queries, k, big_root)
            report["runs"] = {"scale_1": base, f"scale_{k}": big}
            if not args.workspace_only:
                say(f"paired: scale 1 and scale {k} alternately")
                paired = bench_paired(args.bundle, big_root, queries, args.repeat, args.profile)
                report["scale_ratios"], report["scale_targets"] = scale_ratios(base, big, paired, k)
            if args.workspace or args.workspace_only:
                say(f"workspace paired: scale 1 and scale {k} alternately")
                flags = list(
                    dict.fromkeys(
                        [
                            *(base["workspace"].get("cli", {}).get("flags") or []),
                            *(big["workspace"].get("cli", {}).get("flags") or []),
                        ]
                    )
                )
                report["workspace_scale"] = {
                    **workspace.paired(
                        args.bundle,
                        big_root,
                        k,
                        queries,
                        repeat=args.repeat,
                        run=LAUNCHER,
                        profile=args.lsp_profile,
                        min_prefix=args.min_prefix,
                        flags=flags,
                        no_lsp=args.no_lsp,
                    ),
                    "cli_flags": flags,
                    "peers_phases": workspace_peer_ratios(base["workspace"], big["workspace"]),
                }
    else:
        run = bench_scale(args, queries, args.scale)
        if args.scale > 1 and "ratios" in run:
            run["ratios"]["scale_note"] = (
                "scale ratios need a scale-1 run in the same process: use --compare-scale K"
            )
        report.update(run)
    report["peak_rss_mib"] = peak_rss_summary(report)
    report["environment"]["load_average_end"] = load_average()
    report["elapsed_s"] = round(time.time() - started, 1)
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
