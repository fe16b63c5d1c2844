"""The warm process's pieces in the test's own process: the launcher's choices and its
round trip with a warm process served from a thread (test_daemon.py runs the real
processes; these reach every branch quickly, and mutation testing sees them)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bundles import write_bundle as write
from daemon_support import serving, socket_path

from citeline.cli import cli, daemon, entry, launch

FILES = {
    "guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys to values.\n",
}


@pytest.fixture
def served(places: Path) -> Iterator[threading.Thread]:
    with serving() as thread:
        yield thread


def in_process(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, bytes, bytes]:
    try:
        code = cli.answer(argv)
    except SystemExit as leave:  # --help, as a process leaves
        code = daemon.exit_code(leave)
    out, err = capfd.readouterr()
    return code, out.encode(), err.encode()


def test_round_trip_gives_the_call_s_own_answer(
    served: threading.Thread, places: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bundle = write(places / "b", FILES)
    for argv in (
        ["search", str(bundle), "-q", "ordered hashtable", "--json"],
        ["search", str(bundle), "-q", "ordered hashtable"],
        ["search", str(bundle), "-q", "nothing"],
        ["lines", str(bundle), "-F", "hashtable"],
        ["search", str(places / "missing"), "-q", "x", "--json"],
        ["search", "--bogus"],
    ):
        got = launch.ask(launch.cache_key(), argv)
        assert got == in_process(argv, capfd), argv
    assert {launch.ask(launch.cache_key(), a)[0] for a in (["search", "--bogus"],)} == {2}


def test_the_default_cache_folder_s_warm_process(
    places: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without CITELINE_CACHE_DIR the key is made of HOME and XDG_CACHE_HOME, and still
    travels in the request (a NUL in it once split it in two)."""
    monkeypatch.delenv("CITELINE_CACHE_DIR")
    monkeypatch.setenv("HOME", str(places / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(places / "xdg"))
    assert "\0" not in launch.cache_key()
    with serving():
        bundle = write(places / "b", FILES)
        argv = ["search", str(bundle), "-q", "hashtable", "--json"]
        assert launch.ask(launch.cache_key(), argv) == in_process(argv, capfd)
        assert (places / "xdg" / "citeline").is_dir()  # the engine's own default folder


def test_the_caller_s_environment_is_the_call_s(
    served: threading.Thread,
    places: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    narrow = launch.ask(launch.cache_key(), ["search", "--help"])
    assert narrow == in_process(["search", "--help"], capfd)
    assert os.environ["COLUMNS"] == "50"  # left as it was
    monkeypatch.delenv("COLUMNS")
    wide = launch.ask(launch.cache_key(), ["search", "--help"])
    assert isinstance(wide, tuple) and isinstance(narrow, tuple) and wide[1] != narrow[1]
    assert "COLUMNS" not in os.environ


def test_the_launcher_prints_the_answer(
    served: threading.Thread,
    places: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    monkeypatch.setattr(sys, "argv", ["citeline", *argv])
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("CITELINE_LOG", "debug")
    assert entry.main() == 0
    out, err = capfd.readouterr()
    assert err == launch_mark()
    assert (0, out.encode(), b"") == in_process(argv, capfd)


def launch_mark() -> str:
    return "citeline: answered by the warm process (CITELINE_DAEMON=0 turns it off)\n"


def test_without_a_warm_process_the_call_is_answered_here_and_starts_one(
    places: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write(places / "b", FILES)
    started: list[str] = []
    monkeypatch.setattr(launch, "start", started.append)
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    monkeypatch.setattr(sys, "argv", ["citeline", *argv])
    assert entry.main() == 0
    out, err = capfd.readouterr()
    assert started == [launch.cache_key()] and err == ""
    assert (0, out.encode(), b"") == in_process(argv, capfd)
    # Not for a terminal, nor with the warm process off: answered here, nothing started.
    monkeypatch.setattr(os, "isatty", lambda fd: fd == 2)
    assert entry.main() == 0
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("CITELINE_DAEMON", "0")
    assert entry.main() == 0
    assert started == [launch.cache_key()]


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["search", "b", "-q", "x"], {}, True),
        (["lines", "b", "-F", "x"], {}, True),
        (["concepts", "b", "-q", "x"], {}, True),
        (["lsp"], {}, False),
        (["mcp", "b"], {}, False),
        ([], {}, False),
        (["--version"], {}, False),
        (["search", "b", "-q", "x", "--no-cache"], {}, False),
        (["search", "b", "-q", "x"], {"CITELINE_DAEMON": "0"}, False),
        (["search", "b", "-q", "x"], {"CITELINE_DAEMON": " Off "}, False),
        (["search", "b", "-q", "x"], {"CITELINE_DAEMON": "false"}, False),
        (["search", "b", "-q", "x"], {"CITELINE_DAEMON": "no"}, False),
        (["search", "b", "-q", "x"], {"CITELINE_DAEMON": "1"}, True),
        # a model of the call's own: its own process, which has the call's environment
        (["search", "b", "-q", "x", "--embedding-folder", "m"], {}, False),
        (["lines", "b", "--semantic", "x", "--embedding-endpoint=http://h/v1"], {}, False),
        (["search", "b", "-q", "x"], {"CITELINE_EMBEDDING_URL": "http://h/v1"}, False),
        (["search", "b", "-q", "x"], {"CITELINE_EMBEDDING_FOLDER": ""}, True),
    ],
)
def test_which_calls_go_to_the_warm_process(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str], expected: bool
) -> None:
    monkeypatch.delenv("CITELINE_DAEMON", raising=False)
    for key in [k for k in os.environ if k.startswith("CITELINE_EMBEDDING_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    assert entry.eligible(argv) is expected
    for tty in (1, 2):
        monkeypatch.setattr(os, "isatty", lambda fd, tty=tty: fd == tty)
        assert entry.eligible(argv) is False
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    # the platform's capabilities decide, not its name (test_daemon_platforms.py): macOS
    # has what it takes, Windows has not
    monkeypatch.setattr(sys, "platform", "darwin")
    assert entry.eligible(argv) is expected
    monkeypatch.setattr(sys, "platform", "win32")
    assert entry.eligible(argv) is False


def test_why_there_is_no_answer(places: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = launch.cache_key()
    assert launch.ask(key, ["search"]) == "absent"  # no sockets folder yet
    folder = Path(launch.runtime_folder())
    folder.mkdir(mode=0o700)
    assert launch.ask(key, ["search"]) == "absent"  # nothing listens
    folder.chmod(0o755)
    assert launch.ask(key, ["search"]) == "unsafe"
    folder.chmod(0o700)
    # Something that listens and says nothing useful.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(folder / launch.socket_name(key)))
        listener.listen(1)

        def answer_once(reply: bytes) -> threading.Thread:
            def serve() -> None:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(1 << 16)
                    conn.sendall(reply)

            thread = threading.Thread(target=serve)
            thread.start()
            return thread

        for reply, why in ((b"no other\n", "other"), (b"run 0 5 0\nabc", "broken")):
            thread = answer_once(reply)
            assert launch.ask(key, ["search"]) == why
            thread.join()
    monkeypatch.setattr(os, "getcwd", lambda: (_ for _ in ()).throw(FileNotFoundError()))
    assert launch.ask(key, ["search"]) == "unknown"


def private(folder: Path) -> bool:
    fd, why = launch.open_private(str(folder))
    if fd is not None:
        os.close(fd)
    assert (fd is None) == bool(why)
    return fd is not None


def test_private_folders_only(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    assert private(mine)
    for mode in (0o750, 0o705, 0o722, 0o710, 0o701):
        mine.chmod(mode)
        assert not private(mine), oct(mode)
    mine.chmod(0o700)
    if os.geteuid() == 0:  # another user's folder (the tests run as root)
        os.chown(mine, 65534, 65534)
        assert not private(mine)
        os.chown(mine, 0, 0)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert not private(link)
    (tmp_path / "file").write_text("x")
    (tmp_path / "file").chmod(0o600)
    assert not private(tmp_path / "file")
    assert not private(tmp_path / "absent")


def test_the_fingerprint_follows_citeline_s_files(monkeypatch: pytest.MonkeyPatch) -> None:
    before = launch.code_fingerprint()
    names = before.decode().split("\n")
    assert names[:2] == [sys.executable, sys.version]
    assert any(n.startswith("cli/daemon.py:") for n in names)
    assert any(n.startswith("engine/store/store.py:") for n in names)
    assert any(n.startswith("engine/contracts/") and ".json:" in n for n in names)
    monkeypatch.setattr(sys, "executable", "/elsewhere/python")
    assert launch.code_fingerprint() != before


def test_kept_engines_are_bounded_and_reused(places: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engines = daemon.KeptEngines()
    args = cli.parser().parse_args(["search", "x", "-q", "y"])
    settings = cli.settings_from(args)
    bundles = [write(places / f"b{i}", FILES) for i in range(daemon.KEPT + 1)]
    first = engines.open(str(bundles[0]), settings, args)
    assert engines.open(str(bundles[0]), settings, args) is first
    for bundle in bundles[1:]:
        engines.open(str(bundle), settings, args)
    assert len(engines._engines) == daemon.KEPT
    assert engines.open(str(bundles[0]), settings, args) is not first  # the oldest went
    reread = cli.parser().parse_args(["search", "x", "-q", "y", "--reread"])
    assert engines.open(str(bundles[0]), settings, reread).reread is True
    engines.close()
    assert not engines._engines


def test_a_second_warm_process_for_the_same_cache_leaves(
    served: threading.Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon, "LOCK_WAIT", 0.2)
    assert daemon.serve() == 0
    assert served.is_alive()


def test_it_leaves_when_idle(places: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITELINE_DAEMON_IDLE", "0.2")
    started = time.monotonic()
    assert daemon.serve() == 0
    assert time.monotonic() - started < 10
    assert not socket_path().exists()


@pytest.mark.parametrize(("value", "seconds"), [("5", 5.0), ("0", 0.1), ("soon", 600.0)])
def test_idle_seconds(monkeypatch: pytest.MonkeyPatch, value: str, seconds: float) -> None:
    monkeypatch.setenv("CITELINE_DAEMON_IDLE", value)
    assert daemon.idle_seconds() == seconds


def test_no_cache_folder_no_warm_process(places: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(places / "never-made"))
    assert daemon.serve() == 0
    assert not Path(launch.runtime_folder()).exists()


# -- the protocol, one call at a time (daemon.handle over a socket pair) -------------------------

FP = b"this code"
KEY = b"dir:/the/cache"


def request(
    *argv: str,
    fingerprint: bytes = FP,
    key: bytes = KEY,
    cwd: str | None = None,
    encoding: bytes = b"utf-8",
    env: tuple[str, ...] = (),
    context: bytes | None = None,
) -> list[bytes]:
    return [
        launch.MAGIC,
        fingerprint,
        key,
        launch.context() if context is None else context,
        os.fsencode(cwd or os.getcwd()),
        encoding,
        b"%d" % len(env),
        *(e.encode() for e in env),
        *(a.encode() for a in argv),
    ]


def handled(
    fields: list[bytes], engines: daemon.KeptEngines | None = None, end: bytes = b"\0"
) -> tuple[bool, bytes]:
    """daemon.handle of one request: whether to go on, and the whole reply."""
    ours, theirs = socket.socketpair()
    with theirs:
        with ours:
            theirs.sendall(b"\0".join(fields) + end)
            theirs.shutdown(socket.SHUT_WR)
            keep = daemon.handle(ours, FP, KEY, engines or daemon.KeptEngines())
        try:
            return keep, b"".join(iter(lambda: theirs.recv(1 << 16), b""))
        except ConnectionResetError:  # closed with the request unread
            return keep, b""


def test_requests_it_cannot_answer(tmp_path: Path) -> None:
    bundle = str(tmp_path)
    cases = [
        ([b"hello", b"there"], b"\0", (True, b"no protocol\n")),
        (request("search")[:-1], b"\0", (True, b"no protocol\n")),  # too short
        (request("search", bundle, "-q"), b"", (True, b"no protocol\n")),  # not ended
        ([b"other", *request("search", bundle, "-q")[1:]], b"\0", (True, b"no protocol\n")),
        (request("search", bundle, fingerprint=b"other code"), b"\0", (False, b"no stale\n")),
        (request("search", bundle, key=b"dir:/elsewhere"), b"\0", (True, b"no other\n")),
        (request("search", bundle, context=b"ascii"), b"\0", (True, b"no context\n")),
        (request("lsp", bundle), b"\0", (True, b"no command\n")),
        (request("mcp", bundle), b"\0", (True, b"no command\n")),
        (request(env=("COLUMNS=80",)), b"\0", (True, b"no command\n")),  # no arguments
        (request("search", cwd=str(tmp_path / "gone")), b"\0", (True, b"no cwd\n")),
    ]
    for fields, end, expected in cases:
        assert handled(fields, end=end) == expected, fields
    count = request("search", bundle, "-q", "x")
    for bad in (b"x", b"-1", b"3", b"9"):  # not a count, or more than there can be
        count[6] = bad
        assert handled(count) == (True, b"no protocol\n"), bad


def test_a_caller_of_another_user_gets_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "peer_uid", lambda conn: os.getuid() + 1)
    assert handled(request("search", "-q", "x")) == (True, b"")
    monkeypatch.undo()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert daemon.peer_uid(ours) == os.getuid()


def test_a_call_is_answered_with_the_kept_engines(
    places: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bundle = write(places / "b", FILES)
    argv = ["search", str(bundle), "-q", "hashtable", "--json"]
    engines = daemon.KeptEngines()
    try:
        for _ in range(2):
            keep, reply = handled(request(*argv, env=("COLUMNS=70", "CITELINE_LOG=x")), engines)
            assert keep and launch.reply_of(reply) == in_process(argv, capfd)
            assert len(engines._engines) == 1  # made once, then kept
    finally:
        engines.close()


def test_the_call_s_environment_and_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], str, dict[str, str]]] = []

    def record(argv: list[str], encoding: str, env: dict[str, str], engines: object) -> bytes:
        calls.append((argv, encoding, env))
        return b"run 0 0 0\n"

    monkeypatch.setattr(daemon, "run_call", record)
    env = ("CITELINE_LOG=a=b", "COLUMNS=70")
    assert handled(request("search", "-q", "x", env=env, encoding=b"utf-\xff")) == (
        True,
        b"go\nrun 0 0 0\n",  # taken up, then answered
    )
    assert calls == [
        (["search", "-q", "x"], "utf-\ufffd", {"CITELINE_LOG": "a=b", "COLUMNS": "70"})
    ]


def test_run_call_reports_what_the_call_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    def writes(argv: list[str], engines: object) -> int:
        sys.stdout.write("out é \udcff")
        sys.stderr.write("err é")
        if argv:
            raise SystemExit(argv[0] if argv[0] != "none" else None)
        return 4

    monkeypatch.setattr(cli, "answer", writes)
    engines = daemon.KeptEngines()
    assert launch.reply_of(daemon.run_call([], "ascii", {}, engines)) == (
        4,
        "out é \\udcff".encode(),
        b"err \\xe9",
    )
    for code, expected in (("none", 0), ("bye", 1)):
        got = launch.reply_of(daemon.run_call([code], "no-such-codec", {}, engines))
        assert isinstance(got, tuple) and got[0] == expected and got[2] == "err é".encode()
    monkeypatch.setattr(cli, "answer", lambda argv, engines: (_ for _ in ()).throw(SystemExit(3)))
    assert launch.reply_of(daemon.run_call([], "utf-8", {}, engines)) == (3, b"", b"")


def test_the_environment_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "90")
    monkeypatch.delenv("CITELINE_LOG", raising=False)
    with daemon.environment({"CITELINE_LOG": "debug", "COLUMNS": None}):
        assert os.environ["CITELINE_LOG"] == "debug" and "COLUMNS" not in os.environ
    assert os.environ["COLUMNS"] == "90" and "CITELINE_LOG" not in os.environ


class Chunks:
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)

    def recv(self, _size: int) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


def test_a_request_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "MAX_REQUEST", 10)
    assert daemon.read_request(Chunks(b"12345", b"67890")) == b"1234567890"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="too large"):
        daemon.read_request(Chunks(b"123456", b"78901"))  # type: ignore[arg-type]


