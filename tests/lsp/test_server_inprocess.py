"""The language server in process (tests/inprocess.LspServer: lsp/server.py's features on a
fresh server, over pipes, spoken to in raw JSON-RPC). The same protocol as the subprocess
suites test, here so that mutation testing (docs/testing.md) sees the server's code run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import LspServer
from pygls.uris import from_fs_path

FILES = {
    "guide.md": "# Ordered hashtable\n\nAn ordered hashtable keeps order.\n\n## Buckets\n\n"
    "bucket text\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys.\n",
    "index.md": "# Index\n\nhashtable navigation\n",
}


def uri(path: Path) -> str:
    found = from_fs_path(str(path))
    assert found is not None
    return found


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    return write(tmp_path / "ws", FILES)


@pytest.fixture()
def lsp() -> Iterator[LspServer]:
    server = LspServer()
    try:
        yield server
    finally:
        server.close()


def test_serves_and_exits_after_shutdown(lsp: LspServer, folder: Path) -> None:
    init = lsp.initialize([folder])["result"]
    assert init["serverInfo"]["name"] == "citeline"
    assert init["capabilities"]["workspaceSymbolProvider"]
    assert init["capabilities"]["executeCommandProvider"]["commands"] == [
        "citeline.search",
        "citeline.lines",
        "citeline.concepts",
    ]
    found = lsp.call("workspace/symbol", {"query": "hashtable"})["result"]
    assert [(s["name"], s["location"]["uri"]) for s in found] == [
        ("Hashtable basics", uri(folder / "notes" / "b.md")),  # the shorter section first
        ("Ordered hashtable", uri(folder / "guide.md")),
    ]
    assert lsp.call("shutdown") == {"jsonrpc": "2.0", "id": 3, "result": None}
    lsp.notify("exit")
    assert lsp.wait(10) == 0
