"""Fixtures of the command-line suites."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.cli import daemon


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder and a sockets folder of the test's own; the warm process on."""
    (tmp_path / "run").mkdir()
    (tmp_path / "cache").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CITELINE_DAEMON", "1")
    monkeypatch.delenv("CITELINE_LOG", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(daemon, "TICK", 0.05)
    return tmp_path
