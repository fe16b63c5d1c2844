"""The command line's output on Windows, emulated (SPEC §16 "Terminals", issue 26): UTF-8 on
stdout and stderr whatever the code page, lines ending in "\\n" (text mode would write
"\\r\\n"), colour only where the console obeys escape sequences (virtual-terminal processing,
turned on through kernel32 where it can be), NO_COLOR honoured, and a closed pipe — EINVAL
on Windows, not BrokenPipeError — ending the call quietly.

Windows' text-mode streams are TextIOWrappers with newline="\\r\\n" and the code page as their
encoding; kernel32 and msvcrt are fakes that answer as a console would."""

from __future__ import annotations

import ctypes
import errno
import io
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write

from citeline.cli import cli, render, style

FILES = {"café/guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps order.\n"}


def text_mode(encoding: str) -> io.TextIOWrapper:
    """A stream as Windows opens a pipe: the code page's encoding, "\\n" written as CRLF."""
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding, newline="\r\n")


def written(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    return stream.buffer.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("platform", ["win32", "linux"])
def test_utf8_and_lf_whatever_the_code_page(monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    out, err = text_mode("cp1252"), text_mode("cp437")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "platform", platform)
    cli._utf8_output()
    out.write("名前 é\n")
    err.write("名前 é\n")
    assert written(out) == "名前 é\n".encode()
    if platform == "win32":
        assert written(err) == "名前 é\n".encode()  # UTF-8 on Windows too
    else:
        # POSIX: the terminal's encoding, escaped where it cannot hold a character; LF
        assert written(err) == b"\\u540d\\u524d \x82\n"


def test_json_lines_end_in_lf_on_a_windows_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write(tmp_path / "b", FILES)
    out, err = text_mode("cp1252"), text_mode("cp1252")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("CITELINE_DAEMON", "0")
    code = cli.main(["search", str(bundle), "-q", "hashtable", "--json", "--no-cache"])
    data = written(out)
    assert code == 0
    assert data.endswith(b"}\n") and b"\r" not in data
    result = json.loads(data)
    assert result["hits"][0]["path"] == "café/guide.md"  # UTF-8, not the code page


class ClosedPipe(io.RawIOBase):
    """A pipe whose reader left, as Windows reports it: OSError EINVAL on every write."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    def fileno(self) -> int:
        return self.fd


@pytest.mark.parametrize(("platform", "code"), [("win32", 0), ("linux", cli.INTERNAL_EXIT)])
def test_a_closed_pipe_on_windows_ends_the_call_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str, code: int
) -> None:
    """On Windows EINVAL is the closed pipe; elsewhere it is something else (a bug)."""
    bundle = write(tmp_path / "b", FILES)
    read_end, write_end = os.pipe()
    try:
        out = io.TextIOWrapper(io.BufferedWriter(ClosedPipe(write_end)), encoding="utf-8")
        err = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setattr(sys, "platform", platform)
        saved = os.dup(write_end)
        try:
            got = cli.answer(["search", str(bundle), "-q", "hashtable", "--no-cache"])
        finally:
            os.dup2(saved, write_end)
            os.close(saved)
        assert got == code
        if platform == "win32":
            assert err.getvalue() == ""  # no traceback, no message
        else:
            assert "internal_error" in err.getvalue()
    finally:
        os.close(read_end)
        os.close(write_end)


class Console:
    """kernel32's console modes, for the handles of a fake msvcrt."""

    def __init__(self, modes: dict[int, int], settable: bool = True) -> None:
        self.modes = modes  # handle -> mode (a handle missing: not a console)
        self.settable = settable
        self.set_calls: list[tuple[int, int]] = []

    def GetConsoleMode(self, handle: int, ref: Any) -> int:
        if handle not in self.modes:
            return 0
        ref._obj.value = self.modes[handle]
        return 1

    def SetConsoleMode(self, handle: int, mode: int) -> int:
        self.set_calls.append((handle, mode))
        if not self.settable:
            return 0
        self.modes[handle] = mode
        return 1


class Tty(io.StringIO):
    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd


def as_windows_console(monkeypatch: pytest.MonkeyPatch, console: Console) -> None:
    msvcrt = types.ModuleType("msvcrt")
    msvcrt.get_osfhandle = lambda fd: 100 + fd  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)
    monkeypatch.setattr(ctypes, "WinDLL", lambda name, use_last_error=False: console, raising=False)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(style, "_SHOWN", {})
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")


VT = style.ENABLE_VIRTUAL_TERMINAL_PROCESSING


def test_colour_on_a_console_whose_virtual_terminal_processing_is_turned_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    console = Console({101: 0x3, 102: 0x3 | VT})
    as_windows_console(monkeypatch, console)
    assert style.use_color("auto", Tty(1)) is True
    assert console.modes[101] == 0x3 | VT and console.set_calls == [(101, 0x3 | VT)]
    assert style.use_color("auto", Tty(2)) is True  # already on: nothing set
    assert style.use_color("auto", Tty(1)) is True and len(console.set_calls) == 1  # once
    assert render.ProgressBar(Tty(2)).enabled is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert style.use_color("auto", Tty(1)) is False  # NO_COLOR honoured on Windows too


def test_no_colour_where_the_console_cannot_show_escapes(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console({101: 0x3}, settable=False)  # an old console (before Windows 10 1511)
    as_windows_console(monkeypatch, console)
    assert style.use_color("auto", Tty(1)) is False
    assert render.ProgressBar(Tty(1)).enabled is False  # it would print \x1b[2K
    assert style.use_color("always", Tty(1)) is True  # asked for: the user's choice
    # a handle that is no console (a pipe a terminal emulator's pty stands for)
    assert style.use_color("auto", Tty(5)) is False
    # no msvcrt (not Windows after all): no colour rather than a failure
    monkeypatch.setitem(sys.modules, "msvcrt", None)
    monkeypatch.setattr(style, "_SHOWN", {})
    assert style.shows_escapes(Tty(1)) is False


def test_elsewhere_a_terminal_shows_escapes_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "WinDLL", None, raising=False)  # never asked
    monkeypatch.setattr(sys, "platform", "darwin")
    assert style.shows_escapes(Tty(1)) is True
