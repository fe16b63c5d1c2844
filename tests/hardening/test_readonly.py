"""Read-only guarantee (SPEC §2): no front writes, creates, touches or caches anything in the
workspace. Fingerprint every path (bytes, mtime_ns, mode) and every directory listing before and
after full CLI, LSP and MCP sessions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from rpc import uri_of

Fingerprint = dict[str, tuple[Any, ...]]

FILES: dict[str, bytes] = {
    "a.md": b"---\ntitle: Alpha notes\n---\n# Alpha\n\nalpha beta\n\n## Gamma\n\ngamma\n",
    "sub/b.md": "# 网关\n\napisix网关 alpha\n".encode(),
    "sub/deeper/c.markdown": b"Setext\n======\n\nalpha zeta\n",
    "bad.md": b"# Broken\n\xff\xfe alpha\n",  # a parse error: diagnostics, skipped results
    "index.md": b"# Index\nalpha\n",
    "ignored/x.md": b"alpha ignored\n",
    ".gitignore": b"ignored/\n",
    "notes.txt": b"not markdown\n",
}


def fingerprint(root: Path) -> Fingerprint:
    """Every path under root (links not followed): kind, mode, mtime_ns, size, bytes; and each
    folder's listing and mtime (a file created then deleted still changes the folder's mtime)."""
    out: Fingerprint = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        st = os.lstat(dirpath)
        listing = tuple(sorted(dirnames + filenames))
        out[os.path.relpath(dirpath, root)] = ("dir", st.st_mode, st.st_mtime_ns, listing)
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            data = Path(full).read_bytes() if os.path.isfile(full) else b""
            out[os.path.relpath(full, root)] = ("file", st.st_mode, st.st_mtime_ns, data)
    return out


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, data in FILES.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    old = 1_600_000_000_000_000_000  # an old mtime: any touch would show
    for path in [root, *root.rglob("*")]:
        os.utime(path, ns=(old, old), follow_symlinks=False)
    return root


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citeline.cli.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "0"},
    )


def test_cli_session_leaves_workspace_untouched(workspace: Path) -> None:
    before = fingerprint(workspace)
    runs = []
    for out in ([], ["--json"]):
        for skip in ([], ["--skip-invalid"]):
            for cmd in (
                ["search", "-q", "alpha"],
                ["search", "-q", "alpha", "--profile", "recall"],
                ["concepts", "-q", "a"],
                ["lines", "-F", "alpha", "-C", "1"],
                ["lines", "-e", "^#+ ", "-i"],
            ):
                runs.append(cli(*cmd, *out, *skip, str(workspace), cwd=workspace))
                runs.append(cli(*cmd, *out, *skip, cwd=workspace))  # bundle "." from inside
    assert {r.returncode for r in runs} <= {0, 1, 5}, [r.stderr for r in runs]
    assert any(r.returncode == 0 for r in runs)
    assert fingerprint(workspace) == before


async def test_lsp_session_leaves_workspace_untouched(workspace: Path) -> None:
    before = fingerprint(workspace)
    # Started from inside the workspace, so a relative cache or log would land in it.
    in_workspace = "import os, sys; os.chdir(sys.argv.pop()); from citeline.cli.cli import main; "
    command = [sys.executable, "-c", in_workspace + "sys.exit(main(['lsp']))", str(workspace)]
    client = await ClientServerConfig(server_command=command).start()
    assert isinstance(client, LanguageClient)
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual_studio_code"),
                root_uri=uri_of(workspace),
                workspace_folders=[types.WorkspaceFolder(uri=uri_of(workspace), name="ws")],
                initialization_options={"skip_invalid": True},
            )
        )
        assert await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="alpha"))
        await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=""))
        for name, arg in (
            ("citeline.search", {"query": "alpha"}),
            ("citeline.lines", {"pattern": "alpha", "mode": "exact"}),
            ("citeline.concepts", {"query": "a"}),
        ):
            result = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=name, arguments=[arg])
            )
            assert result["total"] > 0
        doc = workspace / "a.md"
        uri = uri_of(doc)
        text = doc.read_text(encoding="utf-8")
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
            )
        )
        symbols = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert symbols
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text + "# New\n")],
            )
        )
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        await client.shutdown_session()
    finally:
        await client.stop()
    assert fingerprint(workspace) == before


async def test_mcp_session_leaves_workspace_untouched(workspace: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    before = fingerprint(workspace)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli.cli", "mcp", "--skip-invalid", str(workspace)],
        cwd=str(workspace),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        for tool, args in (
            ("search_sections", {"query": "alpha"}),
            ("search_concepts", {"query": "a"}),
            ("search_lines", {"pattern": "alpha", "mode": "exact"}),
        ):
            result = await session.call_tool(tool, args)
            assert not result.is_error, result
    assert fingerprint(workspace) == before
