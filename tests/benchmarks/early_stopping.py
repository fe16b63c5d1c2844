"""What an as-you-type ranking that stops early could skip, at ×1 and ×K (issue 32).

Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    python tests/benchmarks/early_stopping.py --bundle ../shared/corpora/tldr/docs --scale 10

Today's as-you-type ranking (engine/rank/rank.py) reads every posting of the query's terms and
the prefix's expansions, so a warm request at ten times the files reads ten times the
postings. A ranking that stops early keeps, per term, a maximum for each run of R sections
(block-max WAND, MaxScore), scores the runs whose bound reaches the best `cap` found so far
and skips the rest. This harness measures, for every prefix of the six tldr queries, how
many postings such a ranking would still have to score — without building it:

- `exact R`: the runs whose best *final* score reaches the cap-th final score (the bound
  no stored maximum can beat: a lower bound on the work of any run-based ranking);
- `bound R`: the runs whose bound from stored maxima reaches it — per term and run the
  largest tf and the shortest section (BM25 grows with tf and falls with length), the
  coordination of the terms present and the bonuses' ceiling, as an exact ranking would
  have to bound them;
- where the bound's slack lies: the same with the bonuses' ceiling replaced by the run's
  largest actual bonus (`bonuses exact`: as if the name and heading bonuses were bounded
  exactly per run) and with each run's exact
  best score before the bonuses (`BM25 exact`: as if what a run keeps were the maximum of
  the score itself rather than of tf and length);
- the memory the per-run maxima cost: one byte per run for each term with at least T
  postings in a block (rarer terms are cheap to score in full).

The cap-th final score is the best threshold a ranking could know, so both counts are what
such a ranking needs at least; the profile is the language server's (`recall`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from bench import scaled_bundle
from harness import say

import citeline.engine.core as core
from citeline.engine import Engine
from citeline.engine.index.index import Index
from citeline.engine.rank.rank import _add, _denominators, idf, idf_of, rank
from citeline.engine.rank.scoring import AS_YOU_TYPE, MATCH_ANY, factor
from citeline.engine.rank.stems import stemmed
from citeline.engine.text.terms import query_terms
from citeline.lsp.settings import parse_settings

QUERIES = ["git commit", "docker run", "tar", "ssh-keygen", "chmod", "ffmpeg"]
RUNS = (8, 16, 32, 64)
CAP = 100  # the language server's workspace/symbol cap


def the_index(root: Path) -> tuple[Index, Any]:
    """The index and relevance options the language server would rank with.

    Taken from inside a request rather than from `Engine.index`: a request's cold build
    cuts the blocks where its parallel build does, and the runs measured here are runs of
    a block's sections, so another cut moves the counts (by under 1% on tldr)."""
    opts = parse_settings(
        {
            "limits": {"max_files": 1_000_000, "max_total_bytes": 2_000_000_000},
            "use_ignore": True,
            "skip_invalid": True,
            "profile": "recall",
        }
    )
    engine = Engine(opts.engine, workers=2)
    seen: dict[str, Any] = {}
    original = core.symbol_hits

    def keep(index: Index, req: Any) -> Any:
        seen["index"], seen["relevance"] = index, req.relevance
        return original(index, req)

    core.symbol_hits = keep  # type: ignore[assignment]
    try:
        engine.symbols(engine.call(str(root)), "x", relevance=opts.relevance_options)
    finally:
        core.symbol_hits = original  # type: ignore[assignment]
        engine.close()
    return seen["index"], seen["relevance"]


def _by_block(index: Index, postings: Any) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """A term's postings (engine/index/postings.py), block by block: (the block's first section,
    [(section in the block, tf), ...])."""
    current, pairs = -1, []
    for g, tf in zip(postings.secs.tolist(), postings.tfs.tolist(), strict=True):
        _, s = index.locate(g)
        if g - s != current:
            if pairs:
                yield current, pairs
            current, pairs = g - s, []
        pairs.append((s, tf))
    if pairs:
        yield current, pairs


