"""The warm process on macOS and Windows, emulated (SPEC §16, issue 26).

macOS has no SO_PEERCRED and no /proc: the peer is asked by LOCAL_PEERCRED (struct xucred)
and sockets are bound and reached by a short name inside the held folder (fchdir), since
macOS's sun_path holds 104 bytes. Here SO_PEERCRED and /proc are taken away (in this process
with monkeypatch; for real processes by a sitecustomize on PYTHONPATH, which the launcher
hands to the warm process it starts), and LOCAL_PEERCRED answers with the kernel's own
SO_PEERCRED figures laid out as a struct xucred. Windows has no warm process at all.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write

from citeline.cli import entry, launch

CLIENT = [sys.executable, "-m", "citeline.cli.entry"]
MARK = b"citeline: answered by the warm process (CITELINE_DAEMON=0 turns it off)\n"
FILES = {"guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n"}
LOCAL_PEERCRED = 0x001  # its value on macOS (<sys/un.h>), at level SOL_LOCAL (0)


def xucred(uid: int, version: int = 0) -> bytes:
    """A struct xucred as macOS lays it out: cr_version, cr_uid, cr_ngroups, cr_groups[16]."""
    order = sys.byteorder
    return (
        version.to_bytes(4, order)
        + uid.to_bytes(4, order)
        + (1).to_bytes(2, order)
        + b"\0\0"
        + (0).to_bytes(4, order) * 16
    )


def test_xucred_is_read_as_macos_lays_it_out() -> None:
    assert launch.XUCRED_SIZE == len(xucred(501)) == 76
    assert launch.xucred_uid(xucred(501)) == 501
    assert launch.xucred_uid(xucred(0)) == 0
    assert launch.xucred_uid(xucred(501, version=1)) is None  # a layout not read here
    assert launch.xucred_uid(b"\0\0\0") is None


def as_macos_socket(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """This process's sockets as macOS's: no SO_PEERCRED; LOCAL_PEERCRED at level 0 gives
    the kernel's answer for the peer as a struct xucred. Returns the options asked for."""
    import _socket

    real_option = _socket.SO_PEERCRED
    real_get = socket.socket.getsockopt
    asked: list[tuple[int, int, int]] = []

    def getsockopt(self: socket.socket, level: int, option: int, size: int = 0) -> Any:
        asked.append((level, option, size))
        if (level, option) == (launch.SOL_LOCAL, LOCAL_PEERCRED):
            ucred = real_get(self, socket.SOL_SOCKET, real_option, 12)
            return xucred(int.from_bytes(ucred[4:8], sys.byteorder))[:size]
        return real_get(self, level, option, size) if size else real_get(self, level, option)

    monkeypatch.delattr(_socket, "SO_PEERCRED")
    monkeypatch.setattr(_socket, "LOCAL_PEERCRED", LOCAL_PEERCRED, raising=False)
    monkeypatch.setattr(socket.socket, "getsockopt", getsockopt)
    return asked


def test_the_peer_is_known_by_local_peercred_without_so_peercred(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = as_macos_socket(monkeypatch)
    one, two = socket.socketpair(socket.AF_UNIX)
    with one, two:
        assert launch.peer_uid(one) == os.geteuid()
    assert asked == [(0, LOCAL_PEERCRED, 76)]
    assert launch.usable() is True


def test_without_any_peer_check_there_is_no_warm_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import _socket

    monkeypatch.delattr(_socket, "SO_PEERCRED")
    one, two = socket.socketpair(socket.AF_UNIX)
    with one, two:
        assert launch.peer_uid(one) is None  # nothing it says is trusted
    assert launch.usable() is False
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("CITELINE_DAEMON", "1")
    assert entry.eligible(["search", "b", "-q", "x"]) is False


def test_windows_has_no_warm_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("CITELINE_DAEMON", "1")
    argv = ["search", "b", "-q", "x"]
    assert entry.eligible(argv) is True
    monkeypatch.setenv("CITELINE_PLATFORM", "windows")  # the forced Windows configuration
    assert entry.eligible(argv) is False
    monkeypatch.delenv("CITELINE_PLATFORM")
    monkeypatch.setattr(sys, "platform", "win32")
    assert entry.eligible(argv) is False
    assert launch.open_private("C:\\Users\\me\\AppData\\Local\\Temp")[0] is None
    monkeypatch.setattr(sys, "platform", "linux")
    import _socket

    monkeypatch.delattr(_socket, "AF_UNIX")  # as CPython on Windows
    assert launch.usable() is False


def test_without_proc_sockets_are_reached_by_a_short_name_in_the_held_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long the folder's path (macOS: 104 bytes of sun_path) and wherever its path
    leads meanwhile: the working folder is the held one for the bind or connect only."""
    real_isdir = os.path.isdir
    monkeypatch.setattr(
        os.path, "isdir", lambda p: not str(p).startswith("/proc") and real_isdir(p)
    )
    folder = tmp_path / ("d" * 120)
    folder.mkdir(mode=0o700)
    here = os.getcwd()
    fd, why = launch.open_private(str(folder))
    assert fd is not None and why == ""
    try:
        # the folder's path now leads elsewhere: the held one is still where it binds
        moved = tmp_path / ("m" * 120)
        folder.rename(moved)
        folder.mkdir(mode=0o700)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            with launch.At(fd, str(folder), "s.sock") as address:
                assert address == "s.sock"
                assert os.path.samefile(os.getcwd(), moved)
                listener.bind(address)
            assert os.getcwd() == here
            assert (moved / "s.sock").exists() and not (folder / "s.sock").exists()
            listener.listen(1)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as caller:
                with launch.At(fd, str(folder), "s.sock") as address:
                    caller.connect(address)
                assert os.getcwd() == here
        with pytest.raises(OSError), socket.socket(socket.AF_UNIX) as too_long:
            too_long.bind(str(moved / "s2.sock"))  # what the plain path would have met
    finally:
        os.close(fd)


def test_with_proc_the_address_goes_through_it(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir(mode=0o700)
    fd, _ = launch.open_private(str(folder))
    assert fd is not None
    try:
        here = os.getcwd()
        with launch.At(fd, str(folder), "s.sock") as address:
            assert address == f"/proc/self/fd/{fd}/s.sock"
            assert os.getcwd() == here
    finally:
        os.close(fd)


# -- real processes: the launcher and the warm process it starts, both emulating macOS ------

PRELUDE = '''
"""Emulate macOS's sockets in this process (tests/cli/test_daemon_platforms.py)."""
import _socket
import os
import sys

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "asked.log")
REAL_OPTION = _socket.SO_PEERCRED
del _socket.SO_PEERCRED
_socket.LOCAL_PEERCRED = 1


