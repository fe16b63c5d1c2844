"""The warm process against another user and against callers that stall (issue 31, holes 3
and 6, and the environment it keeps): the command line talks only to a warm process of its
own user, through a folder checked in a way a swap cannot beat, and says why it does not
(CITELINE_LOG=debug); a request must arrive whole in time, a caller that does not read its
answer holds no one, and a call the warm process does not take up in time is answered in
its own process. The other user is `nobody`, in a process of its own (other_user.py); the
warm process is served from a thread of the test's process, as in test_daemon_units.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write
from daemon_support import serving, socket_path
from other_user import NOBODY, needs_root, other_process, shared_folder
from waiting import within

from citeline.cli import cli, daemon, entry, launch

FILES = {"guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n"}
FORGED = b"run 0 7 0\nforged\n"


def in_process(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, bytes, bytes]:
    capfd.readouterr()
    code = cli.answer(argv)
    out, err = capfd.readouterr()
    return code, out.encode(), err.encode()


@pytest.fixture
def command(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """entry.main as a script calls it (output to pipes); the warm processes it would start."""
    started: list[str] = []
    monkeypatch.setattr(launch, "start", started.append)
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    return started


def main(argv: list[str], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]):
    monkeypatch.setattr(sys, "argv", ["citeline", *argv])
    capfd.readouterr()
    code = within(entry.main, 60)
    out, err = capfd.readouterr()
    return code, out.encode(), err.encode()


# -- whom it talks to ---------------------------------------------------------------------------

LISTENER = """
import os, socket, sys, threading
path, log, reply = sys.argv[1], sys.argv[2], sys.argv[3].encode("latin-1")
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(64)
def answer(conn):
    with conn:
        conn.settimeout(5)
        data = b""
        try:
            while chunk := conn.recv(1 << 16):
                data += chunk
        except OSError:
            pass
        if data:
            with open(log, "ab") as f:
                f.write(data)
        try:
            conn.sendall(reply)
        except OSError:
            pass
def serve():
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(conn,), daemon=True).start()
"""

ANOTHER_USER_S_SERVER = (
    LISTENER
    + """
open(log + ".ready", "w").close()
serve()
"""
)

SWAPPER = (
    LISTENER
    + """
# A folder of the attacker's holds the server's socket under the victim's socket name; the
# victim's own folder and it change places again and again in the shared folder.
shared, real = os.path.dirname(os.path.dirname(path)), sys.argv[4]
fake, hold = os.path.dirname(path), os.path.join(shared, "hold")
threading.Thread(target=serve, daemon=True).start()
open(log + ".ready", "w").close()
swaps = 0
while True:
    try:
        os.rename(real, hold)
        os.rename(fake, real)
        os.rename(real, fake)
        os.rename(hold, real)
        swaps += 1
        if swaps % 1000 == 0:
            with open(log + ".swaps", "w") as f:
                f.write(str(swaps))
    except OSError:
        pass
"""
)


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_server_of_another_user_is_never_spoken_to(
    places: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Another user's listening socket at the warm process's path (put there by root here;
    by a folder swap or a lax folder in life): nothing of the call is sent to it (working
    folder, arguments, HOME) and its answer is not printed; the call is answered here."""
    needs_root()
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    with shared_folder(0o755, NOBODY) as theirs:
        log = theirs / "log"
        with other_process(
            ANOTHER_USER_S_SERVER, str(theirs / "s"), str(log), FORGED.decode()
        ) as p:
            wait_for(log.with_suffix(".ready"), p)
            folder = Path(launch.runtime_folder())
            folder.mkdir(mode=0o700)
            os.rename(theirs / "s", socket_path())  # into the user's own private folder
            assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == "unsafe"
            monkeypatch.setenv("CITELINE_LOG", "debug")
            code, out, err = main(argv, monkeypatch, capfd)
            assert (code, out) == in_process(argv, capfd)[:2] and b"forged" not in out
            assert err.startswith(b"citeline: the warm process is off: its socket in ")
            assert f"answered by user {NOBODY}".encode() in err
            assert command == []  # nor is one started: a warm process of its own would fail
            assert not log.exists()  # it learnt nothing


