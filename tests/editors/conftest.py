"""Fixtures for the end-to-end editor tests (real Neovim / Emacs against `citeline lsp`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from editor_fixtures import FILES, lsp_command


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The fixture bundle: a git repository (project root for eglot) with a
    `.citeline` marker (root for the Neovim plugin)."""
    root = tmp_path / "ws"
    for rel, text in FILES.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
    (root / ".citeline").write_text("")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root.resolve()


@pytest.fixture
def editor_env(workspace: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["CITELINE_WS"] = str(workspace)
    env["CITELINE_LSP_CMD"] = json.dumps(lsp_command())
    env["HOME"] = str(workspace.parent / "home")  # no user config, no stray state
    Path(env["HOME"]).mkdir(exist_ok=True)
    return env


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One `vscode: N passed, N failed` line for the tests inside a real VS Code (a
    failure's message names the folder of its screenshots)."""
    mine = "test_vscode.py::"
    counts = {
        outcome: sum(
            1
            for r in terminalreporter.stats.get(outcome, [])
            if mine in getattr(r, "nodeid", "") and getattr(r, "when", "call") in ("call", "setup")
        )
        for outcome in ("passed", "failed", "error", "skipped")
    }
    if any(counts.values()):
        line = f"vscode: {counts['passed']} passed, {counts['failed'] + counts['error']} failed"
        if counts["skipped"]:
            line += f", {counts['skipped']} skipped"
        terminalreporter.write_line(line)
