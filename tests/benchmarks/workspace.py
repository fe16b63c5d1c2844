"""Workspace measurements (issue 13): citeline as its users meet it — whole CLI processes and
a language server started the way VS Code starts it — against the floors of the same files,
measured in the same run.

Run from bench.py (never by pytest)::

    python tests/benchmarks/bench.py --bundle ../shared/corpora/tldr/docs \
        --queries tests/benchmarks/queries/tldr.txt --workspace-only [--repeat 3]
    python tests/benchmarks/bench.py ... --workspace          # and the in-process measurements
    python tests/benchmarks/bench.py ... --workspace-only --compare-scale 2

`--workspace` adds the block below (under ``"workspace"``) to bench.py's in-process
measurements (and replaces their separate `workspace/symbol` session: ``workspace_symbol``
then comes from this one, with the editor defaults); `--workspace-only` measures only this
(with `rg`, its peer). Everything is printed in bench.py's one JSON object.

What is measured, in this order, on the files citeline captures (``.md``/``.markdown``,
ASCII case-insensitive, no dot entries, links not followed; no ``.gitignore``):

- ``python``: ``python -c pass`` and ``python -S -c pass`` with the interpreter of the
  environment measured (``sys.executable``): its start-up and site imports are part of every
  CLI call and server start (a base interpreter with a sandbox ``.pth`` pays ~15 ms more);
- peers: ``stat_walk_floor`` (``os.walk`` + ``os.lstat`` of every captured file: the least a
  request that proves files unchanged must do), ``read_hash_floor`` (the same walk + read +
  SHA-256), ``markdown_it_block_parse`` (``MarkdownIt("commonmark").disable(["inline",
  "text_join"]).parse`` of every decoded file) and, from bench.py, ``rg -c -i -w TERM`` as a
  whole process per query;
- ``cli``: ``citeline search BUNDLE -q Q --json`` as a whole process, run through
  ``sys.executable``: the first call with an empty cache (a fresh ``CITELINE_CACHE_DIR`` for
  each run) and the calls after it (every query, same cache). The CLI keeps SPEC §2's
  limits, so the flags a corpus needs are found by trying: ``--raise-limits`` after a
  ``resource_limit``, ``--skip-invalid`` after a ``parse_error`` (``--cli-flags`` sets them);
  the failed tries are listed, not timed;
- ``lsp``: ``citeline lsp`` started as VS Code starts it (its initializationOptions with the
  extension's defaults, ``window.workDoneProgress``): ``initialize``, ``initialized``, then at
  once a ``workspace/symbol`` and a ``citeline.search`` (VS Code's request: query, limit 20,
  the profile, root). Spawn → initialize answer, initialized → each answer and spawn → each
  answer, with an empty cache and again with the cache that start left (``--repeat`` pairs);
  a stat-walk floor runs right before each start. The last warm server then answers
  ``workspace/symbol`` for every query and every prefix of its last word (as typed) and the
  search for every query (``--repeat`` rounds), each right after a stat-walk floor run, so the
  ratios compare the same machine state;
- memory: the VmHWM of every server and of its descendants (the worker processes are the
  forkserver's children), sampled while they live, and each CLI call's own peak
  (``ru_maxrss``).

``ratios`` and ``targets`` are issue 13's. "Start to first answer" is the time until *both*
requests sent right after ``initialized`` are answered (the later; the earlier is reported
too), from spawn and from ``initialized``; each start target is given both ways and
``compared: true`` marks the one that counts — from spawn with an empty cache, from
``initialized`` with a warm cache (the start-up before it, ~0.5 s of interpreter, imports and
``initialize``, does not grow with the workspace; it is reported as
``spawn_to_initialize_answer_ms``, next to ``python -c pass``). The server runs without
``CITELINE_LOG`` (at INFO it would log every message it sends). Each CLI call and each
server has its own empty temporary cache folder; the operating system's page cache is warm
in every case (the floors read the files first), so "empty cache" means citeline's own.

With ``--compare-scale K`` (bench.py), :func:`paired` runs scale 1 and scale K alternately
(first calls, server starts, warm calls and warm requests each right after the same one at
scale 1) and reports the ratios against issue 13's ≤ 2.2× for K = 2 (1.1 × K).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import (
    BOOTSTRAP,
    REPO,
    LspClient,
    TreeMemory,
    median_ms,
    ms,
    percentile,
    ratio,
    say,
    summary_ms,
    symbol_queries,
    timed,
    verdict,
)
from markdown_it import MarkdownIt

# Targets of issue 13 ("Real workspaces").
TARGET_WARM_VS_STAT_WALK = 1.5
TARGET_EMPTY_START_VS_BLOCK_PARSE = 1.0
TARGET_WARM_START_VS_STAT_WALK = 3.0
TARGET_RSS_VS_CORPUS = 10.0
TARGET_CLI_WARM_VS_RG = 3.0
TARGET_CLI_FIRST_VS_BLOCK_PARSE = 1.0
TARGET_SCALE_PER_COPY = 1.1  # "tldr ×2 costs ≤ 2.2 × tldr ×1"

SEARCH_LIMIT = 20  # VS Code's citeline.search.limit default


# -- the files, and the peers that read them --------------------------------------------------


def is_markdown(name: str) -> bool:
    """SPEC §2: .md or .markdown, ASCII case-insensitively (as engine/capture/capture.py
    decides)."""
    short, long = name[-3:], name[-9:]
    return (short.isascii() and short.lower() == ".md") or (
        long.isascii() and long.lower() == ".markdown"
    )


def captured_paths(root: Path) -> list[str]:
    """Every Markdown file citeline captures (no dot entries, links not followed)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        out.extend(
            os.path.join(dirpath, n) for n in filenames if not n.startswith(".") and is_markdown(n)
        )
    return out


