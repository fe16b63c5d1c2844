"""Editor paths against workspace folders as the volume compares names (SPEC §16, fronts/names.py):
case-insensitive on macOS and Windows, blind to Unicode normalisation on macOS. No such volume
can be mounted here: the rules are forced (CITELINE_VOLUME_RULES, or a patched lstat for the
detection), the names on disk are real (NFD files), and Windows paths go through ntpath."""

from __future__ import annotations

import ntpath
import os
import posixpath
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from lsp_support import command, eventually, serve, uri_of, write_files
from lsprotocol import types
from pytest_lsp import LanguageClient

from citeline.fronts import names
from citeline.lsp import server as srv

MAC = names.VolumeRules(True, True)
WINDOWS = names.VolumeRules(True, False)
NFC = unicodedata.normalize("NFC", "Café notes")
NFD = unicodedata.normalize("NFD", "Café notes")


def test_keys_fold_what_the_volume_folds_and_nothing_else() -> None:
    assert NFC != NFD
    assert MAC.key(NFD + ".md") == MAC.key(NFC.upper() + ".md")
    assert WINDOWS.key("Guide.MD") == WINDOWS.key("guide.md")
    assert WINDOWS.key(NFD) != WINDOWS.key(NFC)  # NTFS does not normalise
    assert names.EXACT.key("Guide.md") != names.EXACT.key("guide.md")
    assert MAC.key("ß.md") != MAC.key("ss.md")  # one-to-one case mapping, not casefold()
    assert names.EXACT.exact and not MAC.exact and not WINDOWS.exact


def test_the_platforms_default_volumes() -> None:
    assert names.platform_rules("darwin") == MAC
    assert names.platform_rules("win32") == WINDOWS
    assert names.platform_rules("linux") == names.EXACT


@pytest.mark.parametrize(
    ("value", "rules"),
    [
        ("case", WINDOWS),
        ("case,normalisation", MAC),
        (" Normalization , CASE ", MAC),
        ("normalisation", names.VolumeRules(False, True)),
        ("exact", names.EXACT),
    ],
)
def test_forced_rules(value: str, rules: names.VolumeRules, tmp_path: Path) -> None:
    assert names.forced_rules(value) == rules
    assert names.volume_rules(str(tmp_path), {names.FORCE: value}) == rules


