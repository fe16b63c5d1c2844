"""Features that need their own server: diagnostics, settings, cancellation, progress,
multi-root, edits on disk, shutdown."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsp_support import (
    DOCS,
    SERVER,
    command,
    eventually,
    serve,
    symbols,
    uri_of,
    write_files,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pytest_lsp import LanguageClient, client_capabilities

from citeline.engine import Call, Engine, SectionHit, Settings
from citeline.engine.contracts import validate

BROKEN = "---\ntitle: [unclosed\n---\n# Broken\n\ntext\n"
FIXED = "---\ntitle: Fixed now\n---\n# Broken\n\ntext\n"


def docs(tmp_path: Path, name: str = "docs") -> Path:
    return write_files(tmp_path / name, DOCS)


def cleared(client: LanguageClient, uri: str) -> bool:
    """Diagnostics were published for `uri`, and the latest list is empty."""
    return uri in client.diagnostics and len(client.diagnostics[uri]) == 0


def progress_caps() -> types.ClientCapabilities:
    caps = client_capabilities("visual_studio_code")
    assert caps.window is not None and caps.window.work_done_progress
    return caps


# -- diagnostics ---------------------------------------------------------------------------


async def test_parse_errors_become_diagnostics_and_clear(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", {"good.md": "# Good\n\nfine\n", "bad.md": BROKEN})
    (expected,) = Engine().problems(Call(folder, Settings()))
    bad = uri_of(folder / "bad.md")
    async with serve([folder]) as client:
        await eventually(lambda: bool(client.diagnostics.get(bad)))
        (diag,) = client.diagnostics[bad]
        assert diag.severity == types.DiagnosticSeverity.Error
        assert diag.source == "citeline"
        assert diag.range.start.line == expected.line - 1
        assert expected.reason in diag.message
        assert uri_of(folder / "good.md") not in client.diagnostics

        # editor default (SPEC §11): the file is skipped and listed, and the user is told
        # once, naming the setting
        result = await command(client, "citeline.search", {"query": "good"})
        assert result["total"] == 1
        assert result["skipped"] == [
            {"path": "bad.md", "line": expected.line, "reason": expected.reason}
        ]
        await eventually(lambda: any("skip_invalid" in m.message for m in client.messages))
        await command(client, "citeline.search", {"query": "fine"})
        told = [m.message for m in client.messages if "cannot be parsed" in m.message]
        assert len(told) == 1 and "citeline.skipInvalid" in told[0]
        assert "--skip-invalid" not in told[0]

        # with skip_invalid off the parse error blocks search: -32803, the envelope as data,
        # the advice naming the setting rather than a command-line flag
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"skip_invalid": False})
        )
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "good"})
        assert err.value.code == -32803
        assert err.value.data["code"] == "parse_error"
        assert err.value.data["details"]["errors"][0]["path"] == "bad.md"
        assert "skip_invalid" in err.value.data["message"]
        assert "--skip-invalid" not in err.value.data["message"]

        # fixed on disk and saved: the diagnostic is cleared
        (folder / "bad.md").write_text(FIXED)
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=bad))
        )
        await eventually(lambda: cleared(client, bad))
        result = await command(client, "citeline.search", {"query": "good"})
        assert result["total"] == 1


async def test_diagnostics_follow_the_open_buffer(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", {"note.md": "# Note\n\nfine\n"})
    uri = uri_of(folder / "note.md")
    async with serve([folder]) as client:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text="# Note\n\nfine\n"
                )
            )
        )
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=BROKEN)],
            )
        )
        await eventually(lambda: bool(client.diagnostics.get(uri)))
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=FIXED)],
            )
        )
        await eventually(lambda: cleared(client, uri))


# -- error mapping -------------------------------------------------------------------------


async def test_resource_and_bundle_errors_are_request_failed(tmp_path: Path) -> None:
    folder = docs(tmp_path)
    dupes = write_files(
        tmp_path / "dupes", {"a.md": "---\nid: same\n---\n# A\n", "b.md": "---\nid: same\n---\n"}
    )
    gone = tmp_path / "gone"
    gone.mkdir()
    async with serve([folder, dupes, gone], {"limits": {"max_files": 2}}) as client:
        gone.rmdir()
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "hashtable"})
        assert err.value.code == -32803
        assert err.value.data["code"] == "resource_limit"
        assert err.value.data["details"]["limit"] == "max_files"

        with pytest.raises(JsonRpcException) as err:
            await symbols(client, "hashtable")
        assert err.value.code == -32803
        assert err.value.data["code"] == "resource_limit"

        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.concepts", {"query": "a", "root": uri_of(dupes)})
        assert err.value.code == -32803
        assert err.value.data["code"] == "bundle_invalid"

        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.concepts", {"query": "a", "root": uri_of(gone)})
        assert err.value.code == -32803
        assert err.value.data["code"] == "bundle_not_found"


# -- settings ------------------------------------------------------------------------------


async def test_settings_from_initialization_options(tmp_path: Path) -> None:
    settings = {"citeline": {"symbols": {"cap": 1, "list_cap": 2}, "profile": "recall"}}
    async with serve([docs(tmp_path)], settings) as client:
        assert len(await symbols(client, "")) == 2
        assert len(await symbols(client, "the")) == 1
        # relevance defaults apply to a search whose request lacks them
        result = await command(client, "citeline.search", {"query": "zebra hashtable"})
        validate("search.result", result)
        assert result["options"]["profile"] == "recall"
        assert result["total"] >= 2
        # a request naming its profile takes that profile
        result = await command(
            client, "citeline.search", {"query": "zebra hashtable", "profile": "contract"}
        )
        assert "options" not in result
        assert result["total"] == 0


async def test_did_change_configuration(tmp_path: Path) -> None:
    async with serve([docs(tmp_path)]) as client:
        assert (await command(client, "citeline.search", {"query": "walrus"}))["total"] == 1

        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"citeline": {"limits": {"max_files": 1}}})
        )
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "walrus"})
        assert err.value.data["code"] == "resource_limit"
        assert err.value.data["details"]["max"] == 1
        # the user is told once (a warning naming the setting, never a CLI flag)
        await eventually(lambda: bool(client.messages))
        (told,) = [m for m in client.messages if "limits.max_files" in m.message]
        assert told.type == types.MessageType.Warning and "--max-files" not in told.message

        # invalid settings: an error message, and the previous settings stay
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"limits": {"max_files": -3}})
        )
        await eventually(lambda: client.messages[-1].type == types.MessageType.Error)
        assert "max_files" in client.messages[-1].message
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "walrus"})
        assert err.value.data["code"] == "resource_limit"

        # the bare object is accepted too
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"limits": {"max_files": 50}})
        )
        assert (await command(client, "citeline.search", {"query": "walrus"}))["total"] == 1

        # an empty change (eglot sends one on connecting) keeps the settings in force
        for empty in ({}, {"citeline": {}}, None):
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=empty)
            )
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"limits": {"max_files": 1}})
        )
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "walrus"})
        assert err.value.data["details"]["max"] == 1


# -- cancellation and progress -------------------------------------------------------------


def big_bundle(root: Path, files: int = 3000) -> Path:
    body = "".join(
        f"## Part {i}\n\nlorem ipsum dolor sit amet {i} hashtable\n\n" for i in range(20)
    )
    return write_files(
        root, {f"d{i // 100}/f{i}.md": f"# File {i}\n\n{body}" for i in range(files)}
    )


async def test_cancel_long_request(tmp_path: Path) -> None:
    folder = big_bundle(tmp_path / "big")
    settings = {"limits": {"max_tokens": 100_000_000, "max_sections": 1_000_000}}
    async with serve([folder], settings) as client:
        for method, params in [
            (
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(
                    command="citeline.search", arguments=[{"query": "lorem hashtable"}]
                ),
            ),
            (types.WORKSPACE_SYMBOL, types.WorkspaceSymbolParams(query="lorem hasht")),
        ]:
            msg_id = f"long-{method}"
            pending = asyncio.ensure_future(
                client.protocol.send_request_async(method, params, msg_id=msg_id)
            )
            await asyncio.sleep(0.05)
            started = time.monotonic()
            client.cancel_request(types.CancelParams(id=msg_id))
            with pytest.raises(JsonRpcRequestCancelled) as err:
                await pending
            assert err.value.code == -32800
            assert time.monotonic() - started < 2.0
        # still answering afterwards
        outline = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(
                text_document=types.TextDocumentIdentifier(uri=uri_of(folder / "d0" / "f1.md"))
            )
        )
        assert outline is not None and outline[0].name == "File 1"


async def test_work_done_progress(tmp_path: Path) -> None:
    async with serve([docs(tmp_path)], caps=progress_caps()) as client:
        # warm-up announces itself through window/workDoneProgress/create
        def warmed() -> bool:
            return any(
                str(t).startswith("citeline-warmup")
                and r
                and isinstance(r[-1], types.WorkDoneProgressEnd)
                for t, r in client.progress_reports.items()
            )

        await eventually(warmed)

        client.progress_reports["sym-1"] = []
        found = await client.workspace_symbol_async(
            types.WorkspaceSymbolParams(query="hashtable", work_done_token="sym-1")
        )
        assert [s.name for s in found or []] == ["Ordered hashtable"]  # reported, and right
        client.progress_reports["cmd-1"] = []
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="citeline.search",
                arguments=[{"query": "hashtable", "strict": True}],
                work_done_token="cmd-1",
            )
        )
        assert [h["heading"] for h in result["hits"]] == ["Ordered hashtable"]
        for token in ("sym-1", "cmd-1"):
            await eventually(
                lambda t=token: (
                    bool(client.progress_reports[t])
                    and isinstance(client.progress_reports[t][-1], types.WorkDoneProgressEnd)
                )
            )
            reports = client.progress_reports[token]
            assert isinstance(reports[0], types.WorkDoneProgressBegin)
            assert all(isinstance(r, types.WorkDoneProgressReport) for r in reports[1:-1])


async def test_no_progress_without_client_support(tmp_path: Path) -> None:
    async with serve([docs(tmp_path)]) as client:
        assert [s.name for s in await symbols(client, "hashtable")] == ["Ordered hashtable"]
        await asyncio.sleep(0.3)
        assert client.progress_reports == {}


# -- workspace -----------------------------------------------------------------------------


def folder_hits(folders: list[Path], query: str) -> list[tuple[Path, SectionHit]]:
    """The engine's own symbol hits of each folder, merged by score as docs/lsp.md promises:
    best first; equal scores keep folder order, and each folder's own order is kept."""
    engine = Engine()
    concatenated = [(f, h) for f in folders for h in engine.symbols(engine.call(f), query)]
    return sorted(concatenated, key=lambda fh: -fh[1].score)  # sorted() is stable


