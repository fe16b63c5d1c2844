"""JSON-RPC base-protocol framing as the tests and the benchmark write and read it: their own
code, not the server's reader, so the server is checked against an independent one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO


def frame(body: bytes, length: int | None = None) -> bytes:
    """`body` with its header; `length` overrides the Content-Length (to send a wrong one)."""
    n = len(body) if length is None else length
    return b"Content-Length: %d\r\n\r\n" % n + body


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next message body, or None at the end of the stream."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise ValueError("a message header without Content-Length")
    return stream.read(length)


class Messages:
    """JSON-RPC requests and notifications over `write` (raw bytes to the server), shared
    by the tests' servers in a subprocess and in process."""

    _ids: Iterator[int]  # each server numbers its own requests

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def send(self, message: dict[str, Any]) -> None:
        self.write(frame(json.dumps({"jsonrpc": "2.0", **message}).encode()))

    def request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        msg_id = next(self._ids) if msg_id is None else msg_id
        message: dict[str, Any] = {"id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
