"""Would a reading of Chinese by words close the unfitted rule's gap on `vue`
(docs/semantic.md, "The held-out check")? A measurement, not a design: jieba (installed by
hand, `pip install jieba`; not a dependency of citeline) cuts a Chinese question into words,
and the share of the question a section holds is counted by words instead of bigrams: a
word weighs its rarest bigram's idf, a section holds it when it holds all its bigrams, and
bigrams across two words weigh nothing. Japanese, Korean and Latin questions keep
standing.lexical_features. The gate and the unread-script rule are then chosen on the first
sets as standing.spent_choice chooses them, and judged on the later ones.

    python tests/benchmarks/semantic/words.py --rows ROWS > words.json

ROWS: the rows `standing.py --rows` collected (both models, every set).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import standing  # (its rows, features and choice)

KANA_HANGUL = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")


def chinese(text: str) -> bool:
    return bool(HAN_RUN.search(text)) and not KANA_HANGUL.search(text)


def word_features(r: dict[str, Any], query: str) -> tuple[list[float], float]:
    """standing.lexical_features, with a Chinese question's weight counted by its words."""
    import jieba

    from citeline.engine.rank.rank import idf_of

    if not chinese(query):
        return standing.lexical_features(r, True)
    df = dict(zip(r["terms"], r["df"], strict=True))
    words: list[tuple[list[str], float, bool]] = []  # (its terms, weight, the corpus lacks it)
    seen: set[str] = set()
    # a Latin term is a word of its own; a Han run is cut into words, and a word of one
    # character (的, 了, 子) has no bigram to be counted by
    pieces = [
        [t]
        for t, stop in zip(r["terms"], r["stops"], strict=True)
        if not stop and not standing.is_bigram(t)
    ]
    for run in HAN_RUN.findall(query):
        pieces += [[w[i : i + 2] for i in range(len(w) - 1)] for w in jieba.lcut(run)]
    for terms in pieces:
        key = "".join(terms)
        terms = [t for t in terms if t in df]
        if not terms or key in seen:
            continue
        seen.add(key)
        rarest = min(df[t] for t in terms)
        words.append((terms, idf_of(r["n"], rarest), rarest == 0))
    total = sum(weight for _, weight, _ in words)
    if not total:
        return standing.lexical_features(r, True)
    unknown = sum(weight for _, weight, lacks in words if lacks) / total
    held = []
    for matched in r["matched"]:
        have = set(matched)
        held.append(sum(wt for terms, wt, _ in words if all(t in have for t in terms)) / total)
    return held, unknown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = json.loads(args.rows.read_text(encoding="utf-8"))
    queries = {}
    for name in {r["set"] for r in rows}:
        _, qs, _ = standing.pool.load_set(name)
        queries.update({q.id: q.text for q in qs})
    out = {
        "by_words": standing.spent_choice(rows, lambda r: word_features(r, queries[r["id"]])),
        "by_bigrams": standing.spent_choice(rows),
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
