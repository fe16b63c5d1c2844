"""`citeline …` for the command-line tests: a real subprocess, or, under mutation testing,
the same call in this process.

Mutation testing (docs/testing.md) can only kill a mutant with a test that runs the mutated
code in its own process: a subprocess imports the unmutated package. So under mutmut (and
whenever CITELINE_TEST_IN_PROCESS=1) `run_cli` calls `citeline.lsp.cli.main(argv)` here,
with the working directory, the environment and the standard streams a subprocess would
have had, and returns what a subprocess would have: exit code, stdout, stderr. The tests
assert the same things either way.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

IN_PROCESS = "CITELINE_TEST_IN_PROCESS"
_SERVERS = ("lsp", "mcp")  # commands that serve stdio until it closes: always a subprocess


def in_process() -> bool:
    return os.environ.get(IN_PROCESS) == "1"


def run_cli(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`citeline *args`; `env` changes the inherited environment (None: unset the name)."""
    argv = [os.fspath(a) for a in args]
    changes = dict(env or {})
    if in_process() and not (argv and argv[0] in _SERVERS):
        return _call(argv, cwd, changes)
    environ = {**os.environ, **{k: v for k, v in changes.items() if v is not None}}
    for name in [k for k, v in changes.items() if v is None]:
        environ.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "citeline.lsp.cli", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environ,
        timeout=timeout,
    )


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _call(
    argv: list[str], cwd: Path | None, changes: Mapping[str, str | None]
) -> subprocess.CompletedProcess[str]:
    from citeline.lsp import cli

    # Pipes, as a subprocess's are: not terminals, bytes decoded as the test decodes them.
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    streams = sys.stdout, sys.stderr
    here = os.getcwd()
    try:
        with _environment(changes):
            if cwd is not None:
                os.chdir(cwd)
            sys.stdout, sys.stderr = out, err
            try:
                code = cli.main(argv)
            except SystemExit as exit_:  # --help, --version: argparse exits
                code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    finally:
        sys.stdout, sys.stderr = streams
        os.chdir(here)
    texts = []
    for stream in (out, err):
        stream.flush()
        raw: bytes = stream.buffer.getvalue()  # type: ignore[attr-defined]
        # subprocess.run(text=True) reads with universal newlines: the same here
        text = raw.decode("utf-8", "replace")
        texts.append(text.replace("\r\n", "\n").replace("\r", "\n"))
    return subprocess.CompletedProcess(["citeline", *argv], code, texts[0], texts[1])


def mcp_front(argv: Sequence[str]) -> Any:
    """The MCP server `citeline mcp *argv` would serve, built in this process as
    cli.serve_mcp and mcp.main build it (stdio aside)."""
    from citeline.lsp import cli
    from citeline.lsp.mcp import CitelineMCP

    args = cli.parser().parse_args(cli.bind_text_values(["mcp", *argv]))
    settings = cli.settings_from(args)
    return CitelineMCP(
        os.path.abspath(args.bundle), settings, cache=not args.no_cache, reread=args.reread
    )
