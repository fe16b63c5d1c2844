"""Helpers for the language-server suite: fixture workspaces and a server over stdio."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from bundles import write_bundle
from inprocess import LspServer, in_process
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

INIT_RESULTS: weakref.WeakKeyDictionary[LanguageClient, types.InitializeResult] = (
    weakref.WeakKeyDictionary()
)
SERVER = [sys.executable, "-m", "citeline.cli.cli", "lsp"]

# A small workspace: headings at several levels, a titled body-only file, an untitled one.
DOCS: dict[str, str] = {
    "algo/hashing.md": (
        "---\ntitle: Hashing notes\n---\n"
        "# Ordered hashtable\n\nAn ordered hashtable keeps insertion order.\n\n"
        "## Buckets\n\nEach bucket is a linked list.\n\n"
        "#### Deep detail\n\nLoad factor and resizing.\n\n"
        "## Probing\n\nOpen addressing probes the next slot.\n\n"
        "# Trees\n\nBalanced trees keep keys sorted.\n"
    ),
    "notes/plain.md": (
        "---\ntitle: Plain zebra notes\n---\nNo heading here, only a zebra paragraph.\n"
    ),
    "untitled.md": "Just a quokka sentence without a heading.\n",
    "guide.md": (
        "Guide\n=====\n\nSetext heading with a walrus.\n\n## Install\n\nRun the installer.\n"
    ),
    "index.md": "# Index\n\nreserved navigation, never searched: hashtable\n",
}

write_files = write_bundle  # the name the LSP suites use


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


def no_progress_caps() -> types.ClientCapabilities:
    """Like eglot 1.9: no window.workDoneProgress."""
    caps = client_capabilities("neovim@v0.7.0")
    if caps.window is not None:
        caps.window.work_done_progress = False
    return caps


@contextlib.asynccontextmanager
async def serve(
    folders: Sequence[Path],
    settings: Any = None,
    caps: types.ClientCapabilities | None = None,
) -> AsyncIterator[LanguageClient]:
    """Start `citeline lsp`, initialise it on `folders`, shut it down cleanly afterwards
    (in this process under mutation testing: tests/inprocess.py)."""
    config = ClientServerConfig(server_command=SERVER)
    inside = None
    if in_process():
        client = config.client_factory()
        inside = LspServer()
        await inside.attach(client)
    else:
        client = await config.start()
    assert isinstance(client, LanguageClient)
    try:
        INIT_RESULTS[client] = await client.initialize_session(
            types.InitializeParams(
                capabilities=caps or no_progress_caps(),
                root_uri=uri_of(folders[0]) if folders else None,
                workspace_folders=[
                    types.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in folders
                ],
                initialization_options=settings,
            )
        )
        yield client
        await client.shutdown_session()
    finally:
        server = client._server
        if server is not None and server.returncode is None:
            await asyncio.sleep(0.5)  # let a clean exit finish; otherwise stop it
            if server.returncode is None:
                server.kill()
        await client.stop()
        if inside is not None:
            inside.close()


async def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll until `check()` holds (notifications arrive asynchronously)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


async def symbols(client: LanguageClient, query: str) -> list[types.SymbolInformation]:
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
    assert found is not None
    return list(found)  # type: ignore[arg-type]
