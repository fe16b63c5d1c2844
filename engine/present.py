"""From ranked sections to the contract's JSON values (SPEC §6, §9)."""

from __future__ import annotations

import json
import re
from typing import Any

from .limits import Limits, limit_error

_SAFE_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/$&+,:;=@"
_SAFE = frozenset(_SAFE_CHARS.encode("ascii"))
_UNSAFE = re.compile(f"[^{re.escape(_SAFE_CHARS)}]")


def escape_path(path: str) -> str:
    """The path as Go's url.URL.EscapedPath writes it."""
    if not _UNSAFE.search(path):
        return path  # the common case: nothing to escape
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in path.encode("utf-8"))


def locator(path: str, line_start: int, line_end: int) -> str:
    return f"{escape_path(path)}#L{line_start}-L{line_end}"


def encode(result: dict[str, Any]) -> str:
    """The compact UTF-8 JSON every front writes (and the size the response limit counts)."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def check_size(result: dict[str, Any], limits: Limits) -> dict[str, Any]:
    size = len(encode(result).encode("utf-8"))
    if size > limits.max_response_bytes:
        raise limit_error("max_response_bytes", size, limits.max_response_bytes)
    return result
