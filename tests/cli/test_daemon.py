"""The warm process (cli/launch.py, cli/daemon.py): a call from a script is answered by it
with the bytes and exit code a new process gives, it sees every edit, it answers only its
own code, cache and user, and it leaves when idle or when its cache folder goes.

Every call here is a real `citeline` process (the console script's module) with its output
to pipes, as a script's or an agent's; the warm process is the real one it starts.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from bundles import write_bundle as write
from needs import corpus

from citeline.cli import launch

CLIENT = [sys.executable, "-m", "citeline.cli.entry"]
MARK = b"citeline: answered by the warm process (CITELINE_DAEMON=0 turns it off)\n"
FILES = {
    "guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys to values.\n",
}


@dataclass(frozen=True, slots=True)
class Answer:
    code: int
    out: bytes
    err: bytes
    warm: bool  # answered by the warm process


@dataclass
class Warm:
    """A cache folder and a sockets folder of the test's own, and calls made with them."""

    env: dict[str, str]
    runtime: Path

    def call(self, *args: str, cwd: Path | None = None, **env: str) -> Answer:
        merged = {**self.env, "CITELINE_LOG": "debug", **env}
        done = subprocess.run(
            [*CLIENT, *args], capture_output=True, cwd=cwd, env=merged, timeout=120, check=False
        )
        warm = done.stderr.endswith(MARK)
        err = done.stderr[: -len(MARK)] if warm else done.stderr
        return Answer(done.returncode, done.stdout, err, warm)

    def here(self, *args: str, cwd: Path | None = None, **env: str) -> Answer:
        """The same call answered in its own process (the warm process turned off)."""
        return self.call(*args, cwd=cwd, CITELINE_DAEMON="0", **env)

    def socket(self) -> Path:
        names = list(self.runtime.glob("citeline-*/*.sock"))
        assert len(names) <= 1, names
        return names[0] if names else self.runtime / "none.sock"

    def lock(self) -> Path | None:
        names = list(self.runtime.glob("citeline-*/*.lock"))  # made before the socket
        assert len(names) <= 1, names
        return names[0] if names else None

    def start(self, *args: str) -> Answer:
        """A first call (answered in its own process), then wait until the warm process it
        started answers."""
        first = self.call(*args)
        assert not first.warm
        deadline = time.monotonic() + 60
        while not self.socket().exists():
            assert time.monotonic() < deadline, "no warm process started"
            time.sleep(0.05)
        return first

    def alive(self) -> bool:
        """Whether a process holds the socket's lock (a warm process lives; one that leaves
        removes its lock)."""
        lock = self.lock()
        if lock is None:
            return False
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def wait_gone(self, within: float = 20) -> None:
        deadline = time.monotonic() + within
        while self.alive():
            assert time.monotonic() < deadline, "the warm process did not leave"
            time.sleep(0.05)


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    runtime = tmp_path / "run"
    runtime.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env |= {
        "CITELINE_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_RUNTIME_DIR": str(runtime),
        "NO_COLOR": "1",
    }
    made = Warm(env, runtime)
    yield made
    sock = made.socket()
    if sock.exists():
        sock.unlink()  # a warm process whose socket is gone leaves
        made.wait_gone()


def same(a: Answer, b: Answer) -> None:
    assert (a.code, a.out, a.err) == (b.code, b.out, b.err)


def test_the_command_is_the_launcher() -> None:
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "citeline"]
    assert script.value == "citeline.cli.entry:console"


def test_answers_as_a_new_process_would(warm: Warm, tmp_path: Path) -> None:
    """On a real corpus: the contract and human outputs, no match (with the recall
    suggestion), concepts, lines, usage and request errors, help wrapped to COLUMNS, a
    relative bundle from two working folders, and stderr in ASCII."""
    docs = corpus("powershell-docs") / "reference" / "docs-conceptual"
    warm.start("search", str(docs), "-q", "execution policy", "--json")
    calls: list[tuple[tuple[str, ...], Path | None, dict[str, str]]] = [
        (("search", str(docs), "-q", "execution policy", "--json"), None, {}),
        (("search", str(docs), "-q", "remote session credssp", "-n", "3"), None, {}),
        (("search", str(docs), "-q", "hashtable nosuchwordxyz", "--strict"), None, {}),
        (("search", str(docs), "-q", "splat", "--profile", "recall", "--json"), None, {}),
        (("concepts", str(docs), "-q", "about", "--json"), None, {}),
        (("lines", str(docs), "-F", "Get-ExecutionPolicy"), None, {}),
        (("lines", str(docs), "-e", "(unclosed", "--json"), None, {}),
        (("search", str(docs), "-q", "x", "-C", "99"), None, {}),
        (("search", str(docs), "--bogus"), None, {"COLUMNS": "50"}),
        (("search", "--help"), None, {"COLUMNS": "60"}),
        (("search", "docs-conceptual", "-q", "execution policy"), docs.parent, {}),
        (("search", ".", "-q", "execution policy", "--json"), docs, {}),
        (("search", str(tmp_path / "nowhere-é"), "-q", "x"), None, {"PYTHONIOENCODING": "ascii"}),
    ]
    for args, cwd, env in calls:
        got = warm.call(*args, cwd=cwd, **env)
        assert got.warm, (args, got.err)
        expected = warm.here(*args, cwd=cwd, **env)
        same(got, expected)
    codes = {warm.call(*args, cwd=cwd, **env).code for args, cwd, env in calls}
    assert codes == {0, 1, 2, 4}  # found, nothing found, bad request, no bundle