def test_a_lock_file_replaced_while_waiting_is_taken_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "x.lock")
    held = daemon.take_lock(path)
    assert held is not None and not os.stat(path).st_mode & 0o077
    monkeypatch.setattr(daemon, "LOCK_WAIT", 0.3)
    assert daemon.take_lock(path) is None  # held by another
    # The holder leaves (removes the file, then lets go): the next process must lock the
    # file now at the path, not the removed one.
    os.unlink(path)
    taken = daemon.take_lock(path)
    assert taken is not None
    assert os.fstat(taken).st_ino == os.stat(path).st_ino != os.fstat(held).st_ino
    os.close(held)
    os.close(taken)


def test_still_ours(tmp_path: Path) -> None:
    sock = tmp_path / "s"
    sock.write_text("")
    inode = sock.stat().st_ino
    assert daemon.still_ours(str(sock), inode, "default:x")
    assert daemon.still_ours(str(sock), inode, f"dir:{tmp_path}")
    assert not daemon.still_ours(str(sock), inode, f"dir:{tmp_path / 'gone'}")
    assert not daemon.still_ours(str(sock), inode + 1, "default:x")
    sock.unlink()
    assert not daemon.still_ours(str(sock), inode, "default:x")


def test_what_a_warm_process_keeps_in_its_folder(places: Path) -> None:
    """Its socket and its lock, user-only, while it lives; nothing once it has left."""
    seen: list[list[str]] = []
    modes: list[int] = []

    def look() -> None:
        while not socket_path().exists():
            time.sleep(0.01)
        folder = socket_path().parent
        seen.append(sorted(p.name for p in folder.iterdir()))
        modes.extend(p.stat().st_mode & 0o077 for p in (*folder.iterdir(), folder))
        socket_path().unlink()

    looking = threading.Thread(target=look)
    looking.start()
    assert daemon.serve() == 0
    looking.join()
    name = socket_path().name
    assert seen == [sorted([name, name.replace(".sock", ".lock")])] and not any(modes)
    assert not list(socket_path().parent.iterdir())
    assert not (Path.cwd() / name.replace(".sock", ".lock")).exists()  # made where it belongs


