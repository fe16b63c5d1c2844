"""Which fronts hold a change journal (issue 32): the long-lived ones — the language server,
the warm CLI process, the MCP server — and never a one-shot CLI call; and a request through
a long-lived front's engine sees a change through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.cli import cli, daemon
from citeline.engine.capture import journal as jmod
from citeline.lsp.server import CitelineServer
from citeline.mcp_server.server import CitelineMCP

pytestmark = pytest.mark.skipif(
    jmod.unsupported_reason() is not None, reason="no synchronous journal on this platform"
)


def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "b"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nalpha words\n")
    return root


def test_the_one_shot_cli_holds_none(tmp_path: Path) -> None:
    args = cli.parser().parse_args(["search", str(bundle(tmp_path)), "-q", "alpha", "--no-cache"])
    engine = cli.FreshEngine().open(str(tmp_path / "b"), cli.settings_from(args), args)
    try:
        assert engine.reuse.journals is None
    finally:
        engine.close()


def test_the_warm_process_holds_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    root = bundle(tmp_path)
    args = cli.parser().parse_args(["search", str(root), "-q", "alpha"])
    engines = daemon.KeptEngines()
    try:
        engine = engines.open(str(root), cli.settings_from(args), args)
        journals = engine.reuse.journals
        assert journals is not None
        first = engine.capture(engine.call(str(root)))
        assert journals.watches() == 1
        (root / "a.md").write_text("# Alpha\n\nalpha changed\n")
        second = engine.capture(engine.call(str(root)))
        assert second.revision != first.revision
        assert [f.data for f in second.files] == [b"# Alpha\n\nalpha changed\n"]
    finally:
        engines.close()
    # --reread: every request reads every file, no journal consulted
    reread = cli.parser().parse_args(["search", str(root), "-q", "alpha", "--reread"])
    engines = daemon.KeptEngines()
    try:
        engine = engines.open(str(root), cli.settings_from(reread), reread)
        engine.capture(engine.call(str(root)))
        assert engine.reuse.journals is not None and engine.reuse.journals.watches() == 0
    finally:
        engines.close()


def test_the_language_server_and_the_mcp_server_hold_one(tmp_path: Path) -> None:
    server = CitelineServer()
    try:
        assert server.engine.reuse.journals is not None
    finally:
        server.engine.close()
    mcp = CitelineMCP(str(bundle(tmp_path)), cache=False)
    try:
        assert mcp.engine.reuse.journals is not None
    finally:
        mcp.engine.close()
