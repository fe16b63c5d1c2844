"""Diagnostics (docs/lsp.md): files that cannot be parsed get an error at the line that
blocks search; they follow the editor's buffer while it is open, the disk once it is closed,
and files changed outside the editor when the client reports them (didChangeWatchedFiles)."""

from __future__ import annotations

from pathlib import Path

from lsp_support import eventually, serve, uri_of, write_files
from lsprotocol import types
from pytest_lsp import LanguageClient

from citeline.engine import Call, Engine, Settings

BROKEN = "---\ntitle: [unclosed\n---\n# Broken\n\ntext\n"
FINE = "# Fine\n\ntext\n"


def latest(client: LanguageClient, uri: str) -> list[types.Diagnostic] | None:
    return client.diagnostics.get(uri)


def cleared(client: LanguageClient, uri: str) -> bool:
    """Diagnostics were published for `uri`, and the latest list is empty."""
    return uri in client.diagnostics and len(client.diagnostics[uri]) == 0


def open_doc(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )


def edit(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


def watched(client: LanguageClient, *changes: tuple[str, types.FileChangeType]) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri, type=kind) for uri, kind in changes]
        )
    )


async def test_invalid_utf8_is_a_diagnostic_at_its_line(tmp_path: Path) -> None:
    data = b"# Title\n\nfine line\n\xc3\x28 broken here\nmore\n"
    folder = write_files(tmp_path / "ws", {"bad.md": data, "good.md": FINE})
    (expected,) = Engine().problems(Call(folder, Settings()))
    assert (expected.path, expected.line) == ("bad.md", 4)
    bad = uri_of(folder / "bad.md")
    async with serve([folder]) as client:
        await eventually(lambda: bool(latest(client, bad)))
        (diag,) = client.diagnostics[bad]
        assert diag.severity == types.DiagnosticSeverity.Error
        assert diag.source == "citeline"
        assert diag.code == "parse_error"
        assert diag.range == types.Range(
            start=types.Position(line=3, character=0), end=types.Position(line=4, character=0)
        )
        assert expected.reason in diag.message
        assert "UTF-8" in diag.message
        assert uri_of(folder / "good.md") not in client.diagnostics


async def test_closing_an_unsaved_buffer_goes_back_to_the_disk(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", {"note.md": FINE, "disk-broken.md": BROKEN})
    note = uri_of(folder / "note.md")
    disk_broken = uri_of(folder / "disk-broken.md")
    async with serve([folder]) as client:
        await eventually(lambda: bool(latest(client, disk_broken)))
        # An unsaved edit breaks the buffer: a diagnostic, though the disk is fine ...
        open_doc(client, note, FINE)
        edit(client, note, 2, BROKEN)
        await eventually(lambda: bool(latest(client, note)))
        assert client.diagnostics[note][0].range.start.line == 1  # the YAML's line
        # ... closed without saving: the disk's text counts again, and it is fine.
        close(client, note)
        await eventually(lambda: cleared(client, note))
        # The other way round: a fixed buffer clears the disk's error while it is open ...
        open_doc(client, disk_broken, BROKEN)
        edit(client, disk_broken, 2, FINE)
        await eventually(lambda: cleared(client, disk_broken))
        # ... and closing it unsaved brings the disk's error back.
        close(client, disk_broken)
        await eventually(lambda: bool(latest(client, disk_broken)))
        (diag,) = client.diagnostics[disk_broken]
        assert diag.range.start.line == 1
    assert (folder / "note.md").read_text() == FINE  # nothing was written
    assert (folder / "disk-broken.md").read_text() == BROKEN


async def test_watched_file_changes_recheck_the_disk(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", {"a.md": FINE, "b.md": FINE})
    a, b = uri_of(folder / "a.md"), uri_of(folder / "b.md")
    async with serve([folder]) as client:
        # Changed outside the editor (git checkout, another tool): reported by the client.
        (folder / "a.md").write_text(BROKEN)
        (folder / "b.md").write_bytes(b"ok\n\xff\n")
        watched(client, (a, types.FileChangeType.Changed), (b, types.FileChangeType.Changed))
        await eventually(lambda: bool(latest(client, a)) and bool(latest(client, b)))
        assert client.diagnostics[a][0].range.start.line == 1
        assert client.diagnostics[b][0].range.start.line == 1
        # Fixed, and deleted: both diagnostics are withdrawn.
        (folder / "a.md").write_text(FINE)
        (folder / "b.md").unlink()
        watched(client, (a, types.FileChangeType.Changed), (b, types.FileChangeType.Deleted))
        await eventually(lambda: cleared(client, a) and cleared(client, b))
        # A new broken file appears.
        (folder / "c.md").write_text(BROKEN)
        c = uri_of(folder / "c.md")
        watched(client, (c, types.FileChangeType.Created))
        await eventually(lambda: bool(latest(client, c)))
