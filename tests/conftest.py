"""Shared helpers for the engine and corpus suites."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

Files = Mapping[str, bytes | str]


def write_bundle(root: Path, files: Files) -> Path:
    """Write {relative path: bytes | str} under `root` (str is written as UTF-8, no newline
    translation) and return `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)
    return root


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[..., Path]:
    """make_bundle({"a.md": "# A\\n"}) -> a fresh bundle folder (each call a new one)."""
    counter = itertools.count()

    def make(files: Files | None = None, name: str | None = None) -> Path:
        root = tmp_path / (name or f"bundle{next(counter)}")
        return write_bundle(root, files or {})

    return make
