"""Only the user's own cache is used (SPEC §2 "Cache"; issue 31, hole 1).

A cache folder another user made first, or can write, or can change the path to (a folder
on the way that others may write, a link of theirs), a folder that is a link, and cache files
that are links, hard links, someone else's or open to others: the cache is off for that call,
with one warning naming the folder, and the results are those of no cache. Nothing is
written where the user did not mean it to be (a link's target, a workspace). The other user
is `nobody`, in a process of its own (other_user.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from other_user import NOBODY, needs_root, run_as_other, shared_folder

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.store.store import FILE_NAME

QUERY = {"query": "alpha"}
FILES = {"a.md": "# Alpha\n\nalpha beta\n", "sub/b.md": "# Beta\n\nbeta alpha gamma\n"}


@pytest.fixture
def bundle(make_bundle) -> Path:
    return Path(make_bundle(FILES))


def through(bundle: Path, cache: Path, caplog: pytest.LogCaptureFixture) -> tuple[str, bool, list]:
    """A search with this cache folder: its answer, whether the cache was used, and the
    cache's warnings."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="citeline.cache"):
        engine = Engine(cache=cache)
        try:
            out = encode(engine.search(engine.call(bundle), QUERY))
            used = engine.reuse.store.enabled
        finally:
            engine.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "citeline.cache"]
    return out, used, warnings


def refused(bundle: Path, cache: Path, caplog: pytest.LogCaptureFixture) -> str:
    """Assert the cache folder is refused, with the answer of no cache and one warning naming
    the folder; that warning."""
    out, used, warnings = through(bundle, cache, caplog)
    assert not used
    assert out == encode(Engine().search(Call(bundle, Settings()), QUERY))
    assert len(warnings) == 1, warnings
    assert str(cache) in warnings[0] and "without the cache" in warnings[0]
    return warnings[0]


