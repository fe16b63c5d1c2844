"""Two citelines side by side, paired: the code before a restructuring and after (issue 50's
"within 5%" check). Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    python tests/benchmarks/before_after.py --before /venv-of-old/bin/citeline \\
        --after .venv/bin/citeline --bundle ../shared/corpora/tldr/docs \\
        --queries tests/benchmarks/queries/tldr-symbols.txt --rounds 3 --cli-rounds 8

Each side is a whole `citeline` as its users start it (its own environment's script):

- ``start``: spawn → the first ``workspace/symbol`` answer of ``citeline lsp`` with an empty
  cache and VS Code's settings (profile ``recall``), each side alone on the machine, then the
  server's peak memory (VmHWM) once every round below is done;
- ``symbols`` and ``search``: with both servers warm, every prefix of every query (as typed)
  as ``workspace/symbol`` and as the ``citeline.search`` command, sent to one side and then
  the other (which goes first alternates by round);
- ``cli_first`` and ``cli_second``: ``citeline search --json`` in a process of its own with
  an empty cache, then again with the cache it filled (one query per round, alternating
  which side goes first; ``--cli-flags`` given to both, e.g. the same ``--profile`` where
  the two versions' defaults differ), with ``rg -c -i -w`` of the query's first word as
  the peer measured in the same rounds.

Reported per measure: each side's p50, after ÷ before of the p50s, and the median of the
paired ratios (each text's or round's after ÷ before).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import LspClient, median_ms, read_queries, say, symbol_queries
from workspace import child_env, initialize_params, vscode_options


def env_for(cache: str, runtime: str) -> dict[str, str]:
    """workspace.child_env (no CITELINE_*, a private cache, no warm process), with a runtime
    folder of its own (where a warm process would listen)."""
    return child_env(cache) | {"XDG_RUNTIME_DIR": runtime}


def start(script: str, root: Path, top: str, name: str) -> tuple[LspClient, float]:
    cache, runtime = f"{top}/{name}-cache", f"{top}/{name}-run"
    os.makedirs(runtime, mode=0o700)
    began = time.perf_counter()
    client = LspClient([script, "lsp"], env_for(cache, runtime))
    client.request("initialize", initialize_params(root, vscode_options("recall")))
    client.notify("initialized", {})
    client.request("workspace/symbol", {"query": "a"})
    took = time.perf_counter() - began
    client.wait_idle()
    return client, took


def paired(before: list[float], after: list[float]) -> dict[str, Any]:
    return {
        "before_p50_ms": median_ms(before),
        "after_p50_ms": median_ms(after),
        "after_over_before": round(statistics.median(after) / statistics.median(before), 3),
        "paired_ratio_median": round(
            statistics.median(a / b for a, b in zip(after, before, strict=True)), 3
        ),
        "samples": len(before),
    }


def warm_rounds(
    sides: dict[str, LspClient], texts: list[str], rounds: int
) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {
        kind: {name: [] for name in sides} for kind in ("symbols", "search")
    }
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for text in texts:
            for name in order:
                took, _ = sides[name].request("workspace/symbol", {"query": text})
                times["symbols"][name].append(took)
            for name in order:
                args = {"command": "citeline.search", "arguments": [{"query": text}]}
                took, _ = sides[name].request("workspace/executeCommand", args)
                times["search"][name].append(took)
        say(f"warm round {r + 1}/{rounds} done")
    return times


def cli_rounds(
    scripts: dict[str, str],
    bundle: Path,
    queries: list[str],
    rounds: int,
    top: str,
    flags: list[str],
) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {
        kind: {name: [] for name in scripts} for kind in ("cli_first", "cli_second")
    }
    times["rg"] = {"rg": []}
    for r in range(rounds):
        query = queries[r % len(queries)]
        order = list(scripts) if r % 2 == 0 else list(reversed(scripts))
        for name in order:
            cache, runtime = f"{top}/cli-{r}-{name}-cache", f"{top}/cli-{r}-{name}-run"
            os.makedirs(runtime, mode=0o700)
            cmd = [scripts[name], "search", str(bundle), "--json", "--raise-limits", *flags]
            cmd += ["-q", query]
            for kind in ("cli_first", "cli_second"):
                began = time.perf_counter()
                done = subprocess.run(cmd, env=env_for(cache, runtime), capture_output=True)
                times[kind][name].append(time.perf_counter() - began)
                if done.returncode != 0:
                    raise SystemExit(f"{name}: {done.stderr.decode(errors='replace')[-400:]}")
            shutil.rmtree(cache, ignore_errors=True)
        began = time.perf_counter()
        rg = ["rg", "-c", "-i", "-w", "--iglob", "*.md", "-e", query.split()[0], str(bundle)]
        subprocess.run(rg, capture_output=True)
        times["rg"]["rg"].append(time.perf_counter() - began)
        say(f"cli round {r + 1}/{rounds} done")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the old environment's citeline script")
    ap.add_argument("--after", required=True, help="the new environment's citeline script")
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cli-rounds", type=int, default=8)
    ap.add_argument("--min-prefix", type=int, default=3)
    ap.add_argument(
        "--cli-flags",
        default="",
        help="flags both CLIs get (the same profile on both sides when the defaults differ)",
    )
    args = ap.parse_args()
    root = args.bundle.resolve()
    queries = read_queries(args.queries)
    texts = [text for _, text in symbol_queries(queries, args.min_prefix)]
    scripts = {"before": args.before, "after": args.after}
    top = tempfile.mkdtemp(prefix="citeline-before-after-")
    out: dict[str, Any] = {"bundle": str(root), "queries": len(queries), "texts": len(texts)}
    try:
        sides: dict[str, LspClient] = {}
        starts: dict[str, float] = {}
        for name, script in scripts.items():
            sides[name], starts[name] = start(script, root, top, name)
            say(f"{name}: first answer after {starts[name]:.2f}s")
        out["start_s"] = {name: round(s, 2) for name, s in starts.items()}
        warm = warm_rounds(sides, texts, args.rounds)
        for kind, by_side in warm.items():
            out[kind] = paired(by_side["before"], by_side["after"])
        out["peak_rss_mib"] = {name: c.vm_hwm_mib() for name, c in sides.items()}
        for client in sides.values():
            client.close()
        flags = shlex.split(args.cli_flags)
        out["cli_flags"] = flags
        cli = cli_rounds(scripts, root, queries, args.cli_rounds, top, flags)
        for kind in ("cli_first", "cli_second"):
            out[kind] = paired(cli[kind]["before"], cli[kind]["after"])
            out[kind]["after_over_rg"] = round(
                statistics.median(cli[kind]["after"]) / statistics.median(cli["rg"]["rg"]), 2
            )
        out["rg_p50_ms"] = median_ms(cli["rg"]["rg"])
        out["load_average"] = list(os.getloadavg())
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