def stat_walk(root: Path) -> int:
    """The stat-walk floor: os.walk + os.lstat of every captured file; regular files seen."""
    files = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith(".") and is_markdown(name):
                st = os.lstat(os.path.join(dirpath, name))
                files += (st.st_mode & 0o170000) == 0o100000
    return files


def read_hash(root: Path) -> tuple[int, int]:
    """The read+SHA-256 floor: the same walk, then read and hash every file; (files, bytes)."""
    files = total = 0
    for path in captured_paths(root):
        with open(path, "rb") as fh:
            data = fh.read()
        hashlib.sha256(data).digest()
        files += 1
        total += len(data)
    return files, total


def decoded_texts(root: Path) -> list[str]:
    out = []
    for path in captured_paths(root):
        with open(path, "rb") as fh:
            data = fh.read()
        out.append(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace"))
    return out


def block_parse(texts: Sequence[str]) -> int:
    """markdown-it-py's block parse (no inline rules) of every text; tokens made."""
    md = MarkdownIt("commonmark").disable(["inline", "text_join"])
    return sum(len(md.parse(text)) for text in texts)


def floors(root: Path, repeat: int) -> dict[str, Any]:
    say("workspace peers: stat walk, read + SHA-256, markdown-it block parse")
    walks = [timed(lambda: stat_walk(root)) for _ in range(max(5, repeat))]
    reads = [timed(lambda: read_hash(root)) for _ in range(max(3, repeat))]
    files, size = reads[-1][1]
    texts = decoded_texts(root)
    parses = [timed(lambda t=texts: block_parse(t)) for _ in range(repeat)]
    del texts
    return {
        "corpus": {"files": files, "bytes": size, "mib": round(size / (1 << 20), 2)},
        "stat_walk_floor": {
            "median_ms": median_ms([t for t, _ in walks]),
            "runs_ms": [ms(t) for t, _ in walks],
            "files": walks[-1][1],
            "note": "os.walk (dot folders pruned, links not followed) + os.lstat of every "
            ".md/.markdown file (ASCII case-insensitive, no dot entries)",
        },
        "read_hash_floor": {
            "median_ms": median_ms([t for t, _ in reads]),
            "runs_ms": [ms(t) for t, _ in reads],
            "note": "the same walk + open, read and hashlib.sha256 of every captured file",
        },
        "markdown_it_block_parse": {
            "median_ms": median_ms([t for t, _ in parses]),
            "runs_ms": [ms(t) for t, _ in parses],
            "tokens": parses[-1][1],
            "note": 'MarkdownIt("commonmark").disable(["inline", "text_join"]).parse of every '
            "captured file's decoded text (UTF-8, BOM dropped, errors replaced)",
        },
    }


# -- launching citeline -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Launcher:
    """How to start `citeline ARGS` with the interpreter of the environment measured."""

    argv: tuple[str, ...]  # what comes before the citeline arguments
    python: str
    how: str

    def cmd(self, *args: str) -> list[str]:
        return [*self.argv, *args]


def launcher(use_repo: bool) -> Launcher:
    """The environment's `citeline` script run by sys.executable when it imports this
    checkout (or when --use-installed), else this checkout through a `python -c` that maps
    citeline.engine and citeline.lsp onto it (what bench.py does in-process)."""
    python = sys.executable
    script = Path(python).parent / "citeline"
    probe = subprocess.run(
        [
            python,
            "-c",
            "import citeline.engine as e, citeline.lsp as s; print(e.__file__, s.__file__)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = [os.path.realpath(p) for p in probe.stdout.split()] if probe.returncode == 0 else []
    here = [os.path.realpath(REPO / part / "__init__.py") for part in ("engine", "lsp")]
    if script.is_file() and (found == here or not use_repo):
        return Launcher((python, str(script)), python, f"{python} {script}")
    if use_repo:
        code = BOOTSTRAP + "import sys\nfrom citeline.cli.cli import main\nsys.exit(main())\n"
        return Launcher(
            (python, "-c", code),
            python,
            f"{python} -c <citeline mapped onto {REPO}; citeline.cli.cli.main()>",
        )
    return Launcher((python, "-m", "citeline.cli.entry"), python, f"{python} -m citeline.cli.entry")


def child_env(cache: str | None, warm: bool = False) -> dict[str, str]:
    """This environment without CITELINE_* (CITELINE_LOG=INFO would make the server log every
    message it sends), with a private cache folder; the CLI's warm process only if `warm`
    (then CITELINE_LOG=debug: the CLI says on stderr when the warm process answered)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    if cache is not None:
        env["CITELINE_CACHE_DIR"] = cache
    env["CITELINE_DAEMON"] = "1" if warm else "0"
    if warm:
        env["CITELINE_LOG"] = "debug"
    return env


WARM_MARK = b"answered by the warm process"


def warm_socket(cache: str) -> Path:
    """Where the warm process of `cache` listens (cli/launch.py)."""
    from citeline.cli import launch
    from citeline.cli.daemon import environment

    with environment({"CITELINE_CACHE_DIR": cache}):
        return Path(launch.runtime_folder()) / launch.socket_name(launch.cache_key())


class Caches:
    """Private, empty cache folders, removed at the end: no two measurements share one by
    accident (the engine's own default would be the user's cache folder)."""

    def __init__(self) -> None:
        self.top = tempfile.mkdtemp(prefix="citeline-bench-caches-")
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return os.path.join(self.top, f"cache{self.n}")  # the engine creates it (mode 0700)

    def close(self) -> None:
        shutil.rmtree(self.top, ignore_errors=True)


@contextmanager
def caches() -> Iterator[Caches]:
    made = Caches()
    try:
        yield made
    finally:
        made.close()


def python_startup(python: str, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"python": python}
    for name, argv in (
        ("c_pass", [python, "-c", "pass"]),
        ("S_c_pass", [python, "-S", "-c", "pass"]),
    ):
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            samples.append(time.perf_counter() - start)
        out[name] = {"median_ms": median_ms(samples), "runs": runs}
    out["note"] = "python -c pass / python -S -c pass (no site imports), whole processes"
    return out


# -- the CLI ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Call:
    seconds: float
    peak_rss_mib: float
    exit_code: int
    total: int | None = None
    error: str | None = None  # the §10 error code
    warm: bool = False  # answered by the warm process


def cli_call(
    run: Launcher,
    root: Path,
    query: str,
    cache: str | None,
    flags: Sequence[str],
    warm: bool = False,
) -> Call:
    """One `citeline search ROOT -q QUERY --json FLAGS`, timed from spawn to the end of its
    output and its exit (the output ends when the last holder of the pipe, which may be a
    worker process, closes it). `warm`: with the warm process on (the default for users)."""
    argv = run.cmd("search", str(root), "-q", query, "--json", *flags)
    env = child_env(cache, warm)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env
        )
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        spent = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        err.seek(0)
        raw_err = err.read()
        stderr = raw_err.decode("utf-8", "replace")
    call = Call(spent, round(usage.ru_maxrss / 1024.0, 1), proc.returncode)
    call.warm = WARM_MARK in raw_err
    try:
        body = json.loads(out)
    except ValueError:
        call.error = f"no JSON on stdout (exit {proc.returncode}): {stderr[-300:]!r}"
        return call
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        call.error = str(body["error"].get("code"))
    elif isinstance(body, dict):
        call.total = body.get("total")
    return call


def cli_flags(
    run: Launcher, root: Path, query: str, given: Sequence[str] | None, store: Caches
) -> tuple[list[str], list[dict[str, Any]], Call | None, str]:
    """The flags this corpus needs, found by trying from none (unless given); the tries
    that failed, the first call that succeeded (an empty-cache call, timed) and its cache."""
    flags = list(given or [])
    tries: list[dict[str, Any]] = []
    for _ in range(3):
        cache = store.fresh()
        call = cli_call(run, root, query, cache, flags)
        if call.error is None:
            return flags, tries, call, cache
        tries.append({"flags": list(flags), "error": call.error, "ms": ms(call.seconds)})
        if given is not None:
            break
        if call.error == "resource_limit" and "--raise-limits" not in flags:
            flags.append("--raise-limits")
        elif call.error == "parse_error" and "--skip-invalid" not in flags:
            flags.append("--skip-invalid")
        else:
            break
    return flags, tries, None, cache


def cli_bench(
    run: Launcher,
    root: Path,
    queries: Sequence[str],
    repeat: int,
    given: Sequence[str] | None,
    store: Caches,
) -> dict[str, Any]:
    say("workspace cli: first call (empty cache), then the calls after it")
    flags, tries, first, cache = cli_flags(run, root, queries[0], given, store)
    if first is None:
        return {"error": "the CLI failed with every flag set tried", "tries": tries}
    cold = [first]
    for _ in range(repeat - 1):
        cache = store.fresh()
        cold.append(cli_call(run, root, queries[0], cache, flags))
    # The calls after it use the cache the last first call left.
    warm: list[Call] = []
    per_query: dict[str, dict[str, Any]] = {}
    for q in queries:
        call = cli_call(run, root, q, cache, flags)
        warm.append(call)
        per_query[q] = {"ms": ms(call.seconds), "total": call.total, "error": call.error}
    kept = warm_process_bench(run, root, queries, cache, flags)
    errors = [c.error for c in [*cold, *warm] if c.error]
    say(
        f"cli: first call {statistics.median(c.seconds for c in cold):.3f}s, "
        f"after it p50 {percentile([c.seconds for c in warm], 50):.3f}s ({' '.join(flags)}), "
        f"warm process p50 {kept.get('p50_ms')} ms"
    )
    return {
        "command": f"{run.how} search BUNDLE -q Q --json {' '.join(flags)}".rstrip(),
        "flags": flags,
        "flag_tries_failed": tries,
        "first_call": {
            "median_ms": median_ms([c.seconds for c in cold]),
            "runs_ms": [ms(c.seconds) for c in cold],
            "query": queries[0],
            "total": first.total,
            "peak_rss_mib": max(c.peak_rss_mib for c in cold),
            "note": "a fresh CITELINE_CACHE_DIR each run (the last run fills the cache of the "
            "calls after it)",
        },
        "second_call": {
            **summary_ms([c.seconds for c in warm]),
            "first_ms": ms(warm[0].seconds),
            "peak_rss_mib": max(c.peak_rss_mib for c in warm),
            "per_query": per_query,
            "note": "every query once, each a new process on the cache the first call left, "
            "the warm process off (CITELINE_DAEMON=0): what the persistent cache alone gives",
        },
        "warm_process_call": kept,
        "errors": errors,
        "peak_rss_note": "ru_maxrss of the CLI process itself (its worker processes not included)",
    }


def warm_process_bench(
    run: Launcher, root: Path, queries: Sequence[str], cache: str, flags: Sequence[str]
) -> dict[str, Any]:
    """The calls as users get them by default: a call that starts the warm process (answered
    in its own process), then, once it listens, every query; each call says whether the warm
    process answered it. The process is told to leave at the end (its socket removed)."""
    if run.argv[1:2] == ("-c",):
        return {"error": "the warm process needs the environment's citeline script"}
    sock = warm_socket(cache)
    starting = cli_call(run, root, queries[0], cache, flags, warm=True)
    deadline = time.monotonic() + 60
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    calls = [cli_call(run, root, q, cache, flags, warm=True) for q in queries]
    vmhwm = warm_process_vmhwm_mib(cache)
    with contextlib.suppress(FileNotFoundError):
        sock.unlink()
    answered = sum(c.warm for c in calls)
    return {
        **summary_ms([c.seconds for c in calls]),
        "first_ms": ms(calls[0].seconds),
        "starting_call_ms": ms(starting.seconds),
        "answered_by_warm_process": f"{answered}/{len(calls)}",
        "peak_rss_mib": max(c.peak_rss_mib for c in calls),
        "warm_process_vmhwm_mib": vmhwm,
        "errors": [c.error for c in calls if c.error],
        "note": "the default (CITELINE_DAEMON unset): a call that starts the warm process "
        "(starting_call_ms, answered in its own process), then every query once, each a new "
        "process that the warm process answers (first_ms: its first answer, which loads the "
        "index from the cache); peak_rss_mib is the calling process's, "
        "warm_process_vmhwm_mib the warm process's own peak (it stays, idle, ten minutes)",
    }


def warm_process_vmhwm_mib(cache: str) -> float | None:
    """The peak resident memory of the warm process serving `cache` (found by its command
    line and its CITELINE_CACHE_DIR), None if it cannot be found."""
    wanted = f"CITELINE_CACHE_DIR={cache}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"citeline.cli.daemon" not in (entry / "cmdline").read_bytes():
                continue
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
        except OSError:
            continue
    return None


# -- the language server ----------------------------------------------------------------------


def vscode_options(profile: str) -> dict[str, Any]:
    """The initializationOptions VS Code's extension sends with every setting at its default
    (editors/vscode/src/settings.ts): no limits given, so the server's editor defaults hold."""
    return {
        "limits": {},
        "use_ignore": True,
        "skip_invalid": True,
        "symbols": {"cap": 100, "list_cap": 1000},
        "profile": profile,
    }


def initialize_params(root: Path, options: dict[str, Any]) -> dict[str, Any]:
    uri = root.as_uri()
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "citeline-bench (as Visual Studio Code)"},
        "rootUri": uri,
        "rootPath": str(root),
        "workspaceFolders": [{"uri": uri, "name": root.name}],
        "capabilities": {
            "workspace": {"symbol": {}, "workspaceFolders": True, "configuration": True},
            "window": {"workDoneProgress": True},
            "textDocument": {"publishDiagnostics": {}},
        },
        "initializationOptions": options,
    }


def search_params(root: Path, query: str, profile: str) -> dict[str, Any]:
    """citeline.search as VS Code's "Search Sections" sends it."""
    request = {"query": query, "limit": SEARCH_LIMIT, "profile": profile, "root": root.as_uri()}
    return {"command": "citeline.search", "arguments": [request]}


def _result(method: str, message: dict[str, Any]) -> Any:
    if "error" in message:
        raise RuntimeError(f"{method}: {message['error']}")
    return message.get("result")


@dataclass(slots=True)
class Server:
    client: LspClient
    memory: TreeMemory
    start: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)

    def stop(self) -> dict[str, Any]:
        self.client.wait_idle()
        memory = self.memory.stop()
        self.client.close()
        out = {**self.start, "memory": memory}
        if self.client.stderr_lines:
            out["stderr_tail"] = self.client.stderr_lines[-5:]
        return out


