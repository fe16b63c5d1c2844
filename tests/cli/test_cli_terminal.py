"""The command line in a terminal (docs/cli.md): colour on a terminal only, NO_COLOR and
`--color`, a real Ctrl-C (SIGINT) while it reads, and exit 1 when nothing matched.

Terminals are real pseudo-terminals (pty), signals real signals to a real process: the
behaviour checked is the one a person at a terminal gets.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from bundles import write_bundle as write
from waiting import readable

from citeline.engine import Call, Engine, Settings
from citeline.engine.contracts import validate

CLI = [sys.executable, "-m", "citeline.cli.cli"]
ESC = b"\x1b["
FILES = {
    "guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys to values.\n",
}


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "b", FILES)


def environment(tmp_path: Path, **changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["TERM"] = "xterm-256color"
    env["CITELINE_CACHE_DIR"] = str(tmp_path / "cache")  # a cold start, whatever is cached
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def read_all(fd: int, timeout: float = 60) -> bytes:
    """Everything written to a pty until the other side closes it."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not readable(fd, 0.1):
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        out += chunk
    return out


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run the CLI with stdout on a pseudo-terminal: (exit code, stdout, stderr)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*CLI, *args], stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env
        )
        os.close(slave)
        slave = -1
        shown = read_all(master)
        _, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    return proc.returncode, shown, err


def piped(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, stdin=subprocess.DEVNULL, env=env, timeout=60
    )


@pytest.mark.parametrize(
    "command",
    [
        ["search", "-q", "ordered hashtable"],
        ["lines", "-F", "hashtable"],
        ["concepts", "-q", "b"],
    ],
    ids=["search", "lines", "concepts"],
)
def test_colour_follows_the_terminal_and_no_color(
    bundle: Path, tmp_path: Path, command: list[str]
) -> None:
    args = [command[0], str(bundle), *command[1:]]
    cases = [
        # (where stdout goes, --color, environment changes, colour expected)
        ("tty", "auto", {}, True),
        ("tty", None, {}, True),  # auto is the default
        ("tty", "auto", {"NO_COLOR": "1"}, False),
        ("tty", "auto", {"NO_COLOR": ""}, True),  # no-color.org: an empty NO_COLOR is unset
        ("tty", "auto", {"TERM": "dumb"}, False),
        ("tty", "never", {}, False),
        ("tty", "always", {"NO_COLOR": "1"}, True),  # an explicit flag wins over NO_COLOR
        ("pipe", "auto", {}, False),
        ("pipe", None, {}, False),
        ("pipe", "always", {}, True),
        ("pipe", "never", {}, False),
    ]
    plain_text: set[bytes] = set()
    for where, flag, changes, coloured in cases:
        env = environment(tmp_path, **changes)
        full = [*args, *(["--color", flag] if flag else [])]
        if where == "tty":
            code, shown, err = on_a_terminal(full, env)
            shown = shown.replace(b"\r\n", b"\n")  # the terminal's own line endings
        else:
            done = piped(full, env)
            code, shown, err = done.returncode, done.stdout, done.stderr
        case = (where, flag, changes)
        assert code == 0, (case, err)
        assert (ESC in shown) is coloured, (case, shown)
        assert ESC not in err, case
        if not coloured:
            plain_text.add(shown)
    assert len(plain_text) == 1  # without colour, terminal or not, the same text


def slow_bundle(root: Path, files: int = 2000) -> Path:
    """Distinct files: seconds of reading and parsing for a fresh process."""
    for i in range(files):
        body = "".join(
            f"## Part {i} {j}\n\nword{i} text {j} hashtable alpha beta gamma.\n\n"
            for j in range(12)
        )
        write(root, {f"d{i // 100}/f{i}.md": f"# File {i}\n\n{body}"})
    return root


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A cold first call reads 2,000 of these files in about half a second on a 2-core
    # machine, about when the progress bar appears: 16,000 leave seconds to interrupt.
    return slow_bundle(tmp_path_factory.mktemp("slow"), files=16000)


@dataclass(frozen=True, slots=True)
class Interrupted:
    returncode: int | None  # None: still running 30 s after the signal (then killed)
    stdout: bytes
    terminal: str  # what stderr drew on the terminal, before and after the signal
    seconds: float  # from the signal to the exit


