"""The change journal in process, at ×1 and ×K (issue 32): what a warm capture costs through
the journal and through the stat walk, and what is left of a warm `workspace/symbol`.

Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    python tests/benchmarks/journal_scale.py --bundle ../shared/corpora/tldr/docs --scale 10

For each scale, two engines with the language server's settings (profile `recall`): one
without a journal (the stat walk), one with (`Engine(journal=True)`); the capture of the
unchanged bundle, median of --repeat, for each; then, with the journal, every prefix of
the six tldr queries as typed, through `Engine.symbols` (p50, p95; with --rounds, typed
that many times: p50 and p95 of them all, and each round's p50), and the watches held.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench import scaled_bundle
from harness import say

from citeline.engine import Engine
from citeline.lsp.settings import parse_settings

QUERIES = ["git commit", "docker run", "tar", "ssh-keygen", "chmod", "ffmpeg"]


def server_options() -> Any:
    """The language server's settings (profile `recall`), with room for a scaled bundle."""
    return parse_settings(
        {
            "limits": {"max_files": 1_000_000, "max_total_bytes": 2_000_000_000},
            "use_ignore": True,
            "skip_invalid": True,
            "profile": "recall",
        }
    )


def measure(root: Path, repeat: int, rounds: int = 1) -> dict[str, Any]:
    opts = server_options()
    rel = opts.relevance_options
    out: dict[str, Any] = {}
    for journal in (False, True):
        engine = Engine(opts.engine, journal=journal, workers=2)
        call = engine.call(str(root))
        for _ in range(2):  # built, then warm (and the journal's first drain done)
            engine.symbols(call, "x", relevance=rel)
        took = []
        for _ in range(repeat):
            t = time.perf_counter()
            engine.capture(call)
            took.append((time.perf_counter() - t) * 1000)
        took.sort()
        side = out["journal" if journal else "stat walk"] = {"capture_p50_ms": took[len(took) // 2]}
        if journal:
            texts = [q[:i] for q in QUERIES for i in range(1, len(q) + 1)]
            every: list[float] = []
            per_round = []
            for _ in range(rounds):
                ms = []
                for text in texts:
                    t = time.perf_counter()
                    engine.symbols(call, text, cap=100, relevance=rel)
                    ms.append((time.perf_counter() - t) * 1000)
                per_round.append(sorted(ms)[len(ms) // 2])
                every += ms
            every.sort()
            side["symbols_p50_ms"] = every[len(every) // 2]
            side["symbols_p95_ms"] = every[int(len(every) * 0.95)]
            side["symbols_p50_ms_per_round"] = per_round
            assert engine.reuse.journals is not None
            side["watches"] = engine.reuse.journals.watches()
        engine.close()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="times the session is typed (the first pays for what later ones reuse)",
    )
    args = p.parse_args()
    result: dict[str, Any] = {}
    for k in sorted({1, args.scale}):
        with scaled_bundle(args.bundle, k) as root:
            result[f"x{k}"] = measure(root, args.repeat, args.rounds)
            say(f"journal scale: x{k} {result[f'x{k}']}")
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":  # (the workers' forkserver imports this module again)
    raise SystemExit(main())
