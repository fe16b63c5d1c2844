"""Writing fixture bundles: shared by every suite (conftest.py puts tests/ on sys.path)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

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
