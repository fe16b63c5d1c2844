"""The MCP front (`citeline mcp`), driven end to end by the SDK's own stdio client."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write
from inprocess import in_process, mcp_front

pytest.importorskip("mcp")
pytest.importorskip("mcp_types")  # the SDK 2.x layout

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.contracts import schema, validate
from citeline.engine.operations import OPERATIONS
from citeline.fronts.hits import Sources
from citeline.mcp_server.server import success
from citeline.mcp_server.text import NO_HIT_ANY, NO_HIT_HINT, fenced, render_text
from citeline.mcp_server.tools import PARAMETERS, wire_schema

CLI = [sys.executable, "-m", "citeline.cli.cli"]
TOOLS = {
    "search_sections": "search",
    "search_concepts": "concepts",
    "search_lines": "lines",
    "verify_citations": "verify",
}

RESULT_KEYS = {
    "hits": "search_sections",
    "concepts": "search_concepts",
    "matches": "search_lines",
    "results": "verify_citations",
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


SERVED: list[Path] = []  # the bundle of the session open now (structured() renders from it)


@contextlib.asynccontextmanager
async def mcp_session(bundle: Path, *flags: str) -> AsyncIterator[ClientSession]:
    """`citeline mcp [flags] <bundle>` as a subprocess, with an initialised client session
    (in this process under mutation testing: tests/inprocess.py)."""
    SERVED[:] = [bundle]
    if in_process():
        from mcp import Client

        # "legacy": the initialize handshake, as the stdio ClientSession below makes it
        front = mcp_front([*flags, str(bundle)])
        async with Client(front.server, mode="legacy") as client:
            yield client  # type: ignore[misc]  # the calls the tests make are the same
        return
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli.cli", "mcp", *flags, str(bundle)],
    )
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def structured(result: types.CallToolResult, tool: str | None = None) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict)
    if tool is None:
        (tool,) = [t for key, t in RESULT_KEYS.items() if key in data]
    # The text block is the compact rendering of that very result (the skipped files named
    # once per change of their list, so a repeat may leave them out).
    quiet = {k: v for k, v in data.items() if k != "skipped"}
    sources = Sources(str(SERVED[0])) if SERVED else None
    assert text_of(result) in (render_text(tool, data, sources), render_text(tool, quiet, sources))
    assert data["snapshot_revision"] in text_of(result)
    return data


def envelope(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error
    assert result.structured_content is None  # see mcp_server/server.py: failure()
    data = json.loads(text_of(result))
    validate("error", data)
    assert text_of(result) == encode(data)
    return data["error"]


def without_identity(contract: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in contract.items() if k not in ("$schema", "$id")}


def without_descriptions(served: dict[str, Any], contract: dict[str, Any]) -> dict[str, Any]:
    """The served schema with each parameter's description put back as the contract has it."""
    out = json.loads(json.dumps(served))
    for key, prop in out.get("properties", {}).items():
        prop.pop("description", None)
        if "description" in contract["properties"][key]:
            prop["description"] = contract["properties"][key]["description"]
    return out


# -- tools/list ------------------------------------------------------------------------------


