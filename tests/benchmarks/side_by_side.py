"""citeline's language server beside VS Code's own Markdown language server (issue 32).

Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    npm ci --prefix tests/benchmarks/peer        # once: the peer, pinned (package-lock.json)
    python tests/benchmarks/side_by_side.py --bundle ../shared/corpora/tldr/docs \
        --queries tests/benchmarks/queries/tldr-symbols.txt --rounds 3
    python tests/benchmarks/side_by_side.py ... --scale 10 --no-peer   # tldr ×10

The peer is `vscode-markdown-languageserver` (tests/benchmarks/peer/package.json pins the
version; its `engines` field asks for Node 22, and it runs on this machine's Node 20, which
this script checks by using it), started as VS Code starts it: ``node
…/dist/node/workerMain.js --stdio``, VS Code's initializationOptions
(``markdownFileExtensions``), and its ``markdown/*`` requests answered as VS Code's Markdown
extension answers them, by tests/benchmarks/peer/host.mjs in Node (reading files, listing the
workspace, markdown-it's parse with the extension's plugins): the harness forwards each such
request to it and the answer back, untouched. citeline is ``citeline lsp`` with VS Code's
extension defaults (workspace.py's ``vscode_options``: profile ``recall``).

What is measured, on the same files and in one run:

- ``stat_walk_floor``: os.walk + lstat of every captured file (workspace.py), the least a
  request that checks every file must do; run right before each pair of warm requests;
- ``start``: spawn → the first ``workspace/symbol`` answer (sent right after
  ``initialized``), for the peer, for citeline with an empty cache and with the cache that
  start left; with each server's peak memory (VmHWM of it and its descendants), and the
  peer's client share (host.mjs's VmHWM: what VS Code's extension host holds for it);
- ``warm``: every prefix of every query as a user types it (one character at a time, from
  the first), ``--rounds`` times: for each text, citeline's ``workspace/symbol``, the peer's
  ``workspace/symbol`` and citeline's recall ``citeline.search`` (the "Search Sections"
  picker re-queries as the user types), the order of citeline and the peer swapped every
  round; p50/p95 of each, their ratios, and the answers' sizes (symbols; the peer has no
  cap: `fuzzyContains` of every heading);
- ``citeline_limits``: the limits set for a scaled bundle (``--scale`` > 1: twice its
  files and bytes; the editor defaults stop at 200,000 files). Whether the change journal
  served the warm requests is not reported by the server; tests/benchmarks/journal_scale.py
  measures the capture through it in process.

Targets (issue 32): warm workspace/symbol and warm recall search p50 ≤ 0.5 × the peer's warm
symbol p50 and ≤ 0.2 × the stat-walk floor; at ``--scale 10`` the warm p50 ≤ 2 × scale 1's
(run both and compare the two JSON outputs: ``compare`` below does it with ``--against``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import scaled_bundle
from harness import LspClient, TreeMemory, median_ms, ms, percentile, ratio, say, timed
from workspace import Caches, Launcher, launcher, search_params, start_server, stat_walk

HERE = Path(__file__).resolve().parent
PEER_DIR = HERE / "peer"
PEER_MAIN = PEER_DIR / "node_modules/vscode-markdown-languageserver/dist/node/workerMain.js"
HOST = PEER_DIR / "host.mjs"
# VS Code's Markdown extension (markdown-language-features) sends these.
MARKDOWN_EXTENSIONS = ["md", "mkd", "mdwn", "mdown", "markdown", "markdn", "mdtxt", "mdtext"]
TARGET_VS_PEER = 0.5
TARGET_VS_STAT_WALK = 0.2
TARGET_SCALE_10 = 2.0


def typed(queries: Sequence[str]) -> list[str]:
    """Every prefix of every query, one character at a time, as the editor sends them (a
    prefix ending in a space is sent too: the user paused after a word)."""
    return [q[:n] for q in queries for n in range(1, len(q) + 1)]


def peer_version() -> str:
    data = json.loads((PEER_MAIN.parents[2] / "package.json").read_text(encoding="utf-8"))
    return str(data["version"])


def ensure_peer() -> None:
    if not PEER_MAIN.is_file():
        say("side by side: installing the peer (npm ci)")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PEER_DIR, check=True)


class Peer:
    """VS Code's Markdown language server, with host.mjs answering its markdown/* requests."""

    def __init__(self, root: Path) -> None:
        self.host = subprocess.Popen(
            ["node", str(HOST), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=PEER_DIR,
        )
        assert self.host.stdin is not None and self.host.stdout is not None
        self._host_in = self.host.stdin
        self._host_lock = threading.Lock()
        self.forwarded = 0
        self.client = LspClient(
            ["node", str(PEER_MAIN), "--stdio"], dict(os.environ), on_request=self._forward
        )
        self.memory = TreeMemory(self.client.pid)
        self.host_memory = TreeMemory(self.host.pid)
        threading.Thread(target=self._answers, daemon=True).start()

    def _forward(self, message: dict[str, Any]) -> bool:
        if not str(message.get("method", "")).startswith("markdown/"):
            return False
        line = json.dumps(
            {"id": message["id"], "method": message["method"], "params": message.get("params")}
        )
        with self._host_lock:
            self._host_in.write(line.encode("utf-8") + b"\n")
            self._host_in.flush()
            self.forwarded += 1
        return True

    def _answers(self) -> None:
        assert self.host.stdout is not None
        for line in self.host.stdout:
            self.client.send_body(line.rstrip(b"\n"))

    def start(self, root: Path, query: str) -> dict[str, Any]:
        uri = root.as_uri()
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "citeline-bench (as Visual Studio Code)"},
            "locale": "en",
            "rootUri": uri,
            "rootPath": str(root),
            "workspaceFolders": [{"uri": uri, "name": root.name}],
            "capabilities": {
                "workspace": {
                    "symbol": {},
                    "workspaceFolders": True,
                    "configuration": True,
                    "didChangeWatchedFiles": {"dynamicRegistration": True},
                },
                "window": {"workDoneProgress": True},
                "textDocument": {"publishDiagnostics": {}, "documentSymbol": {}},
            },
            "initializationOptions": {"markdownFileExtensions": MARKDOWN_EXTENSIONS},
        }
        spawned = time.perf_counter()
        self.client.request("initialize", params)
        self.client.notify("initialized", {})
        spent, symbols = self.client.request("workspace/symbol", {"query": query}, timeout=3600)
        return {
            "spawn_to_first_answer_ms": ms(time.perf_counter() - spawned),
            "initialized_to_first_answer_ms": ms(spent),
            "symbols": len(symbols or []),
        }

    def stop(self) -> dict[str, Any]:
        memory = self.memory.stop()
        host = self.host_memory.stop()
        self.client.close()
        self._host_in.close()
        self.host.wait(timeout=30)
        return {"server": memory, "client_host": host, "markdown_requests": self.forwarded}


