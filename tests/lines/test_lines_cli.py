"""`citeline lines`: human output (rg's --column format), --json, exit codes (SPEC §8, §10)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from bundles import write_bundle as bundle
from inprocess import run_cli

from citeline.engine import Call, Engine, Settings
from citeline.engine.contracts import validate


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(["lines", *args], cwd=cwd, env={"NO_COLOR": None})


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
    """As `rg --column`: path (as typed) : line : column : text, one line per match."""
    out = cli("docs", "-F", "Get-Process", cwd=docs.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "docs/guide.md:3:5:Use Get-Process here.\n"
    assert out.stderr == ""  # the summary is not mixed into what pipes read
    inside = cli("-F", "Get-Process", "--stats", cwd=docs)
    assert inside.stdout == "guide.md:3:5:Use Get-Process here.\n"
    assert inside.stderr.startswith("1 of 1 match · snapshot ")
    assert "index.md at the root is not searched" in inside.stderr


def test_human_output_case_insensitive_and_regex(docs: Path) -> None:
    out = cli("-F", "get-process", "-i", cwd=docs)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "guide.md:3:5:Use Get-Process here.",
        "guide.md:4:1:get-process again",
    ]
    out = cli("-e", r"启用\s+插件", cwd=docs)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "sub/zh.md:3:1:启用 插件 配置\n"
    out = cli("-e", "插件", "-m", "1", "--stats", cwd=docs)
    assert out.stdout == "sub/zh.md:1:3:# 插件\n"
    revision = Engine().capture(Call(docs, Settings())).revision
    assert out.stderr.startswith(f"1 of 2 matches · snapshot {revision[:6]}")
    # Case-insensitive means found whatever the case of the pattern; sensitive, not.
    upper = cli("-F", "GET-PROCESS", "-i", cwd=docs)
    assert upper.stdout.splitlines() == [
        "guide.md:3:5:Use Get-Process here.",
        "guide.md:4:1:get-process again",
    ]
    assert cli("-F", "GET-PROCESS", cwd=docs).returncode == 1


def test_one_stdout_line_per_match_when_piped(docs: Path) -> None:
    out = cli(docs, "-F", "e", "-i")
    total = json.loads(cli(docs, "-F", "e", "-i", "--json").stdout)["total"]
    assert total == 3 and len(out.stdout.splitlines()) == total


def test_context_lines_like_grep(tmp_path: Path) -> None:
    root = bundle(tmp_path / "c", {"a.md": "".join(f"line {i}\n" for i in range(1, 13))})
    out = cli("-e", "line (3|5|11)$", "-C", "1", cwd=root)
    assert out.stdout.splitlines() == [
        "a.md-2-line 2",
        "a.md:3:1:line 3",
        "a.md-4-line 4",
        "a.md:5:1:line 5",
        "a.md-6-line 6",
        "--",
        "a.md-10-line 10",
        "a.md:11:1:line 11",
        "a.md-12-line 12",
    ]
    # Without -C no context is shown, as with grep and rg.
    assert cli("-e", "line 3$", cwd=root).stdout == "a.md:3:1:line 3\n"


def test_color_always_highlights_each_match(docs: Path) -> None:
    out = cli("-F", "get-process", "-i", "--color", "always", cwd=docs)
    red, reset = "\x1b[1;31m", "\x1b[0m"
    assert f"{red}Get-Process{reset}" in out.stdout
    assert f"{red}get-process{reset}" in out.stdout
    regex = cli("-e", "[a-z]+-process", "--color", "always", cwd=docs)
    assert f"{red}get-process{reset} again" in regex.stdout
    assert "\x1b[" not in cli("-F", "Get", cwd=docs).stdout


def test_skip_invalid_names_the_skipped_files(tmp_path: Path) -> None:
    """The skipped files are said in human output too (they were dropped: issue 18)."""
    root = bundle(tmp_path / "b", {"ok.md": "hit\n", "bad.md": b"hit\n\xfe\n"})
    out = cli("-F", "hit", "--skip-invalid", cwd=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok.md:1:1:hit\n"
    reason = json.loads(cli("-F", "hit", "--skip-invalid", "--json", cwd=root).stdout)["skipped"][0]
    assert out.stderr == f"citeline: skipped 1 unparsable file: bad.md:2: {reason['reason']}\n"
    # The default skips them too (SPEC §17), and says so the same way.
    default = cli("-F", "hit", cwd=root)
    assert (default.returncode, default.stdout, default.stderr) == (0, out.stdout, out.stderr)


def test_json_output_is_the_contract(docs: Path) -> None:
    out = cli(docs, "-e", r"(?i)get-\w+", "--json", "-C", "1", "-m", "5", "--strict")
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
    direct = Engine().lines(
        Call(docs, Settings()),
        {"pattern": r"(?i)get-\w+", "mode": "regex", "context": 1, "limit": 5, "strict": True},
    )
    assert result == direct and result["strict"] is True
    # By default (SPEC §17) the same matches, and the (empty) list of skipped files.
    relaxed = json.loads(cli(docs, "-e", r"(?i)get-\w+", "--json", "-C", "1", "-m", "5").stdout)
    del direct["strict"]
    assert relaxed == {**direct, "skipped": []}


def test_nothing_found_exits_1(docs: Path) -> None:
    out = cli(docs, "-F", "no such text", "--stats")
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.startswith("0 of 0 matches")
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
        ("-F", "x", "-m", "0"),
        ("-F", "x", "--max-count", "1001"),
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
    assert "-e/--regex is not a valid RE2 regular expression" in out.stderr


def test_limits_at_the_bounds_pass(docs: Path) -> None:
    for args in (("-m", "1"), ("--limit", "1000"), ("-C", "0"), ("-C", "10")):
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
    out = cli(root, "-F", "hit", "--json", "--strict")
    assert out.returncode == 5
    envelope = json.loads(out.stdout)
    validate("error", envelope)
    assert envelope["error"]["code"] == "parse_error"
    assert envelope["error"]["details"]["errors"][0]["path"] == "bad.md"
    assert envelope["error"]["details"]["errors"][0]["line"] == 2
    plain = cli(root, "-F", "hit", "--strict")
    assert (plain.returncode, plain.stdout) == (5, "")
    assert "bad.md:2" in plain.stderr
    # By default the file is skipped and listed (SPEC §17): the search goes on.
    relaxed = cli(root, "-F", "hit", "--json")
    assert relaxed.returncode == 0
    assert [s["path"] for s in json.loads(relaxed.stdout)["skipped"]] == ["bad.md"]