def test_a_warm_process_told_of_other_code_leaves(served: threading.Thread, places: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(socket_path()))
        sock.sendall(b"\0".join(request("search", fingerprint=b"other")) + b"\0")
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(100) == b"no stale\n"
    served.join(30)
    assert not served.is_alive() and not socket_path().exists()


def test_a_sockets_folder_open_to_others_is_refused(places: Path) -> None:
    Path(launch.runtime_folder()).mkdir(mode=0o755)
    Path(launch.runtime_folder()).chmod(0o755)
    assert daemon.serve() == 1
    assert not list(Path(launch.runtime_folder()).iterdir())


def test_kept_engines_are_made_as_a_call_s_own(places: Path) -> None:
    from citeline.engine.index.parallel import default_workers

    engines = daemon.KeptEngines()
    args = cli.parser().parse_args(["search", "x", "-q", "y", "--max-files", "7"])
    settings = cli.settings_from(args)
    engine = engines.open(str(places), settings, args)
    try:
        assert engine.settings is settings and engine.settings.limits.max_files == 7
        assert engine.workers.count == default_workers() and engine.reread is False
        assert engine.reuse.store.folder == os.environ["CITELINE_CACHE_DIR"]
        assert engine.reuse.held.max_bytes == 0
        assert engine.reuse.store.enabled
    finally:
        engines.close()
    assert engine.reuse.store._db is None


