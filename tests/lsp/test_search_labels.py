"""`"labels": true` in `citeline.search` (docs/lsp.md, "Hit labels"): the answer carries
`x-labels`, each hit's name as workspace/symbol gives it, so that the editors' lists name the
text before a file's first heading by the file's title as every front does (issue 51)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import command, serve, write_files
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from citeline.engine.contracts import validate

FILES = {
    # A title in front matter, text before the first heading.
    "titled.md": "---\ntitle: Deploying to Pages\n---\nPublish the site with pages.\n\n## Later\n",
    # No front matter: the first H1 names the preamble.
    "noted.md": "Pages preamble text.\n\n# Static Pages\n\nMore about pages.\n",
    # Neither: the path.
    "bare.md": "Just pages here.\n",
    # A Setext heading over two lines: one line, as a symbol's name.
    "setext.md": "Pages on\ntwo lines\n=========\n\npages body\n",
}


async def test_labels_name_each_hit_as_workspace_symbol_does(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", FILES)
    async with serve([folder]) as client:
        plain = await command(client, "citeline.search", {"query": "pages", "limit": 20})
        labelled = await command(
            client, "citeline.search", {"query": "pages", "limit": 20, "labels": True}
        )
        symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="pages"))
    labels = labelled.pop("x-labels")
    assert labelled == plain  # the hits keep §6's fields, in the same order
    validate("search.result", labelled)
    by_place = {
        (h["path"], h["line_start"]): name for h, name in zip(plain["hits"], labels, strict=True)
    }
    assert by_place[("titled.md", 4)] == "Deploying to Pages"
    assert by_place[("noted.md", 1)] == "Static Pages"
    assert by_place[("noted.md", 3)] == "Static Pages"  # the heading itself
    assert by_place[("bare.md", 1)] == "bare.md"
    assert by_place[("setext.md", 1)] == "Pages on two lines"
    assert len(labels) == len(plain["hits"]) >= 5
    # The same names as workspace/symbol, for every section both list.
    assert symbols
    for s in symbols:
        rel = Path(s.location.uri.removeprefix("file://")).relative_to(folder).as_posix()
        key = (rel, s.location.range.start.line + 1)
        if key in by_place:
            assert by_place[key] == s.name


async def test_labels_must_be_a_boolean(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", FILES)
    async with serve([folder]) as client:
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "pages", "labels": "yes"})
    assert err.value.data["code"] == "schema_validation"
    assert err.value.data["details"]["field"] == "labels"
