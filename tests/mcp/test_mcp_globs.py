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