def start_server(
    run: Launcher,
    root: Path,
    cache: str,
    query: str,
    profile: str,
    limits: dict[str, int] | None = None,
) -> Server:
    """Spawn `citeline lsp`, initialize, then send a workspace/symbol and a citeline.search
    right after `initialized`; the timings of each step (`limits`: the setting, as a user
    of a bigger workspace than the editor defaults allow sets it)."""
    options = vscode_options(profile)
    if limits:
        options["limits"] = dict(limits)
    t_spawn = time.perf_counter()
    client = LspClient(run.cmd("lsp"), child_env(cache))
    memory = TreeMemory(client.pid)
    try:
        arrived, message = client.wait(client.send("initialize", initialize_params(root, options)))
        _result("initialize", message)
        t_initialized = time.perf_counter()
        client.notify("initialized", {})
        sym = client.send("workspace/symbol", {"query": query})
        search = client.send("workspace/executeCommand", search_params(root, query, profile))
        t_sym, sym_message = client.wait(sym)
        t_search, search_message = client.wait(search)
        symbols = _result("workspace/symbol", sym_message)
        found = _result("citeline.search", search_message)
    except BaseException as exc:
        memory.stop()
        client.close()
        # the server logs a bug's traceback on stderr: keep it with the failure
        tail = "\n".join(client.stderr_lines[-40:])
        if isinstance(exc, Exception) and tail:
            raise RuntimeError(f"{exc}\nserver stderr:\n{tail}") from exc
        raise
    first, both = min(t_sym, t_search), max(t_sym, t_search)
    start = {
        "spawn_to_initialize_answer_ms": ms(arrived - t_spawn),
        "initialized_to_symbol_ms": ms(t_sym - t_initialized),
        "initialized_to_search_ms": ms(t_search - t_initialized),
        "initialized_to_first_answer_ms": ms(both - t_initialized),
        "initialized_to_earliest_answer_ms": ms(first - t_initialized),
        "spawn_to_first_answer_ms": ms(both - t_spawn),
        "spawn_to_earliest_answer_ms": ms(first - t_spawn),
        "symbols": len(symbols or []),
        "search_total": (found or {}).get("total"),
        "search_skipped": len((found or {}).get("skipped") or []),
    }
    return Server(client, memory, start, options)