def test_calls_at_once_each_get_their_own_answer(warm: Warm, tmp_path: Path) -> None:
    """Agents run several calls together: the warm process answers them one at a time,
    each with its own answer."""
    from concurrent.futures import ThreadPoolExecutor

    bundle = write(tmp_path / "b", FILES)
    queries = ["ordered", "hashtable", "keys values", "insertion order", "nothing here"]
    warm.start("search", str(bundle), "-q", "hashtable", "--json")
    with ThreadPoolExecutor(len(queries)) as pool:
        got = list(pool.map(lambda q: warm.call("search", str(bundle), "-q", q, "--json"), queries))
    for query, answer in zip(queries, got, strict=True):
        assert answer.warm
        same(answer, warm.here("search", str(bundle), "-q", query, "--json"))
    assert len({a.out for a in got}) == len(queries)


def test_every_edit_is_seen(warm: Warm, tmp_path: Path) -> None:
    """Edits between calls, same-size rewrites within one timestamp tick among them: each
    answer is the one a new process gives right after it."""
    bundle = write(tmp_path / "b", FILES)
    query = ("search", str(bundle), "-q", "hashtable", "--json")
    warm.start(*query)
    guide = bundle / "guide.md"
    steps = [
        lambda: guide.write_text(guide.read_text().replace("insertion", "insertiox")),
        lambda: guide.write_text(guide.read_text().replace("insertiox", "insertion")),
        lambda: (bundle / "c.md").write_text("# Hashtable c\n\nhashtable hashtable\n"),
        lambda: (bundle / "c.md").rename(bundle / "notes" / "d.md"),
        lambda: (bundle / "notes" / "b.md").unlink(),
        lambda: os.utime(guide),
    ]
    for step in steps:
        before = warm.call(*query)
        step()
        got = warm.call(*query)
        assert got.warm and before.warm
        same(got, warm.here(*query))
    assert b'"path":"notes/d.md"' in got.out and b"notes/b.md" not in got.out


def test_a_call_in_another_locale_is_answered_in_its_own_process(warm: Warm, tmp_path: Path):
    """The warm process decodes arguments and file names with the encoding it started with:
    a call whose interpreter has another (a C locale without UTF-8 mode reads "café" as
    bytes that are not text) gets the answer of its own process, not the warm one's."""
    bundle = write(tmp_path / "b", {"a.md": "# Café\n\ncafé crème\n"})
    query = ("search", str(bundle), "-q", "café", "--json")
    warm.start(*query)
    c_locale = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    got = warm.call(*query, **c_locale)
    assert not got.warm
    same(got, warm.here(*query, **c_locale))
    assert got.code == 2  # the query is not valid text there
    assert warm.call(*query).warm and warm.call(*query).code == 0  # the others still are