def work(index: Index, text: str, relevance: Any) -> dict[str, int]:
    terms = query_terms(text, relevance.tokenizer)
    final = {
        s.section: s.score
        for s in rank(index, terms, match_any=True, prefix_last=True, limit=None).best
    }
    theta = sorted(final.values(), reverse=True)[CAP - 1] if len(final) > CAP else -1.0
    source = stemmed(index) if getattr(terms, "typed", None) is not None else index
    groups = [[t] for t in terms]
    groups[-1] = source.expand(terms[-1])
    boosts = [1.0 if t == terms[-1] else AS_YOU_TYPE.expansion for t in groups[-1]]
    scores, masks = np.zeros(index.n), np.zeros(index.n, np.int64)
    _, query = _add(source, terms, groups, True, MATCH_ANY, scores, masks, boosts)
    assert query is not None
    pre = _denominators(index, query.k1, query.b)
    k1p = query.k1 + 1
    last = len(groups) - 1
    group_idf = idf_of(source.n, max((source.df(t) for t in groups[last]), default=0))
    ceiling = (1 + query.heading) * (1 + AS_YOU_TYPE.named) * (1 + 1e-9)
    ends = {
        base: base + block.sections for block, base in zip(index.blocks, index.bases, strict=True)
    }
    out = {"postings": 0}
    for size in RUNS:
        tf_bound: dict[tuple[Any, ...], float] = {}  # per (group[, term], run)
        present: dict[tuple[int, int], int] = {}  # run -> mask of groups
        postings: dict[tuple[int, int], int] = {}
        best: dict[tuple[int, int], float] = {}  # the run's best final score
        base_best: dict[tuple[int, int], float] = {}  # its best score before the bonuses
        lift: dict[tuple[int, int], float] = {}  # its largest bonus factor
        for gi, group in enumerate(groups):
            for ti, term in enumerate(group):
                boost = boosts[ti] if gi == last else 1.0
                for base, pairs in _by_block(index, source.postings(term)):
                    most: dict[tuple[int, int], int] = {}
                    for s, tf in pairs:
                        run = (base, s // size)
                        most[run] = max(most.get(run, 0), tf)
                        postings[run] = postings.get(run, 0) + 1
                        best[run] = max(best.get(run, -1.0), final.get(base + s, 0.0))
                        base_best[run] = max(base_best.get(run, -1.0), scores[base + s])
                        if scores[base + s] > 0:
                            f = final.get(base + s, 0.0) / scores[base + s]
                            lift[run] = max(lift.get(run, 1.0), f * (1 + 1e-9))
                    for run, m in most.items():
                        at = (gi, run) if gi == last else (gi, ti, run)
                        tf_bound[at] = tf_bound.get(at, 0.0) + boost * m
                        present[run] = present.get(run, 0) | 1 << gi
        bound: dict[tuple[int, int], float] = {}
        for run, mask in present.items():
            base, r = run
            first = base + r * size
            shortest = min(pre[first : min(first + size, ends[base])])
            total = 0.0
            for gi, group in enumerate(groups):
                if not mask >> gi & 1:
                    continue
                if gi == last:
                    tf = tf_bound[(gi, run)]
                    total += group_idf * query.multipliers[gi] * tf * k1p / (tf + shortest)
                    continue
                for ti, term in enumerate(group):
                    tf = tf_bound.get((gi, ti, run), 0.0)
                    if tf:
                        weight = idf(source, term) * query.multipliers[gi]
                        total += weight * tf * k1p / (tf + shortest)
            bound[run] = total * factor(mask, query) * ceiling
        out["postings"] = sum(postings.values())
        out[f"exact {size}"] = sum(n for run, n in postings.items() if best[run] >= theta)
        out[f"bound {size}"] = sum(n for run, n in postings.items() if bound[run] >= theta)
        # Where the bound's slack is: without the bonuses' ceiling (as if each run's bonus
        # were bounded exactly), and with the run's exact best score before the bonuses
        # (as if the maximum kept per run were of BM25 itself, not of tf and length).
        out[f"bound {size}, bonuses exact"] = sum(
            n for run, n in postings.items() if bound[run] / ceiling * lift.get(run, 1.0) >= theta
        )
        out[f"bound {size}, BM25 exact"] = sum(
            n for run, n in postings.items() if base_best[run] * ceiling >= theta
        )
    return out


def memory(index: Index) -> dict[str, int]:
    """Bytes of one-byte per-run maxima for the terms with at least T postings in a block."""
    out = {"postings": 8 * sum(len(b.p_sec) for b in index.blocks)}
    for least in (16, 32, 64, 128):
        for size in RUNS:
            total = 0
            for block in index.blocks:
                o = block.offsets
                common = sum(1 for t in range(len(o) - 1) if o[t + 1] - o[t] >= least)
                total += common * -(-block.sections // size)
            out[f"T {least} R {size}"] = total
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--scale", type=int, default=10)
    args = p.parse_args()
    texts = [q[:i] for q in QUERIES for i in range(1, len(q) + 1)]
    result: dict[str, Any] = {"cap": CAP, "texts": len(texts)}
    for k in sorted({1, args.scale}):
        with scaled_bundle(args.bundle, k) as root:
            index, relevance = the_index(root)
            totals: dict[str, int] = {}
            for text in texts:
                for name, n in work(index, text, relevance).items():
                    totals[name] = totals.get(name, 0) + n
            side: dict[str, Any] = {"sections": index.n, "blocks": len(index.blocks)}
            side["postings to score, summed over the texts"] = totals
            if k == 1:
                side["bytes of per-run maxima"] = memory(index)
            result[f"x{k}"] = side
            say(f"early stopping: x{k} {side}")
    one, many = result["x1"]["postings to score, summed over the texts"], None
    if args.scale > 1:
        many = result[f"x{args.scale}"]["postings to score, summed over the texts"]
        result["ratios"] = {
            name: {
                f"x{args.scale} / x1 same rule": round(many[name] / one[name], 2),
                f"x{args.scale} / x1 today (every posting)": round(many[name] / one["postings"], 2),
            }
            for name in one
        }
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":  # (the workers' forkserver imports this module again)
    raise SystemExit(main())
