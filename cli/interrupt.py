"""Ctrl-C in a command-line call: exit 130 with the `cancelled` message and nothing else,
whenever it comes (SPEC §10) — while the engine works, while the answer is drawn or
written, while the process winds down.

No KeyboardInterrupt is ever raised. An exception thrown into whatever code happens to run
when the signal lands cannot be kept from reaching places that print it: a weak reference's
callback or a `__del__` ("Exception ignored in …"), a library's thread, an interpreter exit
that joins a worker pool. So while the engine works, the handler itself ends the process: it
kills the worker processes, clears the progress bar, writes the message with plain
`os.write` (the handler may run inside a write to the same stream) and leaves with
`os._exit`, before any other code runs. Nothing is lost by leaving at once: the cache is a
SQLite database in WAL mode, whole after any exit, and nothing else is written.

While output is written or the process winds down, interrupts are *held*: a Ctrl-C is only
noted, the line being written is finished, and the call stops at the next line's end with
the message. One Ctrl-C is enough: another while the first is handled changes nothing.

Before this module's handler is installed — the interpreter's own start-up, a few tens of
milliseconds — a Ctrl-C is Python's (docs/cli.md). Imported by every call, so it imports os,
signal and sys only.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds of every call
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import IO, ClassVar, NoReturn

CANCELLED = 130
NOTHING = "Interrupted; nothing was returned."
CUT = "Interrupted; the output above may be incomplete."
CLEAR = "\r\x1b[2K"  # what clears the progress bar's line


def human(message: str) -> str:
    return f"citeline: cancelled: {message}\n"


def envelope(message: str) -> str:
    """The §10 envelope of the cancelled error as the CLI encodes it (present.encode);
    written here by hand, as the engine may not be imported yet."""
    return f'{{"error":{{"code":"cancelled","message":"{message}","details":{{}}}}}}\n'


class _State:
    installed = False  # this process is a command-line call (not a test, not a server)
    as_json = False  # the call asked for --json
    pressed = False  # a Ctrl-C came
    held = 0  # > 0: writing output or winding down: a Ctrl-C is noted, acted on later
    wrote = False  # some of the answer reached stdout (a --json envelope would be a 2nd line)
    reported = False  # the cancelled message was written
    progress = False  # a progress bar is on stderr's last line
    kill: ClassVar[list[Callable[[], object]]] = []  # what must die with the process (worker pools)


def _on_interrupt(signum: int, frame: object) -> None:
    if _State.pressed:
        return
    _State.pressed = True
    if not _State.held:
        _leave_at_once()


def _leave_at_once() -> NoReturn:
    for kill in _State.kill:
        try:  # noqa: SIM105 (contextlib is not imported by every call)
            kill()
        except Exception:
            pass  # leaving anyway
    try:
        if _State.progress:
            os.write(2, CLEAR.encode())
        if _State.as_json and not _State.wrote:
            os.write(1, envelope(NOTHING).encode())
        else:
            os.write(2, human(CUT if _State.wrote else NOTHING).encode())
    except OSError:
        pass  # a closed pipe or terminal: nobody to tell
    os._exit(CANCELLED)


def install(as_json: bool) -> None:
    """Handle Ctrl-C as this module says, for the rest of this process (a command-line
    call). A Ctrl-C the shell made this process ignore (`nohup`, `cmd &` in a script) stays
    ignored."""
    _State.as_json = as_json
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return
    signal.signal(signal.SIGINT, _on_interrupt)
    _State.installed = True


def begin_call() -> None:
    """A new call in this process (the warm process and the tests answer many): nothing
    of the previous one's output or Ctrl-C carries over."""
    _State.pressed = _State.wrote = _State.reported = _State.progress = False
    _State.kill = []


def answer_as_json(as_json: bool) -> None:
    """The call's --json, once its arguments are read."""
    _State.as_json = as_json


def release() -> None:
    """Python's own Ctrl-C handling again: for the servers, which handle it themselves."""
    if _State.installed:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _State.installed = False


def installed() -> bool:
    return _State.installed


def pressed() -> bool:
    """Whether a Ctrl-C came (while held, this is how it is seen)."""
    return _State.pressed


def wrote() -> bool:
    """Whether some of the answer was written to stdout."""
    return _State.wrote


def note_written() -> None:
    """Some of the answer reached stdout (for writers of bytes, who write it themselves)."""
    _State.wrote = True


def reported() -> None:
    """The cancelled message was written: nothing writes it again."""
    _State.reported = True


def progress_shown(shown: bool) -> None:
    """Whether a progress bar is on stderr's last line (to clear before the message)."""
    _State.progress = shown


def kill_with_process(kill: Callable[[], object]) -> None:
    """Call `kill` (lock-free, quick) if a Ctrl-C ends the process while the engine works."""
    _State.kill.append(kill)


class held:  # used as a function: `with held():`
    """Interrupts noted, not acted on, inside: for writing and winding down."""

    def __enter__(self) -> None:
        _State.held += 1

    def __exit__(self, *_: object) -> None:
        _State.held -= 1


def write_lines(stream: IO[str], text: str) -> bool:
    """Write `text` a line at a time, interrupts held; stop at a line's end once a Ctrl-C
    came. Returns whether it was all written."""
    with held():
        start = 0
        while start < len(text):
            if _State.pressed:
                stream.flush()
                return False
            end = text.find("\n", start)
            end = len(text) if end < 0 else end + 1
            stream.write(text[start:end])
            if stream is sys.stdout:
                _State.wrote = True
            start = end
        stream.flush()
    return not _State.pressed


def lines(data: bytes) -> Iterator[bytes]:
    """`data` in pieces that each end with a line's end (the last one may not)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def leave(code: int, report: Callable[[], object]) -> NoReturn:
    """End the process now with `code`, or after a Ctrl-C with CANCELLED and the cancelled
    message (`report`, unless it was written already): standard streams flushed, but no
    interpreter clean-up, in which other threads and libraries could still run, print or
    wait."""
    with held():
        if _State.pressed and not _State.reported:
            try:  # noqa: SIM105
                report()
            except Exception:
                pass  # leaving anyway
        for stream in (sys.stdout, sys.stderr):
            try:  # noqa: SIM105
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed pipe: nothing more can reach it
    os._exit(CANCELLED if _State.pressed else code)


def run(call: Callable[[], int], report: Callable[[], object], as_json: bool) -> NoReturn:
    """A whole command-line call as this process: `call` with Ctrl-C handled as this module
    says, then `leave`."""
    install(as_json)
    leave(call(), report)