def _getsockopt(real, self, level, option, size=0):
    if (level, option) == (0, 1):
        with open(LOG, "a") as log:
            log.write(f"{os.getpid()} LOCAL_PEERCRED {size}\\n")
        ucred = real(self, _socket.SOL_SOCKET, REAL_OPTION, 12)
        uid = int.from_bytes(ucred[4:8], sys.byteorder)
        order = sys.byteorder
        xucred = (0).to_bytes(4, order) + uid.to_bytes(4, order) + bytes(68)
        return xucred[:size]
    return real(self, level, option, size) if size else real(self, level, option)


_real_socket = _socket.socket


class MacSocket(_real_socket):
    __slots__ = ()  # (socket.socket, derived from it, adds its own __weakref__)

    def getsockopt(self, level, option, size=0):
        return _getsockopt(_real_socket.getsockopt, self, level, option, size)


_socket.socket = MacSocket  # what launch.py makes, and what socket.socket derives from
_socket.SocketType = MacSocket

import os.path as _path

_real_isdir = _path.isdir
_path.isdir = lambda p: not str(p).startswith("/proc") and _real_isdir(p)
'''


def test_a_warm_process_on_emulated_macos_answers_as_a_new_process_would(
    tmp_path: Path,
) -> None:
    prelude = tmp_path / "prelude"
    prelude.mkdir()
    (prelude / "sitecustomize.py").write_text(PRELUDE)
    runtime = tmp_path / "r"
    runtime.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env |= {
        "CITELINE_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_RUNTIME_DIR": str(runtime),
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(prelude), os.environ.get("PYTHONPATH", "")) if p
        ),
        "CITELINE_LOG": "debug",
        "NO_COLOR": "1",
    }
    bundle = write(tmp_path / "b", FILES)
    args = ["search", str(bundle), "-q", "hashtable", "--json"]

    def call(**more: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*CLIENT, *args], capture_output=True, env={**env, **more}, timeout=120, check=False
        )

    first = call()
    assert first.returncode == 0 and not first.stderr.endswith(MARK)
    deadline = time.monotonic() + 60
    while not list(runtime.glob("citeline-*/*.sock")):
        assert time.monotonic() < deadline, "no warm process started"
        time.sleep(0.05)
    try:
        warm = call()
        assert warm.stderr.endswith(MARK), warm.stderr
        here = call(CITELINE_DAEMON="0")
        assert (
            (warm.returncode, warm.stdout)
            == (here.returncode, here.stdout)
            == (
                first.returncode,
                first.stdout,
            )
        )
        # both ends asked the peer by LOCAL_PEERCRED: the caller, and the warm process
        asked = (prelude / "asked.log").read_text().splitlines()
        pids = {line.split()[0] for line in asked}
        assert all(line.endswith(" LOCAL_PEERCRED 76") for line in asked)
        assert len(pids) >= 2
    finally:
        for sock in runtime.glob("citeline-*/*.sock"):
            sock.unlink()  # a warm process whose socket is gone leaves
        deadline = time.monotonic() + 30
        while list(runtime.glob("citeline-*/*.lock")):
            assert time.monotonic() < deadline, "the warm process did not leave"
            time.sleep(0.05)