def test_a_folder_swap_never_reaches_another_user(places: Path, monkeypatch: pytest.MonkeyPatch):
    """TMPDIR on a folder another user can write (not sticky): they swap the user's own
    sockets folder for one of theirs with a server in it, as fast as they can. No call
    reaches their server, whatever the moment."""
    needs_root()
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    with shared_folder(0o777, NOBODY) as shared:
        monkeypatch.delenv("XDG_RUNTIME_DIR")
        monkeypatch.setenv("TMPDIR", str(shared))
        real = Path(launch.runtime_folder())
        real.mkdir(mode=0o700)
        fake = shared / "fake"
        fake.mkdir(mode=0o700)
        os.chown(fake, NOBODY, NOBODY)
        log = shared / "log"
        args = (str(fake / launch.socket_name(launch.cache_key())), str(log), FORGED.decode())
        with other_process(SWAPPER, *args, str(real)) as p:
            swaps = log.with_suffix(".swaps")
            wait_for(swaps, p)  # it swaps
            begun, seen = swapped(swaps), []
            deadline = time.monotonic() + 120
            # As many calls as it takes for thousands of swaps to happen among them.
            while len(seen) < 400 or swapped(swaps) < begun + 2000:
                assert time.monotonic() < deadline and p.poll() is None
                seen.append(within(lambda: launch.ask(launch.cache_key(), argv), 30))
        assert set(seen) <= {"absent", "unsafe"}, [s for s in seen if isinstance(s, tuple)][:3]
        assert not log.exists()


def swapped(counter: Path) -> int:
    """How many swaps the swapper has counted (0 while it rewrites its count)."""
    try:
        return int(counter.read_text() or 0)
    except (OSError, ValueError):
        return 0


