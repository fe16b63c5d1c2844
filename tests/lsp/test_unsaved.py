"""Unsaved text (SPEC §11): with the setting `unsaved`, searches and symbols read an open
document's current editor text instead of its disk bytes, flag the hits from it, and the
records and snapshot_revision describe the text searched."""

from __future__ import annotations

import hashlib
from pathlib import Path

from lsp_support import command, serve, symbols, uri_of, write_files
from lsprotocol import types
from pytest_lsp import LanguageClient

from citeline.engine import Call, Engine
from citeline.engine.capture.revision import snapshot_revision
from citeline.engine.contracts import validate
from citeline.lsp.settings import editor_defaults

DISK = "# Notes\n\nwritten and saved\n"
TYPED = "# Notes\n\nwritten and saved\n\n## Draft\n\nzanzibar typed but not saved\n"
OTHER = "# Other\n\nnothing typed here\n"


def folder(tmp_path: Path) -> Path:
    return write_files(tmp_path / "ws", {"notes.md": DISK, "other.md": OTHER})


def open_and_type(client: LanguageClient, uri: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=DISK
            )
        )
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=TYPED)],
        )
    )


async def test_unsaved_text_is_searched_flagged_and_cited(tmp_path: Path) -> None:
    root = folder(tmp_path)
    uri = uri_of(root / "notes.md")
    disk_revision = Engine(editor_defaults()).capture(Call(root, editor_defaults())).revision
    async with serve([root], {"unsaved": True}) as client:
        open_and_type(client, uri)
        result = await command(client, "citeline.search", {"query": "zanzibar"})
        validate("search.result", result)
        (hit,) = result["hits"]
        assert hit["path"] == "notes.md" and hit["heading"] == "Draft"
        assert hit["unsaved"] is True
        assert "zanzibar typed but not saved" in hit["snippet"]
        typed = TYPED.encode()
        assert hit["content_sha256"] == hashlib.sha256(typed).hexdigest()
        # the revision describes the text searched: the editor's for notes.md
        other = (root / "other.md").read_bytes()

        class Rec:
            def __init__(self, path: str, data: bytes) -> None:
                self.path, self.size = path, len(data)
                self.sha256 = hashlib.sha256(data).hexdigest()

        expected = snapshot_revision([Rec("notes.md", typed), Rec("other.md", other)])
        assert result["snapshot_revision"] == expected != disk_revision

        # hits from files that are not open carry no flag
        plain = await command(client, "citeline.search", {"query": "nothing typed", "strict": True})
        assert [h["path"] for h in plain["hits"]] == ["other.md"]
        assert "unsaved" not in plain["hits"][0]

        # symbols and line search see the typed text too
        found = await symbols(client, "zanzib")
        assert [s.name for s in found] == ["Draft"]
        lines = await command(client, "citeline.lines", {"pattern": "zanzibar"})
        (match,) = lines["matches"]
        assert match["path"] == "notes.md" and match["line"] == 7
        assert match["x-unsaved"] is True
        validate("lines.result", lines)

        # closed without saving: back to the disk's bytes and revision
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

        gone = await command(client, "citeline.search", {"query": "zanzibar"})
        assert gone["total"] == 0
        assert gone["snapshot_revision"] == disk_revision
        again = await command(client, "citeline.search", {"query": "written saved"})
        assert again["total"] == 1 and "unsaved" not in again["hits"][0]


async def test_without_the_setting_the_disk_is_searched(tmp_path: Path) -> None:
    root = folder(tmp_path)
    uri = uri_of(root / "notes.md")
    disk_revision = Engine(editor_defaults()).capture(Call(root, editor_defaults())).revision
    async with serve([root]) as client:
        open_and_type(client, uri)
        result = await command(client, "citeline.search", {"query": "zanzibar"})
        assert result["total"] == 0
        assert result["snapshot_revision"] == disk_revision
        saved = await command(client, "citeline.search", {"query": "written saved"})
        assert all("unsaved" not in h for h in saved["hits"]) and saved["total"] == 1
        assert await symbols(client, "zanzib") == []

        # turned on while the document is open: the typed text is searched at once
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"unsaved": True})
        )
        now = await command(client, "citeline.search", {"query": "zanzibar"})
        assert now["total"] == 1 and now["hits"][0]["unsaved"] is True
