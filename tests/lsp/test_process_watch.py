"""The client process named by initialize's processId, watched on every platform (SPEC §16):
on Windows signal 0 is CTRL_C_EVENT, so `os.kill(pid, 0)` there would send Ctrl+C to every
process of the console. Windows is emulated: sys.platform patched, os.kill forbidden, and
kernel32 (ctypes.WinDLL) a fake whose answers come from this machine's real processes."""

from __future__ import annotations

import asyncio
import ctypes
import os
import subprocess
import sys
from typing import Any

import pytest

from citeline.engine.base import platform
from citeline.lsp import server as srv
from citeline.lsp import transport


class FakeKernel32:
    """OpenProcess / WaitForSingleObject / CloseHandle over this machine's processes."""

    def __init__(self, denied: frozenset[int] = frozenset()) -> None:
        self.denied = denied
        self.opened: list[int] = []
        self.closed: list[int] = []
        self.error = 0

    def OpenProcess(self, access: int, inherit: bool, pid: int) -> int:
        assert access & platform.SYNCHRONIZE and not inherit
        if pid in self.denied:
            self.error = platform.ERROR_ACCESS_DENIED
            return 0
        if not os.path.exists(f"/proc/{pid}"):
            self.error = 87  # ERROR_INVALID_PARAMETER: no such process
            return 0
        self.opened.append(pid)
        return 1000 + pid

    def WaitForSingleObject(self, handle: int, ms: int) -> int:
        assert ms == 0  # never waits
        pid = handle - 1000
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return 0  # WAIT_OBJECT_0: it ended
        return 0 if state == "Z" else platform.WAIT_TIMEOUT  # a zombie has ended

    def CloseHandle(self, handle: int) -> int:
        self.closed.append(handle)
        return 1


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> FakeKernel32:
    kernel32 = FakeKernel32(denied=frozenset({1}))

    real_kill = os.kill

    def forbidden(pid: int, sig: int) -> None:
        if sig == 0:  # CTRL_C_EVENT there (the test's own child.kill() may signal)
            raise AssertionError(f"os.kill({pid}, 0) on Windows")
        real_kill(pid, sig)

    def win_dll(name: str, use_last_error: bool = False) -> FakeKernel32:
        assert name == "kernel32" and use_last_error
        return kernel32

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(os, "kill", forbidden)
    monkeypatch.setattr(ctypes, "WinDLL", win_dll, raising=False)
    monkeypatch.setattr(ctypes, "get_last_error", lambda: kernel32.error, raising=False)
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    return kernel32


def test_on_windows_a_process_is_asked_through_a_handle_never_a_signal(
    windows: FakeKernel32,
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert srv.process_alive(os.getpid()) is True
        assert srv.process_alive(child.pid) is True
        assert srv.process_alive(1) is True  # not ours to open: it exists
        assert srv.process_alive(2**22 + 12345) is False
        assert srv.process_alive(2**40) is False  # no DWORD holds it
        assert srv.process_alive(0) is False and srv.process_alive(-1) is False
    finally:
        child.kill()
        child.wait()
    assert srv.process_alive(child.pid) is False
    assert sorted(windows.closed) == sorted(1000 + p for p in windows.opened)  # none leaked


def test_on_posix_signal_zero_only(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[int, int]] = []
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        real_kill(pid, sig)

    monkeypatch.setattr(os, "kill", kill)
    assert srv.process_alive(os.getpid()) is True
    assert srv.process_alive(0) is False  # a process group to os.kill: never asked
    assert sent == [(os.getpid(), 0)]


def test_without_pidfd_the_client_is_polled_and_its_end_noticed(
    windows: FakeKernel32, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS and Windows have no pidfd: the server asks every PARENT_POLL_INTERVAL, and on
    Windows through the process handle."""
    monkeypatch.setattr(transport, "PARENT_POLL_INTERVAL", 0.02)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    ls = srv.CitelineServer()
    gone: list[int] = []
    ls.parent_gone = gone.append  # type: ignore[method-assign]

    async def run() -> None:
        ls.watch_parent(child.pid)
        assert ls.background  # a poller, as there is no pidfd
        await asyncio.sleep(0.1)
        assert gone == []
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
        for _ in range(500):
            if gone:
                break
            await asyncio.sleep(0.01)

    try:
        asyncio.run(run())
    finally:
        ls.engine.close()
    assert gone == [child.pid]


def test_a_process_id_that_is_not_visible_here_is_not_watched(
    windows: FakeKernel32, caplog: pytest.LogCaptureFixture
) -> None:
    ls = srv.CitelineServer()

    async def run() -> Any:
        ls.watch_parent(2**22 + 12345)
        return set(ls.background)

    try:
        assert asyncio.run(run()) == set()
    finally:
        ls.engine.close()
    assert "not a process visible here" in caplog.text