def located(found: list[types.SymbolInformation]) -> list[tuple[str, int, int, str]]:
    return [
        (s.location.uri, s.location.range.start.line, s.location.range.end.line, s.name)
        for s in found
    ]


def as_symbols(hits: list[tuple[Path, SectionHit]]) -> list[tuple[str, int, int, str]]:
    return [(uri_of(f / h.path), h.line_start - 1, h.line_end, h.heading) for f, h in hits]


async def test_multi_root(tmp_path: Path) -> None:
    # The second folder's best hit scores between the first folder's two hits, so a merge
    # by score and a concatenation of the folders' lists give different orders.
    first = write_files(
        tmp_path / "first",
        {**DOCS, "appendix.md": "# Appendix\n\n" + "filler words " * 30 + "hashtable\n"},
    )
    second = write_files(
        tmp_path / "second",
        {"b.md": "# Hashtable in B\n\nhashtable hashtable\n", "other.md": "# Other\n\nno\n"},
    )
    folders = [first, second]
    merged = folder_hits(folders, "hashtable")
    concatenated = [(f, h) for f in folders for f2, h in merged if f2 == f]
    assert [h.path for _, h in merged] == ["algo/hashing.md", "b.md", "appendix.md"]
    assert merged != concatenated
    async with serve(folders) as client:
        assert located(await symbols(client, "hashtable")) == as_symbols(merged)
        # As you type: the prefix expands in each folder, and the folders still merge.
        assert located(await symbols(client, "hasht")) == as_symbols(folder_hits(folders, "hasht"))
        # The cap applies to the merged list: the best two of all folders.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"symbols": {"cap": 2, "list_cap": 3}})
        )
        assert located(await symbols(client, "hashtable")) == as_symbols(merged[:2])
        # An empty query lists every folder's headings, folder by folder, up to list_cap.
        listing = [(s.container_name, s.name) for s in await symbols(client, "")]
        assert listing == [
            ("algo/hashing.md", "Ordered hashtable"),
            ("algo/hashing.md", "Buckets"),
            ("algo/hashing.md", "Deep detail"),
        ]
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"symbols": {"list_cap": 100}})
        )
        listing = [(s.container_name, s.name) for s in await symbols(client, "")]
        engine = Engine()
        assert listing == [
            (h.path, h.heading)
            for f in folders
            for h in engine.symbols(engine.call(f), "", list_cap=100)
        ]
        assert listing[-2:] == [("b.md", "Hashtable in B"), ("other.md", "Other")]

        # Commands search one folder: the first by default, another by `root`.
        default = await command(client, "citeline.search", {"query": "hashtable", "strict": True})
        assert [h["path"] for h in default["hits"]] == ["algo/hashing.md", "appendix.md"]
        direct = Engine().search(Call(first, Settings()), {"query": "hashtable"})
        assert default["hits"] == direct["hits"]
        assert default["snapshot_revision"] == direct["snapshot_revision"]
        chosen = await command(
            client, "citeline.search", {"query": "hashtable", "root": uri_of(second)}
        )
        assert [h["path"] for h in chosen["hits"]] == ["b.md"]
        by_path = await command(
            client, "citeline.search", {"query": "hashtable", "root": str(second)}
        )
        assert by_path == chosen


