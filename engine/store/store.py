"""The persistent cache (SPEC §2 "Cache"): SQLite in WAL mode, from the standard library.

Why SQLite: it is a maintained store that already solves what a cache shared by several
processes needs — atomic commits, readers that never block (WAL), a writer lock with a
timeout, detection of a damaged file — so nothing here locks files by hand. Every value is
a blob in the safe format of codec.py, checked when it is read; the keys are content
addresses (SHA-256s of what a value was derived from) plus the engine's analysis version.

The cache is an accelerator only. Any failure — a missing, unwritable, corrupt, locked or
foreign-version database — makes it answer "not found" or skip a write, never an error:
results are byte-identical with it, without it and with a broken one. Only the user's own
cache is used (owned.py): a folder or a file another user could read, write or point
elsewhere turns the cache off for the process's store, with one warning naming the folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence

from . import owned

log = logging.getLogger("citeline.cache")

SCHEMA = 1
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB
FILE_NAME = "citeline-cache.sqlite3"
TOUCH_EVERY = 3600  # seconds: how stale an entry's last use may get before it is updated
BUSY_MS = 2000  # how long a writer waits for another process's write to finish
FLUSH_BYTES = 4 << 20  # a batch writes what it holds once it holds this much
SUFFIXES = ("", "-wal", "-shm")  # the database's files: SQLite makes the last two beside it

# The cache folders this process refused (not the user's own): the command line starts no
# warm process for them (it would refuse them too).
refused: set[str] = set()


def default_folder() -> str:
    """CITELINE_CACHE_DIR, else the platform's user cache folder."""
    folder = os.environ.get("CITELINE_CACHE_DIR")
    if folder:
        return folder
    from platformdirs import user_cache_dir

    return user_cache_dir("citeline", appauthor=False)


def refusal(folder: str) -> str | None:
    """Why `folder` would not be used as a cache (owned.py), None when it would be or is not
    there yet (it would be made); nothing is made or opened."""
    try:
        owned.private_folder(folder, make=False)
    except owned.NotPrivate as exc:
        return str(exc)
    except OSError:
        return None  # not there (or not readable): a store says why when it tries
    return None


