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

from citeline.lsp import cli, daemon, launch

FILES = {
    "guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys to values.\n",
}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder and a sockets folder of the test's own; the warm process on."""
    (tmp_path / "run").mkdir()
    (tmp_path / "cache").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CITELINE_DAEMON", "1")
    monkeypatch.delenv("CITELINE_LOG", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(daemon, "TICK", 0.05)
    return tmp_path


def socket_path() -> Path:
    return Path(launch.runtime_folder()) / launch.socket_name(launch.cache_key())


@pytest.fixture
def served(places: Path) -> Iterator[threading.Thread]:
    """daemon.serve in a thread, until its socket is removed."""
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(daemon.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not socket_path().exists():
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.01)
    yield thread
    if socket_path().exists():
        socket_path().unlink()
    thread.join(30)
    assert not thread.is_alive() and done == [0]


def in_process(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, bytes, bytes]:
    try:
        code = cli.answer(argv)
    except SystemExit as leave:  # --help, as a process leaves
        code = int(leave.code or 0)
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
    assert launch.main() == 0
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
    assert launch.main() == 0
    out, err = capfd.readouterr()
    assert started == [launch.cache_key()] and err == ""
    assert (0, out.encode(), b"") == in_process(argv, capfd)
    # Not for a terminal, nor with the warm process off: answered here, nothing started.
    monkeypatch.setattr(os, "isatty", lambda fd: fd == 2)
    assert launch.main() == 0
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("CITELINE_DAEMON", "0")
    assert launch.main() == 0
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
    ],
)
def test_which_calls_go_to_the_warm_process(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str], expected: bool
) -> None:
    monkeypatch.delenv("CITELINE_DAEMON", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    assert launch.eligible(argv) is expected
    for tty in (1, 2):
        monkeypatch.setattr(os, "isatty", lambda fd, tty=tty: fd == tty)
        assert launch.eligible(argv) is False
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert launch.eligible(argv) is False


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


def test_private_folders_only(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    assert launch.private(str(mine))
    for mode in (0o750, 0o705, 0o722):
        mine.chmod(mode)
        assert not launch.private(str(mine)), oct(mode)
    mine.chmod(0o700)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert not launch.private(str(link))
    (tmp_path / "file").write_text("x")
    (tmp_path / "file").chmod(0o600)
    assert not launch.private(str(tmp_path / "file"))
    assert not launch.private(str(tmp_path / "absent"))


def test_the_fingerprint_follows_citeline_s_files(monkeypatch: pytest.MonkeyPatch) -> None:
    before = launch.code_fingerprint()
    names = before.decode().split("\n")
    assert names[:2] == [sys.executable, sys.version]
    assert any(n.startswith("lsp/daemon.py:") for n in names)
    assert any(n.startswith("engine/reuse/store.py:") for n in names)
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