def used(bundle: Path, cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    out, in_use, warnings = through(bundle, cache, caplog)
    assert in_use and warnings == []
    assert out == encode(Engine().search(Call(bundle, Settings()), QUERY))


# -- the folder ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o700, 0o755, 0o777], ids=oct)
def test_a_folder_another_user_made_first_is_not_used(
    bundle: Path, caplog: pytest.LogCaptureFixture, mode: int
) -> None:
    """The shared-/tmp attack: another user makes the folder before the victim's first call,
    to read what the cache holds (paths, headings, vocabulary) or to forge results."""
    needs_root()
    with shared_folder() as shared:
        cache = shared / "cache"
        run_as_other(f"import os; os.mkdir({str(cache)!r}); os.chmod({str(cache)!r}, {mode})")
        why = refused(bundle, cache, caplog)
        assert f"user {NOBODY}" in why
        assert os.listdir(cache) == []  # nothing of the victim's there to read


@pytest.mark.parametrize("mode", [0o770, 0o720, 0o707, 0o702, 0o777, 0o1777], ids=oct)
def test_a_folder_of_the_user_that_others_can_write_is_not_used(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: int
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chown(cache, os.geteuid(), NOBODY)  # a group of others (nogroup)
    cache.chmod(mode)
    assert "writable" in refused(bundle, cache, caplog)
    assert os.listdir(cache) == []


@pytest.mark.parametrize(("mode", "group"), [(0o700, NOBODY), (0o755, NOBODY), (0o770, None)])
def test_a_folder_of_the_user_s_own_is_used(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: int, group: int | None
) -> None:
    """Readable by others is the user's choice (the files in it are 0600); writable by the
    user's private group (root's here: named as the user, no other member) is the user's."""
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chown(cache, os.geteuid(), os.getegid() if group is None else group)
    cache.chmod(mode)
    used(bundle, cache, caplog)
    assert stat.S_IMODE((cache / FILE_NAME).stat().st_mode) == 0o600


@pytest.mark.parametrize("target", ["the workspace", "a private folder"])
def test_a_folder_that_is_a_link_is_not_used(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, target: str
) -> None:
    """Followed, a link put the database inside the workspace, which citeline never writes."""
    real = bundle if target == "the workspace" else tmp_path / "private"
    real.mkdir(mode=0o700, exist_ok=True)
    before = sorted(os.listdir(real))
    link = tmp_path / "cache"
    link.symlink_to(real)
    assert "link" in refused(bundle, link, caplog)
    assert sorted(os.listdir(real)) == before


def test_a_link_of_another_user_on_the_way_is_not_followed(
    bundle: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """CITELINE_CACHE_DIR=/tmp/team/cache where another user made /tmp/team a link to the
    victim's workspace: the cache would be made inside it."""
    needs_root()
    with shared_folder() as shared:
        team = shared / "team"
        run_as_other(f"import os; os.symlink({str(bundle)!r}, {str(team)!r})")
        assert f"user {NOBODY}" in refused(bundle, team / "cache", caplog)
        assert not (bundle / "cache").exists()


def test_links_of_the_user_on_the_way_are_followed(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As /tmp and /var are links on macOS: a link of the user (or root) above the folder."""
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    (tmp_path / "again").symlink_to("via/../via")
    used(bundle, tmp_path / "again" / "cache", caplog)
    assert (tmp_path / "real" / "cache" / FILE_NAME).is_file()


@pytest.mark.parametrize(
    ("mode", "owner", "group"),
    [
        (0o777, 0, 0),
        (0o770, 0, NOBODY),
        (0o755, NOBODY, NOBODY),
        (0o700, NOBODY, NOBODY),
        (0o777, NOBODY, NOBODY),
    ],
    ids=lambda v: oct(v) if v not in (0, NOBODY) else str(v),
)
def test_a_folder_inside_one_others_can_change_is_not_used(
    bundle: Path, caplog: pytest.LogCaptureFixture, mode: int, owner: int, group: int
) -> None:
    """A folder of the user's own inside a team share: whoever can write the share (or owns
    it) can put a folder of theirs in its place between a check and SQLite's open."""
    needs_root()
    with shared_folder(mode, owner, group) as shared:
        cache = shared / "mine" / "cache"
        cache.mkdir(parents=True)
        for folder in (cache, cache.parent):
            folder.chmod(0o700)
        why = refused(bundle, cache, caplog)
        assert str(shared) in why
        assert os.listdir(cache) == []


def test_a_folder_inside_a_sticky_one_is_used(
    bundle: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """/tmp itself: others may write it, but not rename or remove what is not theirs."""
    needs_root()
    with shared_folder(0o1777) as shared:
        used(bundle, shared / "cache", caplog)


def test_every_folder_the_cache_makes_is_user_only(bundle: Path, tmp_path: Path) -> None:
    cache = tmp_path / "a" / "b" / "cache"
    old = os.umask(0o022)
    try:
        engine = Engine(cache=cache)
        engine.search(engine.call(bundle), QUERY)
        assert engine.reuse.store.enabled
        engine.close()
    finally:
        os.umask(old)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", cache):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((cache / FILE_NAME).stat().st_mode) == 0o600


def test_a_folder_that_is_not_a_folder_is_not_used(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "file").write_text("x")
    refused(bundle, tmp_path / "file", caplog)
    refused(bundle, tmp_path / "file" / "cache", caplog)


# -- the files in it ----------------------------------------------------------------------------


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def own_database(tmp_path: Path) -> Path:
    """Another SQLite file of the user's (a browser's history, say)."""
    path = tmp_path / "mine.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE history (url TEXT)")
        db.execute("PRAGMA user_version = 7")
    return path


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_cache_files_that_are_links_are_not_followed(
    bundle: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    own_database: Path,
    suffix: str,
) -> None:
    """A database that was a link to the user's own SQLite file got an `entries` table."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / (FILE_NAME + suffix)).symlink_to(own_database)
    before = digest(own_database)
    assert "link" in refused(bundle, cache, caplog)
    assert digest(own_database) == before
    beside = [p.name for p in tmp_path.iterdir() if p.name.startswith("mine")]
    assert beside == ["mine.sqlite3"]  # no -wal or -shm made beside it
    with sqlite3.connect(own_database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 7


def _damage(path: Path, how: str, tmp_path: Path) -> None:
    if how == "owned by another user":
        os.chown(path, NOBODY, NOBODY)
    elif how == "writable by others":
        path.chmod(0o666)
    elif how == "readable by the group":
        os.chown(path, os.geteuid(), NOBODY)  # a group of others (nogroup)
        path.chmod(0o640)
    else:  # a hard link: the same file under another name elsewhere
        os.link(path, tmp_path / "elsewhere")


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
@pytest.mark.parametrize(
    "how", ["owned by another user", "writable by others", "readable by the group", "hard link"]
)
def test_cache_files_that_are_not_the_user_s_only_are_not_used(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, suffix: str, how: str
) -> None:
    cache = tmp_path / "cache"
    used(bundle, cache, caplog)  # a real cache first
    path = cache / (FILE_NAME + suffix)
    if suffix:
        path.write_bytes(b"")  # as SQLite leaves them while a process has the cache open
        path.chmod(0o600)
    _damage(path, how, tmp_path)
    before = digest(path)
    refused(bundle, cache, caplog)
    assert digest(path) == before


def test_the_command_line_warns_once_and_answers_as_without_a_cache(
    bundle: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "open"
    cache.mkdir()
    cache.chmod(0o777)
    env = {**os.environ, "CITELINE_CACHE_DIR": str(cache), "CITELINE_DAEMON": "0"}
    env.pop("CITELINE_LOG", None)
    argv = [sys.executable, "-m", "citeline.cli.entry", "search", str(bundle), "-q", "alpha"]
    got, plain = (
        subprocess.run(argv + extra, capture_output=True, env=env, timeout=120, check=False)
        for extra in (["--json"], ["--json", "--no-cache"])
    )
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (0, plain.stdout)
    assert plain.stderr == b""
    lines = got.stderr.decode().splitlines()
    assert len(lines) == 1 and str(cache) in lines[0], lines
    assert os.listdir(cache) == []
