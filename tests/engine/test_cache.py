"""The persistent cache (SPEC §2 "Cache"): an accelerator only.

With it, without it and with a broken one (missing, truncated, corrupt, foreign version,
written by several processes at once, in a folder that cannot be written) the results are
byte-identical; a new engine on a warm cache reads and analyses nothing it can prove
unchanged; it is created user-only and stays within its bound.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.capture import stats
from citeline.engine.store.store import FILE_NAME, Store

QUERIES = ({"query": "alpha"}, {"query": "beta gamma", "profile": "recall"}, {"query": "delta"})


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)


@pytest.fixture
def bundle(make_bundle) -> Path:
    root = make_bundle(
        {
            "a.md": "# Alpha\nalpha beta\n\n## Gamma\ngamma delta\n",
            "b.md": "---\ntitle: Beta guide\n---\nbeta gamma\n",
            "sub/c.md": "# Delta\ndelta alpha\n",
            "bad.md": "---\n: [\n---\nbroken front matter\n",
        }
    )
    time.sleep(0.06)  # past the (short) racy window: the files can be reused
    return Path(root)


SETTINGS = Settings(skip_invalid=True)


def answers(engine: Engine, bundle: Path) -> list[str]:
    out = [encode(engine.search(engine.call(bundle, settings=SETTINGS), q)) for q in QUERIES]
    out.append(encode(engine.lines(engine.call(bundle, settings=SETTINGS), {"pattern": "alpha"})))
    return out


def reference(bundle: Path) -> list[str]:
    return answers(Engine(SETTINGS, reread=True, hold_bytes=0), bundle)


def test_a_new_engine_on_a_warm_cache_reads_and_analyses_nothing(
    bundle: Path, tmp_path: Path, analysed: list[str], file_reads: list[str]
) -> None:
    cache = tmp_path / "cache"
    first = answers(Engine(SETTINGS, cache=cache), bundle)
    assert first == reference(bundle)
    assert analysed and file_reads
    analysed.clear()
    file_reads.clear()
    later = Engine(SETTINGS, cache=cache)  # a new process, in effect
    search = later.search(later.call(bundle, settings=SETTINGS), QUERIES[0])
    assert encode(search) == first[0]
    assert analysed == []  # the index came from the cache
    # only the files holding a hit are read (their snippets), and checked by SHA-256
    assert sorted(file_reads) == sorted({h["path"] for h in search["hits"]})
    assert answers(later, bundle) == first


def test_no_cache_writes_nothing(bundle: Path, tmp_path: Path) -> None:
    folder = tmp_path / "unused"
    engine = Engine(SETTINGS, cache=None)
    assert answers(engine, bundle) == reference(bundle)
    assert not folder.exists()
    assert engine.reuse.store.enabled is False


def test_cache_is_user_only(bundle: Path, tmp_path: Path) -> None:
    cache = tmp_path / "new" / "cache"
    Engine(SETTINGS, cache=cache).search(Call(bundle, SETTINGS), {"query": "alpha"})
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    for f in cache.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def _filled(bundle: Path, cache: Path) -> list[str]:
    engine = Engine(SETTINGS, cache=cache)
    out = answers(engine, bundle)
    engine.close()
    return out


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_cache_file_is_rebuilt(bundle: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    expected = _filled(bundle, cache)
    db = cache / FILE_NAME
    if damage == "garbage":
        db.write_bytes(os.urandom(8192))
    elif damage == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    else:
        db.write_bytes(b"")
    engine = Engine(SETTINGS, cache=cache)
    assert answers(engine, bundle) == expected
    assert engine.reuse.store.enabled  # started afresh, and in use again
    engine.close()
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert check.execute("SELECT COUNT(*) FROM entries").fetchone()[0] > 0


def test_corrupt_entries_are_refused_and_rebuilt(
    bundle: Path, tmp_path: Path, analysed: list[str]
) -> None:
    """Every blob is checked (format, CRC, lengths) before use; a bad one is not used."""
    cache = tmp_path / "cache"
    expected = _filled(bundle, cache)
    with sqlite3.connect(cache / FILE_NAME) as db:
        rows = db.execute("SELECT kind, key, blob FROM entries").fetchall()
        kinds = {kind for kind, _, _ in rows}
        assert {"state", "block", "manifest", "structure"} <= kinds
        for kind, key, blob in rows:
            flipped = bytearray(blob)
            flipped[len(flipped) // 2] ^= 0xFF
            db.execute(
                "UPDATE entries SET blob = ? WHERE kind = ? AND key = ?",
                (bytes(flipped), kind, key),
            )
    analysed.clear()
    assert answers(Engine(SETTINGS, cache=cache), bundle) == expected
    assert analysed, "nothing corrupt may be used: the files are analysed again"


def test_an_altered_block_that_still_decodes_is_refused_by_its_checksum(
    bundle: Path, tmp_path: Path, analysed: list[str]
) -> None:
    """A block whose payload was altered in a way every length and reference check accepts
    (one posting's term frequency changed) is refused by its CRC alone: used, it would
    change the scores without any other check noticing (issue 29)."""
    from citeline.engine.base.codec import Corrupt
    from citeline.engine.index.blocks import Block

    cache = tmp_path / "cache"
    expected = _filled(bundle, cache)
    with sqlite3.connect(cache / FILE_NAME) as db:
        rows = db.execute("SELECT key, blob FROM entries WHERE kind = 'block'").fetchall()
        assert rows
        for key, blob in rows:
            block = Block.decode(blob, key)
            block.p_tf[0] += 7  # a changed posting: lengths and references stay consistent
            rewritten = block.encode()
            assert len(rewritten) == len(blob) and rewritten != blob
            assert Block.decode(rewritten, key).p_tf[0] == block.p_tf[0]  # it decodes
            altered = rewritten[:6] + blob[6:10] + rewritten[10:]  # the old CRC-32 kept
            with pytest.raises(Corrupt, match="checksum"):
                Block.decode(altered, key)
            db.execute(
                "UPDATE entries SET blob = ? WHERE kind = 'block' AND key = ?", (altered, key)
            )
    analysed.clear()
    assert answers(Engine(SETTINGS, cache=cache), bundle) == expected  # the same scores
    assert analysed, "the altered blocks are refused: the files are analysed again"


def test_a_foreign_schema_version_is_replaced(bundle: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = _filled(bundle, cache)
    with sqlite3.connect(cache / FILE_NAME) as db:
        db.execute("PRAGMA user_version = 999")
        db.execute("CREATE TABLE stranger (x)")
    engine = Engine(SETTINGS, cache=cache)
    assert answers(engine, bundle) == expected
    engine.close()
    with sqlite3.connect(cache / FILE_NAME) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] != 999
        assert db.execute("SELECT COUNT(*) FROM entries").fetchone()[0] > 0


def test_another_analysis_version_is_not_used(
    bundle: Path, tmp_path: Path, analysed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks and structures are keyed by the engine's analysis version."""
    from citeline.engine import reuse
    from citeline.engine.index import blocks

    cache = tmp_path / "cache"
    expected = _filled(bundle, cache)
    for module in (blocks, reuse):
        monkeypatch.setattr(module, "ANALYSIS_VERSION", "another")
    analysed.clear()
    assert answers(Engine(SETTINGS, cache=cache), bundle) == expected
    assert len(set(analysed)) == 4  # every searchable file analysed again


def test_a_cache_of_the_strict_fence_rule_is_not_used(
    make_bundle, tmp_path: Path, analysed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache filled by the engine before fences could end in blanks (analysis version
    2026-11-30.5) holds a parse error for a page closed by "--- "; the engine now parses
    that page, and must not take the old answer from the cache."""
    from citeline.engine import reuse
    from citeline.engine.index import blocks
    from citeline.engine.text import layout

    page = "---\ntitle: Pods\n--- \n# Lifecycle\npending phase\n"
    bundle = make_bundle({"pods.md": page, "other.md": "# Other\npending work\n"})
    time.sleep(0.06)
    cache = tmp_path / "cache"
    with monkeypatch.context() as old:
        old.setattr(layout, "_BLANKS", "")  # the fences of version .5: exact lines only
        for module in (blocks, reuse):
            old.setattr(module, "ANALYSIS_VERSION", "2026-11-30.5")
        engine = Engine(SETTINGS, cache=cache)
        before = engine.search(engine.call(bundle, settings=SETTINGS), {"query": "pending"})
        engine.close()
    assert [s["path"] for s in before["skipped"]] == ["pods.md"]
    assert [h["path"] for h in before["hits"]] == ["other.md"]
    assert blocks.ANALYSIS_VERSION != "2026-11-30.5"
    analysed.clear()
    later = Engine(SETTINGS, cache=cache)
    after = later.search(later.call(bundle, settings=SETTINGS), {"query": "pending"})
    assert "skipped" not in after or after["skipped"] == []
    assert sorted(h["path"] for h in after["hits"]) == ["other.md", "pods.md"]
    full = Engine(SETTINGS, reread=True).search(Call(bundle, SETTINGS), {"query": "pending"})
    assert encode(after) == encode(full)
    assert len(set(analysed)) == 2  # nothing analysed by the old rule was used
    later.close()


def test_an_unwritable_cache_folder_means_no_cache(bundle: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    engine = Engine(SETTINGS, cache=blocker / "cache")
    assert answers(engine, bundle) == reference(bundle)
    assert not engine.reuse.store.enabled
    assert engine.reuse.store.problem and "cache" in engine.reuse.store.problem


PROBE = textwrap.dedent(
    """
    import json, os, sys
    # everything imported first: after setuid, `nobody` cannot read this Python's files
    import citeline.engine.index.build, citeline.engine.core, citeline.engine.answer.lines
    import sqlite3, numpy
    import citeline.engine.text.frontmatter, pathspec
    from citeline.engine import Engine, Settings
    os.setgid({uid}); os.setuid({uid})
    engine = Engine(Settings(skip_invalid=True), cache=sys.argv[2])
    out = engine.search(engine.call(sys.argv[1]), {{"query": "alpha"}})
    print(json.dumps({{"total": out["total"], "enabled": engine.reuse.store.enabled}}))
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as another user")
def test_a_cache_owned_by_someone_else_is_not_used(bundle: Path) -> None:
    """Permissions apply to `nobody`, not to root: a cache folder it cannot write."""
    top = Path(tempfile.mkdtemp(prefix="citeline-cache-perm-"))
    try:
        top.chmod(0o755)
        readable = top / "b"
        readable.mkdir()
        for f in bundle.rglob("*.md"):
            target = readable / f.relative_to(bundle)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.read_bytes())
        for p in [readable, *readable.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        cache = top / "cache"
        # root's, 0700
        Engine(SETTINGS, cache=cache).search(Call(readable, SETTINGS), {"query": "alpha"})
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(uid=65534), str(readable), str(cache)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {"total": 2, "enabled": False}
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)


WRITER = textwrap.dedent(
    """
    import json, sys
    from citeline.engine import Engine, Settings
    from citeline.engine.answer.present import encode
    bundle, cache, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out = []
    for round in range(4):
        engine = Engine(Settings(skip_invalid=True), cache=cache)
        for q in [["alpha"], ["beta gamma"], ["delta"]][seed % 3:] + [["alpha"]]:
            out.append(encode(engine.search(engine.call(bundle), {"query": q[0]})))
        engine.close()
    print(json.dumps(out))
    """
)


def test_processes_writing_at_once_agree_and_leave_a_sound_cache(
    make_bundle, tmp_path: Path
) -> None:
    bundles = []
    for i in range(3):
        files = {f"f{j}.md": f"# Part {j}\nalpha beta {i} {j}\n\ngamma delta\n" for j in range(40)}
        bundles.append(Path(make_bundle(files)))
    cache = tmp_path / "shared-cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(bundles[i % 3]), str(cache), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    for i, got in enumerate(results):
        plain = Engine(Settings(skip_invalid=True), reread=True)
        for answer in got:
            query = json.loads(answer)["query"]
            assert answer == encode(plain.search(plain.call(bundles[i % 3]), {"query": query}))
    with sqlite3.connect(cache / FILE_NAME) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_cache_stays_within_its_bound_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.engine.store import store as store_mod

    # A use is recorded at the next write once the entry's last use is older than
    # TOUCH_EVERY (an hour: a read alone never writes); here at once.
    monkeypatch.setattr(store_mod, "TOUCH_EVERY", 0)
    cache = tmp_path / "cache"
    bound = 75_000
    store = Store(cache, bound)
    blob = os.urandom(10_000)
    store.put([("test", "old", blob), ("test", "kept", blob)])
    time.sleep(1.1)  # `used` has one-second resolution
    store.put([("test", f"new{i}", blob) for i in range(4)])  # 60,000 bytes in all
    assert store.get("test", "kept") == blob  # a use, recorded at the next write
    time.sleep(1.1)
    store.put([("test", "new4", blob)])  # 70,000: within the bound; "kept" touched
    time.sleep(1.1)
    store.put([("test", "new5", blob)])  # 80,000: over; down to 90% of the bound
    with sqlite3.connect(cache / FILE_NAME) as db:
        total = db.execute("SELECT SUM(size) FROM entries").fetchone()[0]
        left = {k for (k,) in db.execute("SELECT key FROM entries")}
    assert total <= bound * 9 // 10
    assert "old" not in left  # the least recently used went first …
    assert {"kept", "new4", "new5"} <= left  # … and what was used lately stayed
    assert len(left) == 6
    store.close()


def test_checks_kept_with_the_cached_index_report_the_same_errors(
    make_bundle, tmp_path: Path, analysed: list[str]
) -> None:
    """The first duplicate concept id and the first over-long heading are kept with the
    list of blocks; a new engine reports them from there, exactly as a fresh one does."""
    from citeline.engine import CitelineError

    long_heading = "# " + "x" * 1100 + "\n"
    cases = [
        {"a.md": "---\nid: same\n---\nalpha\n", "b.md": "---\nid: same\n---\nalpha\n"},
        {"a.md": "alpha\n", "b.md": long_heading + "alpha\n"},
    ]
    for files in cases:
        bundle = Path(make_bundle(files))
        time.sleep(0.06)
        errors = []
        for engine in (
            Engine(cache=tmp_path / "checks"),
            Engine(cache=tmp_path / "checks"),
            Engine(reread=True),
        ):
            analysed.clear()
            with pytest.raises(CitelineError) as err:
                engine.search(engine.call(bundle), {"query": "alpha"})
            errors.append(err.value.to_json())
        assert errors[0] == errors[1] == errors[2]
        assert errors[0]["error"]["code"] in ("bundle_invalid", "resource_limit")