async def test_list_tools_serves_the_contract_schemas(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == set(TOOLS)
    for name, contract in TOOLS.items():
        tool = tools[name]
        request = without_identity(schema(f"{contract}.request"))
        assert without_descriptions(tool.input_schema, request) == request
        results = OPERATIONS[contract].result_contracts  # lines: §8's and semantic mode's
        served = [without_identity(schema(n)) for n in results]
        assert tool.output_schema == (
            served[0] if len(served) == 1 else {**tool.output_schema, "oneOf": served}
        )
        assert tool.input_schema == wire_schema(f"{contract}.request")
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description and str(bundle) in tool.description
        # Every parameter is described for an agent (SPEC §14), from PARAMETERS.
        for key, prop in tool.input_schema["properties"].items():
            assert key in PARAMETERS[contract], (name, key)
            assert prop["description"].startswith(PARAMETERS[contract][key][:20]), (name, key)
        assert "{" not in json.dumps(
            [p["description"] for p in tool.input_schema["properties"].values()]
        ).replace("{start,end}", ""), "an unfilled placeholder"
    search_params = tools["search_sections"].input_schema["properties"]
    assert 'profile="recall"' in search_params["query"]["description"]
    assert "bytes" in search_params["limit"]["description"]
    assert "match=any" in search_params["profile"]["description"]
    assert "bytes" in tools["search_lines"].input_schema["properties"]["limit"]["description"]
    for name in TOOLS:  # each tool tells when to ask for recall
        assert "recall" in (tools[name].description or ""), name
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
        "When to use",
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
        result = await session.call_tool(
            "search_sections", {"query": "ordered hashtable", "strict": True}
        )
    data = structured(result)
    validate("search.result", data)
    assert data["terms"] == ["ordered", "hashtable"]
    assert "options" not in data and data["strict"] is True  # okf's contract
    assert (
        data["snapshot_revision"]
        == Engine().search(Call(bundle, Settings()), {"query": "x y"})["snapshot_revision"]
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
        strict = structured(
            await session.call_tool("search_sections", {"query": "网关", "strict": True})
        )
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
        "structure": "fields",
    }
    assert recall["hits"][0]["path"] == "notes/zh.md"
    assert "outline" in recall["hits"][0]
    assert len(limited["hits"]) == 1 and limited["truncated"] is True


# -- the text content ------------------------------------------------------------------------

# A path is bare, or a JSON string when it holds a space, a quote, `·`... (issue 49).
HIT_LINE = re.compile(
    r'^\[(\d+)\] ("(?:[^"\\]|\\.)*"|[^\s"]+) lines (\d+)-(\d+) · sha256 ([0-9a-f]{64}) · '
)


def cited_from_text(text: str) -> list[tuple[str, int, int, str, str]]:
    """(path, line_start, line_end, sha256, snippet) of each hit, read from the text alone."""
    lines = text.split("\n")
    cited = []
    i = 0
    while i < len(lines):
        m = HIT_LINE.match(lines[i])
        i += 1
        if not m:
            continue
        while not lines[i].startswith("```"):  # an optional matched/missing line
            i += 1
        fence = lines[i]
        end = lines.index(fence, i + 1)
        snippet = "\n".join(lines[i + 1 : end])
        path = json.loads(m[2]) if m[2].startswith('"') else m[2]
        cited.append((path, int(m[3]), int(m[4]), m[5], snippet))
        i = end + 1
    return cited


async def test_text_lets_an_agent_verify_every_citation(bundle: Path) -> None:
    """SPEC §14: from the text content alone, each hit's file, lines, SHA-256 and snippet."""
    async with mcp_session(bundle) as session:
        result = await session.call_tool("search_sections", {"query": "hashtable"})
    data = structured(result)
    text = text_of(result)
    assert text.count(data["snapshot_revision"]) == 1
    cited = cited_from_text(text)
    assert len(cited) == len(data["hits"]) == 2
    for (path, start, end, sha, snippet), hit in zip(cited, data["hits"], strict=True):
        raw = (bundle / path).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == sha
        section = "\n".join(raw.decode("utf-8").split("\n")[start - 1 : end])
        assert snippet.rstrip("\n") in section
        assert snippet.rstrip("\n") == hit["snippet"].rstrip("\n")
    assert any("\r\n" in s for *_, s in cited)  # CRLF travels as it is
    assert "match_spans" not in text and "locator" not in text  # those are structured only


def test_fence_outlasts_backticks_in_the_snippet() -> None:
    snippet = "Use ```` to fence ``` code\n```\nmore"
    block = fenced(snippet)
    first, *body, last = block.split("\n")
    assert first == last == "`````"
    assert "\n".join(body) == snippet
    assert fenced("plain\n") == "```\nplain\n```"


async def test_no_hit_text_says_to_ask_for_recall(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        strict = await session.call_tool(
            "search_sections", {"query": "hashtable walrus", "strict": True}
        )
        loose = await session.call_tool("search_sections", {"query": "walrus", "match": "any"})
    data = structured(strict)
    assert data["hits"] == [] and data["total"] == 0 and "options" not in data
    assert data == Engine().search(
        Call(bundle, Settings()), {"query": "hashtable walrus", "strict": True}
    )
    assert NO_HIT_HINT in text_of(strict) and 'profile="recall"' in text_of(strict)
    assert NO_HIT_ANY in text_of(loose) and NO_HIT_HINT not in text_of(loose)


async def test_text_shows_which_words_typed_matched(bundle: Path) -> None:
    request = {
        "query": "Ordering hashtables walrus",
        "stemming": "english",
        "match": "any",
        "strict": True,  # the contract's other options, to show these two
    }
    async with mcp_session(bundle) as session:
        result = await session.call_tool("search_sections", request)
    data = structured(result)
    assert data["terms"] == ["order", "hashtabl", "walrus"]  # the contract's stems stay
    top = data["hits"][0]
    assert top["matched_terms"] == ["order", "hashtabl"]
    lines = text_of(result).split("\n")
    assert lines[1] == "options: match=any, stemming=english"
    assert lines[4] == "matched: Ordering, hashtables; missing: walrus"


def test_compact_text_costs_an_agent_less(tmp_path: Path) -> None:
    """What an agent reads (text + structuredContent as sent) shrinks; docs/mcp.md has the
    figures on real corpora (tests/mcp/sizes.py)."""
    files = {
        f"d/f{i}.md": f"# Topic {i}\n\nA hashtable keeps keys; note {i} on ordered "
        f"hashtable use.\n\n## More {i}\n\nNothing.\n"
        for i in range(25)
    }
    root = write(tmp_path / "many", files)
    for tool, method, args in (
        ("search_sections", Engine().search, {"query": "ordered hashtable"}),
        ("search_lines", Engine().lines, {"pattern": "hashtable"}),
        ("search_concepts", Engine().concepts, {"query": "f"}),
    ):
        data = method(Call(root, Settings()), args)
        before = types.CallToolResult(
            content=[types.TextContent(text=encode(data))], structured_content=data
        )
        after = success(tool, data)
        size = [
            len(r.model_dump_json(by_alias=True, exclude_none=True).encode())
            for r in (before, after)
        ]
        assert size[1] < size[0] * 0.9, (tool, size)


# -- search_concepts and search_lines -------------------------------------------------------


async def test_search_concepts(bundle: Path) -> None:
    async with mcp_session(bundle) as session:
        found = await session.call_tool("search_concepts", {"query": "INSTALL"})
        data = structured(found, "search_concepts")
        everything = structured(
            await session.call_tool("search_concepts", {"query": "/"}), "search_concepts"
        )
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
    assert text_of(found).splitlines() == [
        f'1 of 1 concept for "INSTALL"; snapshot_revision {data["snapshot_revision"]}',
        f'guide.md · "Installation guide" · sha256 {sha}',  # id guide = path minus .md
    ]
    renamed = {**data, "concepts": [{**data["concepts"][0], "concept_id": "install"}]}
    assert render_text("search_concepts", renamed).splitlines()[1] == (
        f'guide.md · id install · "Installation guide" · sha256 {sha}'
    )


async def test_search_lines(bundle: Path) -> None:
    pytest.importorskip("citeline.engine.answer.lines")
    async with mcp_session(bundle) as session:
        exact = structured(
            await session.call_tool("search_lines", {"pattern": "hashtable", "context": 0}),
            "search_lines",
        )
        regex = structured(
            await session.call_tool(
                "search_lines",
                {"pattern": "^#+ (upgrading|ordered)", "mode": "regex", "case_sensitive": False},
            ),
            "search_lines",
        )
        grep = await session.call_tool("search_lines", {"pattern": "Upgrade", "context": 1})
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
    # grep-like text: the path once, line:column:text for a match, line-text for context.
    assert text_of(grep).splitlines() == [
        f'1 of 1 matching line for exact "Upgrade"; snapshot_revision {exact["snapshot_revision"]}',
        "file: guide.md",
        "12-",
        "13:1:Upgrade with pip.",
    ]


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

    strict = {"query": "hashtable", "strict": True}
    async with mcp_session(bundle) as session:
        err = envelope(await session.call_tool("search_sections", strict))
        # With a progress token the engine runs beside a reporter task: same envelope.
        again = envelope(
            await session.call_tool("search_sections", strict, progress_callback=ignore)
        )
        # By default (no strict) the file is skipped and listed: the text says so once per
        # change of the list, structuredContent every time.
        result = await session.call_tool("search_sections", {"query": "hashtable"})
        repeat = await session.call_tool("search_concepts", {"query": "a"})
        (bundle / "broken.md").unlink()
        clean = await session.call_tool("search_sections", {"query": "hashtable"})
    assert again == err
    assert err["code"] == "parse_error"
    assert err["details"]["errors"][0]["path"] == "broken.md"
    data = structured(result)
    validate("search.result", data)
    assert [s["path"] for s in data["skipped"]] == ["broken.md"]
    assert "skipped, cannot be parsed: broken.md:3 (" in text_of(result)
    assert [s["path"] for s in repeat.structured_content["skipped"]] == ["broken.md"]
    assert "skipped" not in text_of(repeat)
    assert clean.structured_content["skipped"] == []
    async with mcp_session(bundle, "--strict") as session:
        (bundle / "broken.md").write_bytes(b"# Broken\n\nbad \xff byte hashtable\n")
        err = envelope(await session.call_tool("search_sections", {"query": "hashtable"}))
    assert err["code"] == "parse_error"


async def test_limit_flags_reach_the_engine(bundle: Path) -> None:
    async with mcp_session(bundle, "--max-files", "2") as session:
        err = envelope(await session.call_tool("search_sections", {"query": "hashtable"}))
    assert err["code"] == "resource_limit"
    assert err["details"]["limit"] == "max_files"
    assert "--max-files" in err["message"] and "--raise-limits" in err["message"]
    async with mcp_session(bundle, "--max-path-bytes", "5") as session:
        path = envelope(await session.call_tool("search_sections", {"query": "hashtable"}))
    assert path["details"]["limit"] == "max_path_bytes"
    assert "--raise-limits" not in path["message"]  # the editor limits keep it as it is


def test_server_refuses_to_start_without_a_bundle(tmp_path: Path) -> None:
    for target, code in ((tmp_path / "missing", "bundle_not_found"), (tmp_path / "f.md", None)):
        if code is None:
            target.write_text("# not a folder\n", encoding="utf-8")
            code = "bundle_invalid"
        out = subprocess.run(
            [sys.executable, "-m", "citeline.cli.cli", "mcp", str(target)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert out.returncode == 4
        assert out.stdout == ""
        assert out.stderr.startswith(f"citeline: {code}: ")
    bad = subprocess.run(
        [sys.executable, "-m", "citeline.cli.cli", "mcp", "--max-tokens", "0", str(tmp_path)],
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
        concepts = structured(
            await session.call_tool("search_concepts", {"query": "guide"}), "search_concepts"
        )
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
        server_command=[sys.executable, "-m", "citeline.cli.cli", "lsp"]
    )
    client = await config.start()
    results = []
    try:
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=pytest_lsp.client_capabilities("neovim@v0.7.0"),
                root_uri=uri,
                workspace_folders=[lsp.WorkspaceFolder(uri=uri, name=bundle.name)],
                # The CLI's and MCP's setting: the server's own default skips unparsable
                # files and lists them (SPEC §11), which adds `skipped` to every result.
                initialization_options={"skip_invalid": False},
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
        ({"query": "ordered hashtable", "strict": True}, ("--strict",)),
        (
            {"query": "installing 网关", "profile": "recall", "strict": True},
            ("--profile", "recall", "--strict"),
        ),
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
    assert data["total"] >= 1
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
    # big enough that analysing it takes well over one progress interval on a fast machine
    bundle = slow_bundle(tmp_path / "slow", files=2000)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_session(bundle) as session:
        result = await session.call_tool(
            "search_sections", {"query": "hashtable"}, progress_callback=on_progress
        )
    data = structured(result)
    assert data["total"] == 2000 * 20 and len(data["hits"]) == 20
    assert seen, "no progress notification during a multi-second call"
    steps = [p for p, _, _ in seen]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert all(m and m.split(":")[0] in ("capture", "analyse") for *_, m in seen)
