"""Read-only features over one server (module-scoped: one start-up for the whole module)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_support import DOCS, INIT_RESULTS, command, serve, symbols, uri_of, write_files
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from citeline.engine.contracts import validate

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("ws") / "docs", DOCS)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(folder: Path) -> AsyncIterator[LanguageClient]:
    async with serve([folder]) as c:
        yield c


async def test_initialize_advertises_features(client: LanguageClient) -> None:
    caps = INIT_RESULTS[client].capabilities
    assert caps.workspace_symbol_provider
    assert caps.document_symbol_provider
    assert caps.execute_command_provider is not None
    assert set(caps.execute_command_provider.commands) == {
        "citeline.search",
        "citeline.lines",
        "citeline.concepts",
        "citeline.verify",
    }


async def test_symbol_prefix_as_you_type(client: LanguageClient, folder: Path) -> None:
    found = await symbols(client, "ordered hasht")
    assert found, "the last term must match as a prefix"
    top = found[0]
    assert top.name == "Ordered hashtable"
    assert top.kind == types.SymbolKind.String
    assert top.container_name == "algo/hashing.md"
    assert top.location.uri == uri_of(folder / "algo" / "hashing.md")
    # lines 4-7 (1-based); the range ends at the start of the next line
    assert top.location.range == types.Range(
        start=types.Position(line=3, character=0), end=types.Position(line=7, character=0)
    )
    # a query ending in a separator does not expand the last term
    assert await symbols(client, "ordered hasht ") == []


async def test_symbol_names_of_body_sections(client: LanguageClient) -> None:
    titled = await symbols(client, "zebra")
    assert [(s.name, s.container_name) for s in titled] == [("Plain zebra notes", "notes/plain.md")]
    untitled = await symbols(client, "quokka")
    assert [(s.name, s.container_name) for s in untitled] == [("untitled.md", "untitled.md")]


async def test_reserved_files_are_not_symbols(client: LanguageClient) -> None:
    # index.md holds "hashtable" and "navigation" too: only reservation keeps it out.
    assert "hashtable" in DOCS["index.md"] and "navigation" in DOCS["index.md"]
    found = await symbols(client, "hashtable")
    assert [(s.container_name, s.name) for s in found] == [("algo/hashing.md", "Ordered hashtable")]
    assert await symbols(client, "navigation") == []
    assert "index.md" not in {s.container_name for s in await symbols(client, "")}


async def test_empty_query_lists_headings(client: LanguageClient) -> None:
    listing = await symbols(client, "")
    assert [(s.container_name, s.name) for s in listing] == [
        ("algo/hashing.md", "Ordered hashtable"),
        ("algo/hashing.md", "Buckets"),
        ("algo/hashing.md", "Deep detail"),
        ("algo/hashing.md", "Probing"),
        ("algo/hashing.md", "Trees"),
        ("guide.md", "Guide"),
        ("guide.md", "Install"),
    ]


async def test_search_command_follows_contract(client: LanguageClient) -> None:
    result = await command(
        client, "citeline.search", {"query": "ordered hashtable", "strict": True}
    )
    validate("search.result", result)
    assert result["hits"][0]["path"] == "algo/hashing.md"
    assert result["hits"][0]["line_start"] == 4
    assert "options" not in result
    assert result["strict"] is True


async def test_search_command_relevance_options(client: LanguageClient) -> None:
    result = await command(
        client, "citeline.search", {"query": "zebra hashtable", "profile": "recall"}
    )
    validate("search.result", result)
    assert result["options"]["match"] == "any"
    assert result["total"] >= 2


async def test_concepts_command_follows_contract(client: LanguageClient) -> None:
    result = await command(client, "citeline.concepts", {"query": "zebra"})
    validate("concepts.result", result)
    assert [c["concept_id"] for c in result["concepts"]] == ["notes/plain"]


async def test_root_argument_selects_folder(client: LanguageClient, folder: Path) -> None:
    result = await command(client, "citeline.concepts", {"query": "a", "root": uri_of(folder)})
    assert [c["concept_id"] for c in result["concepts"]] == ["algo/hashing", "notes/plain"]


async def test_lines_command_follows_contract(client: LanguageClient) -> None:
    result = await command(
        client, "citeline.lines", {"pattern": "walrus", "mode": "exact", "context": 1}
    )
    validate("lines.result", result)
    assert [(m["path"], m["line"]) for m in result["matches"]] == [("guide.md", 4)]


async def test_schema_validation_is_invalid_params(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcInvalidParams) as err:
        await command(client, "citeline.search", {"query": "", "limit": 5})
    assert err.value.code == -32602
    assert err.value.data["code"] == "schema_validation"
    assert set(err.value.data) == {"code", "message", "details"}

    with pytest.raises(JsonRpcInvalidParams) as err:
        await command(client, "citeline.search", {"query": "x", "bogus": 1})
    assert err.value.data["code"] == "schema_validation"

    with pytest.raises(JsonRpcInvalidParams) as err:
        await command(client, "citeline.concepts")
    assert err.value.data["code"] == "schema_validation"

    with pytest.raises(JsonRpcInvalidParams) as err:
        await command(client, "citeline.lines", {"pattern": "(", "mode": "regex"})
    assert err.value.data["code"] == "schema_validation"


async def test_unknown_root_is_invalid_params(client: LanguageClient, tmp_path: Path) -> None:
    with pytest.raises(JsonRpcException) as err:
        await command(client, "citeline.search", {"query": "tree", "root": uri_of(tmp_path)})
    assert err.value.code == -32602
    assert err.value.data["code"] == "schema_validation"
    assert err.value.data["details"]["field"] == "root"


async def test_document_symbols_nest_by_level(client: LanguageClient, folder: Path) -> None:
    found = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(folder / "algo" / "hashing.md"))
        )
    )
    assert found is not None

    def shape(syms: list) -> list:
        return [(s.name, shape(s.children or [])) for s in syms]

    assert shape(found) == [
        (
            "Ordered hashtable",
            [("Buckets", [("Deep detail", [])]), ("Probing", [])],
        ),
        ("Trees", []),
    ]

    def rng(a: int, b: int, c: int, d: int) -> types.Range:
        return types.Range(start=types.Position(line=a, character=b), end=types.Position(c, d))

    ordered, trees = found
    assert ordered.range == rng(3, 0, 18, 0)  # through the line before "# Trees"
    assert ordered.selection_range == rng(3, 0, 3, len("# Ordered hashtable"))
    buckets, probing = ordered.children
    assert buckets.range == rng(7, 0, 14, 0)  # the h4 stays inside; ends before "## Probing"
    assert buckets.children[0].range == rng(11, 0, 14, 0)
    assert probing.range == rng(15, 0, 18, 0)
    assert trees.range == rng(19, 0, 21, len("Balanced trees keep keys sorted."))


async def test_document_symbols_setext_and_open_buffer(
    client: LanguageClient, folder: Path
) -> None:
    uri = uri_of(folder / "guide.md")
    found = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert found is not None
    (guide,) = found
    assert guide.name == "Guide"
    assert guide.selection_range.end == types.Position(line=1, character=5)  # underline
    assert guide.range.end == types.Position(line=7, character=len("Run the installer."))
    assert [c.name for c in guide.children] == ["Install"]

    # An open, unsaved buffer: the outline follows the editor's text, not the disk.
    scratch = uri_of(folder / "scratch-unsaved.md")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=scratch, language_id="markdown", version=1, text="# Ünïcode 😀 title\n"
            )
        )
    )
    found = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=scratch))
    )
    assert found is not None
    assert [s.name for s in found] == ["Ünïcode 😀 title"]
    # UTF-16 units: the emoji counts two
    assert found[0].selection_range.end.character == len("# Ünïcode  title") + 2
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=scratch))
    )