def raw_call(warm: Warm, fields: list[bytes]) -> bytes:
    """Speak to the warm process directly: the request's fields, its whole reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        fd = os.open(warm.socket().parent, os.O_RDONLY | os.O_DIRECTORY)
        try:  # through the folder's descriptor: a test's path may be too long for AF_UNIX
            sock.connect(launch.through(fd, str(warm.socket().parent), warm.socket().name))
        finally:
            os.close(fd)
        sock.sendall(b"\0".join(fields) + b"\0")
        sock.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: sock.recv(1 << 16), b""))


def fields_for(warm: Warm, *args: str, fingerprint: bytes | None = None, key: str = "") -> list:
    cache = launch.GIVEN + warm.env["CITELINE_CACHE_DIR"]
    return [
        launch.MAGIC,
        launch.code_fingerprint() if fingerprint is None else fingerprint,
        os.fsencode(key or cache),
        launch.context(),
        os.fsencode(os.getcwd()),
        b"utf-8",
        b"0",
        *(a.encode() for a in args),
    ]


def test_it_answers_only_its_own_code_and_cache(warm: Warm, tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", FILES)
    warm.start("search", str(bundle), "-q", "hashtable", "--json")
    ok = raw_call(warm, fields_for(warm, "search", str(bundle), "-q", "hashtable", "--json"))
    assert launch.reply_of(ok) == (
        0,
        warm.here("search", str(bundle), "-q", "hashtable", "--json").out,
        b"",
    )
    assert raw_call(warm, [b"hello", b"there"]) == b"no protocol\n"
    for other in ("lsp", "mcp"):  # they would serve the warm process's own stdio
        assert raw_call(warm, fields_for(warm, other, str(bundle))) == b"no command\n"
    assert raw_call(warm, fields_for(warm, "search", key="dir:/elsewhere")) == b"no other\n"
    assert warm.alive()
    # Other code (an upgraded or edited citeline): it says so and leaves.
    stale = fields_for(warm, "search", str(bundle), "-q", "x", fingerprint=b"other code")
    assert raw_call(warm, stale) == b"no stale\n"
    warm.wait_gone()
    assert not warm.socket().exists()
    # The next call is answered in its own process and starts a new one.
    assert not warm.call("search", str(bundle), "-q", "hashtable").warm
    deadline = time.monotonic() + 60
    while not (warm.socket().exists() and warm.call("search", str(bundle), "-q", "x").warm):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_it_leaves_when_idle(warm: Warm, tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", FILES)
    warm.env["CITELINE_DAEMON_IDLE"] = "0.5"
    warm.start("search", str(bundle), "-q", "hashtable")
    warm.wait_gone(within=15)
    assert not warm.socket().exists() and warm.lock() is None  # it leaves nothing behind


def test_it_leaves_when_its_cache_folder_goes(warm: Warm, tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", FILES)
    warm.start("search", str(bundle), "-q", "hashtable")
    assert warm.call("search", str(bundle), "-q", "hashtable").warm
    for path in sorted(Path(warm.env["CITELINE_CACHE_DIR"]).rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() else path.rmdir()
    Path(warm.env["CITELINE_CACHE_DIR"]).rmdir()
    warm.wait_gone(within=15)


def test_one_warm_process_per_cache(warm: Warm, tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", FILES)
    warm.start("search", str(bundle), "-q", "hashtable")
    env = {**warm.env, "CITELINE_CACHE_DIR": warm.env["CITELINE_CACHE_DIR"]}
    second = subprocess.run(
        [sys.executable, "-m", "citeline.cli.daemon"], env=env, timeout=60, check=False
    )
    assert second.returncode == 0  # it found the first one there and left
    assert warm.alive() and warm.call("search", str(bundle), "-q", "hashtable").warm


@pytest.mark.parametrize(
    ("why", "args", "env"),
    [
        ("turned off", (), {"CITELINE_DAEMON": "0"}),
        ("turned off", (), {"CITELINE_DAEMON": "off"}),
        ("no cache", ("--no-cache",), {}),
    ],
)
def test_when_it_is_not_used(
    warm: Warm, tmp_path: Path, why: str, args: tuple[str, ...], env: dict[str, str]
) -> None:
    bundle = write(tmp_path / "b", FILES)
    for _ in range(3):
        got = warm.call("search", str(bundle), "-q", "hashtable", *args, **env)
        assert got.code == 0 and not got.warm, why
    time.sleep(0.5)
    assert not list(warm.runtime.glob("citeline-*/*.sock")), why


def test_a_terminal_is_answered_in_its_own_process(warm: Warm, tmp_path: Path) -> None:
    """At a terminal the output depends on it (colour, progress, a summary line)."""
    import pty

    bundle = write(tmp_path / "b", FILES)
    warm.start("search", str(bundle), "-q", "hashtable")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*CLIENT, "search", str(bundle), "-q", "hashtable"],
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**warm.env, "CITELINE_LOG": "debug"},
            timeout=60,
            check=False,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0 and MARK not in done.stderr


def test_a_sockets_folder_open_to_others_is_never_used(warm: Warm, tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", FILES)
    folder = warm.runtime / f"citeline-{os.getuid()}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    for _ in range(2):
        got = warm.call("search", str(bundle), "-q", "hashtable", "--json")
        assert got.code == 0 and not got.warm
    started = subprocess.run(
        [sys.executable, "-m", "citeline.cli.daemon"], env=warm.env, timeout=60, check=False
    )
    assert started.returncode == 1 and not list(folder.iterdir())
