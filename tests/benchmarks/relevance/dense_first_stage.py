"""A first stage of the model's own beside recall's (issue 52's new sets): every section of
the corpus embedded, the question's 20 nearest sections by cosine beside recall's best 20,
the two lists fused by reciprocal rank (c 60) over their union. Does a strong model reach
the answers recall's 20 miss? Measured with an ONNX model folder of one's own
(docs/relevance.md, "How far reranking recall's 20 can go"). `hybrid@k` is today's hybrid
(recall's 20 reranked by the same fusion), re-computed here; `fused_union@k` the union's.

    python tests/benchmarks/relevance/dense_first_stage.py FOLDER nuxt fastapi til > out.json

Embedding a whole corpus takes minutes (EmbeddingGemma-300M int8 on two cores: about 12
sections a second); vectors go to the semantic benchmarks' cache, so a rerun embeds nothing.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "semantic"), str(HERE), str(HERE.parents[1])]

import numpy as np  # noqa: E402
import pool  # noqa: E402  (the semantic benchmarks' judged sets and settings)
import standing  # noqa: E402  (its model specs and vector cache)

from citeline.engine import Engine  # noqa: E402
from citeline.engine.rank.rank import rank  # noqa: E402
from citeline.engine.rank.scoring import navigation_factor  # noqa: E402
from citeline.engine.semantic.semantic import passage  # noqa: E402
from citeline.engine.text.terms import query_terms  # noqa: E402

K = 20
C = 60.0
COUNTS = ("lex@20", "dense@20", "union@40", "hybrid@1", "hybrid@5", "fused_union@1")
COUNTS += ("fused_union@5", "dense@1", "dense@5")


def fused(lists: list[list[int]]) -> list[int]:
    """Reciprocal-rank fusion of ranked lists over their union, ties in first-seen order."""
    score: dict[int, float] = {}
    for ranked in lists:
        for r, i in enumerate(ranked, 1):
            score[i] = score.get(i, 0.0) + 1 / (C + r)
    return sorted(score, key=lambda i: -score[i])


def main(argv: list[str]) -> int:
    folder, names = argv[0], argv[1:]
    spec = standing.model_spec(f"folder:{folder}")
    engine = Engine(pool.settings(), cache=standing.SCRATCH / "standing-cache", embedding=spec)
    runtime = engine.semantic()
    store = engine.reuse.store
    backend = runtime.backend(store)
    out: dict[str, Any] = {}
    try:
        for name in names:
            queries, _, rel, index, texts = pool.indexed_set(name, engine)
            secs = [index.section(g) for g in range(index.n)]
            passages = [
                passage(
                    backend.model_id, s.title, s.outline, s.heading, texts(s.path)[s.start : s.end]
                )
                for s in secs
            ]
            started = time.time()
            vectors = np.array(runtime.vectors(backend, store, passages, None, None).vectors)
            print(f"{name}: {index.n} sections, {time.time() - started:.0f} s", file=sys.stderr)
            counts: dict[str, dict[str, int]] = {}
            for q in queries:
                cos = vectors @ np.array(runtime.query_vector(backend, q.text))
                dense = [int(i) for i in np.argsort(-cos)[:K]]
                terms = query_terms(q.text, rel.tokenizer)
                nav = navigation_factor(q.text)
                lex = [
                    s.section
                    for s in rank(index, terms, match_any=True, limit=K, navigation=nav).best
                ]
                within = fused([lex, sorted(lex, key=lambda i: -cos[i])])
                union = fused([lex, dense])

                def hit(
                    order: list[int], k: int, answers: Any = q.answers, secs: Any = secs
                ) -> int:
                    return any((secs[i].path, secs[i].first + 1) in answers for i in order[:k])

                c = counts.setdefault(q.split, dict.fromkeys(("n", *COUNTS), 0))
                c["n"] += 1
                for key, order, k in (
                    ("lex@20", lex, K),
                    ("dense@20", dense, K),
                    ("union@40", lex + dense, 2 * K),
                    ("hybrid@1", within, 1),
                    ("hybrid@5", within, 5),
                    ("fused_union@1", union, 1),
                    ("fused_union@5", union, 5),
                    ("dense@1", dense, 1),
                    ("dense@5", dense, 5),
                ):
                    c[key] += hit(order, k)
            out[name] = {
                split: {"n": c["n"]} | {m: round(c[m] / c["n"], 2) for m in COUNTS}
                for split, c in counts.items()
            }
    finally:
        engine.close()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