def sigint_default() -> None:
    """SIGINT as an interactive shell leaves it for a command: a test run started in the
    background (`cmd &` in a script) ignores it, and citeline, like Python, keeps that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(args: list[str], env: dict[str, str], after: float = 0.0) -> Interrupted:
    """Run the CLI with stderr on a terminal, send SIGINT `after` seconds after its progress
    bar appears (the engine is at work by then), and collect how it ended."""
    master, slave = pty.openpty()  # stderr on a terminal: the progress bar shows the work
    proc = subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=env,
        preexec_fn=sigint_default,
    )
    os.close(slave)
    try:
        seen = b""
        deadline = time.monotonic() + 60
        while b"/" not in seen and time.monotonic() < deadline:
            if readable(master, 0.1):
                try:
                    seen += os.read(master, 4096)
                except OSError:  # EIO: the process closed the terminal, it has finished
                    break
        assert b"/" in seen, f"no progress bar (exit {proc.poll()}): {seen!r}"
        time.sleep(after)
        assert proc.poll() is None, "finished before it could be interrupted"
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            stdout, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
            return Interrupted(None, stdout, seen.decode("utf-8", "replace"), 30.0)
        seconds = time.monotonic() - started
        seen += read_all(master, timeout=5)
    finally:
        os.close(master)
        if proc.poll() is None:  # a failed assertion leaves no process behind
            proc.kill()
            proc.wait()
    return Interrupted(proc.returncode, stdout, seen.decode("utf-8", "replace"), seconds)


@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_ctrl_c_cancels_with_exit_130(slow: Path, tmp_path: Path, as_json: bool) -> None:
    """A real SIGINT while the engine works: exit 130, the `cancelled` error, no hit data."""
    args = ["search", str(slow), "-q", "hashtable", "--raise-limits"]
    if as_json:
        args.append("--json")
    run = interrupt(args, environment(tmp_path))
    assert run.returncode == 130, run
    assert run.seconds < 10
    assert "Traceback" not in run.terminal and "KeyboardInterrupt" not in run.terminal, run
    if as_json:
        envelope = json.loads(run.stdout)
        validate("error", envelope)
        assert envelope["error"]["code"] == "cancelled"
        assert run.stdout.count(b"\n") == 1
    else:
        assert run.stdout == b""  # no hit data on error
        assert "citeline: cancelled: " in run.terminal


def test_ctrl_c_at_any_moment_of_the_work_exits(slow: Path, tmp_path: Path) -> None:
    """Whenever the signal lands (workers mid-chunk, a result half sent, a chunk the request
    already cancelled), the process exits: it once hung in the interpreter's exit, waiting
    on the worker pool it had just killed (about one Ctrl-C in seven)."""
    for i, after in enumerate((0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05)):
        run = interrupt(
            ["search", str(slow), "-q", "hashtable", "--raise-limits"],
            environment(tmp_path / str(i)),  # each run cold: the work is parsing
            after=after,
        )
        assert run.returncode == 130, (after, run)
        assert run.seconds < 10, (after, run.seconds)


def test_nothing_found_exits_1(bundle: Path, tmp_path: Path) -> None:
    """Like grep and rg: success, but nothing matched, is exit 1, for every command."""
    env = environment(tmp_path, NO_COLOR="1")
    for command in (
        ["concepts", str(bundle), "-q", "zzz-nothing"],
        ["search", str(bundle), "-q", "zzz nothing"],
        ["lines", str(bundle), "-F", "zzz nothing"],
    ):
        human = piped(command, env)
        assert human.returncode == 1, (command, human.stderr)
        assert b"Traceback" not in human.stderr
        machine = piped([*command, "--json"], env)
        assert machine.returncode == 1, command
        result = json.loads(machine.stdout)
        kind = {"concepts": "concepts", "search": "search", "lines": "lines"}[command[0]]
        validate(f"{kind}.result", result)
        assert result["total"] == 0 and result["truncated"] is False
        assert result[{"concepts": "concepts", "search": "hits", "lines": "matches"}[kind]] == []
    # And 0 as soon as one thing matches.
    found = piped(["concepts", str(bundle), "-q", "b", "--json", "--strict"], env)
    assert found.returncode == 0
    assert json.loads(found.stdout) == Engine().concepts(
        Call(bundle, Settings()), {"query": "b", "strict": True}
    )
