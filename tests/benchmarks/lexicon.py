"""What an index-wide lexicon costs and saves, at ×1 and ×K (issue 32; engine/index/lexicon.py).

Run by hand (pytest never collects it); JSON on stdout, progress on stderr::

    python tests/benchmarks/lexicon.py --bundle ../shared/corpora/tldr/docs --scale 10

For each scale, the recall index of the bundle (built once, with a cache in a temporary
folder), then: the time to make its Lexicon from the blocks (median of --repeat), what it
holds and what passes through while it is made (tracemalloc, one more make), and the time
of a prefix look-up asked of each block and summed (what an index below LEXICON_BLOCKS
does) and asked of the lexicon, over the prefixes a user types on the way to the six tldr
queries (median of --repeat passes, per prefix). Both answers are compared first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import scaled_bundle
from harness import say

QUERIES = ["git commit", "docker run", "tar", "ssh-keygen", "chmod", "ffmpeg"]


def measure(root: Path, repeat: int) -> dict[str, Any]:
    from journal_scale import server_options

    from citeline.engine import Engine
    from citeline.engine.index.index import LEXICON_BLOCKS
    from citeline.engine.index.lexicon import Lexicon

    opts = server_options()
    with tempfile.TemporaryDirectory(prefix="citeline-lexicon-") as cache:
        engine = Engine(opts.engine, cache=cache, workers=2)
        snap = engine.capture(engine.call(str(root)))
        index = engine.index(snap, opts.relevance_options.analysis, settings=opts.engine)
        engine.close()
    blocks = index.blocks
    made = []
    for _ in range(repeat):
        t = time.perf_counter()
        lexicon = Lexicon.of(blocks)
        made.append((time.perf_counter() - t) * 1000)
    tracemalloc.start()
    lexicon = Lexicon.of(blocks)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    def per_block(prefix: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for block in blocks:
            for word, count in block.prefixed(prefix):
                found[word] = found.get(word, 0) + count
        return found

    prefixes = sorted({w[:i] for q in QUERIES for w in q.split() for i in range(1, len(w) + 1)})
    for prefix in prefixes:
        assert per_block(prefix) == dict(lexicon.prefixed(prefix)), prefix
    took: dict[str, list[float]] = {"per_block": [], "lexicon": []}
    for _ in range(repeat):
        for name, look in (("per_block", per_block), ("lexicon", lexicon.prefixed)):
            t = time.perf_counter()
            for prefix in prefixes:
                look(prefix)
            took[name].append((time.perf_counter() - t) * 1000 / len(prefixes))
    return {
        "blocks": len(blocks),
        "lexicon_blocks_threshold": LEXICON_BLOCKS,
        "words_in_blocks": sum(len(b.vocab) for b in blocks),
        "distinct_words": len(lexicon.words),
        "make_ms_median": round(statistics.median(made), 1),
        "held_mib": round(held / 2**20, 2),
        "passing_through_mib": round((peak - held) / 2**20, 2),
        "prefixes": len(prefixes),
        "prefix_ms_per_block_median": round(statistics.median(took["per_block"]), 3),
        "prefix_ms_lexicon_median": round(statistics.median(took["lexicon"]), 3),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    result: dict[str, Any] = {}
    for k in sorted({1, args.scale}):
        with scaled_bundle(args.bundle.resolve(), k) as root:
            result[f"x{k}"] = measure(root, args.repeat)
            say(f"lexicon: x{k} {result[f'x{k}']}")
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":  # (the workers' forkserver imports this module again)
    raise SystemExit(main())