# -- the launcher's own choices ---------------------------------------------------------------


@pytest.fixture
def quiet_start(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []
    monkeypatch.setattr(launch, "start", started.append)
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("CITELINE_DAEMON", "1")
    return started


@pytest.mark.parametrize("why", ["absent", "stale"])
def test_a_warm_process_is_started_when_none_answers(
    places: Path,
    quiet_start: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    why: str,
) -> None:
    monkeypatch.setattr(launch, "ask", lambda key, argv: why)
    monkeypatch.setattr(sys, "argv", ["citeline", "search", str(places), "-q", "x"])
    assert entry.main() == 1  # answered here: nothing matched
    assert quiet_start == [launch.cache_key()]
    for other in ("other", "broken", "unsafe", "cwd"):
        monkeypatch.setattr(launch, "ask", lambda key, argv, other=other: other)
        assert entry.main() == 1
    assert quiet_start == [launch.cache_key()]
    # Not for a cache folder that is not there (the call could not make it) ...
    monkeypatch.setattr(launch, "ask", lambda key, argv: why)
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(places / "not-made"))
    monkeypatch.setattr(cli, "main", lambda argv: 0)
    assert entry.main() == 0 and len(quiet_start) == 1
    # ... but for the default folder, whatever it is.
    monkeypatch.delenv("CITELINE_CACHE_DIR")
    assert entry.main() == 0 and quiet_start[1].startswith("default:")
    capfd.readouterr()