def summary(samples: Sequence[float]) -> dict[str, Any]:
    return {
        "p50_ms": ms(percentile(samples, 50)),
        "p95_ms": ms(percentile(samples, 95)),
        "n": len(samples),
    }


def warm(
    citeline: LspClient,
    peer: Peer | None,
    root: Path,
    texts: Sequence[str],
    rounds: int,
) -> dict[str, Any]:
    times: dict[str, list[float]] = {"citeline_symbol": [], "citeline_search": [], "peer": []}
    sizes: dict[str, list[int]] = {"citeline_symbol": [], "peer": []}
    floor: list[float] = []
    for r in range(rounds):
        say(f"side by side: warm round {r + 1}/{rounds} ({len(texts)} texts)")
        for text in texts:
            floor.append(timed(lambda: stat_walk(root))[0])
            order = ["citeline", "peer"] if r % 2 == 0 else ["peer", "citeline"]
            for who in order:
                if who == "peer":
                    if peer is None:
                        continue
                    spent, found = peer.client.request("workspace/symbol", {"query": text})
                    times["peer"].append(spent)
                    sizes["peer"].append(len(found or []))
                else:
                    spent, found = citeline.request("workspace/symbol", {"query": text})
                    times["citeline_symbol"].append(spent)
                    sizes["citeline_symbol"].append(len(found or []))
            spent, _ = citeline.request(
                "workspace/executeCommand", search_params(root, text, "recall")
            )
            times["citeline_search"].append(spent)
    out: dict[str, Any] = {name: summary(s) for name, s in times.items() if s}
    out["stat_walk_floor"] = {"median_ms": median_ms(floor), "runs": len(floor)}
    out["answer_sizes_median"] = {k: statistics.median(v) for k, v in sizes.items() if v}
    return out


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    w = result["warm"]
    floor = w["stat_walk_floor"]["median_ms"]
    peer = (w.get("peer") or {}).get("p50_ms")
    out: dict[str, Any] = {}
    for name in ("citeline_symbol", "citeline_search"):
        p50 = w[name]["p50_ms"]
        out[f"{name}_p50_vs_peer_p50"] = ratio(p50, peer)
        out[f"{name}_p50_vs_stat_walk"] = ratio(p50, floor)
    return out


