"""cli/interrupt.py, the command line's Ctrl-C, one rule at a time (the real thing, a ^C at
a real terminal, is tests/cli/test_ctrl_c.py). The handler is called as the signal would
call it; os._exit and os.write are replaced so that the test process goes on."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from citeline.cli import interrupt
from citeline.engine import CitelineError
from citeline.engine.answer.present import encode


class Left(BaseException):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def leave(code: int) -> None:
    raise Left(code)


@pytest.fixture()
def state(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, bytes]]]:
    """A fresh interrupt state; what the module writes with os.write (fd, bytes)."""
    fields = {k: v for k, v in vars(interrupt._State).items() if not k.startswith("__")}
    handler = signal.getsignal(signal.SIGINT)
    written: list[tuple[int, bytes]] = []

    def write(fd: int, data: Any) -> int:
        written.append((fd, bytes(data)))
        return len(data)

    interrupt.begin_call()  # what earlier calls in this process left
    interrupt.answer_as_json(False)
    monkeypatch.setattr(os, "_exit", leave)
    monkeypatch.setattr(os, "write", write)
    try:
        yield written
    finally:
        for key, value in fields.items():
            setattr(interrupt._State, key, value)
        signal.signal(signal.SIGINT, handler)


def press() -> None:
    interrupt._on_interrupt(signal.SIGINT, None)


def test_the_envelope_is_the_one_the_cli_writes() -> None:
    for message in (interrupt.NOTHING, interrupt.CUT):
        expected = encode(CitelineError("cancelled", message).to_json()) + "\n"
        assert interrupt.envelope(message) == expected


def test_while_working_a_ctrl_c_kills_the_workers_and_leaves_at_once(
    state: list[tuple[int, bytes]],
) -> None:
    killed: list[str] = []
    interrupt.kill_with_process(lambda: killed.append("pool"))
    interrupt.kill_with_process(lambda: 1 / 0)  # a failing kill does not stop the exit
    interrupt.progress_shown(True)
    with pytest.raises(Left) as left:
        press()
    assert left.value.code == 130
    assert killed == ["pool"]
    assert state == [(2, b"\r\x1b[2K"), (2, interrupt.human(interrupt.NOTHING).encode())]


def test_with_json_the_envelope_goes_to_stdout(state: list[tuple[int, bytes]]) -> None:
    interrupt.answer_as_json(True)
    with pytest.raises(Left):
        press()
    assert state == [(1, interrupt.envelope(interrupt.NOTHING).encode())]


def test_once_the_answer_began_the_message_says_so_on_stderr(
    state: list[tuple[int, bytes]],
) -> None:
    interrupt.answer_as_json(True)
    interrupt.note_written()
    with pytest.raises(Left):
        press()
    assert state == [(2, interrupt.human(interrupt.CUT).encode())]


def test_while_held_a_ctrl_c_is_only_noted_and_a_second_changes_nothing(
    state: list[tuple[int, bytes]],
) -> None:
    with interrupt.held():
        press()
        press()
    assert interrupt.pressed() and state == []
    press()  # the first is being handled: this one does not leave either
    assert state == []


def test_write_lines_stops_at_a_lines_end(state: list[tuple[int, bytes]]) -> None:
    class Stream(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith("two"):
                press()  # lands while the second line is written
            return super().write(text)

    stream = Stream()
    assert interrupt.write_lines(stream, "one\ntwo\nthree\nfour") is False
    assert stream.getvalue() == "one\ntwo\n"
    assert state == []  # held: nothing left the process


def test_write_lines_writes_everything_without_a_ctrl_c(state: list[tuple[int, bytes]]) -> None:
    stream = io.StringIO()
    assert interrupt.write_lines(stream, "one\ntwo") is True
    assert stream.getvalue() == "one\ntwo"


def test_lines_cut_bytes_after_each_line_end() -> None:
    assert list(interrupt.lines(b"a\nbc\n\nd")) == [b"a\n", b"bc\n", b"\n", b"d"]
    assert list(interrupt.lines(b"")) == []


def test_leave_reports_a_ctrl_c_that_came_while_held(state: list[tuple[int, bytes]]) -> None:
    reports: list[str] = []
    with interrupt.held():
        press()
    with pytest.raises(Left) as left:
        interrupt.leave(0, lambda: reports.append("cancelled"))
    assert left.value.code == 130 and reports == ["cancelled"]


def test_leave_does_not_report_twice_nor_without_a_ctrl_c(
    state: list[tuple[int, bytes]],
) -> None:
    reports: list[str] = []
    with pytest.raises(Left) as left:
        interrupt.leave(3, lambda: reports.append("x"))
    assert left.value.code == 3 and reports == []
    with interrupt.held():
        press()
    interrupt.reported()
    with pytest.raises(Left) as left:
        interrupt.leave(0, lambda: reports.append("x"))
    assert left.value.code == 130 and reports == []


def test_a_ctrl_c_the_shell_ignores_stays_ignored(state: list[tuple[int, bytes]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    interrupt._State.installed = False
    interrupt.install(False)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert not interrupt.installed()


def test_install_and_release(state: list[tuple[int, bytes]]) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupt.install(False)
    assert signal.getsignal(signal.SIGINT) is interrupt._on_interrupt and interrupt.installed()
    interrupt.release()  # the servers
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not interrupt.installed()
