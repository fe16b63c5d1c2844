"""Writing fixture bundles and reading cited lines back: shared by every suite (conftest.py
puts tests/ on sys.path)."""

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


def section_text(data: bytes, first: int, last: int) -> str:
    """Lines first..last (1-based) read back from a file's bytes, sliced by LF only, without
    the final line ending: what a hit citing those lines must contain."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts.pop()
    assert 1 <= first <= last <= len(parts)
    chosen = parts[first - 1 : last]
    ended_by_lf = last < len(parts) or data.endswith(b"\n")
    if ended_by_lf and chosen[-1].endswith(b"\r"):
        chosen[-1] = chosen[-1][:-1]
    return b"\n".join(chosen).decode("utf-8")
