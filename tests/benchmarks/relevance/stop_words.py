"""What SPEC §13's stop-word rule changes in `recall`'s answers on the judged sets.

Run by hand from the repository root, after run.py (which measures Hit@k before and after:
its `recall scoring:stop-word hits` row is recall without the rule):

    python tests/benchmarks/relevance/stop_words.py > stop-words.json   # all five sets
    python tests/benchmarks/relevance/stop_words.py en ref              # some of them

For each set: how many queries hold a stop word; and, without the rule, in each query's top
10 hits, how many hits held only stop words of the query and how many of their snippets'
match_spans covered a stop word (what a person sees highlighted); and the mean number of
sections that match (`total`) without and with the rule. With the rule the first two are 0
by construction (checked here).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

from run import RECALL, SETS, Texts, load  # the harness's sets and helpers

from citeline.engine import Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.answer.snippets import snippet
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.rank.rank import Ranking, rank
from citeline.engine.rank.scoring import MATCH_ANY, stop_bits
from citeline.engine.text.terms import query_terms

K = 10
BEFORE = replace(MATCH_ANY, stop_filter=False)


def measure(name: str, engine: Engine, rel: Relevance) -> dict[str, Any]:
    bundle, queries, _ = load(name)
    index = engine.index(engine.capture(engine.call(bundle)), rel.analysis, bundle=bundle)
    texts = Texts(bundle)
    out = {"queries": len(queries), "queries_with_stop_words": 0}
    counts = {"stop_only_hits": [0, 0], "stop_word_spans": [0, 0], "spans": [0, 0]}
    totals = [0, 0]
    for q in queries:
        terms = query_terms(q.text, rel.tokenizer)
        bits = stop_bits(terms)
        stops = {t for i, t in enumerate(terms) if bits >> i & 1}
        out["queries_with_stop_words"] += bool(stops)
        for i, scoring in enumerate((BEFORE, MATCH_ANY)):
            ranked: Ranking = rank(index, terms, match_any=True, limit=K, scoring=scoring)
            totals[i] += ranked.total
            for s in ranked.best:
                counts["stop_only_hits"][i] += bool(stops) and set(s.matched) <= stops
                sec = index.section(s.section)
                shown = snippet(texts(sec.path)[sec.start : sec.end], s.matched, rel.tokenizer)
                raw = shown.text.encode("utf-8")
                for a, b in shown.spans:
                    counts["spans"][i] += 1
                    words = set(rel.tokenizer.tokens(raw[a:b].decode("utf-8")))
                    counts["stop_word_spans"][i] += bool(words) and words <= stops
    assert counts["stop_only_hits"][1] == counts["stop_word_spans"][1] == 0
    for key, (before, after) in counts.items():
        out[f"{key}_top{K}"] = {"before": before, "after": after}
    out["mean_total"] = {
        "before": round(totals[0] / len(queries), 1),
        "after": round(totals[1] / len(queries), 1),
    }
    return out


def main(argv: list[str]) -> int:
    names = argv or list(SETS)
    # the harness's settings: tldr is over the CLI's default limits
    engine = Engine(Settings(limits=Limits.editor(), skip_invalid=True))
    rel = Relevance.from_mapping(RECALL)
    report = {}
    for name in names:
        report[name] = measure(name, engine, rel)
        print(name, json.dumps(report[name]), file=sys.stderr, flush=True)
    print(json.dumps({"k": K, "sets": report}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
