"""Shared helpers for the engine and corpus suites."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from bundles import Files, write_bundle


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Servers and CLI calls started by the tests use a cache of the test session's own
    (CITELINE_CACHE_DIR), never the user's."""
    folder = tmp_path_factory.mktemp("citeline-cache")
    os.environ["CITELINE_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[..., Path]:
    """make_bundle({"a.md": "# A\\n"}) -> a fresh bundle folder (each call a new one)."""
    counter = itertools.count()

    def make(files: Files | None = None, name: str | None = None) -> Path:
        root = tmp_path / (name or f"bundle{next(counter)}")
        return write_bundle(root, files or {})

    return make


@pytest.fixture
def file_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bundle-relative paths of the files capture reads from now on, in order."""
    import citeline.engine.capture as cap

    reads: list[str] = []
    real = cap.read_file

    def counting(dir_fd: int, name: str | bytes, rel: str, max_bytes: int) -> bytes | None:
        reads.append(rel)
        return real(dir_fd, name, rel, max_bytes)

    monkeypatch.setattr(cap, "read_file", counting)
    return reads
