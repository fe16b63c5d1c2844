"""snapshot_revision: SHA-256 of the records as Go's encoding/json writes them (SPEC §2)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Protocol

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES.update({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})
_ESCAPES.update({chr(i): f"\\u{i:04x}" for i in range(0x20) if chr(i) not in "\n\r\t"})
_TABLE = str.maketrans(_ESCAPES)
_PLAIN = re.compile('[^"\\\\<>&\u2028\u2029\x00-\x1f]*')


class Record(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def sha256(self) -> str: ...


def go_string(value: str) -> str:
    """A JSON string literal byte-identical to Go's json.Marshal (HTML escaping on)."""
    if _PLAIN.fullmatch(value):  # the common case: nothing to escape
        return '"' + value + '"'
    return '"' + value.translate(_TABLE) + '"'


def records_json(records: Iterable[Record]) -> str:
    items = sorted(records, key=lambda r: r.path)
    body = ",".join(
        f'{{"path":{go_string(r.path)},"size":{r.size},"sha256":"{r.sha256}"}}' for r in items
    )
    return f"[{body}]"


def snapshot_revision(records: Iterable[Record]) -> str:
    return hashlib.sha256(records_json(records).encode("utf-8")).hexdigest()
