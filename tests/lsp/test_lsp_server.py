"""Features that need their own server: diagnostics, settings, cancellation, progress,
multi-root, edits on disk, shutdown."""

from __future__ import annotations

import asyncio
import sys
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

from citeline.engine import Engine
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
    (expected,) = Engine().problems(folder)
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
        assert len(told) == 1 and "citeline.skip_invalid" in told[0]
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
        await client.workspace_symbol_async(
            types.WorkspaceSymbolParams(query="hashtable", work_done_token="sym-1")
        )
        client.progress_reports["cmd-1"] = []
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="citeline.search",
                arguments=[{"query": "hashtable"}],
                work_done_token="cmd-1",
            )
        )
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
        await symbols(client, "hashtable")
        await asyncio.sleep(0.3)
        assert client.progress_reports == {}


# -- workspace -----------------------------------------------------------------------------


async def test_multi_root(tmp_path: Path) -> None:
    first = docs(tmp_path, "first")
    second = write_files(tmp_path / "second", {"b.md": "# Hashtable in B\n\nhashtable\n"})
    async with serve([first, second]) as client:
        found = await symbols(client, "hashtable")
        uris = {s.location.uri for s in found}
        assert uri_of(second / "b.md") in uris
        assert uri_of(first / "algo" / "hashing.md") in uris
        scores_sorted = [s.name for s in found]
        assert "Hashtable in B" in scores_sorted

        listing = await symbols(client, "")
        assert {s.container_name for s in listing} >= {"b.md", "algo/hashing.md"}

        default = await command(client, "citeline.search", {"query": "hashtable"})
        assert {h["path"] for h in default["hits"]} == {"algo/hashing.md"}
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
        # Stemming changes what is indexed: the new index is built in the background.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"stemming": "english"})
        )
        await eventually(lambda: warm_ups_ended(client) == 2)
        found = await symbols(client, "hashtables")  # stems to the indexed "hashtabl"
        assert any(s.name == "Ordered hashtable" for s in found)


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
    proc = await asyncio.create_subprocess_exec(
        *SERVER,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.close()
    code = await asyncio.wait_for(proc.wait(), timeout=20)
    assert code == 0, (await proc.stderr.read()).decode() if proc.stderr else ""
    assert sys.executable  # the server ran under this interpreter
