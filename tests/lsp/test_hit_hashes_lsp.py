"""section_sha256 where hits reach the editor (issue 53; SPEC §6, §11, §18), over the wire.

The editors' result lists (VS Code's results view and Quick Pick, Neovim's quickfix list,
Emacs's xref buffer) are all built from `citeline.search`, whose hits carry `section_sha256`;
`workspace/symbol` answers plain SymbolInformation, with no `data`, as no client reads a
symbol's data (docs/lsp.md, "Hashes and symbols"). These tests hold both halves: every hit's
hash is the hash of its lines as the editor has them (on disk, CRLF or not, or the unsaved
text), and a symbol joins a hit on path and range, so that a citation made from either
verifies and follows an edit.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lsp_support import command, serve, symbols, uri_of, write_files
from lsprotocol import types
from pytest_lsp import LanguageClient

from citeline.engine.contracts import validate

LF = "---\ntitle: Zanzibar atlas\n---\nA zanzibar preamble.\n\n# Harbour\n\nzanzibar harbour text\n"
CRLF = (
    "# Ferry\r\n\r\nthe zanzibar ferry\r\nleaves at noon\r\n\r\n"
    "## Tickets\r\n\r\nzanzibar fares\r\n"
)


def lines_sha256(text: str, line_start: int, line_end: int) -> str:
    """SPEC §6 by hand: lines line_start..line_end (LF ends a line, a CR before it stays inside),
    without the final line ending (its CR too)."""
    lines = text.split("\n")
    span = "\n".join(lines[line_start - 1 : line_end])
    ended = line_end < len(lines)  # the last cited line has a line ending of its own
    if ended and span.endswith("\r"):
        span = span[:-1]
    return hashlib.sha256(span.encode("utf-8")).hexdigest()


def symbol_key(s: types.SymbolInformation) -> tuple[str, int, int]:
    r = s.location.range
    # A symbol's range ends at the start of the line after the section (lsp/symbols.py).
    return (str(s.container_name), r.start.line + 1, r.end.line)


async def search(client: LanguageClient, query: str) -> dict[str, Any]:
    found = await command(client, "citeline.search", {"query": query, "profile": "recall"})
    validate("search.result", found)
    return found


async def test_every_hit_hashes_its_lines_as_on_disk(tmp_path: Path) -> None:
    root = write_files(tmp_path / "ws", {"atlas.md": LF, "ferry.md": CRLF})
    async with serve([root]) as client:
        found = await search(client, "zanzibar")
        hits = found["hits"]
        assert {(h["path"], h["heading"]) for h in hits} == {
            ("atlas.md", ""),  # the preamble: heading "" (SPEC §6)
            ("atlas.md", "Harbour"),
            ("ferry.md", "Ferry"),
            ("ferry.md", "Tickets"),
        }
        for h in hits:
            disk = (root / h["path"]).read_bytes().decode("utf-8")
            assert h["section_sha256"] == lines_sha256(disk, h["line_start"], h["line_end"]), h
        # CRLF inside a section is hashed as it is: not the LF-normalised text.
        ferry = next(h for h in hits if h["heading"] == "Ferry")
        normalised = CRLF.replace("\r\n", "\n")
        assert ferry["section_sha256"] != lines_sha256(
            normalised, ferry["line_start"], ferry["line_end"]
        )


async def test_symbols_join_hits_and_the_citation_follows_an_edit(tmp_path: Path) -> None:
    root = write_files(tmp_path / "ws", {"atlas.md": LF, "ferry.md": CRLF})
    async with serve([root]) as client:
        syms = await symbols(client, "zanzibar")
        assert syms and all(isinstance(s, types.SymbolInformation) for s in syms)
        # No hit data rides on a symbol: the lists that cite are built from citeline.search.
        assert all(not hasattr(s, "data") for s in syms)
        hits = {
            (h["path"], h["line_start"], h["line_end"]): h
            for h in (await search(client, "zanzibar"))["hits"]
        }
        assert {symbol_key(s) for s in syms} <= set(hits)
        tickets = next(s for s in syms if s.name == "Tickets")
        hit = hits[symbol_key(tickets)]
        cite = {k: hit[k] for k in ("path", "line_start", "line_end", "section_sha256", "heading")}
        result = await command(client, "citeline.verify", {"citations": [cite]})
        validate("verify.result", result)
        assert [r["status"] for r in result["results"]] == ["valid"]

        # Two lines above the section, saved: the text moved, and where it went is where the
        # symbol for the same query now points.
        (root / "ferry.md").write_bytes(
            CRLF.replace("leaves at noon\r\n", "leaves\r\nat\r\nnoon\r\n").encode()
        )
        (r,) = (await command(client, "citeline.verify", {"citations": [cite]}))["results"]
        assert r["status"] == "moved"
        assert (r["line_start"], r["line_end"]) == (hit["line_start"] + 2, hit["line_end"] + 2)
        again = next(s for s in await symbols(client, "zanzibar") if s.name == "Tickets")
        assert symbol_key(again) == (r["path"], r["line_start"], r["line_end"])
        assert r["section_sha256"] == hit["section_sha256"]


async def test_unsaved_text_is_what_the_hash_describes(tmp_path: Path) -> None:
    root = write_files(tmp_path / "ws", {"atlas.md": LF})
    uri = uri_of(root / "atlas.md")
    typed = LF.replace("zanzibar harbour text\n", "zanzibar harbour text, typed\r\nnot saved\n")
    async with serve([root], {"unsaved": True}) as client:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text=typed
                )
            )
        )
        found = await search(client, "harbour")
        (hit,) = found["hits"]
        assert hit.get("unsaved") is True
        assert hit["section_sha256"] == lines_sha256(typed, hit["line_start"], hit["line_end"])
        assert hit["section_sha256"] != lines_sha256(LF, 6, 8)  # not the disk's section
