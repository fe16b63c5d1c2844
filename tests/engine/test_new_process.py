"""The path that reads nothing: a new process on a folder it has seen (the persistent
cache holds its stat index) finds every file unchanged and reads none. Its records come
from the stat index and SPEC §2's limits are checked against the maxima it keeps, not file
by file. Its answers — results, and which limit, which value, which file — must be those of
a full read."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle

from citeline.engine import CitelineError, Engine, Limits, Settings
from citeline.fronts.remedies import COMMAND_LINE, EDITOR, worded

FILES = {
    "a.md": "# Alpha\n\nhashtable " + "word " * 40 + "\n",
    "deep/er/still/deeper/b.md": "# Beta\n\nhashtable bucket\n",
    "c/ç-ünïcode-名前.md": "# Gamma\n\n" + "hashtable " * 200 + "\n",
    "z.md": "# Zeta\n\nhashtable\n",
}


def measured(files: dict[str, str]) -> dict[str, list[int]]:
    """Each byte and path limit's value for each file of FILES (in path order), measured here
    from SPEC §2's definitions; for the total, the running sum."""
    paths = sorted(files)
    sizes = [len(files[p].encode()) for p in paths]
    return {
        "max_files": [len(paths)],
        "max_total_bytes": [sum(sizes[: i + 1]) for i in range(len(sizes))],
        "max_file_bytes": sizes,
        "max_path_bytes": [len(p.encode()) for p in paths],
        "max_path_components": [len(p.split("/")) for p in paths],
    }


class Reads:
    def __init__(self) -> None:
        self.by_cached = 0
        self.by_full = 0
        self.full = False


