"""The capture's backend as tests see it: hooks on its listing and reads, and what a folder
handle is, on the descriptor backend and the path backend alike (CITELINE_PLATFORM=windows).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from citeline.engine.capture import descriptor_backend, files, path_backend, reads
from citeline.engine.capture.path_backend import PathFolder


def backend() -> files.Backend:
    """The backend captures use now."""
    return files.BACKEND


def forced() -> bool:
    """Whether this run takes the path backend on a system that is not Windows."""
    return files.BACKEND.name == "path" and os.name != "nt"


def folder_inode(handle: Any) -> int:
    """The inode of the folder a handle stands for."""
    if isinstance(handle, PathFolder):
        return handle.ident[1]
    return os.fstat(handle).st_ino


def folder_path(handle: Any) -> str:
    """The real path of the folder a handle stands for."""
    if isinstance(handle, PathFolder):
        return os.path.realpath(handle.path)
    return os.readlink(f"/proc/self/fd/{handle}")


def hook(monkeypatch: pytest.MonkeyPatch, method: str, wrap: Callable[[Any], Any]) -> None:
    """Replace the backend's `method` ("entries", "read", …) by `wrap(real method)`."""
    bk = files.BACKEND
    monkeypatch.setattr(bk, method, wrap(getattr(bk, method)))


def swap_os(monkeypatch: pytest.MonkeyPatch, fake: Any) -> None:
    """Make `fake` the os module of the capture's backends and their reads (files.py,
    reads.py and each backend's module): what the system is asked while a bundle is read."""
    for module in (files, reads, descriptor_backend, path_backend):
        monkeypatch.setattr(module, "os", fake)
