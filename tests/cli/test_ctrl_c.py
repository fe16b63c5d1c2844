"""Ctrl-C as a person presses it (SPEC §10, issue 33): the ^C byte typed at the controlling
terminal, which the kernel turns into a SIGINT for the whole foreground process group — the
command, its worker processes, the forkserver. Whenever it lands (while capturing and
building, while the answer is drawn or written, while the engine closes), the call exits 130
and the terminal shows citeline's one message and nothing else, even from the processes that
outlive the command for a moment: the terminal is read until every process holding it has
gone. Output already written may stay, cut at a line's end.

Moments that a timer cannot hit reliably (drawing, closing) are made to last by a prelude
that slows that step down and says when it starts, run before the command (as the platform
tests patch `os` facts in).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import signal
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from bundles import write_bundle as write
from test_cli_terminal import slow_bundle
from waiting import readable

from citeline.engine.contracts import validate

CLEAR = b"\r\x1b[2K"  # the progress bar's last word
NOTHING = b"citeline: cancelled: Interrupted; nothing was returned.\r\n"
CUT = b"citeline: cancelled: Interrupted; the output above may be incomplete.\r\n"
MARK = "citeline-test: slow step\n"
READY = "citeline-test: ready\n"
# Python that runs the CLI as `python -m citeline.cli.cli` does, once citeline's Ctrl-C
# handling is in place, and says so (before that, during the interpreter's own start-up of a
# few tens of milliseconds, a Ctrl-C is Python's: docs/cli.md).
READY_FIRST = (
    "import sys\n"
    "from citeline.cli import interrupt\n"
    "interrupt.install(False)\n"
    f"sys.stderr.write({READY!r}); sys.stderr.flush()\n"
    "from citeline.cli.cli import console\n"
    "console()\n"
)


def prelude(module: str, attribute: str) -> str:
    """Python that makes module.attribute (a function or method) say MARK on stderr and take
    two seconds before it runs, then runs the CLI as `python -m citeline.cli.cli` does."""
    owner, _, name = attribute.rpartition(".")
    return (
        "import sys, time, importlib\n"
        f"m = importlib.import_module({module!r})\n"
        f"owner = m if not {owner!r} else getattr(m, {owner!r})\n"
        f"real = getattr(owner, {name!r})\n"
        "def slow(*a, **k):\n"
        f"    sys.stderr.write({MARK!r}); sys.stderr.flush(); time.sleep(2)\n"
        "    return real(*a, **k)\n"
        f"setattr(owner, {name!r}, slow)\n"
        "from citeline.cli.cli import console\n"
        "console()\n"
    )


@dataclass
class Session:
    """A command on a terminal of its own (stdin and stderr; stdout a pipe, read by the
    test when it chooses), in a session of its own whose controlling terminal that is."""

    proc: subprocess.Popen[bytes]
    master: int
    terminal: bytearray
    reader: threading.Thread

    def wait_for(self, what: bytes, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while what not in self.terminal:
            assert self.proc.poll() is None, f"exited {self.proc.returncode}: {self.shown()}"
            assert time.monotonic() < deadline, f"never showed {what!r}: {self.shown()}"
            time.sleep(0.01)

    def press_ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    def finish(self, timeout: float = 30) -> tuple[int | None, bytes]:
        """The exit code (None: still running after `timeout`, then killed) and stdout."""
        assert self.proc.stdout is not None
        out = bytearray()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if readable(self.proc.stdout, 0.1):
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                out += chunk
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
                code = None
        # Every process holding the terminal gone (workers, forkserver, resource tracker):
        # the reader meets EIO. Whatever they wrote is in self.terminal by then.
        self.reader.join(30)
        assert not self.reader.is_alive(), "a process still holds the terminal"
        os.close(self.master)
        return code, bytes(out)

    def shown(self) -> str:
        return bytes(self.terminal).decode("utf-8", "replace")

    def after_progress(self) -> bytes:
        """What the terminal showed after the progress bar was cleared (all, if none was)."""
        shown = bytes(self.terminal)
        return shown.rpartition(CLEAR)[2] if CLEAR in shown else shown


def start(args: list[str], env: dict[str, str], code: str | None = None) -> Session:
    master, slave = pty.openpty()
    # No echo: what the terminal shows is what the processes wrote, not the "^C" typed.
    modes = termios.tcgetattr(slave)
    modes[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, modes)

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # As an interactive shell starts a command: a test run started in the background
        # (`cmd &` in a script) ignores SIGINT, which citeline, like Python, then keeps.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "citeline.cli.cli"]
    proc = subprocess.Popen(
        [*command, *args],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        preexec_fn=controlling_terminal,  # the child's own session
    )
    os.close(slave)
    terminal = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: nobody holds the terminal any more
                return
            if not chunk:
                return
            terminal.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return Session(proc, master, terminal, reader)


def environment(tmp_path: Path, cache: str = "cache") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    env["CITELINE_CACHE_DIR"] = str(tmp_path / cache)
    return env


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seconds of reading and parsing for a cold call, in worker processes."""
    return slow_bundle(tmp_path_factory.mktemp("slow"), files=16000)


