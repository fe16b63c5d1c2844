"""Shared helpers for the engine and corpus suites."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from bundles import Files, write_bundle


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[..., Path]:
    """make_bundle({"a.md": "# A\\n"}) -> a fresh bundle folder (each call a new one)."""
    counter = itertools.count()

    def make(files: Files | None = None, name: str | None = None) -> Path:
        root = tmp_path / (name or f"bundle{next(counter)}")
        return write_bundle(root, files or {})

    return make
