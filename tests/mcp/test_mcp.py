"""The MCP front (`citeline mcp`), driven end to end by the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write

pytest.importorskip("mcp")
pytest.importorskip("mcp_types")  # the SDK 2.x layout

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from citeline.engine import Engine
from citeline.engine.contracts import schema, validate
from citeline.engine.present import encode
from citeline.lsp.mcp import wire_schema

CLI = [sys.executable, "-m", "citeline.lsp.cli"]
TOOLS = {
    "search_sections": "search",
    "search_concepts": "concepts",
    "search_lines": "lines",
}

FILES: dict[str, str | bytes] = {
    "guide.md": (
        "---\ntitle: Installation guide\nid: guide\n---\n"
        "Intro paragraph.\n\n"
        "# Installing citeline\n\nRun the installer, then an ordered hashtable check.\n\n"
        "## Upgrading\n\nUpgrade with pip.\n"
    ),
    "notes/hash tables.md": (
        "# Ordered hashtable\n\nAn ordered hashtable keeps insertion order.\r\n"
        "Ünïcode line with a hashtable too.\n"
    ),
    "notes/zh.md": "# 网关配置\n\napisix网关 的配置说明。\n",
    "index.md": "# Index\n\nordered hashtable navigation, never searched\n",
}


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "docs", FILES)


@contextlib.asynccontextmanager
async def mcp_session(bundle: Path, *flags: str) -> AsyncIterator[ClientSession]:
    """`citeline mcp [flags] <bundle>` as a subprocess, with an initialised client session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.lsp.cli", "mcp", *flags, str(bundle)],
    )
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict)
    # The text block is the compact JSON every front writes, byte for byte.
    assert text_of(result) == encode(data)
    assert json.loads(text_of(result)) == data
    return data