def test_ctrl_c_while_waiting(
    quiet_start: list[str], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def interrupted(key: str, argv: list[str]) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(launch, "ask", interrupted)
    monkeypatch.setattr(sys, "argv", ["citeline", "search", ".", "-q", "x", "--json"])
    assert entry.main() == 130
    out, err = capfd.readouterr()
    assert '"code":"cancelled"' in out and err == ""
    monkeypatch.setattr(sys, "argv", ["citeline", "search", ".", "-q", "x"])
    assert entry.main() == 130
    out, err = capfd.readouterr()
    assert out == "" and err.startswith("citeline: cancelled:")
    assert quiet_start == []


def test_the_answer_is_written_as_given(
    quiet_start: list[str], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(launch, "ask", lambda key, argv: (5, b"out\n", b"err\n"))
    monkeypatch.setattr(sys, "argv", ["citeline", "search", ".", "-q", "x"])
    monkeypatch.delenv("CITELINE_LOG", raising=False)
    assert entry.main() == 5
    assert capfd.readouterr() == ("out\n", "err\n")
    monkeypatch.setenv("CITELINE_LOG", " Debug ")
    assert entry.main() == 5
    assert capfd.readouterr() == ("out\n", "err\n" + launch_mark())

    def broken(fd: int, data: bytes) -> None:
        raise BrokenPipeError

    monkeypatch.setattr(launch, "write_all", broken)
    assert entry.main() == 0  # piped into `head`: quietly, as the CLI does
    assert quiet_start == []


def test_a_long_answer_arrives_whole(places: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = Path(launch.runtime_folder())
    folder.mkdir(mode=0o700)
    key = launch.cache_key()
    body = bytes(range(256)) * (3 * 4096)  # 3 MiB: several reads
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(folder / launch.socket_name(key)))
        listener.listen(1)

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(1 << 16)
                conn.sendall(b"run 0 %d 0\n" % len(body) + body)

        thread = threading.Thread(target=serve)
        thread.start()
        assert launch.ask(key, ["search"]) == (0, body, b"")
        thread.join()


def test_the_fingerprint_does_not_depend_on_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = launch.code_fingerprint()
    monkeypatch.chdir(tmp_path)
    assert launch.code_fingerprint() == here


def test_sockets_are_reached_through_the_folder_s_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the folder's path leads to later, and however long it is (AF_UNIX holds 108
    bytes); without /proc, the path."""
    for folder in (tmp_path / "short", tmp_path / ("d" * 120)):
        folder.mkdir(mode=0o700)
        fd, why = launch.open_private(str(folder))
        assert fd is not None and why == ""
        try:
            path = launch.through(fd, str(folder), "s.sock")
            assert path == f"/proc/self/fd/{fd}/s.sock"
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(path)
                assert (folder / "s.sock").exists()
                listener.listen(1)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as caller:
                    caller.connect(path)
            monkeypatch.setattr(os.path, "isdir", lambda p: False)
            assert launch.through(fd, str(folder), "s.sock") == str(folder / "s.sock")
            monkeypatch.undo()
        finally:
            os.close(fd)


def test_replies_that_are_cut_or_garbled_are_not_trusted() -> None:
    assert launch.reply_of(b"run 0 3 2\nabcde") == (0, b"abc", b"de")
    assert launch.reply_of(b"run 1 0 0\n") == (1, b"", b"")
    assert launch.reply_of(b"run 0 3 2\nabcd") == "broken"  # it ended mid-answer
    assert launch.reply_of(b"run 0 x 2\nabcd") == "broken"
    assert launch.reply_of(b"") == "broken"
    assert launch.reply_of(b"no stale\n") == "stale"
    assert launch.reply_of(b"no \xff\n") == "\ufffd"
    assert launch.reply_of(b"run 0\n") == "broken"  # two words, not a refusal
    assert launch.reply_of(b"run x 0 0\n") == "broken"
    assert launch.reply_of(b"ran 0 0 0\n") == "broken"


def test_where_the_socket_lives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", "rel/cache")
    monkeypatch.chdir(tmp_path)
    assert launch.cache_key() == f"dir:{tmp_path}/rel/cache"  # absolute: the process is in /
    monkeypatch.delenv("CITELINE_CACHE_DIR")
    monkeypatch.setenv("HOME", "/home/a")
    monkeypatch.setenv("XDG_CACHE_HOME", "/x")
    one = launch.cache_key()
    monkeypatch.setenv("XDG_CACHE_HOME", "/y")
    assert launch.cache_key() != one
    monkeypatch.setenv("HOME", "/home/a/y")
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert launch.cache_key() != one.replace("/x", "/y")  # not the same pair run together
    assert launch.socket_name(one) == launch.socket_name(one)
    assert launch.socket_name(one) != launch.socket_name(launch.cache_key())
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    run.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    monkeypatch.setenv("TMPDIR", str(tmp))
    assert launch.runtime_folder() == f"{run}/citeline-{os.getuid()}"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "stale"))  # not a folder
    assert launch.runtime_folder() == f"{tmp}/citeline-{os.getuid()}"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert launch.runtime_folder() == f"{tmp}/citeline-{os.getuid()}"
    monkeypatch.setenv("TMPDIR", str(tmp_path / "stale"))
    assert launch.runtime_folder() == f"/tmp/citeline-{os.getuid()}"


def test_a_call_sees_the_caller_s_environment_not_the_process_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str | None, str | None]] = []

    def look(argv: list[str], engines: object) -> int:
        seen.append((os.environ.get("COLUMNS"), os.environ.get("CITELINE_LOG")))
        return 0

    monkeypatch.setattr(cli, "answer", look)
    monkeypatch.setenv("COLUMNS", "50")
    monkeypatch.setenv("CITELINE_LOG", "info")
    daemon.run_call([], "utf-8", {"CITELINE_LOG": "debug"}, daemon.KeptEngines())
    assert seen == [(None, "debug")]
    assert (os.environ["COLUMNS"], os.environ["CITELINE_LOG"]) == ("50", "info")


# -- what mutation testing showed untested ------------------------------------------------------


def test_how_a_warm_process_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    started: list[tuple[list[str], dict[str, object]]] = []

    def popen(argv: list[str], **kwargs: object) -> None:
        started.append((argv, kwargs))

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setenv("CITELINE_CACHE_DIR", "relative")
    launch.start("dir:/abs/cache")
    launch.start("default:3:/hx")
    (argv, first), (_, second) = started
    assert argv == [sys.executable, "-m", "citeline.cli.daemon"]
    devnull = subprocess.DEVNULL
    assert {k: first[k] for k in ("stdin", "stdout", "stderr", "cwd", "start_new_session")} == {
        "stdin": devnull,
        "stdout": devnull,
        "stderr": devnull,
        "cwd": "/",
        "start_new_session": True,
    }
    env = first["env"]
    assert isinstance(env, dict) and env["CITELINE_CACHE_DIR"] == "/abs/cache"
    kept = {k: os.environ[k] for k in launch.KEPT if k in os.environ}
    assert env == kept | {"CITELINE_CACHE_DIR": "/abs/cache"}
    assert second["env"] == kept  # the default folder: the caller's variables that name it

    def refused(argv: list[str], **kwargs: object) -> None:
        raise PermissionError("no")

    monkeypatch.setattr(subprocess, "Popen", refused)
    launch.start("dir:/abs/cache")  # the next call is answered in its own process


def test_keys_and_folders_without_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CITELINE_CACHE_DIR", "HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TMPDIR"):
        monkeypatch.delenv(name, raising=False)
    assert launch.cache_key() == "default:0:"
    assert launch.runtime_folder() == f"/tmp/citeline-{os.getuid()}"
    monkeypatch.setenv("HOME", "/h1")
    one = launch.cache_key()
    monkeypatch.setenv("HOME", "/h2")
    assert launch.cache_key() != one


def test_the_request_names_stderr_s_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))
    assert launch.request_bytes("k", ["search"]).split(b"\0")[5] == b"latin-1"
    monkeypatch.setattr(sys, "stderr", None)
    assert launch.request_bytes("k", ["search"]).split(b"\0")[5] == b"utf-8"


def test_the_folder_s_descriptor(tmp_path: Path) -> None:
    import fcntl

    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    fd, _ = launch.open_private(str(folder))
    assert fd is not None
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC  # not left to children
        assert os.path.samefile(f"/proc/self/fd/{fd}", folder)
    finally:
        os.close(fd)
    (tmp_path / "file").write_text("not a folder")
    fd, why = launch.open_private(str(tmp_path / "file"))
    assert fd is None and why.startswith(f"{tmp_path / 'file'} is not a folder of yours")
    assert launch.open_private(str(tmp_path / "absent")) == (None, "absent")


def test_a_warm_process_that_hangs_up_is_broken(places: Path) -> None:
    folder = Path(launch.runtime_folder())
    folder.mkdir(mode=0o700)
    key = launch.cache_key()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(folder / launch.socket_name(key)))
        listener.listen(1)

        def hang_up() -> None:
            conn, _ = listener.accept()
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
            conn.close()  # a reset, as a process that died mid-call

        thread = threading.Thread(target=hang_up)
        thread.start()
        assert launch.ask(key, ["search", "-q", "x" * 100_000]) == "broken"
        thread.join()


def test_a_lock_let_go_while_waiting_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    path = str(tmp_path / "x.lock")
    held = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    threading.Timer(0.2, lambda: os.close(held)).start()
    started = time.monotonic()
    taken = daemon.take_lock(path)
    assert taken is not None and time.monotonic() - started < 1.0
    os.close(taken)


def test_a_lock_file_removed_between_lock_and_check_is_taken_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "x.lock")
    real_stat = os.stat
    calls: list[str] = []

    def gone_once(p: str, *args: object, **kwargs: object) -> os.stat_result:
        if p == path and not calls:
            calls.append(p)
            raise FileNotFoundError(p)
        return real_stat(p, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", gone_once)
    taken = daemon.take_lock(path)
    monkeypatch.undo()
    assert taken is not None and calls == [path]
    assert os.fstat(taken).st_ino == os.stat(path).st_ino
    os.close(taken)


def test_a_lock_path_that_is_a_link_is_refused(places: Path, tmp_path: Path) -> None:
    folder = Path(launch.runtime_folder())
    folder.mkdir(mode=0o700)
    lock = folder / launch.socket_name(launch.cache_key()).replace(".sock", ".lock")
    lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        daemon.take_lock(str(lock))
    assert daemon.serve() == 1
    assert not (tmp_path / "elsewhere").exists()


def test_the_served_calls_use_the_kept_engines(
    places: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    made: list[daemon.KeptEngines] = []

    class Recorded(daemon.KeptEngines):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(daemon, "KeptEngines", Recorded)
    bundle = write(places / "b", FILES)
    opened: list[int] = []
    with serving():
        argv = ["search", str(bundle), "-q", "hashtable", "--json"]
        assert launch.ask(launch.cache_key(), argv) == in_process(argv, capfd)
        (engines,) = made
        opened.append(len(engines._engines))
    assert opened == [1] and not engines._engines  # kept while it lived, closed as it left


def test_a_lock_file_removed_by_someone_else_does_not_stop_the_leaving(places: Path) -> None:
    result: list[int] = []

    def remove_both() -> None:
        while not socket_path().exists():
            time.sleep(0.01)
        socket_path().with_suffix(".lock").unlink()
        socket_path().unlink()

    remover = threading.Thread(target=remove_both)
    remover.start()
    result.append(daemon.serve())
    remover.join()
    assert result == [0]
