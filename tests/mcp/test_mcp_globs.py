"""`citeline mcp --glob` (ripgrep's -g, as on the command line), end to end over the wire."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import write_bundle
from mcp_pipe import Pipe

pytest.importorskip("mcp")

FILES = {
    "guide.md": "# Deploying\n\nDeploy the site.\n",
    "old/guide.md": "# Deploying (old)\n\nDeploy the old way.\n",
    "notes/a.markdown": "# Notes\n\nDeploy notes.\n",
}


def test_mcp_glob_option(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", FILES)
    server = Pipe(bundle, "--glob", "!old/**", "-g", "!*.markdown")
    try:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "search_lines", "arguments": {"pattern": "Deploy"}},
            }
        )
        answer = server.answer()
    finally:
        server.close()
    result = answer["result"]["structuredContent"]
    assert {m["path"] for m in result["matches"]} == {"guide.md"}
    assert result["globs"] == ["!old/**", "!*.markdown"]


def test_mcp_text_names_the_preamble_by_title(tmp_path: Path) -> None:
    """As the command line and the language server: front matter title, else first H1."""
    bundle = write_bundle(
        tmp_path / "b",
        {
            "titled.md": "---\ntitle: Deploy guide\n---\nDeploy intro.\n\n# Other\n\nx\n",
            "h1.md": "Deploy first.\n\n# The H1 title\n\ny\n",
        },
    )
    server = Pipe(bundle)
    try:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 8,
                "method": "tools/call",
                "params": {
                    "name": "search_sections",
                    "arguments": {"query": "deploy intro first", "profile": "recall"},
                },
            }
        )
        answer = server.answer()
    finally:
        server.close()
    text = answer["result"]["content"][0]["text"]
    assert "(text before the first heading)" not in text
    assert "· Deploy guide" in text or '· "Deploy guide"' in text, text
    assert "The H1 title" in text, text
    hits = answer["result"]["structuredContent"]["hits"]
    assert {h["heading"] for h in hits if h["path"] == "h1.md" and h["line_start"] == 1} == {""}