def envelope(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error
    assert result.structured_content is None  # see lsp/mcp.py: failure()
    data = json.loads(text_of(result))
    validate("error", data)
    assert text_of(result) == encode(data)
    return data["error"]


def without_identity(contract: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in contract.items() if k not in ("$schema", "$id")}


# -- tools/list ------------------------------------------------------------------------------


async def test_list_tools_serves_the_contract_schemas(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == set(TOOLS)
    for name, contract in TOOLS.items():
        tool = tools[name]
        assert tool.input_schema == without_identity(schema(f"{contract}.request"))
        assert tool.output_schema == without_identity(schema(f"{contract}.result"))
        assert tool.input_schema == wire_schema(f"{contract}.request")
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description and str(bundle) in tool.description
    search = tools["search_sections"].description or ""
    for word in (
        "locator",
        "line_start",
        "1-based, inclusive",
        "content_sha256",
        "SHA-256",
        "snapshot_revision",
        "match_spans",
        "UTF-8 byte offsets",
        "verbatim",
        "verify",
        'profile="recall"',
        "isError",
    ):
        assert word in search, word
    assert set(tools["search_sections"].input_schema["properties"]) >= {
        "query",
        "limit",
        "match",
        "context",
        "cjk",
        "stemming",
        "identifiers",
        "profile",
    }
    assert tools["search_sections"].input_schema["properties"]["profile"]["default"] == "contract"


# -- search_sections -------------------------------------------------------------------------


async def test_search_sections_structured_output_and_citation_verifies(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        result = await session.call_tool("search_sections", {"query": "ordered hashtable"})
    data = structured(result)
    validate("search.result", data)
    assert data["terms"] == ["ordered", "hashtable"]
    assert "options" not in data  # contract defaults
    assert (
        data["snapshot_revision"] == Engine().search(bundle, {"query": "x y"})["snapshot_revision"]
    )
    top = data["hits"][0]
    assert top["path"] == "notes/hash tables.md"
    assert top["locator"] == "notes/hash%20tables.md#L1-L4"
    assert (top["heading"], top["line_start"], top["line_end"]) == ("Ordered hashtable", 1, 4)
    assert {h["path"] for h in data["hits"]} == {"notes/hash tables.md", "guide.md"}
    assert data["total"] == 2 and data["truncated"] is False
    # What the tool description tells an agent to do before citing.
    for hit in data["hits"]:
        raw = (bundle / hit["path"]).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == hit["content_sha256"]
        lines = raw.decode("utf-8").split("\n")
        cited = "\n".join(lines[hit["line_start"] - 1 : hit["line_end"]])
        assert hit["snippet"] in cited
        snippet = hit["snippet"].encode("utf-8")
        for span in hit["match_spans"]:
            word = snippet[span["start"] : span["end"]].decode("utf-8").casefold()
            assert word in hit["matched_terms"]


async def test_search_sections_relevance_options(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        strict = structured(await session.call_tool("search_sections", {"query": "网关"}))
        recall = structured(
            await session.call_tool("search_sections", {"query": "网关", "profile": "recall"})
        )
        limited = structured(
            await session.call_tool("search_sections", {"query": "hashtable", "limit": 1})
        )
    validate("search.result", recall)
    assert strict["total"] == 0 and strict["hits"] == []
    assert recall["options"] == {
        "profile": "recall",
        "match": "any",
        "context": "outline",
        "cjk": "bigrams",
        "stemming": "english",
        "identifiers": "split",
    }
    assert recall["hits"][0]["path"] == "notes/zh.md"
    assert "outline" in recall["hits"][0]
    assert len(limited["hits"]) == 1 and limited["truncated"] is True


async def test_parallel_calls_share_one_engine(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        results = await asyncio.gather(
            *(session.call_tool("search_sections", {"query": "hashtable"}) for _ in range(6))
        )
    texts = {text_of(r) for r in results}
    assert len(texts) == 1


# -- search_concepts and search_lines -------------------------------------------------------


async def test_search_concepts(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        data = structured(await session.call_tool("search_concepts", {"query": "INSTALL"}))
        everything = structured(await session.call_tool("search_concepts", {"query": "/"}))
    validate("concepts.result", data)
    sha = hashlib.sha256((bundle / "guide.md").read_bytes()).hexdigest()
    assert data["concepts"] == [
        {
            "concept_id": "guide",
            "path": "guide.md",
            "title": "Installation guide",
            "content_sha256": sha,
        }
    ]
    assert [c["concept_id"] for c in everything["concepts"]] == ["notes/hash tables", "notes/zh"]
    assert data["snapshot_revision"] == everything["snapshot_revision"]


async def test_search_lines(bundle: Path) -> None:
    pytest.importorskip("citeline.engine.lines")
    async with mcp_session(bundle) as session:
        exact = structured(
            await session.call_tool("search_lines", {"pattern": "hashtable", "context": 0})
        )
        regex = structured(
            await session.call_tool(
                "search_lines",
                {"pattern": "^#+ (upgrading|ordered)", "mode": "regex", "case_sensitive": False},
            )
        )
    for data in (exact, regex):
        validate("lines.result", data)
    assert [(m["path"], m["line"]) for m in exact["matches"]] == [
        ("guide.md", 9),
        ("notes/hash tables.md", 1),
        ("notes/hash tables.md", 3),
        ("notes/hash tables.md", 4),
    ]
    assert all(m["context"] == {"before": [], "after": []} for m in exact["matches"])
    assert [(m["path"], m["line"]) for m in regex["matches"]] == [
        ("guide.md", 11),
        ("notes/hash tables.md", 1),
    ]
    assert exact["snapshot_revision"] == regex["snapshot_revision"]


# -- errors ----------------------------------------------------------------------------------


async def test_errors_are_tool_errors_with_the_envelope(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        no_word = envelope(await session.call_tool("search_sections", {"query": "!!"}))
        extra = envelope(
            await session.call_tool("search_sections", {"query": "a", "colour": "red"})
        )
        missing = envelope(await session.call_tool("search_sections", {}))
        limit = envelope(await session.call_tool("search_concepts", {"query": "a", "limit": 0}))
        option = envelope(
            await session.call_tool("search_sections", {"query": "a", "match": "some"})
        )
        semantic = envelope(
            await session.call_tool("search_lines", {"pattern": "a", "mode": "semantic"})
        )
        with pytest.raises(MCPError):
            await session.call_tool("search_everything", {"query": "a"})
        # The server is still serving after all that.
        ok = structured(await session.call_tool("search_sections", {"query": "hashtable"}))
    for err in (no_word, extra, missing, limit, option, semantic):
        assert err["code"] == "schema_validation", err
        assert err["message"]
    assert extra["details"]["fields"] == ["colour"]
    assert ok["total"] == 2


async def test_bundle_deleted_while_serving(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        structured(await session.call_tool("search_sections", {"query": "hashtable"}))
        shutil.rmtree(bundle)
        err = envelope(await session.call_tool("search_sections", {"query": "hashtable"}))
        concepts_err = envelope(await session.call_tool("search_concepts", {"query": "a"}))
    assert err["code"] == concepts_err["code"] == "bundle_not_found"
    assert err["details"]["bundle"] == str(bundle)


async def test_parse_error_and_skip_invalid_flag(bundle: Path) -> None:
    (bundle / "broken.md").write_bytes(b"# Broken\n\nbad \xff byte hashtable\n")

    async def ignore(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with mcp_session(bundle) as session:
        err = envelope(await session.call_tool("search_sections", {"query": "hashtable"}))
        # With a progress token the engine runs beside a reporter task: same envelope.
        again = envelope(
            await session.call_tool(
                "search_sections", {"query": "hashtable"}, progress_callback=ignore
            )
        )
    assert again == err
    assert err["code"] == "parse_error"
    assert err["details"]["errors"][0]["path"] == "broken.md"
    async with mcp_session(bundle, "--skip-invalid") as session:
        data = structured(await session.call_tool("search_sections", {"query": "hashtable"}))
    validate("search.result", data)
    assert [s["path"] for s in data["skipped"]] == ["broken.md"]


async def test_limit_flags_reach_the_engine(bundle: Path) -> None:
    async with mcp_session(bundle, "--max-files", "2") as session:
        err = envelope(await session.call_tool("search_sections", {"query": "hashtable"}))
    assert err["code"] == "resource_limit"
    assert err["details"]["limit"] == "max_files"


def test_server_refuses_to_start_without_a_bundle(tmp_path: Path) -> None:
    for target, code in ((tmp_path / "missing", "bundle_not_found"), (tmp_path / "f.md", None)):
        if code is None:
            target.write_text("# not a folder\n", encoding="utf-8")
            code = "bundle_invalid"
        out = subprocess.run(
            [sys.executable, "-m", "citeline.lsp.cli", "mcp", str(target)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert out.returncode == 4
        assert out.stdout == ""
        assert out.stderr.startswith(f"citeline: {code}: ")
    bad = subprocess.run(
        [sys.executable, "-m", "citeline.lsp.cli", "mcp", "--max-tokens", "0", str(tmp_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert bad.returncode == 2 and "schema_validation" in bad.stderr


# -- fresh snapshot per call -----------------------------------------------------------------


async def test_every_call_captures_a_fresh_snapshot(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        first = structured(await session.call_tool("search_sections", {"query": "walrus"}))
        again = structured(await session.call_tool("search_sections", {"query": "walrus"}))
        target = bundle / "guide.md"
        target.write_bytes(target.read_bytes() + b"\n## Walrus\n\nA walrus appears.\n")
        edited = structured(await session.call_tool("search_sections", {"query": "walrus"}))
        concepts = structured(await session.call_tool("search_concepts", {"query": "guide"}))
    assert first["total"] == 0
    assert again["snapshot_revision"] == first["snapshot_revision"]
    assert edited["snapshot_revision"] != first["snapshot_revision"]
    assert edited["total"] == 1 and edited["hits"][0]["heading"] == "Walrus"
    sha = hashlib.sha256(target.read_bytes()).hexdigest()
    assert edited["hits"][0]["content_sha256"] == sha
    assert concepts["snapshot_revision"] == edited["snapshot_revision"]


# -- one engine, three fronts ----------------------------------------------------------------


def cli_search(bundle: Path, query: str, *flags: str) -> str:
    out = subprocess.run(
        [*CLI, "search", str(bundle), "--json", "--query", query, *flags],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    assert out.stdout.endswith("\n") and out.stdout.count("\n") == 1
    return out.stdout[:-1]


async def lsp_search(bundle: Path, requests: list[dict[str, Any]]) -> list[Any]:
    """`citeline lsp` on one workspace folder: workspace/executeCommand citeline.search."""
    pytest_lsp = pytest.importorskip("pytest_lsp")
    from lsprotocol import types as lsp
    from pygls.uris import from_fs_path

    uri = from_fs_path(str(bundle))
    assert uri is not None
    config = pytest_lsp.ClientServerConfig(
        server_command=[sys.executable, "-m", "citeline.lsp.cli", "lsp"]
    )
    client = await config.start()
    results = []
    try:
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=pytest_lsp.client_capabilities("neovim@v0.7.0"),
                root_uri=uri,
                workspace_folders=[lsp.WorkspaceFolder(uri=uri, name=bundle.name)],
            )
        )
        for request in requests:
            results.append(
                await client.workspace_execute_command_async(
                    lsp.ExecuteCommandParams(
                        command="citeline.search", arguments=[{**request, "root": uri}]
                    )
                )
            )
        await client.shutdown_session()
    finally:
        await client.stop()
    return results


@pytest.mark.parametrize(
    ("request_", "flags"),
    [
        ({"query": "ordered hashtable"}, ()),
        ({"query": "installing 网关", "profile": "recall"}, ("--profile", "recall")),
    ],
    ids=["contract", "recall"],
)
async def test_cli_mcp_and_lsp_agree_byte_for_byte(
    bundle: Path, request_: dict[str, Any], flags: tuple[str, ...]
) -> None:
    from_cli = cli_search(bundle, request_["query"], *flags)
    async with mcp_session(bundle) as session:
        result = await session.call_tool("search_sections", request_)
    data = structured(result)
    from_mcp = text_of(result)
    assert data["total"] >= 1
    assert from_mcp == from_cli
    assert encode(data) == from_cli
    if not (Path(__file__).resolve().parents[2] / "lsp" / "server.py").exists():
        pytest.skip("lsp/server.py (citeline lsp) does not exist yet")
    (from_lsp,) = await lsp_search(bundle, [request_])
    assert isinstance(from_lsp, dict)
    assert from_lsp["snapshot_revision"] == data["snapshot_revision"]
    assert encode(from_lsp) == from_cli


# -- progress and cancellation ---------------------------------------------------------------


def slow_bundle(root: Path, files: int = 300) -> Path:
    """Distinct files (the engine memoises analyses by SHA-256), slow enough to watch."""
    for i in range(files):
        body = "".join(
            f"# Heading {i} {j}\n\nword{i} text {j} hashtable alpha beta gamma.\n\n"
            for j in range(20)
        )
        write(root, {f"d{i // 50}/f{i}.md": body})
    return root


async def test_progress_notifications_during_a_long_call(tmp_path: Path) -> None:
    bundle = slow_bundle(tmp_path / "slow")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_session(bundle) as session:
        result = await session.call_tool(
            "search_sections", {"query": "hashtable"}, progress_callback=on_progress
        )
    data = structured(result)
    assert data["total"] == 300 * 20 and len(data["hits"]) == 20
    assert seen, "no progress notification during a multi-second call"
    steps = [p for p, _, _ in seen]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert all(m and m.split(":")[0] in ("capture", "analyse") for *_, m in seen)


async def test_cancelled_call_leaves_the_server_serving(tmp_path: Path) -> None:
    bundle = slow_bundle(tmp_path / "slow", files=600)
    async with mcp_session(bundle) as session:
        started = asyncio.get_running_loop().time()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                await session.call_tool("search_sections", {"query": "hashtable"})
        assert asyncio.get_running_loop().time() - started < 5
        lines = structured(
            await session.call_tool("search_lines", {"pattern": "word7 ", "limit": 1})
        )
    assert lines["total"] == 20 and lines["truncated"] is True