class Store:
    """Get and put blobs by (kind, key). Thread-safe; one connection per store."""

    def __init__(self, folder: str | os.PathLike[str] | None, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.folder = None if folder is None else os.fspath(folder)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._stale: set[tuple[str, str]] = set()
        self._opened = False
        self._local = threading.local()  # per thread: batch() depth and its pending writes
        self.problem: str | None = None  # why the cache is off, when it is

    @property
    def enabled(self) -> bool:
        return self.folder is not None and self._connect() is not None

    # -- connecting ----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection | None:
        if self._opened:
            return self._db
        self._opened = True
        if self.folder is None:
            return None
        try:
            self._db = self._open(self.folder)
        except owned.NotPrivate as exc:
            refused.add(self.folder)
            self._off(f"the cache folder {self.folder} is not yours only: {exc}")
        except (OSError, sqlite3.Error) as exc:
            self._off(f"cannot open the cache in {self.folder}: {exc}")
        return self._db

    def _open(self, given: str) -> sqlite3.Connection:
        folder = owned.private_folder(given)  # made 0700 if need be, and checked: no links
        if not owned.CHECKED:
            return self._prepare(os.path.join(folder, FILE_NAME))
        fd = owned.open_folder(folder)
        try:
            # Created user-only before SQLite opens it (SQLite gives its -wal and -shm files
            # the database file's permissions); the -wal and -shm files it finds must be the
            # user's only too. No one else can change the folder's entries (owned.py), so
            # SQLite, opening them by name, opens what was checked.
            for suffix in SUFFIXES:
                owned.check_file(fd, FILE_NAME + suffix, create=not suffix)
            path = os.path.join(folder, FILE_NAME)
            try:
                return self._prepare(path)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                # Not a database, or a damaged one: it holds derived data only, start afresh.
                log.warning("cache %s is damaged (%s); starting a new one", path, exc)
                for suffix in SUFFIXES:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(FILE_NAME + suffix, dir_fd=fd)
                owned.check_file(fd, FILE_NAME, create=True)
                return self._prepare(path)
        finally:
            os.close(fd)

    def _prepare(self, path: str) -> sqlite3.Connection:
        if owned.CHECKED:
            # mode=rw: SQLite opens the file made and checked above and never makes one of
            # its own (it would make it with the umask's mode, 0644 as a rule). In a URI "%",
            # "?" and "#" are escaped; nothing else in a path is special.
            name = "file://" + "".join(_URI_ESCAPES.get(c, c) for c in path) + "?mode=rw"
        else:
            name = path
        db = sqlite3.connect(
            name,
            timeout=BUSY_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
            uri=owned.CHECKED,
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # No fsync: the cache holds derived data only, and a file damaged by a crash is
            # detected (SQLite's own checks, every blob's CRC) and rebuilt. Fewer, larger
            # checkpoints while a big workspace's blocks are written.
            db.execute("PRAGMA synchronous=OFF")
            db.execute("PRAGMA wal_autocheckpoint=16384")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA:
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    # Re-read under the write lock: another process may have just made it.
                    if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
                        db.execute("DROP TABLE IF EXISTS entries")
                        db.execute(
                            "CREATE TABLE entries (kind TEXT NOT NULL, key TEXT NOT NULL, "
                            "blob BLOB NOT NULL, size INTEGER NOT NULL, used INTEGER NOT NULL, "
                            "PRIMARY KEY (kind, key))"
                        )
                        db.execute("CREATE INDEX entries_used ON entries (used)")
                        db.execute(f"PRAGMA user_version={SCHEMA}")
        except BaseException:
            db.close()
            raise
        return db

    def _off(self, why: str) -> None:
        log.warning("%s; continuing without the cache", why)
        self.problem = why
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None

    # -- reading and writing -------------------------------------------------------------

    def get(self, kind: str, key: str) -> bytes | None:
        db = self._connect()
        if db is None:
            return None
        try:
            with self._lock:
                row = db.execute(
                    "SELECT blob, used FROM entries WHERE kind = ? AND key = ?", (kind, key)
                ).fetchone()
        except (sqlite3.Error, UnicodeError, ValueError) as exc:
            log.warning("cache read failed (%s): %s", kind, exc)
            return None
        if row is None:
            return None
        if row[1] < time.time() - TOUCH_EVERY:
            self._stale.add((kind, key))
        return bytes(row[0])

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, bytes]:
        """The blobs found for `keys` (missing ones left out)."""
        db = self._connect()
        if db is None or not keys:
            return {}
        found: dict[str, bytes] = {}
        cutoff = time.time() - TOUCH_EVERY
        try:
            with self._lock:
                for start in range(0, len(keys), 500):
                    batch = list(keys[start : start + 500])
                    marks = ",".join("?" * len(batch))
                    for key, blob, used in db.execute(
                        f"SELECT key, blob, used FROM entries WHERE kind = ? AND key IN ({marks})",
                        [kind, *batch],
                    ):
                        found[key] = bytes(blob)
                        if used < cutoff:
                            self._stale.add((kind, key))
        except (sqlite3.Error, UnicodeError, ValueError) as exc:
            log.warning("cache read failed (%s): %s", kind, exc)
            return {}
        return found

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Writes made inside go to the database in one transaction at the end (a request's
        blocks, structures, stat index and manifest: one commit instead of dozens)."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            local.pending, local.size = [], 0
        local.depth = depth + 1
        try:
            yield
        finally:
            local.depth = depth
            if depth == 0:
                rows, local.pending, local.size = local.pending, [], 0
                if rows:
                    self.put(rows)

    def put(self, rows: Iterable[tuple[str, str, bytes]]) -> bool:
        """Store (kind, key, blob) rows in one transaction; False when it could not."""
        db = self._connect()
        if db is None:
            return False
        local = self._local
        if getattr(local, "depth", 0):
            rows = list(rows)
            local.pending.extend(rows)
            local.size += sum(len(blob) for _, _, blob in rows)
            if local.size < FLUSH_BYTES:
                return True
            rows, local.pending, local.size = local.pending, [], 0  # too much to hold
        now = int(time.time())
        values = [(kind, key, blob, len(blob), now) for kind, key, blob in rows]
        touched = [(now, kind, key) for kind, key in self._stale]
        if not values and not touched:
            return True
        try:
            with self._lock, db:
                db.execute("BEGIN IMMEDIATE")
                if values:
                    db.executemany(
                        "INSERT OR REPLACE INTO entries (kind, key, blob, size, used) "
                        "VALUES (?, ?, ?, ?, ?)",
                        values,
                    )
                if touched:
                    db.executemany(
                        "UPDATE entries SET used = ? WHERE kind = ? AND key = ?", touched
                    )
                if values:
                    self._evict(db)
            self._stale.clear()
            return True
        except sqlite3.OperationalError as exc:  # locked by a long writer, disk full, …
            log.info("cache write skipped: %s", exc)
            return False
        except (sqlite3.Error, UnicodeError, ValueError) as exc:
            log.warning("cache write failed: %s", exc)
            return False

    def _evict(self, db: sqlite3.Connection) -> None:
        """Keep the cache under max_bytes: the least recently used entries go first."""
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()[0]
        if total <= self.max_bytes:
            return
        goal = self.max_bytes * 9 // 10
        doomed = []
        for kind, key, size in db.execute("SELECT kind, key, size FROM entries ORDER BY used"):
            doomed.append((kind, key))
            total -= size
            if total <= goal:
                break
        db.executemany("DELETE FROM entries WHERE kind = ? AND key = ?", doomed)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
            self._db = None
            self._opened = True


_URI_ESCAPES = {"%": "%25", "?": "%3f", "#": "%23"}


def disabled() -> Store:
    """A store that remembers nothing (--no-cache, `cache: false`)."""
    return Store(None)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "Store",
    "default_folder",
    "disabled",
    "refusal",
    "refused",
]