def start_pairs(
    run: Launcher, root: Path, queries: Sequence[str], repeat: int, profile: str, store: Caches
) -> tuple[dict[str, Any], Server]:
    """`repeat` pairs of starts — an empty cache, then the cache that start left — each right
    after a stat-walk floor run; the last warm server is returned still running."""
    runs: dict[str, list[dict[str, Any]]] = {"empty_cache": [], "warm_cache": []}
    floors: dict[str, list[float]] = {"empty_cache": [], "warm_cache": []}
    kept: Server | None = None
    for i in range(repeat):
        cache = store.fresh()
        for kind in ("empty_cache", "warm_cache"):
            floors[kind].append(timed(lambda: stat_walk(root))[0])
            server = start_server(run, root, cache, queries[0], profile)
            say(
                f"lsp start {i + 1}/{repeat}, {kind}: first answers "
                f"{server.start['spawn_to_first_answer_ms']:.0f} ms from spawn"
            )
            if kind == "warm_cache" and i == repeat - 1:
                kept = server
                runs[kind].append(server.start)
            else:
                runs[kind].append(server.stop())
    assert kept is not None
    out: dict[str, Any] = {}
    for kind, items in runs.items():
        keys = [k for k, v in items[0].items() if k.endswith("_ms") and isinstance(v, float)]
        out[kind] = {
            **{k: round(statistics.median(r[k] for r in items), 3) for k in keys},
            "stat_walk_floor_paired_median_ms": median_ms(floors[kind]),
            "symbols": items[-1]["symbols"],
            "search_total": items[-1]["search_total"],
            "search_skipped": items[-1]["search_skipped"],
            "runs": items,
        }
    return out, kept


