"""Which store for the persistent cache: the measurement behind docs/decisions.md.

Run by hand (pytest does not collect tests/benchmarks)::

    python tests/benchmarks/cache_store.py --cache DIR [--repeat 5]

DIR is a citeline cache already filled (e.g. by `CITELINE_CACHE_DIR=DIR citeline search
../shared/corpora/tldr/docs -q x --raise-limits`): its entries are the payload. Each
candidate store writes them all (as a cold call does: one batch), then a new reader loads
what a warm call loads (the stat index, one manifest and its blocks) and looks up every
structure (as a second option set does). Prints ONE JSON object.

Candidates: SQLite in WAL mode (one transaction; `synchronous=OFF`, as citeline uses it),
and a folder of files, one per entry, each written to a temporary name and renamed (the
usual lock-free design; it still needs its own locking for the size bound and eviction).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

Rows = list[tuple[str, str, bytes]]


def load_rows(cache: Path) -> Rows:
    with sqlite3.connect(cache / "citeline-cache.sqlite3") as db:
        return [
            (k, key, bytes(b)) for k, key, b in db.execute("SELECT kind, key, blob FROM entries")
        ]


def sqlite_write(folder: Path, rows: Rows) -> None:
    db = sqlite3.connect(folder / "c.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA wal_autocheckpoint=16384")
    db.execute(
        "CREATE TABLE entries (kind TEXT, key TEXT, blob BLOB, size INTEGER, used INTEGER, "
        "PRIMARY KEY (kind, key))"
    )
    now = int(time.time())
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT INTO entries VALUES (?, ?, ?, ?, ?)",
            [(k, key, b, len(b), now) for k, key, b in rows],
        )
    db.close()


def sqlite_read(folder: Path, wanted: dict[str, list[str]]) -> int:
    db = sqlite3.connect(folder / "c.sqlite3")
    got = 0
    for kind, keys in wanted.items():
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            for (blob,) in db.execute(
                f"SELECT blob FROM entries WHERE kind = ? AND key IN ({marks})", [kind, *batch]
            ):
                got += len(blob)
    db.close()
    return got


def _name(kind: str, key: str) -> str:
    return kind + "-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def files_write(folder: Path, rows: Rows) -> None:
    for kind, key, blob in rows:
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, folder / _name(kind, key))


def files_read(folder: Path, wanted: dict[str, list[str]]) -> int:
    got = 0
    for kind, keys in wanted.items():
        for key in keys:
            with contextlib.suppress(FileNotFoundError):
                got += len((folder / _name(kind, key)).read_bytes())
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, required=True)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    rows = load_rows(args.cache)
    kinds: dict[str, list[str]] = {}
    for kind, key, _ in rows:
        kinds.setdefault(kind, []).append(key)
    warm = {k: kinds.get(k, []) for k in ("state", "manifest", "block")}
    second_options = {"structure": kinds.get("structure", [])}
    out: dict[str, Any] = {
        "entries": {k: len(v) for k, v in kinds.items()},
        "bytes": sum(len(b) for _, _, b in rows),
        "repeat": args.repeat,
    }
    for name, write, read in (
        ("sqlite_wal", sqlite_write, sqlite_read),
        ("files_rename", files_write, files_read),
    ):
        w, r1, r2, disk = [], [], [], 0
        for _ in range(args.repeat):
            folder = Path(tempfile.mkdtemp(prefix=f"store-{name}-"))
            try:
                t = time.perf_counter()
                write(folder, rows)
                w.append(time.perf_counter() - t)
                t = time.perf_counter()
                read(folder, warm)
                r1.append(time.perf_counter() - t)
                t = time.perf_counter()
                read(folder, second_options)
                r2.append(time.perf_counter() - t)
                disk = sum(f.stat().st_size for f in folder.iterdir())
            finally:
                shutil.rmtree(folder)
        out[name] = {
            "write_all_ms": round(statistics.median(w) * 1000, 1),
            "read_warm_call_ms": round(statistics.median(r1) * 1000, 1),
            "read_all_structures_ms": round(statistics.median(r2) * 1000, 1),
            "disk_bytes": disk,
        }
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
