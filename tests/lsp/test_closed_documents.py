"""textDocument/documentSymbol of a document that is not open (issue 31 hole 5), over the wire.

An open document is outlined from the editor's text. A closed one only when it is a Markdown
file inside a workspace folder, read with the capture's rules: no link followed at any
component inside the folder, non-blocking, regular files only, at most the file-size limit.
A plain open() followed links out of the workspace, read /dev/zero until memory ran out, and
four requests on FIFOs took the server's four engine threads for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_support import serve, symbols, uri_of, write_files
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "# Outside secret heading\n\nnot in the workspace\n"
FIFOS = [f"pipe{i}.md" for i in range(6)]  # more than the server's four engine threads
ANSWER_WITHIN = 30.0


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("closed")
    outside = write_files(base / "outside", {"secret.md": SECRET, "dir/deep.md": SECRET})
    # huge.md is ignored by the capture (it would be over the limit for every search), not
    # by documentSymbol: the size limit alone refuses it there.
    folder = write_files(
        base / "ws", {"real.md": "# Real\n\n## Inside\n\ntext\n", ".gitignore": "huge.md\n"}
    )
    (folder / "link.md").symlink_to(outside / "secret.md")
    (folder / "linkdir").symlink_to(outside / "dir", target_is_directory=True)
    (folder / "zero.md").symlink_to("/dev/zero")
    for name in FIFOS:
        os.mkfifo(folder / name)
    if os.geteuid() == 0:  # a character device inside the workspace, named like Markdown
        os.mknod(folder / "dev.md", 0o644 | stat.S_IFCHR, os.stat("/dev/zero").st_rdev)
    # 8 GiB of holes: a regular file far over the 16 MiB limit
    subprocess.run(["truncate", "-s", str(8 << 30), str(folder / "huge.md")], check=True)
    yield folder, outside
    for name in FIFOS:  # wake a reader a regression left blocked, so the server can exit
        with contextlib.suppress(OSError):
            os.close(os.open(folder / name, os.O_WRONLY | os.O_NONBLOCK))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(places: tuple[Path, Path]) -> AsyncIterator[LanguageClient]:
    async with serve([places[0]]) as c:
        yield c


async def outline(client: LanguageClient, uri: str) -> list[str]:
    found = await asyncio.wait_for(
        client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        ),
        ANSWER_WITHIN,
    )
    return [s.name for s in found or []]  # type: ignore[union-attr]


async def test_a_closed_file_inside_the_workspace_is_outlined(
    client: LanguageClient, places: tuple[Path, Path]
) -> None:
    assert await outline(client, uri_of(places[0] / "real.md")) == ["Real"]


async def test_fifos_neither_hang_nor_take_the_engine_threads(
    client: LanguageClient, places: tuple[Path, Path]
) -> None:
    folder = places[0]
    answers = await asyncio.gather(*(outline(client, uri_of(folder / n)) for n in FIFOS))
    assert answers == [[] for _ in FIFOS]
    # The engine threads are free: a search and another outline answer.
    assert [s.name for s in await asyncio.wait_for(symbols(client, "inside"), 30)] == ["Inside"]
    assert await outline(client, uri_of(folder / "real.md")) == ["Real"]


async def test_links_are_not_followed(client: LanguageClient, places: tuple[Path, Path]) -> None:
    folder, _ = places
    assert await outline(client, uri_of(folder / "link.md")) == []
    assert await outline(client, uri_of(folder / "linkdir" / "deep.md")) == []


async def test_nothing_outside_the_workspace_is_read(
    client: LanguageClient, places: tuple[Path, Path]
) -> None:
    folder, outside = places
    assert await outline(client, uri_of(outside / "secret.md")) == []
    assert await outline(client, f"{uri_of(folder)}/../outside/secret.md") == []
    assert await outline(client, "file:///dev/zero") == []
    assert await outline(client, "file:///etc/passwd") == []


async def test_devices_and_huge_files_are_not_read(
    client: LanguageClient, places: tuple[Path, Path]
) -> None:
    folder, _ = places
    assert await outline(client, uri_of(folder / "zero.md")) == []  # a link to /dev/zero
    if os.geteuid() == 0:
        assert (folder / "dev.md").is_char_device()
        assert await outline(client, uri_of(folder / "dev.md")) == []
    assert await outline(client, uri_of(folder / "huge.md")) == []
    assert await outline(client, uri_of(folder / "real.md")) == ["Real"]  # still serving


async def test_an_open_document_is_outlined_from_its_text_whatever_the_disk_holds(
    client: LanguageClient, places: tuple[Path, Path]
) -> None:
    uri = uri_of(places[0] / FIFOS[0])  # a FIFO on disk, a document in the editor
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="# From the editor\n"
            )
        )
    )
    try:
        assert await outline(client, uri) == ["From the editor"]
    finally:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