def warm_ups_ended(client: LanguageClient) -> int:
    return sum(
        1
        for token, reports in client.progress_reports.items()
        if str(token).startswith("citeline-warmup")
        and reports
        and isinstance(reports[-1], types.WorkDoneProgressEnd)
    )


async def test_added_folder_is_warmed_up_and_checked(tmp_path: Path) -> None:
    """A folder added while the server runs is indexed in the background (as at start)
    and its problems are published without the client asking."""
    first = docs(tmp_path, "first")
    second = write_files(tmp_path / "second", {"b.md": "# Kiwi in B\n\nkiwi\n", "bad.md": BROKEN})
    async with serve([first], caps=progress_caps()) as client:
        await eventually(lambda: warm_ups_ended(client) == 1)
        bad = uri_of(second / "bad.md")
        assert bad not in client.diagnostics
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=uri_of(second), name="second")], removed=[]
                )
            )
        )
        await eventually(lambda: warm_ups_ended(client) == 2)
        await eventually(lambda: bool(client.diagnostics.get(bad)))
        (second / "bad.md").write_text(FIXED)  # a parse error fails workspace/symbol
        found = await symbols(client, "kiwi")
        assert [s.location.uri for s in found] == [uri_of(second / "b.md")]
        # Removing a folder starts no warm-up.
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[], removed=[types.WorkspaceFolder(uri=uri_of(second), name="second")]
                )
            )
        )
        assert await symbols(client, "kiwi") == []
        assert warm_ups_ended(client) == 2


