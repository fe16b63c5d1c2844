"""citeline.verify over the wire (SPEC §18): advertised, and with the setting `unsaved` it
verifies against the editor text the server searches."""

from __future__ import annotations

from pathlib import Path

from lsp_support import INIT_RESULTS, command, serve, uri_of, write_files
from lsprotocol import types
from pytest_lsp import LanguageClient

from citeline.engine.contracts import validate

DISK = "# Notes\n\nintro\n\n## Setup\n\nrun the zanzibar installer\n"


def type_text(client: LanguageClient, uri: str, text: str) -> None:
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
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def test_verify_command_sees_unsaved_text(tmp_path: Path) -> None:
    root = write_files(tmp_path / "ws", {"notes.md": DISK, "other.md": "# Other\n"})
    uri = uri_of(root / "notes.md")
    async with serve([root], {"unsaved": True}) as client:
        caps = INIT_RESULTS[client].capabilities
        assert caps is not None and caps.execute_command_provider is not None
        assert "citeline.verify" in caps.execute_command_provider.commands
        found = await command(client, "citeline.search", {"query": "zanzibar"})
        (hit,) = found["hits"]
        result = await command(client, "citeline.verify", {"citations": [hit]})
        validate("verify.result", result)
        assert [r["status"] for r in result["results"]] == ["valid"]
        # Typed, not saved: two lines above the section.
        type_text(
            client,
            uri,
            "# Notes\n\nintro\nmore\nand more\n\n## Setup\n\nrun the zanzibar installer\n",
        )
        result = await command(client, "citeline.verify", {"citations": [hit]})
        validate("verify.result", result)
        (r,) = result["results"]
        assert (r["status"], r["line_start"], r["line_end"]) == ("moved", 7, 9)
        assert (root / "notes.md").read_text() == DISK  # the disk still has the old text
