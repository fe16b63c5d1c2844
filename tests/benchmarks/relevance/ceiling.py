"""How far any reranking of recall's candidates could go (issue 52): for every judged set
and split, the share of questions with a judged answer among recall's first 1, 5, 10 and 20
sections (semantic mode and `hybrid` rerank recall's best 20, so their Hit@5 cannot pass
the @20 column), and for fastapi the same by the language asked in.

    python tests/benchmarks/relevance/ceiling.py [SET ...] > ceiling.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from fields import ALL_SETS, first, load_set

from citeline.engine import Engine, Limits, Settings
from citeline.engine.semantic.semantic import query_script

DEPTHS = (1, 5, 10, 20)


def language(text: str) -> str:
    """en, zh, ja or ko, by the script the question is written in."""
    if query_script(text) == "latin":
        return "en"
    if any("\u3040" <= c <= "\u30ff" for c in text):
        return "ja"
    if any("\uac00" <= c <= "\ud7af" for c in text):
        return "ko"
    return "zh"


def main(argv: Sequence[str]) -> int:
    names = [a for a in argv if not a.startswith("--")] or list(ALL_SETS)
    engine = Engine(Settings(limits=Limits.editor(), skip_invalid=True))
    out: dict[str, Any] = {}
    for name in names:
        bundle, queries = load_set(name)
        groups: dict[str, list[int | None]] = {}
        for q in queries:
            r = engine.search(
                engine.call(bundle), {"query": q.text, "profile": "recall", "limit": 20}
            )
            rank = first([(h["path"], h["line_start"]) for h in r["hits"]], q.answers)
            groups.setdefault(q.split, []).append(rank)
            if name == "fastapi":
                groups.setdefault(f"{q.split} {language(q.text)}", []).append(rank)
        out[name] = {
            group: {"n": len(ranks)}
            | {
                f"@{d}": round(sum(k is not None and k <= d for k in ranks) / len(ranks), 2)
                for d in DEPTHS
            }
            for group, ranks in groups.items()
        }
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