async def test_settings_that_change_the_index_warm_up_again(tmp_path: Path) -> None:
    async with serve([docs(tmp_path)], caps=progress_caps()) as client:
        await eventually(lambda: warm_ups_ended(client) == 1)
        # Same indexes (only the symbol cap changes): no new warm-up.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"symbols": {"cap": 5}})
        )
        assert len(await symbols(client, "hashtable")) >= 1
        assert warm_ups_ended(client) == 1
        # Stemming is applied at query time (an index keeps the words as typed): the same
        # index answers, without a new warm-up.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"stemming": "english"})
        )
        found = await symbols(client, "hashtables")  # stems to "hashtabl", as "hashtable"
        assert any(s.name == "Ordered hashtable" for s in found)
        assert warm_ups_ended(client) == 1
        # Splitting identifiers changes what is indexed: built again in the background.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"identifiers": "split"})
        )
        await eventually(lambda: warm_ups_ended(client) == 2)


async def test_fresh_snapshot_per_request(tmp_path: Path) -> None:
    folder = docs(tmp_path)
    async with serve([folder]) as client:
        first = await command(client, "citeline.search", {"query": "walrus"})
        assert first["total"] == 1
        with (folder / "guide.md").open("a") as fh:
            fh.write("\n## Walrus again\n\nAnother walrus.\n")
        second = await command(client, "citeline.search", {"query": "walrus"})
        assert second["total"] == 2
        assert second["snapshot_revision"] != first["snapshot_revision"]
        assert "Walrus again" in [s.name for s in await symbols(client, "walrus")]