def session(
    server: Server,
    root: Path,
    queries: Sequence[str],
    repeat: int,
    min_prefix: int,
    profile: str,
) -> dict[str, Any]:
    """Warm workspace/symbol (every prefix, as typed) and warm citeline.search through the
    real stdio session, each request right after a stat-walk floor run."""
    client = server.client
    idle = client.wait_idle()
    say(f"lsp session: idle after {idle:.1f}s; workspace/symbol as typed, then citeline.search")
    sym_s: dict[str, list[float]] = {"full": [], "prefix": []}
    sym_floor: list[float] = []
    per_query: dict[str, dict[str, Any]] = {}
    every: list[tuple[float, str, int]] = []
    for kind, text in symbol_queries(queries, min_prefix):
        sym_floor.append(timed(lambda: stat_walk(root))[0])
        spent, result = client.request("workspace/symbol", {"query": text})
        sym_s[kind].append(spent)
        every.append((spent, text, len(result or [])))
        if kind == "full":
            per_query[text] = {"ms": ms(spent), "symbols": len(result or [])}
    search_s: list[float] = []
    search_floor: list[float] = []
    totals: dict[str, Any] = {}
    for _ in range(repeat):
        for q in queries:
            search_floor.append(timed(lambda: stat_walk(root))[0])
            params = search_params(root, q, profile)
            spent, found = client.request("workspace/executeCommand", params)
            search_s.append(spent)
            totals[q] = (found or {}).get("total")
    everything = sym_s["full"] + sym_s["prefix"]
    symbol = {
        "settings": server.settings,
        "all": summary_ms(everything),
        "full_queries": summary_ms(sym_s["full"]),
        "prefixes": summary_ms(sym_s["prefix"]),
        "min_prefix": min_prefix,
        "stat_walk_floor_paired": {"median_ms": median_ms(sym_floor), "runs": len(sym_floor)},
        "per_query": per_query,
        "slowest": [
            {"query": text, "ms": ms(spent), "symbols": n}
            for spent, text, n in sorted(every, reverse=True)[:10]
        ],
    }
    search = {
        "request": f"citeline.search {{query, limit: {SEARCH_LIMIT}, profile: {profile!r}, root}}",
        **summary_ms(search_s),
        "rounds": repeat,
        "stat_walk_floor_paired": {"median_ms": median_ms(search_floor), "runs": len(search_floor)},
        "totals": totals,
    }
    stopped = server.stop()
    symbol["server_peak_rss_mib"] = stopped["memory"]["server_vmhwm_mib"]
    return {"warm_symbol": symbol, "warm_search": search, "memory": stopped["memory"]}


