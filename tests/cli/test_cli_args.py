"""cli/cli.py's argument handling, in process: the help that names each limit with its
default and --raise-limits value, how flags become settings and requests, and how engine
errors are worded for the command line (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.cli import cli
from citeline.engine import Call, CitelineError, Engine, Limits, Settings
from citeline.engine.answer.present import encode
from citeline.fronts.remedies import with_limit_advice


def option_help(command: str) -> str:
    (action,) = [a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return str(action.choices[command].format_help())


@pytest.mark.parametrize("command", ["search", "concepts", "lines", "mcp"])
def test_help_names_every_limit_with_its_default_and_raised_value(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option
    text = option_help(command)
    # The workspace limits are the default; --strict gives the contract's (lower) ones.
    default, editor = Limits.editor(), Limits()
    for f in fields(Limits):
        flag = "--" + f.name.replace("_", "-")
        pattern = r" N\s+most [^(]*\(default ([^;)]+)(?:; --strict: ([^)]+))?\)"
        shown = re.search(re.escape(flag) + pattern, text)
        assert shown is not None, (command, flag)
        values = [getattr(default, f.name), getattr(editor, f.name)]
        written = [cli._amount(f.name, v) for v in values]
        assert shown.group(1) == written[0], flag
        assert shown.group(2) == (written[1] if values[1] != values[0] else None), flag
    # as docs/cli.md lists them
    assert "--max-files N" in text and "(default 200,000; --strict: 10,000)" in text
    assert "(default 512 MiB; --strict: 64 MiB)" in text


def test_amounts_in_mib_only_when_whole() -> None:
    mib = 1024 * 1024
    assert cli._amount("max_total_bytes", 64 * mib) == "64 MiB"
    assert cli._amount("max_total_bytes", 64 * mib + 1) == f"{64 * mib + 1:,}"
    assert cli._amount("max_path_bytes", 4096) == "4,096"  # under a MiB: a number
    assert cli._amount("max_files", 2 * mib) == "2,097,152"  # not bytes: a number


# -- arguments and their errors, through main() ----------------------------------------------


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    return write(
        tmp_path / "docs",
        {
            "ps.md": "# Remote commands\n\nUse -ComputerName to reach a remote computer.\n",
            "b.md": "# Other\n\nNothing about computers.\n",
        },
    )


def test_context_must_be_a_number_of_lines(docs: Path) -> None:
    out = run_cli(["search", str(docs), "-q", "remote", "-C", "two"])
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.endswith(
        "citeline search: error: argument -C/--context: a number of lines is expected "
        "(0-10), not 'two'\n"
    )
    scope = run_cli(["search", str(docs), "-q", "remote", "-C", "section", "--json"])
    assert scope.returncode == 2
    message = json.loads(scope.stdout)["error"]["message"]
    assert message.startswith(
        "argument -C/--context: a number of lines is expected (0-10); the relevance option "
        "'context section' is spelled --scope section"
    )


def test_version_without_installed_metadata(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.metadata

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == "citeline unknown\n"


def test_a_failed_recall_suggestion_is_said_on_stderr(docs: Path) -> None:
    """No section holds every word; the recall search suggested instead fails (its hits do
    not fit the response limit): the notice stays, the failure is one line on stderr."""
    empty = Engine().search(Call(docs, Settings()), {"query": "remote zeppelin", "strict": True})
    size = len(encode(empty).encode())
    out = run_cli(
        [
            "search",
            str(docs),
            "-q",
            "remote zeppelin",
            "--strict",
            "--max-response-bytes",
            str(size + 10),
        ],
        env={"NO_COLOR": "1"},
    )
    assert out.returncode == 1
    assert out.stdout == "No section holds every word of the query.\n"
    (note,) = out.stderr.splitlines()
    assert note.startswith(
        "citeline: the --profile recall search failed: resource_limit: Limit exceeded: "
    )
    assert "--max-response-bytes" in note


# -- limit errors worded for the command line --------------------------------------------------


def limit(name: str, value: int, maximum: int) -> CitelineError:
    return CitelineError(
        "resource_limit", f"{name} over", {"limit": name, "value": value, "max": maximum}
    )


def test_limit_advice_only_where_the_editor_limits_lift_the_limit() -> None:
    advice = "Or raise every limit at once with --raise-limits."
    default, editor = Limits().max_files, Limits.editor().max_files
    # over the default, within the editor limit: --raise-limits would do
    lifted = with_limit_advice(limit("max_files", default + 1, default), advice)
    assert lifted.message == f"max_files over {advice}"
    assert lifted.details == {"limit": "max_files", "value": default + 1, "max": default}
    at_editor = with_limit_advice(limit("max_files", editor, default), advice)
    assert at_editor.message.endswith(advice)
    # beyond the editor limit too, or with the limit already at it: it would not
    assert with_limit_advice(limit("max_files", editor + 1, default), advice).message == (
        "max_files over"
    )
    assert with_limit_advice(limit("max_files", editor, editor - 1), advice).message == (
        f"max_files over {advice}"
    )
    assert with_limit_advice(limit("max_files", editor + 5, editor), advice).message == (
        "max_files over"
    )
    # a limit the editor limits leave as it is
    same = Limits().max_file_bytes
    assert Limits.editor().max_file_bytes == same
    assert with_limit_advice(limit("max_file_bytes", same + 1, same), advice).message == (
        "max_file_bytes over"
    )
    # not a limit error, or details it cannot read: unchanged
    other = CitelineError("bundle_invalid", "no", {"limit": "max_files", "value": 1, "max": 0})
    assert with_limit_advice(other, advice) is other
    odd = CitelineError("resource_limit", "x", {"limit": "max_files", "value": "many", "max": 1})
    assert with_limit_advice(odd, advice) is odd
    unnamed = CitelineError("resource_limit", "x", {"value": 5, "max": 1})
    assert with_limit_advice(unnamed, advice) is unnamed
    unknown = CitelineError("resource_limit", "x", {"limit": "max_moons", "value": 5, "max": 1})
    assert with_limit_advice(unknown, advice) is unknown


def test_recall_request_keeps_the_options_but_match() -> None:
    request = {"query": "q", "match": "all", "stemming": "none", "limit": 50}
    assert cli.recall_request(request) == {
        "query": "q",
        "stemming": "none",
        "profile": "recall",
        "limit": 5,
    }
    assert cli.recall_request({"query": "q", "limit": 2})["limit"] == 2
    assert cli.recall_request({"query": "q"})["limit"] == 5
