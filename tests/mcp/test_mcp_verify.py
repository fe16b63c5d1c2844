"""MCP verify_citations over stdio (SPEC §18): search, edit the files, verify."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mcp import bundle as bundle  # the fixture
from test_mcp import mcp_session, structured, text_of

pytest.importorskip("mcp")

from citeline.engine.contracts import validate


async def test_verify_citations_after_edits(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        searched = await session.call_tool("search_sections", {"query": "installer"})
        found = searched.structured_content
        assert isinstance(found, dict)
        (hit,) = [h for h in found["hits"] if h["heading"] == "Installing citeline"]
        assert hit["path"] == "guide.md"
        res = await session.call_tool("verify_citations", {"citations": [hit]})
        data = structured(res, "verify_citations")
        validate("verify.result", data)
        assert [r["status"] for r in data["results"]] == ["valid"]
        a, b = hit["line_start"], hit["line_end"]
        assert f"valid guide.md:{a}-{b}" in text_of(res)
        guide = bundle / "guide.md"
        guide.write_text(guide.read_text().replace("Intro paragraph.\n", "Intro.\nMore.\n"))
        (bundle / "gone.md").write_text("# Gone\n")
        res = await session.call_tool(
            "verify_citations",
            {"citations": [hit, {"path": "notes/zh.md", "line": 3, "text": "nothing"}]},
        )
        data = structured(res, "verify_citations")
        validate("verify.result", data)
        assert [r["status"] for r in data["results"]] == ["moved", "missing"]
        lines = text_of(res).splitlines()
        assert lines[1] == f"moved guide.md:{a}-{b} → guide.md:{a + 1}-{b + 1}"
        assert lines[2] == "missing notes/zh.md:3 · file exists"


async def test_verify_citations_bad_request_is_a_tool_error(bundle: Path) -> None:
    from test_mcp import envelope

    async with mcp_session(bundle) as session:
        res = await session.call_tool("verify_citations", {"citations": []})
    assert envelope(res)["code"] == "schema_validation"
