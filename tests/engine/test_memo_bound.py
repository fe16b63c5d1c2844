"""The per-file memo stays within its memory budget and never changes an answer."""

from __future__ import annotations

from pathlib import Path

from citeline.engine import Engine
from citeline.engine.core import ANALYSIS_COST
from citeline.engine.present import encode


def _bundle(root: Path, n: int) -> Path:
    for i in range(n):
        (root / f"f{i:02}.md").write_text(f"# Part {i}\n\nshared words and token{i}\n" * 3)
    return root


def test_memo_evicts_least_recently_used_within_budget(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, 10)
    size = (tmp_path / "f00.md").stat().st_size
    # room for four files: each keeps its structure (1x its size) and its analysis
    budget = 4 * size * (ANALYSIS_COST + 1)
    engine = Engine(memo_bytes=budget)
    first = engine.search(bundle, {"query": "shared words"})
    assert engine.memo is not None
    analyses = [key for key in engine.memo._items if key[1] is not None]
    assert len(analyses) == 4
    assert engine.memo._bytes <= budget
    again = engine.search(bundle, {"query": "shared words"})
    assert encode(again) == encode(first)
    plain = Engine(memo_bytes=0).search(bundle, {"query": "shared words"})
    assert encode(plain) == encode(first)
    assert first["total"] == 30  # three sections in each of ten files


def test_memo_hits_when_files_are_unchanged(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, 3)
    engine = Engine()
    engine.search(bundle, {"query": "token1"})
    assert engine.memo is not None and engine.memo.misses == 3 and engine.memo.hits == 0
    engine.search(bundle, {"query": "token2"})
    # same snapshot_revision: the whole index is reused, no file is even looked up
    assert engine.memo.hits == 0 and engine.memo.misses == 3
    (tmp_path / "f01.md").write_text("# Changed\n\ntoken2 now here\n")
    result = engine.search(bundle, {"query": "token2"})
    assert engine.memo.misses == 4 and engine.memo.hits == 2
    assert {h["path"] for h in result["hits"]} == {"f01.md", "f02.md"}