@pytest.fixture(scope="module")
def wordy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A line search whose answer is far more than a pipe holds (1,000 matches in context)."""
    root = tmp_path_factory.mktemp("wordy")
    padding = " ".join(f"word{k}" for k in range(50))
    for i in range(50):
        body = "".join(
            f"line {j} of page {i}: a needle in the text, {padding}\n" for j in range(60)
        )
        write(root, {f"p{i:02}.md": f"# Page {i}\n\n{body}"})
    return root


WORDY = ["lines", "-F", "needle", "--max-count", "1000", "-C", "0", "--color", "never"]


def uninterrupted(wordy: Path, env: dict[str, str]) -> bytes:
    """The whole answer of the WORDY search, from a call nobody interrupts."""
    return subprocess.run(
        [sys.executable, "-m", "citeline.cli.cli", *WORDY, str(wordy)],
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout


def test_ctrl_c_while_building_in_workers(slow: Path, tmp_path: Path) -> None:
    """The ^C reaches the workers too; nobody but the command speaks, and nothing is left."""
    for i, after in enumerate((0.0, 0.4, 0.8)):
        session = start(
            ["search", str(slow), "-q", "hashtable", "--raise-limits"],
            environment(tmp_path, f"cache{i}"),
        )
        session.wait_for(b"/")  # the progress bar: the engine (and its workers) at work
        time.sleep(after)
        session.press_ctrl_c()
        code, out = session.finish()
        assert code == 130, (after, session.shown())
        assert out == b""
        assert session.after_progress() == NOTHING, (after, session.shown())


def test_ctrl_c_while_building_json(slow: Path, tmp_path: Path) -> None:
    session = start(
        ["search", str(slow), "-q", "hashtable", "--raise-limits", "--json"], environment(tmp_path)
    )
    session.wait_for(b"/")
    session.press_ctrl_c()
    code, out = session.finish()
    assert code == 130, session.shown()
    assert out.count(b"\n") == 1
    envelope = json.loads(out)
    validate("error", envelope)
    assert envelope["error"]["code"] == "cancelled"
    assert b"Traceback" not in session.terminal and b"Error" not in session.terminal


def test_ctrl_c_while_the_answer_is_written(wordy: Path, tmp_path: Path) -> None:
    """The answer is cut at a line's end, and the message says it may be incomplete."""
    env = environment(tmp_path)
    whole = uninterrupted(wordy, env)
    assert len(whole) > 1 << 18  # four times what a pipe holds: the writer must wait
    session = start([*WORDY, str(wordy)], env)
    assert session.proc.stdout is not None
    assert readable(session.proc.stdout, 60), "no output"
    time.sleep(0.2)  # the pipe fills and the command waits to write more
    session.press_ctrl_c()
    # The terminal turns ^C into SIGINT asynchronously (the kernel's tty work queue, late on
    # a loaded machine); draining the pipe at once could let the whole answer out before the
    # signal lands. The command waits on the full pipe meanwhile, so this wait changes
    # nothing it is asked to do.
    time.sleep(1.0)
    code, out = session.finish()
    assert code == 130, session.shown()
    assert 0 < len(out) < len(whole)
    assert whole.startswith(out) and out.endswith(b"\n")
    assert session.after_progress() == CUT, session.shown()


@pytest.mark.parametrize(
    ("module", "attribute", "expected"),
    [
        ("citeline.cli.render", "Sources.lines", NOTHING),  # drawing the hits
        ("citeline.engine.core", "Engine.close", NOTHING),  # the engine winding down
    ],
    ids=["drawing", "closing"],
)
def test_ctrl_c_after_the_work(
    make_bundle: object, tmp_path: Path, module: str, attribute: str, expected: bytes
) -> None:
    bundle = write(tmp_path / "b", {"a.md": "# Alpha\n\nalpha beta\n", "b.md": "# Beta\n\nbeta\n"})
    session = start(
        ["search", str(bundle), "-q", "beta"],
        environment(tmp_path),
        code=prelude(module, attribute),
    )
    session.wait_for(MARK.encode().replace(b"\n", b"\r\n"))
    session.press_ctrl_c()
    code, out = session.finish()
    assert code == 130, session.shown()
    assert out == b""
    assert session.after_progress().replace(MARK.replace("\n", "\r\n").encode(), b"") == expected


def test_ctrl_c_at_random_moments(wordy: Path, tmp_path: Path) -> None:
    """Anywhere from the start to the end: 130 with one message (and output cut at a line's
    end), or, when the call had finished, its whole answer."""
    env = environment(tmp_path)
    whole = uninterrupted(wordy, env)
    spans = []
    for _ in range(3):
        session = start([*WORDY, str(wordy)], env, code=READY_FIRST)
        session.wait_for(READY.encode().replace(b"\n", b"\r\n"))
        begun = time.monotonic()
        assert session.finish()[0] == 0
        spans.append(time.monotonic() - begun)
    span = sorted(spans)[1]
    draw = random.Random(33)
    endings = {130: 0, 0: 0}
    for _ in range(12):
        session = start([*WORDY, str(wordy)], env, code=READY_FIRST)
        session.wait_for(READY.encode().replace(b"\n", b"\r\n"))
        time.sleep(draw.uniform(0, span * 1.2))
        session.press_ctrl_c()
        code, out = session.finish()
        assert code in endings, session.shown()
        endings[code] += 1
        shown = session.after_progress()
        for word in (b"Traceback", b"Error", b"Warning", b"leaked", b"Exception"):
            assert word not in session.terminal, session.shown()
        if code == 130:
            assert whole.startswith(out) and (out == b"" or out.endswith(b"\n"))
            assert shown.endswith(CUT if out else NOTHING), session.shown()
            assert shown.count(b"citeline: cancelled") == 1
        else:
            assert out == whole
    assert endings[130] > 0
