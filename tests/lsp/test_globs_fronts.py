"""The user's globs in the language server (setting `globs`), end to end over the wire:
excluded files are not searched, and the result says which globs applied (the MCP server's
`--glob`: tests/mcp/test_mcp_globs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import write_bundle
from lsp_support import command, serve, symbols

from citeline.engine import CitelineError
from citeline.lsp.settings import parse_settings

FILES = {
    "guide.md": "# Deploying\n\nDeploy the site.\n",
    "old/guide.md": "# Deploying (old)\n\nDeploy the old way.\n",
    "notes/a.markdown": "# Notes\n\nDeploy notes.\n",
}


def test_the_setting_is_parsed_and_validated() -> None:
    assert parse_settings({"globs": ["!old/**", "*.md"]}).engine.globs == ("!old/**", "*.md")
    assert parse_settings(None).engine.globs == ()
    for bad in ("!old/**", ["[x"], [""], [3]):
        with pytest.raises(CitelineError) as err:
            parse_settings({"globs": bad})
        assert err.value.code == "schema_validation"
        assert err.value.details["setting"] == "globs"


async def test_lsp_globs_setting(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", FILES)
    async with serve([bundle], {"globs": ["!old/**"]}) as client:
        found = await command(client, "citeline.lines", {"pattern": "Deploy"})
        assert {m["path"] for m in found["matches"]} == {"guide.md", "notes/a.markdown"}
        assert found["globs"] == ["!old/**"]
        res = await command(client, "citeline.search", {"query": "deploy", "profile": "recall"})
        assert "old/guide.md" not in {h["path"] for h in res["hits"]}
        names = {s.location.uri.rsplit("/b/", 1)[1] for s in await symbols(client, "deploy")}
        assert names and "old/guide.md" not in names