def targets(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("citeline_symbol", "citeline_search"):
        vs_peer = r[f"{name}_p50_vs_peer_p50"]
        vs_walk = r[f"{name}_p50_vs_stat_walk"]
        out[f"{name}_p50_le_{TARGET_VS_PEER}x_peer"] = (
            None if vs_peer is None else vs_peer <= TARGET_VS_PEER
        )
        out[f"{name}_p50_le_{TARGET_VS_STAT_WALK}x_stat_walk"] = (
            None if vs_walk is None else vs_walk <= TARGET_VS_STAT_WALK
        )
    return out


def compare(small: dict[str, Any], big: dict[str, Any]) -> dict[str, Any]:
    """Scale K ÷ scale 1 of the warm p50s, from two outputs of this script."""
    out: dict[str, Any] = {}
    for name in ("citeline_symbol", "citeline_search"):
        one, many = small["warm"][name]["p50_ms"], big["warm"][name]["p50_ms"]
        r = ratio(many, one)
        out[name] = {"scale_1_p50_ms": one, "scale_k_p50_ms": many, "ratio": r}
        out[name]["target_le_2x"] = None if r is None else r <= TARGET_SCALE_10
    return out


def run(args: argparse.Namespace, root: Path, queries: list[str]) -> dict[str, Any]:
    texts = typed(queries)
    result: dict[str, Any] = {
        "bundle": str(args.bundle),
        "scale": args.scale,
        "queries": queries,
        "typed_texts": len(texts),
        "rounds": args.rounds,
        "node": subprocess.run(
            ["node", "--version"], capture_output=True, text=True
        ).stdout.strip(),
    }
    result["stat_walk_floor"] = {
        "median_ms": median_ms([timed(lambda: stat_walk(root))[0] for _ in range(5)]),
        "files": stat_walk(root),
    }
    peer = None
    if not args.no_peer:
        ensure_peer()
        result["peer"] = {"package": "vscode-markdown-languageserver", "version": peer_version()}
        say("side by side: starting the peer")
        peer = Peer(root)
        result["peer"]["start"] = peer.start(root, queries[0])
        say(f"side by side: peer answered {result['peer']['start']}")
    citeline_run: Launcher = launcher(use_repo=not args.use_installed)
    store = Caches()
    try:
        cache = store.fresh()
        say("side by side: citeline, empty cache")
        # (×10 is over the editor's default limits: 384k files, 1.5 GB; set as a user would)
        limits = scaled_limits(result["stat_walk_floor"]["files"], root) if args.scale > 1 else None
        result["citeline_limits"] = limits
        cold = start_server(citeline_run, root, cache, queries[0], "recall", limits)
        cold.client.wait_idle()
        cold_start = cold.stop()
        say("side by side: citeline, the cache that start left")
        server = start_server(citeline_run, root, cache, queries[0], "recall", limits)
        server.client.wait_idle()
        if peer is not None:
            peer.client.wait_idle()
        result["citeline"] = {"command": f"{citeline_run.how} lsp", "start": {}}
        result["warm"] = warm(server.client, peer, root, texts, args.rounds)
        result["citeline"]["start"] = {"empty_cache": cold_start, "cache_reused": server.stop()}
        if peer is not None:
            result["peer"]["memory"] = peer.stop()
    finally:
        store.close()
    result["ratios"] = ratios(result)
    result["targets"] = targets(result["ratios"])
    return result


def scaled_limits(files: int, root: Path) -> dict[str, int]:
    """Limits with room for a scaled bundle: twice its files and bytes."""
    size = sum(
        os.path.getsize(os.path.join(top, n))
        for top, _, names in os.walk(root)
        for n in names
        if not os.path.islink(os.path.join(top, n))
    )
    return {"max_files": 2 * files, "max_total_bytes": 2 * size}


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scale", type=int, default=1, help="K distinct copies of the bundle")
    p.add_argument("--no-peer", action="store_true", help="citeline only (e.g. at --scale 10)")
    p.add_argument("--use-installed", action="store_true", help="the citeline installed")
    p.add_argument("--against", type=Path, help="a scale-1 output: adds the scale ratios")
    args = p.parse_args()
    if shutil.which("node") is None and not args.no_peer:
        p.error("the peer needs node")
    queries = [
        line.strip()
        for line in args.queries.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    with scaled_bundle(args.bundle.resolve(), args.scale) as root:
        result = run(args, root, queries)
    if args.against is not None:
        result["scale_ratios"] = compare(json.loads(args.against.read_text()), result)
    json.dump(result, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
