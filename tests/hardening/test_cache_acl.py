"""The cache's "no one else may write it" check sees POSIX ACLs and other accounts' primary
groups (SPEC §2 "Cache"; issue 49, findings 4 and 5).

With an ACL the mode's group bits are the ACL's mask: `setfacl -m u:nobody:rwx` on a folder of
the user's private group shows a plain 0770, which the mode check alone took for the user's
own. A folder (the cache's, or one on the way) with an ACL that lets another account write
it, a default ACL that would hand the files made in it to others, a cache file with an ACL
entry for someone else, a 0770 folder whose group is another account's primary group: the
cache is off, one warning names the folder, the results are those of no cache, and nothing
another account planted there is opened. The other accounts are `nobody` (other_user.py)
and throwaway accounts made with useradd for the length of a test.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bundles import write_bundle
from needs import tool
from other_user import NOBODY, needs_root, other_process, run_as_other, shared_folder
from test_private_cache import FILES, QUERY, refused, through, used

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.store.store import FILE_NAME, refusal

NOGROUP = 65534
ACL_XATTRS = ("system.posix_acl_access", "system.posix_acl_default")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX ACLs as Linux has them")


@pytest.fixture
def bundle(make_bundle) -> Path:
    return Path(make_bundle(FILES))


def setfacl(*args: str | Path) -> None:
    subprocess.run([tool("setfacl"), *map(str, args)], check=True, capture_output=True)


def acl_of(path: Path) -> list[str]:
    """The ACL xattrs a file or folder carries."""
    return [n for n in os.listxattr(path, follow_symlinks=False) if n in ACL_XATTRS]


def as_nobody_can_write(folder: Path) -> bool:
    """Whether nobody can really make a file in `folder` (the kernel's answer, not ours)."""
    out = run_as_other(
        "import os, sys\n"
        "try:\n"
        "    os.close(os.open(os.path.join(sys.argv[1], 'probe'), os.O_CREAT | os.O_WRONLY))\n"
        "except PermissionError:\n"
        "    print('no')\n"
        "else:\n"
        "    os.unlink(os.path.join(sys.argv[1], 'probe')); print('yes')\n",
        str(folder),
    )
    return out.strip() == "yes"


@contextlib.contextmanager
def watched(folder: Path) -> Iterator[list[str]]:
    """The names in `folder` opened or read by anyone during the block (inotify)."""
    from inotify_simple import INotify, flags

    names: list[str] = []
    with INotify() as inotify:
        inotify.add_watch(folder, flags.OPEN | flags.ACCESS)
        yield names
        names.extend(e.name for e in inotify.read(timeout=100) if e.name)


# -- finding 4: ACLs on the cache folder and on the way to it -----------------------------------


def test_a_cache_folder_another_user_may_write_through_an_acl_is_not_used(
    bundle: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The attack as reported: 0770 with the user's private group, and nobody may write it
    through an ACL entry; nobody then moved the database and planted files."""
    needs_root()
    with shared_folder(0o755) as shared:
        cache = shared / "cache"
        cache.mkdir(mode=0o700)
        setfacl("-m", f"u:{NOBODY}:rwx", cache)
        assert stat.S_IMODE(cache.stat().st_mode) == 0o770  # the mask: all the mode shows
        assert as_nobody_can_write(cache)  # the premise: the kernel lets nobody write it
        why = refused(bundle, cache, caplog)
        assert "ACL" in why and f"user {NOBODY}" in why
        assert os.listdir(cache) == []  # nothing of the user's there to read or move
        assert "ACL" in (refusal(str(cache)) or "")  # the warm process refuses it too


def test_files_planted_through_an_acl_are_never_opened(
    bundle: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """nobody plants a forged database and its -wal and -shm (0666) before the user's call."""
    needs_root()
    with shared_folder(0o755) as shared:
        cache = shared / "cache"
        cache.mkdir(mode=0o700)
        setfacl("-m", f"u:{NOBODY}:rwx", cache)
        run_as_other(
            "import os, sqlite3, sys\n"
            "db = os.path.join(sys.argv[1], sys.argv[2])\n"
            "c = sqlite3.connect(db); c.execute('CREATE TABLE entries (x)'); c.close()\n"
            "for s in ('', '-wal', '-shm'):\n"
            "    p = db + s; open(p, 'ab').close(); os.chmod(p, 0o666)\n",
            str(cache),
            FILE_NAME,
        )
        planted = {p.name: p.read_bytes() for p in cache.iterdir()}
        with watched(cache) as opened:
            why = refused(bundle, cache, caplog)
        assert opened == []
        assert "ACL" in why
        assert {p.name: p.read_bytes() for p in cache.iterdir()} == planted


def test_the_swap_race_through_an_acl_gets_nothing(
    bundle: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """nobody moves the user's database away as soon as it appears (the race that made SQLite
    create a 0666 -wal file of nobody's holding the user's paths): there is none to move."""
    needs_root()
    with shared_folder(0o755) as shared:
        cache = shared / "cache"
        cache.mkdir(mode=0o700)
        setfacl("-m", f"u:{NOBODY}:rwx", cache)
        thief = (
            "import os, sys, time\n"
            "folder, name = sys.argv[1:3]\n"
            "print('ready', flush=True)\n"
            "n = 0\n"
            "while True:\n"
            "    for s in ('', '-wal', '-shm'):\n"
            "        try:\n"
            "            if os.lstat(os.path.join(folder, name + s)).st_uid != os.getuid():\n"
            "                os.rename(os.path.join(folder, name + s),\n"
            "                          os.path.join(folder, f'stolen{n}{s}')); n += 1\n"
            "        except OSError:\n"
            "            pass\n"
            "    time.sleep(0.001)\n"
        )
        with other_process(thief, str(cache), FILE_NAME) as proc:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            plain = encode(Engine().search(Call(bundle, Settings()), QUERY))
            for _ in range(5):
                out, in_use, warnings = through(bundle, cache, caplog)
                assert (out, in_use, len(warnings)) == (plain, False, 1)
            time.sleep(0.2)
        assert os.listdir(cache) == []


@pytest.mark.parametrize("which", ["access", "default"])
@pytest.mark.parametrize("where", ["the cache folder", "a folder on the way"])
@pytest.mark.parametrize("entry", [f"u:{NOBODY}:rwx", f"g:{NOGROUP}:rwx"])
def test_an_acl_that_lets_others_write_is_not_used(
    bundle: Path, caplog: pytest.LogCaptureFixture, which: str, where: str, entry: str
) -> None:
    """A named user or group (not the user's own) that may write the folder, or that a
    default ACL would give to everything made in it."""
    needs_root()
    with shared_folder(0o755) as shared:
        cache = shared / "mine" / "cache"
        cache.mkdir(parents=True)
        for folder in (cache, cache.parent):
            folder.chmod(0o700)
        target = cache if where == "the cache folder" else cache.parent
        setfacl(*(["-d"] if which == "default" else []), "-m", entry, target)
        why = refused(bundle, cache, caplog)
        assert str(target) in why and "ACL" in why
        assert os.listdir(cache) == []


@pytest.mark.parametrize(
    ("where", "entry"),
    [
        ("a folder on the way", f"u:{NOBODY}:r-x"),  # others may read and pass, not write
        ("the cache folder", f"u:{NOBODY}:r-x"),  # as a 0755 cache folder: its files are 0600
        ("the cache folder", "u:0:rwx"),  # the user (root here) named in its own ACL
        ("the cache folder", "g:0:rwx"),  # the user's private group
        ("the cache folder", "masked"),  # an entry the mask turns off (chmod 700 after)
        ("the cache folder", "default for the user"),  # a default ACL for the user alone
        ("the cache folder", "d:o::r-x"),  # bounded by the mode a file is made with (0600)
        ("the cache folder", f"d:u:{NOBODY}:rwx,d:m::---"),  # a default whose mask gives nothing
    ],
)
def test_an_acl_that_lets_no_one_else_write_is_used(
    bundle: Path, caplog: pytest.LogCaptureFixture, where: str, entry: str
) -> None:
    needs_root()
    with shared_folder(0o755) as shared:
        cache = shared / "mine" / "cache"
        cache.mkdir(parents=True)
        cache.chmod(0o700)
        cache.parent.chmod(0o755)  # not writable by others: nobody may pass (the premise below)
        target = cache if where == "the cache folder" else cache.parent
        if entry == "masked":
            setfacl("-m", f"u:{NOBODY}:rwx", target)
            target.chmod(0o700)  # the mask: the entry stays, and gives nothing
            assert not as_nobody_can_write(target)
        elif entry == "default for the user":
            setfacl("-d", "-m", "u::rwx,g::---,o::---", target)
        elif entry.startswith("d:"):
            setfacl("-n", "-m", entry, target)  # -n: the mask as given, not recalculated
        else:
            setfacl("-m", entry, target)
        assert acl_of(target)
        used(bundle, cache, caplog)
        for suffix in ("", "-wal", "-shm"):
            path = cache / (FILE_NAME + suffix)
            if path.exists():
                assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


# -- finding 4: ACLs on the cache's files ----------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
@pytest.mark.parametrize("entry", [f"u:{NOBODY}:r", f"g:{NOGROUP}:rw"])
def test_cache_files_with_an_acl_for_others_are_not_used(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, suffix: str, entry: str
) -> None:
    """A cache file of the user's that shows 0640 (or 0660) with the user's private group,
    the group bits being the mask of an entry for another account."""
    cache = tmp_path / "cache"
    used(bundle, cache, caplog)  # a real cache first
    path = cache / (FILE_NAME + suffix)
    if suffix:
        path.write_bytes(b"")  # as SQLite leaves them while a process has the cache open
        path.chmod(0o600)
    setfacl("-m", entry, path)
    before = path.read_bytes()
    why = refused(bundle, cache, caplog)
    assert FILE_NAME + suffix in why and "ACL" in why
    assert path.read_bytes() == before


def test_the_cache_s_files_are_the_user_s_only_whatever_the_umask(
    bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite makes the -wal and -shm files itself: with the database's mode (0600), never
    the umask's, and without an ACL (none to inherit from a folder that is used)."""
    cache = tmp_path / "cache"
    old = os.umask(0)
    try:
        used(bundle, cache, caplog)
        engine = Engine(cache=cache)  # held open: the -wal and -shm files are there
        try:
            engine.search(engine.call(bundle), {"query": "gamma"})
            assert engine.reuse.store.enabled
            for suffix in ("", "-wal", "-shm"):
                st = (cache / (FILE_NAME + suffix)).stat()
                assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(), suffix
                assert acl_of(cache / (FILE_NAME + suffix)) == [], suffix
        finally:
            engine.close()
    finally:
        os.umask(old)


def test_the_warm_process_s_socket_folder_with_an_acl_is_not_used(tmp_path: Path) -> None:
    """The socket folder's rule (no permission for anyone else, cli/launch.open_private)
    reads the mode through a descriptor: an ACL entry shows in its group bits (the mask)."""
    from citeline.cli.launch import open_private

    folder = tmp_path / "citeline-0"
    folder.mkdir(mode=0o700)
    setfacl("-m", f"u:{NOBODY}:x", folder)
    fd, why = open_private(str(folder))
    assert fd is None and "open to others" in why


# -- finding 5: a group that is another account's primary group ---------------------------------

AS_USER = """
import grp, json, logging, os, pwd, sys  # grp: from lib-dynload, which the account cannot read
from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode

bundle, cache, warm, uid, gid = sys.argv[1:6]
query = json.loads(sys.argv[6])
call = Call(bundle, Settings())
plain = encode(Engine().search(call, query))
Engine(cache=warm).search(call, query)  # every module the cache needs, imported as root
os.setgroups([])
os.setgid(int(gid))
os.setuid(int(uid))  # from here on the throwaway account, with its primary group only
warnings = []
handler = logging.Handler()
handler.emit = lambda record: warnings.append(record.getMessage())
logging.getLogger("citeline.cache").addHandler(handler)
engine = Engine(cache=cache)
out = encode(engine.search(call, query))
print(json.dumps({"same": out == plain, "used": engine.reuse.store.enabled, "warnings": warnings}))
"""


@pytest.fixture
def accounts() -> Iterator[Callable[..., pwd.struct_passwd]]:
    """accounts(*useradd options) -> a new throwaway account (removed afterwards, with the
    group useradd made for it)."""
    needs_root()
    useradd, userdel = tool("useradd"), tool("userdel")
    made: list[str] = []

    def add(*options: str) -> pwd.struct_passwd:
        name = f"citeline-t{os.getpid() % 100000}-{len(made)}"
        subprocess.run(
            [useradd, "-M", "-s", "/usr/sbin/nologin", *options, name],
            check=True,
            capture_output=True,
        )
        made.append(name)
        return pwd.getpwnam(name)

    try:
        yield add
    finally:
        for name in reversed(made):
            subprocess.run([userdel, name], check=False, capture_output=True)
            subprocess.run([tool("groupdel"), name], check=False, capture_output=True)


def as_account(user: pwd.struct_passwd, bundle: Path, cache: Path, warm: Path) -> dict:
    """A search by `user` (its own process, its primary group only) with this cache folder."""
    done = subprocess.run(
        [sys.executable, "-c", AS_USER, str(bundle), str(cache), str(warm)]
        + [str(n) for n in (user.pw_uid, user.pw_gid)]
        + [json.dumps(QUERY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("other", ["none", "primary group", "listed member"])
def test_a_0770_folder_of_the_user_s_group_is_used_only_when_the_group_is_theirs_alone(
    tmp_path: Path, accounts: Callable[..., pwd.struct_passwd], other: str
) -> None:
    """A user with a private group (useradd's own, named as they are) and a 0770 cache folder
    of it, as a umask of 002 makes: used while no one else is in that group; not used once
    another account has it as its primary group, or is listed in it."""
    user = accounts("-U")
    if other == "primary group":
        accounts("-N", "-g", str(user.pw_gid))
    elif other == "listed member":
        accounts("-U", "-G", user.pw_name)
    with shared_folder(0o755) as shared:
        bundle = write_bundle(shared / "bundle", FILES)
        cache = shared / "cache"
        cache.mkdir()
        os.chown(cache, user.pw_uid, user.pw_gid)
        cache.chmod(0o770)
        got = as_account(user, bundle, cache, tmp_path / "warm")
        assert got["same"]
        if other == "none":
            assert got["used"] and got["warnings"] == [], got
            assert (cache / FILE_NAME).stat().st_uid == user.pw_uid
        else:
            assert not got["used"] and len(got["warnings"]) == 1, got
            assert str(cache) in got["warnings"][0] and "writable" in got["warnings"][0]
            assert os.listdir(cache) == []