def spy_reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Counts the files capture reads, apart for the cache-less engine and the others."""
    import citeline.engine.capture.walk as walk

    reads = Reads()
    real = walk.read_listed

    def read(*args: Any, **kwargs: Any) -> Any:
        if reads.full:
            reads.by_full += 1
        else:
            reads.by_cached += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(walk, "read_listed", read)
    return reads


def outcome(engine: Engine, bundle: Path, limits: Limits, advice: str = "cli") -> Any:
    settings = Settings(limits=limits)
    try:
        result = engine.search(engine.call(bundle, settings=settings), {"query": "hashtable"})
    except CitelineError as raised:
        # the engine names the limit; the front (here: `advice`'s) words what to change
        err = worded(raised, COMMAND_LINE if advice == "cli" else EDITOR)
        return ("error", err.code, err.message, err.details)
    return ("ok", result["total"], result["snapshot_revision"])


@pytest.mark.parametrize("advice", ["cli", "editor"])  # the error says what to change
@pytest.mark.parametrize("name", sorted(measured(FILES)))
def test_limits_from_the_stat_index_answer_as_a_full_read(
    tmp_path: Path, name: str, advice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.engine.capture import stats

    # A read is trusted when the file's ctime is older than the racy window: 50 ms here
    # (waited out below) instead of 2 s, as in test_incremental.py.
    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)
    bundle = write_bundle(tmp_path / "docs", FILES)
    time.sleep(0.06)
    cache = tmp_path / "cache"
    first = Engine(cache=cache)  # fills the cache with the stat index and its maxima
    assert outcome(first, bundle, Limits())[0] == "ok"
    reads = spy_reads(monkeypatch)
    values = measured(FILES)[name]
    # Every value a file reaches, and one either side: the limit at which the folder first
    # fails, and limits a file before the biggest only reaches (the error names a file).
    candidates = sorted({v + d for v in values for d in (-1, 0, 1)})
    seen: dict[int, Any] = {}
    for limit in candidates:
        limits = replace(Limits(), **{name: limit})
        reads.full = True
        full = outcome(Engine(cache=None), bundle, limits, advice)  # reads every file
        reads.full = False
        cold_process = outcome(Engine(cache=cache), bundle, limits, advice)  # reads nothing
        assert cold_process == full, (limit, cold_process, full)
        assert outcome(first, bundle, limits, advice) == full, limit  # new limits, same engine
        seen[limit] = full
    top = max(values)
    assert seen[top][0] == "ok" and seen[top - 1][0] == "error", seen
    below = seen[top - 1]
    assert below[1] == "resource_limit" and below[3]["limit"] == name, below
    # The cached engines read no file: their answers came from the stat index's maxima.
    assert reads.by_cached == 0 and reads.by_full > 0, vars(reads)


def test_a_new_process_answers_as_a_full_read_reading_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)
    files = {
        **FILES,
        # Reserved (SPEC §2): captured and counted, never searched, though they hold the words.
        "index.md": "# Index\n\nhashtable bucket everywhere\n",
        "log.md": "# Log\n\nhashtable bucket\n",
        "sub/index.md": "# Not reserved\n\nhashtable bucket\n",
    }
    bundle = write_bundle(tmp_path / "docs", files)
    time.sleep(0.06)
    cache = tmp_path / "cache"
    first = Engine(cache=cache)
    first.search(first.call(bundle), {"query": "hashtable"})
    first.close()
    reads = spy_reads(monkeypatch)

    def answers(engine: Engine) -> list[Any]:
        return [
            engine.search(engine.call(bundle), {"query": "hashtable bucket"}),
            engine.search(
                engine.call(bundle), {"query": "hashtable", "limit": 3, "profile": "recall"}
            ),
            engine.concepts(engine.call(bundle), {"query": "hashtable"}),
            engine.lines(engine.call(bundle), {"pattern": "bucket"}),
            engine.symbols(engine.call(bundle), "bucket"),
        ]

    reads.full = True
    full = answers(Engine(cache=None))
    reads.full = False
    new_process = answers(Engine(cache=cache))
    assert new_process == full
    assert reads.by_cached == 0 and reads.by_full > 0, vars(reads)
    hits = {h["path"] for h in full[0]["hits"]}
    assert "sub/index.md" in hits and not hits & {"index.md", "log.md"}, hits


def test_files_added_since_the_stat_index_are_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stat index's maxima cover the files it held when it was made: a file added since
    is measured (by the same engine and by a new process), and the maxima written after it
    was seen cover it too, so a lower limit set later still finds it."""
    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)
    bundle = write_bundle(tmp_path / "docs", FILES)
    time.sleep(0.06)
    cache = tmp_path / "cache"
    first = Engine(cache=cache)
    assert outcome(first, bundle, Limits())[0] == "ok"
    # Longer (60 bytes) and deeper (6 components) than any path the index holds (25 and 5).
    new = "n/e/w/e/r/" + "a-long-name-for-a-file-that-comes-later-on-disk.md"
    assert (len(new.encode()), new.count("/") + 1) == (60, 6)
    (bundle / new).parent.mkdir(parents=True)
    (bundle / new).write_text("# Late\n\nhashtable\n", encoding="utf-8")
    time.sleep(0.06)

    def over(engine: Engine, name: str, value: int, advice: str) -> None:
        limits = replace(Limits(), **{name: value - 1})
        full = outcome(Engine(cache=None), bundle, limits, advice)
        assert full[:2] == ("error", "resource_limit") and full[3]["path"] == new, full
        assert full[3]["limit"] == name and full[3]["value"] == value, full
        # The message names what to change where the user is: a flag or a setting.
        assert ("--" in full[2]) == (advice == "cli"), full[2]
        assert outcome(engine, bundle, limits, advice) == full

    for advice in ("cli", "editor"):
        for name, value in (("max_path_bytes", 60), ("max_path_components", 6)):
            over(Engine(cache=cache), name, value, advice)  # a new process
            over(first, name, value, advice)  # the engine that made the index
    # Seen within the limits, the file is in the stat index and in its maxima.
    assert outcome(first, bundle, Limits())[:2] == ("ok", 5)
    for name, value in (("max_path_bytes", 60), ("max_path_components", 6)):
        over(Engine(cache=cache), name, value, "cli")
        over(first, name, value, "cli")