def test_a_misspelt_forcing_falls_back_to_the_volume(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown caze"):
        names.forced_rules("caze")
    assert names.volume_rules(str(tmp_path), {names.FORCE: "caze"}) == names.EXACT


def test_this_machines_volume_is_detected_as_exact(tmp_path: Path) -> None:
    folder = tmp_path / "Docs" / NFC
    folder.mkdir(parents=True)
    names._detected.cache_clear()
    assert names.volume_rules(str(folder), {}) == names.EXACT
    # a case-swapped name that exists as another folder is another entry: still exact
    (tmp_path / "Other").mkdir()
    (tmp_path / "oTHER").mkdir()
    assert names.volume_rules(str(tmp_path / "Other"), {}) == names.EXACT


def test_a_folding_volume_is_detected_on_the_folders_own_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lstat as a case- and normalisation-insensitive volume answers it: every spelling of
    a name is the same entry."""
    real = os.lstat

    def folding_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        try:
            return real(path, *args, **kwargs)
        except FileNotFoundError:
            spelt = unicodedata.normalize("NFC", os.fspath(path)).lower()
            for candidate in (tmp_path / "Docs" / NFD,):
                if unicodedata.normalize("NFC", str(candidate)).lower() == spelt:
                    return real(candidate)
            raise

    folder = tmp_path / "Docs" / NFD
    folder.mkdir(parents=True)
    monkeypatch.setattr(names.os, "lstat", folding_lstat)
    names._detected.cache_clear()
    try:
        assert names.volume_rules(str(folder), {}) == MAC
    finally:
        names._detected.cache_clear()


def test_names_below_a_folder_under_each_platforms_rules() -> None:
    below = names.below
    assert below("/ws", "/ws/a/b.md", names.EXACT, posixpath) == ["a", "b.md"]
    assert below("/ws/", "/ws/a.md", names.EXACT, posixpath) == ["a.md"]
    assert below("/Ws", "/ws/a.md", names.EXACT, posixpath) is None
    assert below("/Ws", "/wS/A.md", MAC, posixpath) == ["A.md"]  # spelt as the editor did
    assert below(f"/{NFD}", f"/{NFC}/x.md", MAC, posixpath) == ["x.md"]
    assert below(f"/{NFD}", f"/{NFC}/x.md", WINDOWS, posixpath) is None
    assert below("/ws", "/ws-other/a.md", MAC, posixpath) is None  # not by string prefix
    assert below("/ws", "/ws", MAC, posixpath) is None  # the folder itself is not inside
    assert below("/ws", "/ws/../etc/a.md", MAC, posixpath) is None
    # a lower-case that changes a name's length cannot shift the cut
    assert below("/İx", "/i̇x/a.md", MAC, posixpath) == ["a.md"]


def test_windows_paths_drive_letters_shares_and_both_separators() -> None:
    below = names.below
    folder = "C:\\Users\\Me\\Notes"
    assert below(folder, "c:\\users\\me\\notes\\Guide.md", WINDOWS, ntpath) == ["Guide.md"]
    assert below(folder, "c:/Users/Me/Notes/sub/a.md", WINDOWS, ntpath) == ["sub", "a.md"]
    assert below(folder, "D:\\Users\\Me\\Notes\\a.md", WINDOWS, ntpath) is None
    assert below(folder, "C:\\Users\\Me\\Notes", WINDOWS, ntpath) is None
    # a case-sensitive folder (WSL's per-folder flag): names exact, the drive letter never
    assert below(folder, "c:\\Users\\Me\\Notes\\a.md", names.EXACT, ntpath) == ["a.md"]
    assert below(folder, "c:\\users\\Me\\Notes\\a.md", names.EXACT, ntpath) is None
    share = "\\\\Server\\Share\\docs"
    assert below(share, "\\\\server\\share\\Docs\\a.md", WINDOWS, ntpath) == ["a.md"]
    assert below("C:\\", "c:\\a.md", WINDOWS, ntpath) == ["a.md"]
    assert names.same_folder("C:\\Notes\\", "c:\\notes", WINDOWS, ntpath)
    assert not names.same_folder("C:\\Notes", "C:\\Notes\\x", WINDOWS, ntpath)


def test_the_disk_spelling_from_the_capture_or_the_listings(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / NFD).mkdir(parents=True)
    (ws / NFD / "Guide.md").write_text("# G\n")
    (ws / "Both.md").write_text("# 1\n")
    (ws / "both.md").write_text("# 2\n")
    spelling = names.Spelling()
    on_disk = spelling.on_disk
    stored = f"{NFD}/Guide.md"
    # from the listings: the file need not have been captured yet
    assert on_disk(str(ws), f"{NFC.upper()}/guide.MD", MAC) == stored
    assert on_disk(str(ws), f"{NFC}/Guide.md", WINDOWS) == f"{NFC}/Guide.md"  # NTFS: not it
    assert on_disk(str(ws), "BOTH.md", WINDOWS) == "BOTH.md"  # two names of one key
    assert on_disk(str(ws), "both.md", WINDOWS) == "both.md"  # an exact name wins
    assert on_disk(str(ws), "gone.md", MAC) == "gone.md"  # nothing on disk: as spelt
    assert on_disk(str(ws), "guide.md", names.EXACT) == "guide.md"  # exact: never looked up
    # from the capture's files (the listing is not read: the folder may be gone)
    captured = {stored: object(), "Both.md": object(), "both.md": object()}
    (ws / NFD / "Guide.md").unlink()
    assert on_disk(str(ws), f"{NFC}/GUIDE.md", MAC, captured) == stored
    assert on_disk(str(ws), "BOTH.MD", MAC, captured) == "BOTH.MD"
    assert on_disk(str(ws), "both.md", MAC, captured) == "both.md"


def test_a_listing_never_goes_through_a_link(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.md").write_text("# A\n")
    ws.mkdir()
    (ws / "Link").symlink_to(tmp_path / "outside")
    assert names.listed(str(ws), "link/a.md", MAC) is None


def folding_server(
    monkeypatch: pytest.MonkeyPatch, folders: list[str], rules: str = "case,normalisation"
) -> srv.CitelineServer:
    monkeypatch.setenv(names.FORCE, rules)
    ls = srv.CitelineServer()
    ls.places.folders = lambda: [(Path(p).as_uri(), p) for p in folders]  # type: ignore[method-assign]
    return ls


def test_the_server_finds_the_folder_and_the_disk_name_of_an_editor_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = write_files(tmp_path / "Notes", {f"{NFD}/Guide.md": "# G\n", "x.md": "# X\n"})
    ls = folding_server(monkeypatch, [str(ws)])
    try:
        editor = str(tmp_path / "notes" / NFC / "guide.md")
        assert ls.places.folder_of(editor) == str(ws)
        assert ls.places.relative(str(ws), editor) == f"{NFD}/Guide.md"
        assert ls.places.closed_document(editor) == (str(ws), f"{NFD}/Guide.md")
        assert ls.places.choose_folder((tmp_path / "NOTES").as_uri()) == str(ws)
        marked: list[Any] = []
        ls.engine.changed = lambda bundle, paths=None: marked.append((bundle, paths))  # type: ignore[method-assign]
        ls.schedule_check = lambda f, delay=0.0: marked.append(f)  # type: ignore[method-assign]
        ls.document_changed(Path(editor).as_uri())
        assert marked == [(str(ws), [f"{NFD}/Guide.md"]), str(ws)]
        monkeypatch.setenv(names.FORCE, "exact")  # as on Linux: another spelling is elsewhere
        assert ls.places.folder_of(editor) is None
    finally:
        ls.engine.close()


# -- end to end: a real server, NFD names on disk, NFC and case-swapped URIs from the editor --

TYPED = "# Draft\n\nzanzibar typed but not saved\n"
BROKEN = "---\ntitle: [unclosed\n---\n# X\n"


def did_open(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )


def did_change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def test_unsaved_text_under_an_nfc_uri_for_an_nfd_name_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "ws", {f"{NFD}.md": "# Notes\n\nsaved words\n"})
    monkeypatch.setenv(names.FORCE, "case,normalisation")
    editor_uri = uri_of(tmp_path / "ws" / f"{NFC}.md")
    assert editor_uri != uri_of(root / f"{NFD}.md")
    async with serve([root], {"unsaved": True}) as client:
        did_open(client, editor_uri, "# Notes\n\nsaved words\n")
        did_change(client, editor_uri, TYPED, 2)
        result = await command(client, "citeline.search", {"query": "zanzibar"})
        (hit,) = result["hits"]
        assert hit["path"] == f"{NFD}.md"  # the name as stored, as every record has it
        assert hit["unsaved"] is True


async def test_a_case_swapped_uri_gets_its_diagnostics_rechecked_under_its_own_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "Docs", {"Guide.md": "# Guide\n\nfine\n"})
    monkeypatch.setenv(names.FORCE, "case")
    editor_uri = uri_of(tmp_path / "docs" / "GUIDE.md")

    async with serve([root], {"unsaved": True}) as client:
        did_open(client, editor_uri, "# Guide\n\nfine\n")
        did_change(client, editor_uri, BROKEN, 2)
        await eventually(lambda: bool(client.diagnostics.get(editor_uri)))
        (diagnostic,) = client.diagnostics[editor_uri]
        assert "YAML" in diagnostic.message
        assert uri_of(root / "Guide.md") not in client.diagnostics  # not under another URI
        did_change(client, editor_uri, "# Guide\n\nfixed\n", 3)
        await eventually(lambda: len(client.diagnostics.get(editor_uri, [None])) == 0)
