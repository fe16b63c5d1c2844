"""What recall's evidence and the corpus's nearness cost a semantic request of a model
nobody fitted (engine/semantic/unfitted.py): the warm request's median beside the median of
each part it added (recall_evidence and Unfitted.scores over the same candidates; the
query's mean cosine with the corpus sample, which a request asks for when the lexical gate
shuts), and the first request's time beside the first embedding of the corpus sample, in
one run, on the APISIX Chinese docs and PowerShell's conceptual docs, with the MiniLM ONNX
folder (tests/onnx_model.py).

    python tests/benchmarks/semantic/unfitted_cost.py > unfitted_cost.json
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from needs import corpus  # noqa: E402
from onnx_model import minilm_folder  # noqa: E402

from citeline.engine import Engine  # noqa: E402
from citeline.engine.semantic.models import ModelSpec  # noqa: E402
from citeline.engine.semantic.recall import recall_evidence, recall_ranked  # noqa: E402
from citeline.engine.semantic.semantic import Standing  # noqa: E402
from citeline.engine.semantic.semantic_engine import RECALL_ANALYSIS, RECALL_RELEVANCE  # noqa: E402
from citeline.engine.semantic.unfitted import Unfitted  # noqa: E402

ROUNDS = 15
QUERIES = {
    "apisix-zh": ("", ["灰度发布", "如何配置限流", "jwt 认证插件怎么用"]),
    "powershell-docs": (
        "reference/docs-conceptual",
        ["ordered hashtable", "learn to play guitar chords", "stop a service"],
    ),
}


def first_request(spec: ModelSpec, name: str) -> dict[str, float]:
    """A cold engine's first request (its index built, the model loaded, every vector
    embedded; the off-topic question, whose gate shuts, asks for the corpus sample) beside
    the first embedding of the sample alone, on a cache of its own."""
    sub, queries = QUERIES[name]
    bundle = corpus(name) / sub if sub else corpus(name)
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        engine = Engine(cache=Path(cache), embedding=spec)
        try:
            t = time.perf_counter()
            engine.lines(engine.call(bundle), {"mode": "semantic", "query": queries[1]})
            out["first_request_ms"] = round((time.perf_counter() - t) * 1000, 1)
        finally:
            engine.close()
    with tempfile.TemporaryDirectory() as cache:
        engine = Engine(cache=Path(cache), embedding=spec)
        runtime = engine.semantic()
        store = engine.reuse.store
        backend = runtime.backend(store)
        backend.embed_query("warm the model")
        took: list[float] = []

        def sample(p: Any) -> None:
            t = time.perf_counter()
            runtime.corpus_mean(backend, store, p, backend.embed_query(queries[1]))
            took.append(time.perf_counter() - t)

        try:
            engine._on_index(engine.call(bundle), RECALL_ANALYSIS, sample)
        finally:
            engine.close()
    out["first_corpus_sample_ms"] = round(took[0] * 1000, 1)
    return out


def main() -> int:
    folder = minilm_folder(Path(tempfile.mkdtemp()))
    spec = ModelSpec.from_mapping({"folder": str(folder)})
    out: dict[str, Any] = {}
    # the first request asks for the corpus sample where the gate shuts: MiniLM reads the
    # off-topic English question, not the Chinese ones
    first = {name: {} for name in QUERIES}
    first["powershell-docs"] = first_request(spec, "powershell-docs")
    with tempfile.TemporaryDirectory() as cache:
        engine = Engine(cache=Path(cache), embedding=spec)
        runtime = engine.semantic()
        store = engine.reuse.store
        backend = runtime.backend(store)
        try:
            for name, (sub, queries) in QUERIES.items():
                bundle = corpus(name) / sub if sub else corpus(name)
                ask = [{"mode": "semantic", "query": q} for q in queries]
                for request in ask:  # warm: the index, the vectors, the model
                    engine.lines(engine.call(bundle), request)
                whole: list[float] = []
                for _ in range(ROUNDS):
                    for request in ask:
                        t = time.perf_counter()
                        engine.lines(engine.call(bundle), request)
                        whole.append(time.perf_counter() - t)
                added: list[float] = []
                nearness: list[float] = []

                def part(
                    p: Any,
                    queries: list[str] = queries,
                    added: list[float] = added,
                    nearness: list[float] = nearness,
                ) -> None:
                    for q in queries:
                        terms, best = recall_ranked(p.index, q, RECALL_RELEVANCE.tokenizer)
                        t = time.perf_counter()
                        ev = recall_evidence(p.index, terms, best)
                        Unfitted(Standing("m", 0.0, 1.0), ev, True).scores([0.5] * len(best), "")
                        added.append(time.perf_counter() - t)
                        vector = runtime.query_vector(backend, q)
                        t = time.perf_counter()
                        runtime.corpus_mean(backend, store, p, vector)
                        nearness.append(time.perf_counter() - t)

                for _ in range(ROUNDS):
                    engine._on_index(engine.call(bundle), RECALL_ANALYSIS, part)
                request_ms = statistics.median(whole) * 1000
                added_ms = statistics.median(added) * 1000
                near_ms = statistics.median(nearness) * 1000
                out[name] = {
                    **first[name],
                    "request_p50_ms": round(request_ms, 2),
                    "evidence_and_scores_p50_ms": round(added_ms, 3),
                    "share": round(added_ms / request_ms, 4),
                    "corpus_mean_p50_ms": round(near_ms, 3),
                    "corpus_share": round(near_ms / request_ms, 4),
                }
        finally:
            engine.close()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
