"""Another local user, for the tests that play one: `nobody` (65534) in a child process.

The tests run as root, whom permissions do not stop; what another user may do is done by a
process that drops to nobody's ids (and no supplementary groups) before it runs, with the
system's Python (this virtualenv's interpreter lives under root's home, which nobody cannot
read). Folders such a user shares with the tests are made in /tmp by `shared_folder`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534
PYTHON = "/usr/bin/python3"


def needs_root() -> None:
    if os.geteuid() != 0 or not os.path.exists(PYTHON):
        pytest.skip("needs root (to act as another user) and the system's python3")


def _popen_args(code: str, args: tuple[str, ...]) -> dict[str, object]:
    return {
        "args": [PYTHON, "-c", textwrap.dedent(code), *args],
        "user": NOBODY,
        "group": NOBODY,
        "extra_groups": [],
        "cwd": "/",
        "env": {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    }


def run_as_other(code: str, *args: str) -> str:
    """Run `code` as nobody to its end; its stdout. A failure fails the test."""
    done = subprocess.run(
        **_popen_args(code, args),  # type: ignore[call-overload]
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextlib.contextmanager
def other_process(code: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`code` running as nobody for the length of the block (ended after it)."""
    proc: subprocess.Popen[str] = subprocess.Popen(
        **_popen_args(code, args),  # type: ignore[call-overload]
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.communicate(timeout=30)


@contextlib.contextmanager
def shared_folder(mode: int = 0o1777, owner: int = 0, group: int | None = None) -> Iterator[Path]:
    """A new folder in /tmp with this mode, owner and group (the owner's by default; a
    world-writable sticky folder like /tmp itself unless told), removed with everything in it
    afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="citeline-shared-", dir="/tmp"))
    try:
        os.chown(folder, owner, owner if group is None else group)
        folder.chmod(mode)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def chown_tree(path: Path, uid: int = NOBODY) -> None:
    for p in [path, *path.rglob("*")]:
        os.chown(p, uid, uid, follow_symlinks=False)