# -- process lifetime ----------------------------------------------------------------------


async def test_shutdown_and_exit(tmp_path: Path) -> None:
    async with serve([docs(tmp_path)]) as client:
        server = client._server
    assert server is not None
    assert server.returncode == 0


async def test_exits_when_stdin_closes(tmp_path: Path) -> None:
    """stdin closed before anything was sent: the server leaves at once, cleanly (exit 0,
    no traceback), and writes nothing on stdout (the protocol channel)."""
    proc = await asyncio.create_subprocess_exec(
        *SERVER,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.close()
    started = time.monotonic()
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert proc.returncode == 0, stderr.decode()
    assert stdout == b""
    assert b"Traceback" not in stderr, stderr.decode()
    assert time.monotonic() - started < 10


# -- names ---------------------------------------------------------------------------------


async def test_a_heading_without_text_is_named_empty_heading(tmp_path: Path) -> None:
    """docs/lsp.md: a heading with no text is named `(empty heading)`, in workspace symbols
    and in the outline alike; a body section is named by its title or path, never so."""
    folder = write_files(
        tmp_path / "ws",
        {
            "empty.md": (
                "#\n\nthe quetzal nests here\n\n## Named quetzal\n\ntext\n\n### #\n\nquetzal\n"
            ),
            "body.md": "quetzal in a file without headings\n",
        },
    )
    async with serve([folder]) as client:
        found = await symbols(client, "quetzal")
        assert sorted((s.container_name, s.location.range.start.line, s.name) for s in found) == [
            ("body.md", 0, "body.md"),
            ("empty.md", 0, "(empty heading)"),
            ("empty.md", 4, "Named quetzal"),
            ("empty.md", 8, "(empty heading)"),
        ]
        # the listing for an empty query holds the sections that have headings, text or not
        listed = await symbols(client, "")
        assert [(s.container_name, s.location.range.start.line, s.name) for s in listed] == [
            ("empty.md", 0, "(empty heading)"),
            ("empty.md", 4, "Named quetzal"),
            ("empty.md", 8, "(empty heading)"),
        ]
        outline = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(
                text_document=types.TextDocumentIdentifier(uri=uri_of(folder / "empty.md"))
            )
        )
        assert outline is not None

        def shape(syms: list) -> list:
            return [(s.name, s.detail, shape(s.children or [])) for s in syms]

        assert shape(outline) == [
            ("(empty heading)", "#", [("Named quetzal", "##", [("(empty heading)", "###", [])])])
        ]