def lsp_bench(
    run: Launcher,
    root: Path,
    queries: Sequence[str],
    repeat: int,
    min_prefix: int,
    profile: str,
    store: Caches,
) -> dict[str, Any]:
    say("workspace lsp: starts with an empty and a warm cache")
    starts, server = start_pairs(run, root, queries, repeat, profile, store)
    warm = session(server, root, queries, repeat, min_prefix, profile)
    memories = [r["memory"] for kind in starts.values() for r in kind["runs"] if "memory" in r]
    memories.append(warm["memory"])
    return {
        "command": f"{run.how} lsp",
        "initialization_options": vscode_options(profile),
        "start": starts,
        "warm_symbol": warm["warm_symbol"],
        "warm_search": warm["warm_search"],
        "memory": {
            "server_vmhwm_mib": max(m["server_vmhwm_mib"] or 0.0 for m in memories),
            "server_plus_descendants_vmhwm_sum_mib": max(
                m["server_plus_descendants_vmhwm_sum_mib"] for m in memories
            ),
            "tree_vmrss_peak_sampled_mib": max(m["tree_vmrss_peak_sampled_mib"] for m in memories),
            "descendants_seen": max(len(m["descendants"]) for m in memories),
            "per_server": memories,
            "note": "largest over every server started (empty-cache starts use worker "
            "processes); sum_of VmHWM is an upper bound (the peaks need not coincide), the "
            "sampled tree VmRSS a lower bound (sampled every 0.2 s)",
        },
    }


# -- all of it, ratios and targets ------------------------------------------------------------


