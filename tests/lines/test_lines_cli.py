"""`citeline lines`: human output, --json, exit codes (SPEC §8, §10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bundles import write_bundle as bundle

from citeline.engine.contracts import validate


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citeline.lsp.cli", "lines", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return bundle(
        tmp_path / "docs",
        {
            "guide.md": "# Guide\n\nUse Get-Process here.\nget-process again\n",
            "sub/zh.md": "# 插件\n\n启用 插件 配置\n",
            "index.md": "Get-Process in the reserved index\n",
        },
    )


def test_human_output_is_path_line_column_text(docs: Path) -> None:
    out = cli(docs, "-F", "Get-Process", "--color", "never")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "guide.md:3:5: Use Get-Process here."
    assert lines[-1].startswith("1 of 1 match · snapshot ")
    assert len(lines) == 2


def test_human_output_case_insensitive_and_regex(docs: Path) -> None:
    out = cli(docs, "-F", "get-process", "-i", "--color", "never")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:2] == [
        "guide.md:3:5: Use Get-Process here.",
        "guide.md:4:1: get-process again",
    ]
    out = cli(docs, "-e", r"启用\s+插件", "--color", "never")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "sub/zh.md:3:1: 启用 插件 配置"
    out = cli(docs, "-e", "插件", "--color", "never", "-n", "1")
    assert out.stdout.splitlines() == [
        "sub/zh.md:1:3: # 插件",
        out.stdout.splitlines()[1],
    ]
    assert out.stdout.splitlines()[1].startswith("1 of 2 matches · snapshot ")


def test_json_output_is_the_contract(docs: Path) -> None:
    out = cli(docs, "-e", r"(?i)get-\w+", "--json", "-C", "1", "-n", "5")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    validate("lines.result", result)
    assert result["mode"] == "regex"
    assert result["pattern"] == r"(?i)get-\w+"
    assert [(m["path"], m["line"], m["column"]) for m in result["matches"]] == [
        ("guide.md", 3, 5),
        ("guide.md", 4, 1),
    ]
    assert result["matches"][0]["context"] == {
        "before": [""],
        "after": ["get-process again"],
    }
    # The same bytes as the engine produces.
    from citeline.engine import Engine

    direct = Engine().lines(
        docs, {"pattern": r"(?i)get-\w+", "mode": "regex", "context": 1, "limit": 5}
    )
    assert result == direct


def test_nothing_found_exits_1(docs: Path) -> None:
    out = cli(docs, "-F", "no such text")
    assert out.returncode == 1
    assert out.stdout.splitlines()[-1].startswith("0 of 0 matches")
    out = cli(docs, "-F", "no such text", "--json")
    assert out.returncode == 1
    result = json.loads(out.stdout)
    validate("lines.result", result)
    assert result["matches"] == []


@pytest.mark.parametrize(
    "args",
    [
        ("-e", "(a)\\1"),
        ("-e", "(unclosed"),
        ("-F", "x", "-n", "0"),
        ("-F", "x", "-n", "1001"),
        ("-F", "x", "-C", "11"),
        ("-F", "x", "-C", "-1"),
        ("-F", ""),
    ],
)
def test_schema_validation_exits_2(docs: Path, args: tuple[str, ...]) -> None:
    out = cli(docs, *args, "--json")
    assert out.returncode == 2, out.stdout
    envelope = json.loads(out.stdout)
    validate("error", envelope)
    assert envelope["error"]["code"] == "schema_validation"
    plain = cli(docs, *args)
    assert plain.returncode == 2
    assert plain.stdout == ""  # no hit data on error
    assert plain.stderr.startswith("citeline: schema_validation: ")
    assert len(plain.stderr.splitlines()) == 1


def test_invalid_regex_message_reaches_the_user(docs: Path) -> None:
    out = cli(docs, "-e", "(a)\\1")
    assert "invalid escape sequence: \\1" in out.stderr


def test_limits_at_the_bounds_pass(docs: Path) -> None:
    for args in (("-n", "1"), ("-n", "1000"), ("-C", "0"), ("-C", "10")):
        out = cli(docs, "-F", "Get", *args, "--json")
        assert out.returncode == 0, out.stdout
        validate("lines.result", json.loads(out.stdout))


def test_missing_bundle_exits_4(tmp_path: Path) -> None:
    out = cli(tmp_path / "missing", "-F", "x", "--json")
    assert out.returncode == 4
    envelope = json.loads(out.stdout)
    validate("error", envelope)
    assert envelope["error"]["code"] == "bundle_not_found"
    plain = cli(tmp_path / "missing", "-F", "x")
    assert (plain.returncode, plain.stdout) == (4, "")
    assert plain.stderr.startswith("citeline: bundle_not_found: ")


def test_invalid_utf8_exits_5(tmp_path: Path) -> None:
    root = bundle(tmp_path / "b", {"ok.md": "hit\n", "bad.md": b"hit\n\xfe\n"})
    out = cli(root, "-F", "hit", "--json")
    assert out.returncode == 5
    envelope = json.loads(out.stdout)
    validate("error", envelope)
    assert envelope["error"]["code"] == "parse_error"
    assert envelope["error"]["details"]["errors"][0]["path"] == "bad.md"
    assert envelope["error"]["details"]["errors"][0]["line"] == 2
    plain = cli(root, "-F", "hit")
    assert (plain.returncode, plain.stdout) == (5, "")
    assert "bad.md:2" in plain.stderr
