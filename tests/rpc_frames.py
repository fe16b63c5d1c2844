"""JSON-RPC base-protocol framing as the tests and the benchmark write and read it: their own
code, not the server's reader, so the server is checked against an independent one."""

from __future__ import annotations

from typing import BinaryIO


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