def measure(
    root: Path,
    queries: Sequence[str],
    *,
    rg: dict[str, Any] | None,
    repeat: int,
    run: Launcher,
    profile: str,
    min_prefix: int,
    given_flags: Sequence[str] | None,
    no_lsp: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {"launcher": run.how}
    out["python"] = python_startup(run.python, max(10, repeat))
    out.update(floors(root, repeat))
    with caches() as store:
        try:
            out["cli"] = cli_bench(run, root, queries, repeat, given_flags, store)
        except Exception as exc:  # report what was measured, and why the rest is missing
            out["cli"] = {"error": f"{type(exc).__name__}: {exc}"}
        if not no_lsp:
            try:
                out["lsp"] = lsp_bench(run, root, queries, repeat, min_prefix, profile, store)
            except Exception as exc:
                out["lsp"] = {"error": f"{type(exc).__name__}: {exc}"}
    out["ratios"] = ratios(out, rg)
    out["targets"] = targets(out)
    return out


def _get(d: dict[str, Any] | None, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def ratios(run: dict[str, Any], rg: dict[str, Any] | None) -> dict[str, Any]:
    parse = _get(run, "markdown_it_block_parse", "median_ms")
    walk = _get(run, "stat_walk_floor", "median_ms")
    start = _get(run, "lsp", "start")
    rss = _get(run, "lsp", "memory")
    corpus_mib = run["corpus"]["bytes"] / (1 << 20)
    return {
        "warm_symbol_p50_vs_stat_walk": ratio(
            _get(run, "lsp", "warm_symbol", "all", "p50_ms"),
            _get(run, "lsp", "warm_symbol", "stat_walk_floor_paired", "median_ms"),
        ),
        "warm_search_p50_vs_stat_walk": ratio(
            _get(run, "lsp", "warm_search", "p50_ms"),
            _get(run, "lsp", "warm_search", "stat_walk_floor_paired", "median_ms"),
        ),
        "start_empty_cache_from_spawn_vs_block_parse": ratio(
            _get(start, "empty_cache", "spawn_to_first_answer_ms"), parse
        ),
        "start_empty_cache_from_initialized_vs_block_parse": ratio(
            _get(start, "empty_cache", "initialized_to_first_answer_ms"), parse
        ),
        "start_warm_cache_from_spawn_vs_stat_walk": ratio(
            _get(start, "warm_cache", "spawn_to_first_answer_ms"),
            _get(start, "warm_cache", "stat_walk_floor_paired_median_ms"),
        ),
        "start_warm_cache_from_initialized_vs_stat_walk": ratio(
            _get(start, "warm_cache", "initialized_to_first_answer_ms"),
            _get(start, "warm_cache", "stat_walk_floor_paired_median_ms"),
        ),
        "server_peak_rss_vs_corpus": ratio(_get(rss, "server_vmhwm_mib"), corpus_mib),
        "server_plus_workers_peak_rss_vs_corpus": ratio(
            _get(rss, "server_plus_descendants_vmhwm_sum_mib"), corpus_mib
        ),
        "cli_second_call_p50_vs_rg_p50": ratio(
            _get(run, "cli", "warm_process_call", "p50_ms"), _get(rg, "per_query", "p50_ms")
        ),
        "cli_second_call_without_warm_process_p50_vs_rg_p50": ratio(
            _get(run, "cli", "second_call", "p50_ms"), _get(rg, "per_query", "p50_ms")
        ),
        "cli_first_call_vs_block_parse": ratio(_get(run, "cli", "first_call", "median_ms"), parse),
        "cli_second_call_p50_vs_python_c_pass": ratio(
            _get(run, "cli", "second_call", "p50_ms"), _get(run, "python", "c_pass", "median_ms")
        ),
        "stat_walk_vs_read_hash": ratio(walk, _get(run, "read_hash_floor", "median_ms")),
    }


def targets(run: dict[str, Any]) -> dict[str, Any]:
    """Issue 13's targets. Each start target is given from spawn and from `initialized`;
    ``compared`` marks the one that counts: from spawn for the empty cache (all of it, the
    interpreter and imports included, which are small beside the analysis), from
    `initialized` for the warm cache (the server's start-up — interpreter, imports,
    ``initialize`` — is a constant of ~0.5 s that does not grow with the workspace, while the
    stat-walk floor does: spawn → initialize answer is reported next to it)."""
    r = run["ratios"]
    return {
        "warm_symbol_p50_le_1.5x_stat_walk": verdict(
            r["warm_symbol_p50_vs_stat_walk"], TARGET_WARM_VS_STAT_WALK
        ),
        "warm_recall_search_p50_le_1.5x_stat_walk": verdict(
            r["warm_search_p50_vs_stat_walk"], TARGET_WARM_VS_STAT_WALK
        ),
        "start_empty_cache_le_1.0x_block_parse": verdict(
            r["start_empty_cache_from_spawn_vs_block_parse"],
            TARGET_EMPTY_START_VS_BLOCK_PARSE,
            measured="from spawn",
            compared=True,
        ),
        "start_empty_cache_le_1.0x_block_parse_from_initialized": verdict(
            r["start_empty_cache_from_initialized_vs_block_parse"],
            TARGET_EMPTY_START_VS_BLOCK_PARSE,
            measured="from initialized",
            compared=False,
        ),
        "start_warm_cache_le_3x_stat_walk_from_spawn": verdict(
            r["start_warm_cache_from_spawn_vs_stat_walk"],
            TARGET_WARM_START_VS_STAT_WALK,
            measured="from spawn",
            compared=False,
        ),
        "start_warm_cache_le_3x_stat_walk": verdict(
            r["start_warm_cache_from_initialized_vs_stat_walk"],
            TARGET_WARM_START_VS_STAT_WALK,
            measured="from initialized",
            compared=True,
        ),
        "peak_rss_le_10x_corpus": verdict(
            r["server_peak_rss_vs_corpus"],
            TARGET_RSS_VS_CORPUS,
            measured="the server's VmHWM",
            compared=True,
        ),
        "peak_rss_with_workers_le_10x_corpus": verdict(
            r["server_plus_workers_peak_rss_vs_corpus"],
            TARGET_RSS_VS_CORPUS,
            measured="the sum of the server's and its worker processes' VmHWM (an upper bound)",
            compared=False,
        ),
        "cli_second_call_le_3x_rg": verdict(
            r["cli_second_call_p50_vs_rg_p50"],
            TARGET_CLI_WARM_VS_RG,
            measured="the default: answered by the warm process",
            compared=True,
        ),
        "cli_second_call_le_3x_rg_without_warm_process": verdict(
            r["cli_second_call_without_warm_process_p50_vs_rg_p50"],
            TARGET_CLI_WARM_VS_RG,
            measured="CITELINE_DAEMON=0: a new process on the persistent cache",
            compared=False,
        ),
        "cli_first_call_le_1.0x_block_parse": verdict(
            r["cli_first_call_vs_block_parse"], TARGET_CLI_FIRST_VS_BLOCK_PARSE
        ),
        "note": "first answer = both requests sent right after initialized answered (the later "
        "of workspace/symbol and citeline.search); where a target is given twice, the one with "
        "compared=true counts (empty cache: from spawn; warm cache: from initialized, since "
        "spawn to the initialize answer is a constant start-up cost: see lsp.start)",
    }


# -- scale 1 against scale K, alternately -----------------------------------------------------


def paired(
    small: Path,
    big: Path,
    k: int,
    queries: Sequence[str],
    *,
    repeat: int,
    run: Launcher,
    profile: str,
    min_prefix: int,
    flags: Sequence[str],
    no_lsp: bool = False,
) -> dict[str, Any]:
    """Scale 1 and scale K alternately: each scale-K measurement right after the same one at
    scale 1, so both see the same machine state."""
    roots = {"1": small, "k": big}
    samples: dict[str, dict[str, list[float]]] = {}

    def add(name: str, label: str, seconds: float) -> None:
        samples.setdefault(name, {"1": [], "k": []})[label].append(seconds)

    with caches() as store:
        say(f"workspace paired x1/x{k}: CLI first calls and calls after them")
        warm_caches = {label: store.fresh() for label in roots}
        for i in range(repeat):
            for label, root in roots.items():
                cache = warm_caches[label] if i == repeat - 1 else store.fresh()
                add("cli_first_call", label, cli_call(run, root, queries[0], cache, flags).seconds)
        for q in queries:
            for label, root in roots.items():
                call = cli_call(run, root, q, warm_caches[label], flags)
                add("cli_second_call", label, call.seconds)
        if not no_lsp:
            say(f"workspace paired x1/x{k}: server starts, then warm requests")
            servers: dict[str, Server] = {}
            for i in range(repeat):
                for label, root in roots.items():
                    cache = store.fresh()
                    cold = start_server(run, root, cache, queries[0], profile)
                    spent = cold.start["spawn_to_first_answer_ms"] / 1e3
                    add("lsp_start_empty_cache", label, spent)
                    cold.stop()
                    warm = start_server(run, root, cache, queries[0], profile)
                    times = warm.start
                    add(
                        "lsp_start_warm_cache", label, times["initialized_to_first_answer_ms"] / 1e3
                    )
                    add(
                        "lsp_start_warm_cache_from_spawn",
                        label,
                        times["spawn_to_first_answer_ms"] / 1e3,
                    )
                    if i == repeat - 1:
                        servers[label] = warm
                    else:
                        warm.stop()
            try:
                for server in servers.values():
                    server.client.wait_idle()
                for _kind, text in symbol_queries(queries, min_prefix):
                    for label, server in servers.items():
                        spent, _ = server.client.request("workspace/symbol", {"query": text})
                        add("lsp_warm_symbol", label, spent)
                for _ in range(repeat):
                    for q in queries:
                        for label, server in servers.items():
                            spent, _ = server.client.request(
                                "workspace/executeCommand", search_params(roots[label], q, profile)
                            )
                            add("lsp_warm_search", label, spent)
            finally:
                for server in servers.values():
                    server.stop()
    limit = round(TARGET_SCALE_PER_COPY * k, 3)
    out: dict[str, Any] = {
        "k": k,
        "note": f"median at scale K ÷ median at scale 1, alternate runs; target ≤ "
        f"{TARGET_SCALE_PER_COPY} × K ({limit}×)",
    }
    for name, pair in samples.items():
        one, many = statistics.median(pair["1"]), statistics.median(pair["k"])
        out[name] = {
            "scale_1_median_ms": ms(one),
            "scale_k_median_ms": ms(many),
            "ratio": ratio(many, one),
            "pairs": len(pair["1"]),
        }
    # The start measures as compared in targets(): empty cache from spawn, warm cache from
    # initialized (the one from spawn is shown, not checked).
    out["targets"] = {
        name: verdict(out[name]["ratio"], limit) for name in samples if not name.endswith("spawn")
    }
    return out
