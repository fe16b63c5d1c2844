"""×1 and ×K in process, paired: the as-you-type session typed into both at the same moment.

Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    python tests/benchmarks/scale_pair.py --bundle ../shared/corpora/tldr/docs --scale 10

side_by_side.py measures ×1 and ×10 at the server minutes apart, and on this machine two
runs of one build minutes apart differ by up to a third, more than most changes to the
ranking. Here each scale has an engine in a process of its own (as a server has; the held
names and the token memos are per process), both with the language server's settings
(profile `recall`, the change journal on, an index's lexicon made in the background),
built once with a cache in a temporary folder; then every prefix of the six tldr queries,
--rounds times, each text's `Engine.symbols` sent to ×1 and ×K one right after the other
(which goes first alternating every round), then the same for a recall `Engine.search`.
Reported: the p50 of each over every round, their ratios (the issue 32 target: ×10 ≤ 2×
×1's), and each round's p50s (the first round pays for what later ones reuse).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench import scaled_bundle
from harness import say

QUERIES = ["git commit", "docker run", "tar", "ssh-keygen", "chmod", "ffmpeg"]
KINDS = ("symbols", "search")


def serve(root: str, cache: str, conn: Connection) -> None:
    """One scale's engine: answers (kind, text) with the milliseconds it took."""
    from journal_scale import server_options

    from citeline.engine import Engine

    opts = server_options()
    rel = opts.relevance_options
    engine = Engine(opts.engine, journal=True, prepare_in_background=True, workers=2, cache=cache)
    call = engine.call(root)
    t = time.perf_counter()
    engine.symbols(call, "x", relevance=rel)  # the build
    built = time.perf_counter() - t
    engine.symbols(call, "x", relevance=rel)  # the journal's first drain
    conn.send(built)
    while (msg := conn.recv()) is not None:
        kind, text = msg
        t = time.perf_counter()
        if kind == "symbols":
            engine.symbols(call, text, cap=100, relevance=rel)
        else:
            engine.search(call, {"query": text, "profile": "recall"})
        conn.send((time.perf_counter() - t) * 1000)
    engine.close()


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    texts = [q[:i] for q in QUERIES for i in range(1, len(q) + 1)]
    names = ("x1", f"x{args.scale}")
    with (
        scaled_bundle(args.bundle.resolve(), args.scale) as big,
        tempfile.TemporaryDirectory(prefix="citeline-pair-") as tmp,
    ):
        sides: dict[str, tuple[Connection, Any]] = {}
        out: dict[str, Any] = {"scale": args.scale, "rounds": args.rounds, "texts": len(texts)}
        for name, root in zip(names, (args.bundle.resolve(), big), strict=True):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=serve, args=(str(root), f"{tmp}/{name}", theirs))
            proc.start()
            out[f"{name}_build_s"] = round(mine.recv(), 2)
            say(f"scale pair: {name} built in {out[f'{name}_build_s']} s")
            sides[name] = (mine, proc)
        every: dict[tuple[str, str], list[float]] = {(n, k): [] for n in names for k in KINDS}
        per_round = []
        for r in range(args.rounds):
            mine_round: dict[tuple[str, str], list[float]] = {key: [] for key in every}
            order = names if r % 2 == 0 else names[::-1]
            for text in texts:
                for kind in KINDS:
                    for name in order:
                        conn = sides[name][0]
                        conn.send((kind, text))
                        took = conn.recv()
                        every[(name, kind)].append(took)
                        mine_round[(name, kind)].append(took)
            per_round.append({f"{n}_{k}_p50_ms": p50(v) for (n, k), v in mine_round.items()})
            say(f"scale pair: round {r + 1}/{args.rounds} {per_round[-1]}")
        for conn, proc in sides.values():
            conn.send(None)
            proc.join()
    for kind in KINDS:
        one, many = p50(every[(names[0], kind)]), p50(every[(names[1], kind)])
        out[kind] = {
            f"{names[0]}_p50_ms": one,
            f"{names[1]}_p50_ms": many,
            "ratio": round(many / one, 2),
            "target_le_2x": many <= 2 * one,
        }
    out["per_round"] = per_round
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":  # (spawned processes import this module again)
    raise SystemExit(main())