@pytest.mark.parametrize("how", ["another user's", "open to others", "a link"])
def test_a_sockets_folder_not_the_user_s_turns_the_warm_process_off_saying_why(
    places: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    how: str,
) -> None:
    bundle = write(places / "b", FILES)
    folder = Path(launch.runtime_folder())
    if how == "another user's":
        folder.mkdir(mode=0o700)
        os.chown(folder, NOBODY, NOBODY)
    elif how == "open to others":
        folder.mkdir()
        folder.chmod(0o711)
    else:
        (places / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(places / "elsewhere")
    monkeypatch.setenv("CITELINE_LOG", "debug")
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    code, out, err = main(argv, monkeypatch, capfd)
    first, _, rest = err.partition(b"\n")
    assert first.startswith(f"citeline: the warm process is off: {folder}".encode()), err
    assert (code, out, rest) == in_process(argv, capfd)
    assert command == []
    assert daemon.serve() == 1  # nor does a warm process listen there


# -- time limits ------------------------------------------------------------------------------


def connected() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.open(socket_path().parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sock.connect(f"/proc/self/fd/{fd}/{socket_path().name}")
    finally:
        os.close(fd)
    return sock


def test_a_request_that_does_not_arrive_whole_holds_no_one(
    places: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(daemon, "REQUEST_SECONDS", 1.0, raising=False)
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    with serving(), connected() as half:
        half.sendall(launch.MAGIC + b"\0")  # and no more, never ended
        assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == in_process(argv, capfd)
        half.settimeout(30)
        assert half.recv(100) == b""  # closed once its time was up, without a word


def test_a_caller_that_does_not_read_its_answer_holds_no_one(
    places: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """An answer of 5 MiB to a caller that reads none of it."""
    monkeypatch.setattr(daemon, "WRITE_SECONDS", 1.0, raising=False)
    big = b"x" * (5 << 20)
    real = daemon.run_call

    def run(argv: list[str], *args: Any) -> bytes:
        return b"run 0 %d 0\n" % len(big) + big if argv[-1] == "big" else real(argv, *args)

    monkeypatch.setattr(daemon, "run_call", run)
    gave_up = threading.Event()
    real_send = getattr(daemon, "send", None)

    def send(conn: socket.socket, data: bytes) -> None:
        try:
            real_send(conn, data)  # type: ignore[misc]
        except TimeoutError:
            gave_up.set()
            raise

    monkeypatch.setattr(daemon, "send", send, raising=False)
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    with serving(), connected() as slow:
        slow.sendall(launch.request_bytes(launch.cache_key(), ["search", "big"]))
        slow.shutdown(socket.SHUT_WR)
        assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == in_process(argv, capfd)
        assert gave_up.wait(30)
        slow.settimeout(30)
        got = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := slow.recv(1 << 20):
                got += chunk
        assert 0 < len(got) < len(big)  # cut off once its time was up


def test_a_call_that_would_wait_long_for_another_is_answered_here(
    places: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(daemon, "BUSY_SECONDS", 0.2, raising=False)
    running, release = threading.Event(), threading.Event()
    real = daemon.run_call

    def run(argv: list[str], *args: Any) -> bytes:
        if argv[-1] != "slow":
            return real(argv, *args)
        running.set()
        release.wait(60)
        return b"run 0 0 0\n"

    monkeypatch.setattr(daemon, "run_call", run)
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    with serving():
        first: list[Any] = []
        slow = threading.Thread(
            target=lambda: first.append(launch.ask(launch.cache_key(), ["search", "slow"]))
        )
        slow.start()
        try:
            assert running.wait(30), first
            assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == "busy"
            assert main(argv, monkeypatch, capfd) == in_process(argv, capfd)
            assert command == []  # one is there: none started
        finally:
            release.set()
            slow.join(30)
        assert first == [(0, b"", b"")]  # the slow call had its answer all the same


def test_connections_beyond_the_bound_are_told_at_once(
    places: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon, "MOST_CALLS", 2, raising=False)
    monkeypatch.setattr(daemon, "REQUEST_SECONDS", 60.0, raising=False)
    with serving():
        stalled = [connected(), connected()]
        try:
            argv = ["search", ".", "-q", "x"]
            assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == "busy"
        finally:
            for sock in stalled:
                sock.close()


@pytest.mark.parametrize("accepts", [False, True])
def test_a_warm_process_that_says_nothing_is_not_waited_for(
    places: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    accepts: bool,
) -> None:
    """Stopped (SIGSTOP), stuck, or too slow to take the call up: answered here."""
    monkeypatch.setattr(launch, "START_WAIT", 0.5, raising=False)
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    Path(launch.runtime_folder()).mkdir(mode=0o700)
    held: list[socket.socket] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(socket_path()))
        listener.listen(8)
        if accepts:  # takes the connection, reads the request, says nothing
            threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
        try:
            assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == "silent"
            assert main(argv, monkeypatch, capfd) == in_process(argv, capfd)
            assert command == []
        finally:
            for sock in held:
                sock.close()


# -- the cache folder, and the environment it keeps -----------------------------------------------


def test_no_warm_process_for_a_cache_folder_that_is_not_the_user_s(
    places: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """It would refuse the cache too: the calls are answered in their own process, with the
    warning, and none starts one; one that runs leaves at the first call that finds it so."""
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    with serving() as thread:
        assert isinstance(within(lambda: launch.ask(launch.cache_key(), argv), 30), tuple)
        (places / "cache").chmod(0o777)
        assert within(lambda: launch.ask(launch.cache_key(), argv), 30) == "cache"
        thread.join(30)
        assert not thread.is_alive()
    caplog.clear()
    code, out, _ = main(argv, monkeypatch, capfd)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "citeline.cache"]
    assert str(places / "cache") in warning  # the one warning (on stderr outside pytest)
    assert (code, out) == in_process(argv, capfd)[:2]
    assert command == []
    monkeypatch.setenv("CITELINE_DAEMON_IDLE", "0.2")
    assert daemon.serve() == 1 and not socket_path().exists()


def test_the_warm_process_keeps_only_what_names_its_cache_and_sockets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not the first caller's secrets, nor what would change a later call's answer (those
    travel with each call)."""
    started: list[dict[str, str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **kw: started.append(kw["env"]))
    kept = {
        "HOME": "/home/a",
        "XDG_CACHE_HOME": "/home/a/.cache",
        "XDG_RUNTIME_DIR": "/run/user/1",
        "TMPDIR": "/tmp/a",
        "LANG": "C.UTF-8",
        "CITELINE_DAEMON_IDLE": "30",
    }
    dropped = {
        "AWS_SECRET_ACCESS_KEY": "hush",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "COLUMNS": "50",
        "CITELINE_LOG": "debug",
        "PYTHONWARNINGS": "error",
        "PYTHONSTARTUP": "/home/a/evil.py",
    }
    for name, value in {**kept, **dropped}.items():
        monkeypatch.setenv(name, value)
    launch.start("dir:/abs/cache")
    (env,) = started
    assert {k: env[k] for k in kept} == kept and env["CITELINE_CACHE_DIR"] == "/abs/cache"
    assert not set(dropped) & set(env)
