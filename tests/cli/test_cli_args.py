"""lsp/cli.py's argument handling, in process: the help that names each limit with its
default and --raise-limits value, how flags become settings and requests, and how engine
errors are worded for the command line (docs/cli.md)."""

from __future__ import annotations

import argparse
import re
from dataclasses import fields

import pytest

from citeline.engine import Limits
from citeline.lsp import cli


def option_help(command: str) -> str:
    (action,) = [a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return str(action.choices[command].format_help())


@pytest.mark.parametrize("command", ["search", "concepts", "lines", "mcp"])
def test_help_names_every_limit_with_its_default_and_raised_value(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option
    text = option_help(command)
    default, editor = Limits(), Limits.editor()
    for f in fields(Limits):
        flag = "--" + f.name.replace("_", "-")
        pattern = r" N\s+most [^(]*\(default ([^;)]+)(?:; --raise-limits: ([^)]+))?\)"
        shown = re.search(re.escape(flag) + pattern, text)
        assert shown is not None, (command, flag)
        values = [getattr(default, f.name), getattr(editor, f.name)]
        written = [cli._amount(f.name, v) for v in values]
        assert shown.group(1) == written[0], flag
        assert shown.group(2) == (written[1] if values[1] != values[0] else None), flag
    # as docs/cli.md lists them
    assert "--max-files N" in text and "(default 10,000; --raise-limits: 200,000)" in text
    assert "(default 64 MiB; --raise-limits: 512 MiB)" in text


def test_amounts_in_mib_only_when_whole() -> None:
    mib = 1024 * 1024
    assert cli._amount("max_total_bytes", 64 * mib) == "64 MiB"
    assert cli._amount("max_total_bytes", 64 * mib + 1) == f"{64 * mib + 1:,}"
    assert cli._amount("max_path_bytes", 4096) == "4,096"  # under a MiB: a number
    assert cli._amount("max_files", 2 * mib) == "2,097,152"  # not bytes: a number
