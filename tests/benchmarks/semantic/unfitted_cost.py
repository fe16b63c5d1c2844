"""What recall's evidence costs a semantic request of a model nobody fitted
(engine/semantic/unfitted.py): the warm request's median beside the median of the part it
added (recall_evidence and Unfitted.scores over the same candidates), in one run, on the
APISIX Chinese docs and PowerShell's conceptual docs, with the MiniLM ONNX folder
(tests/onnx_model.py).

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


def main() -> int:
    folder = minilm_folder(Path(tempfile.mkdtemp()))
    spec = ModelSpec.from_mapping({"folder": str(folder)})
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache:
        engine = Engine(cache=Path(cache), embedding=spec)
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

                def part(p: Any, queries: list[str] = queries, added: list[float] = added) -> None:
                    for q in queries:
                        terms, best = recall_ranked(p.index, q, RECALL_RELEVANCE.tokenizer)
                        t = time.perf_counter()
                        ev = recall_evidence(p.index, terms, best)
                        Unfitted(Standing("m", 0.0, 1.0), ev, True).scores([0.5] * len(best), "")
                        added.append(time.perf_counter() - t)

                for _ in range(ROUNDS):
                    engine._on_index(engine.call(bundle), RECALL_ANALYSIS, part)
                request_ms = statistics.median(whole) * 1000
                added_ms = statistics.median(added) * 1000
                out[name] = {
                    "request_p50_ms": round(request_ms, 2),
                    "evidence_and_scores_p50_ms": round(added_ms, 3),
                    "share": round(added_ms / request_ms, 4),
                }
        finally:
            engine.close()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
