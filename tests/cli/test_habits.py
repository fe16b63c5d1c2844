"""The command line as grep and ripgrep users type it: values that start with '-', argument
errors under --json, names and help, the zero-hit hint, and human lines that start at a word."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.cli import cli, sections
from citeline.engine import Call, Engine, Settings
from citeline.engine.contracts import validate
from citeline.fronts import hits

FILES = {
    "ps.md": "# Remote commands\n\nUse -ComputerName to reach a remote computer.\n\n"
    "## Amending\n\nRun git commit --amend to fix the last commit.\n",
    "search.md": "# Searching\n\nThe engine searches sections and ranks them.\n",
}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cwd=cwd, env={"NO_COLOR": "1"})


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    return write(tmp_path / "docs", FILES)


# -- values that start with '-' ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["-F", "-ComputerName"], "-ComputerName"),
        (["--exact", "-ComputerName"], "-ComputerName"),
        (["-F", "--", "--amend"], "--amend"),
        (["-e", "-{2}amend"], "-{2}amend"),
        (["--exact=--amend"], "--amend"),
    ],
)
def test_lines_pattern_may_start_with_a_dash(docs: Path, args: list[str], pattern: str) -> None:
    out = run("lines", str(docs), *args, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["pattern"] == pattern
    assert [(m["path"], m["line"]) for m in result["matches"]] == (
        [("ps.md", 3)] if "Computer" in pattern else [("ps.md", 7)]
    )


def test_search_query_may_start_with_a_dash(docs: Path) -> None:
    out = run("search", str(docs), "-q", "-ComputerName remote", "--json", "--strict")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["query"] == "-ComputerName remote"
    assert result["terms"] == ["computername", "remote"]
    assert [h["line_start"] for h in result["hits"]] == [1]


def test_bind_text_values_leaves_everything_after_a_bare_double_dash() -> None:
    assert cli.bind_text_values(["lines", "-F", "-x", "-i"]) == ["lines", "--exact=-x", "-i"]
    assert cli.bind_text_values(["lines", "-e", "--", "--y"]) == ["lines", "--regex=--y"]
    assert cli.bind_text_values(["search", "--", "-q", "-z"]) == ["search", "--", "-q", "-z"]
    assert cli.bind_text_values(["search", "-q"]) == ["search", "-q"]  # argparse says why


# -- argument errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["search", "-q", "x", "-m", "abc"],
        ["search", "-q", "x", "--profile", "fast"],
        ["search"],
        ["lines", "-F", "x", "-e", "y"],
        ["search", "-q", "x", "--colour", "never"],
    ],
    ids=["not-a-number", "bad-choice", "missing-query", "exclusive", "unknown-flag"],
)
def test_argument_errors_keep_the_json_promise(docs: Path, args: list[str]) -> None:
    out = run(*args, str(docs), "--json")
    assert out.returncode == 2
    assert out.stderr == ""
    envelope = json.loads(out.stdout)
    validate("error", envelope)
    assert envelope["error"]["code"] == "schema_validation"
    assert envelope["error"]["details"]["usage"].startswith(f"usage: citeline {args[0]}")
    plain = run(*args, str(docs))
    assert plain.returncode == 2 and plain.stdout == ""
    assert plain.stderr.startswith(f"usage: citeline {args[0]}")
    assert f"citeline {args[0]}: error: " in plain.stderr


def test_version() -> None:
    from importlib.metadata import version

    out = run("--version")
    assert (out.returncode, out.stdout) == (0, f"citeline {version('citeline')}\n")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    top = cli.parser()
    (action,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": top, **action.choices}


def test_every_option_has_help_and_no_help_cites_the_spec() -> None:
    for name, parser in _subparsers().items():
        for action in parser._actions:
            assert action.help, (name, action.option_strings or action.dest)
        text = parser.format_help()
        assert "SPEC" not in text and "§" not in text, name
    assert "docs/relevance.md" in _subparsers()["search"].format_help()
    for name in ("search", "concepts", "lines", "mcp"):
        assert "docs/limits.md" in _subparsers()[name].format_help()


def test_one_flag_one_meaning(docs: Path) -> None:
    """-C is lines of context everywhere; the relevance option `context` is --scope."""
    outline = run("search", str(docs), "-q", "remote amending", "--scope", "outline", "--json")
    result = json.loads(outline.stdout)
    assert result["options"]["context"] == "outline"
    assert result["hits"][0]["heading"] == "Amending"
    wrong = run("search", str(docs), "-q", "x", "-C", "outline")
    assert wrong.returncode == 2
    assert "--scope outline" in wrong.stderr
    context = run("search", str(docs), "-q", "amend", "-C", "1", "--strict")
    assert context.stdout.splitlines()[1:] == [
        "  6-",
        "  7: Run git commit --amend to fix the last commit.",
    ]
    # lines: -m is the count, as in rg; -n (line numbers) is accepted and changes nothing.
    counted = run("lines", str(docs), "-F", "e", "-m", "2", "-n", "--json")
    assert len(json.loads(counted.stdout)["matches"]) == 2
    assert (
        run("lines", str(docs), "-F", "e", "-n").stdout == run("lines", str(docs), "-F", "e").stdout
    )


def test_errors_name_the_command_line_flags(docs: Path) -> None:
    regex = run("lines", str(docs), "-e", "(a)\\1")
    assert regex.stderr.startswith("citeline: schema_validation: -e/--regex is not a valid RE2")
    assert "search the literal text with -F" in regex.stderr and "mode" not in regex.stderr
    count = run("search", str(docs), "-q", "x", "-m", "0")
    assert count.stderr.startswith("citeline: schema_validation: -m/--max-count must be ")
    query = run("search", str(docs), "-q", "!!")
    assert query.stderr.startswith("citeline: schema_validation: -q/--query must contain ")
    # The envelope keeps the engine's details.
    js = json.loads(run("lines", str(docs), "-F", "x", "-C", "11", "--json").stdout)
    assert js["error"]["message"].startswith("-C/--context must be ")
    assert js["error"]["details"] == {"field": "context"}


# -- people who get nothing ---------------------------------------------------------------------


def test_no_hit_shows_the_best_recall_sections(docs: Path) -> None:
    out = run("search", str(docs), "-q", "remote zeppelin", "--strict")
    assert out.returncode == 1  # the contract found nothing
    lines = out.stdout.splitlines()
    assert lines[0] == "No section holds every word of the query."
    assert lines[1] == "Best sections with --profile recall, which accepts any of the words:"
    recall = Engine().search(
        Call(docs, Settings()), {"query": "remote zeppelin", "profile": "recall", "limit": 5}
    )
    heads = [line for line in lines if line.startswith(str(docs))]
    assert len(heads) == len(recall["hits"]) >= 1
    assert heads[0].startswith(f"{docs / 'ps.md'}:1: Remote commands  ")
    assert "matched: remote; missing: zeppelin" in heads[0]
    # --json is the contract's empty result, unchanged.
    strict = run("search", str(docs), "-q", "remote zeppelin", "--json", "--strict")
    js = json.loads(strict.stdout)
    assert js["total"] == 0 and js["hits"] == [] and "options" not in js
    # Without --strict, recall is the search itself: its hits, no notice.
    default = run("search", str(docs), "-q", "remote zeppelin")
    assert default.returncode == 0 and default.stdout.startswith(f"{docs / 'ps.md'}:1: ")


def test_no_hit_at_all_says_so_in_one_line(docs: Path) -> None:
    out = run("search", str(docs), "-q", "zeppelin", "--strict")
    assert out.returncode == 1
    assert out.stdout == (
        "No section holds every word of the query. None holds any of them either "
        "(--profile recall).\n"
    )
    # Asked for any word already: nothing else to suggest, nothing printed (like grep).
    assert run("search", str(docs), "-q", "zeppelin", "--match", "any").stdout == ""
    assert run("search", str(docs), "-q", "zeppelin").stdout == ""  # recall: the default


def test_stemmed_words_are_shown_as_typed(docs: Path) -> None:
    out = run("search", str(docs), "-q", "Searching engines", "--stemming", "english")
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()[0]
    assert head.startswith(f"{docs / 'search.md'}:1: Searching  ")
    assert "matched: Searching, engines)" in head  # the words typed, not `search`, `engin`


# -- lines that start at a word -----------------------------------------------------------------


def test_long_line_is_cut_at_word_boundaries(tmp_path: Path) -> None:
    words = " ".join(f"word{i:03d}" for i in range(60))
    root = write(tmp_path / "d", {"a.md": f"# A\n\n{words} needle {words}\n"})
    out = run("search", str(root), "-q", "needle")
    shown = out.stdout.splitlines()[1]
    assert shown.startswith("  3: …word") and shown.endswith("…")
    body = shown[len("  3: …") : -1]
    assert "needle" in body and body in words + " needle " + words
    # Whole words only: each cut falls on a space of the original line.
    line = f"{words} needle {words}"
    start = line.index(body)
    assert line[start - 1] == " " and line[start + len(body)] == " "
    assert len(body) <= sections.WIDTH


def test_clip_keeps_spans_on_the_same_text() -> None:
    text = "alpha " * 40 + "needle " + "omega " * 40
    start = text.index("needle")
    clipped, spans = sections.clip(text, ((start, start + 6),))
    ((s, e),) = spans
    assert clipped[s:e] == "needle"
    assert clipped.startswith("…alpha") and clipped.endswith("omega…")
    assert sections.clip("short needle", ((6, 12),)) == ("short needle", ((6, 12),))


def test_snippet_cut_mid_word_starts_at_the_next_word() -> None:
    """When a hit's file changed after the search, the contract's snippet is drawn; a
    snippet that starts 80 code points before its first match begins at a word."""
    snippet = "ntinued words before the match " + "x" * 49 + " needle here"
    start = len(snippet.encode()) - len("needle here")
    hit = {
        "path": "a.md",
        "line_start": 10,
        "line_end": 12,
        "snippet": snippet,
        "match_spans": [{"start": start, "end": start + 6}],
    }
    jump, shown = sections.snippet_lines(hit, 0)
    (line,) = shown
    assert line is not None and line.number is None  # unknown: the snippet was cut
    assert line.text.startswith("…words before")
    assert line.text[line.spans[0][0] : line.spans[0][1]] == "needle"
    assert jump == 10


def test_changed_file_falls_back_to_the_snippet(docs: Path) -> None:
    result = Engine().search(Call(docs, Settings()), {"query": "amend"})
    (docs / "ps.md").write_text("# Changed\n", encoding="utf-8")
    text = sections.render_search(result, False, bundle="docs", sources=hits.Sources(str(docs)))
    head, *body = text.splitlines()
    assert head.startswith("docs/ps.md:7: Amending  (lines 5-7, score ")  # known: from the start
    assert head.endswith(", changed since the search)")
    assert body == ["  7: Run git commit --amend to fix the last commit."]


# -- start-up and the MCP extra -----------------------------------------------------------------


def test_cli_module_imports_no_engine() -> None:
    code = (
        "import sys, citeline.cli.cli as c; "
        "print(sorted(m for m in sys.modules if m.startswith(('citeline.engine', 'mcp', "
        "'citeline.cli.render', 'citeline.cli.sections', 'citeline.cli.style'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_mcp_without_the_sdk_says_what_to_install(tmp_path: Path) -> None:
    hide = (
        "import sys, importlib.abc\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('mcp', 'mcp_types', 'anyio'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from citeline.cli.cli import main\n"
        "sys.exit(main(['mcp', sys.argv[1]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", hide, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == cli.NO_MCP
    assert out.stdout == ""
    assert "Traceback" not in out.stderr
    assert "pip install 'citeline[mcp]'" in out.stderr
