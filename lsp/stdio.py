"""Base-protocol framing on stdio that survives a client's framing mistakes (SPEC §11).

pygls 2.1 accepts only a header line that is exactly ``Content-Length: N\\r\\n`` and never
looks for the next header after a frame whose Content-Length was wrong: the leftover bytes are
glued onto the next header line, which then never matches, so the server stops answering for
good. This reader owns the header parsing instead:

- header names are matched case-insensitively and other headers (``Content-Type``) are
  ignored, as the LSP base protocol allows;
- a line that is not a header is garbage left over from a mis-sized frame: it is discarded,
  except for a ``Content-Length:`` header glued onto its end, which starts the next frame.

So after one corrupt frame, the next well-formed message is read and answered.

A hostile client costs a bounded amount (issue 31): a header line is read in pieces of at most
MAX_HEADER_LINE bytes and only its tail is kept (a 64 MiB line once cost 130 MB), and a body
nested deeper than MAX_DEPTH is refused with an error answer (nested_too_deep) before anything
recurses over it — json.loads itself raises RecursionError near 1,000 levels, which once ended
the server with status 0 and no answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import BinaryIO

log = logging.getLogger("citeline.lsp.stdio")

# RFC 7230 token characters for the name; the value runs to the end of the line.
HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\r?\n")
CONTENT_LENGTH = b"content-length"
# BufferedReader.read(n) allocates n bytes up front: a hostile or corrupt length must not
# become a MemoryError that kills the reader. Larger frames are skipped (their bytes are then
# discarded as garbage until the next header).
MAX_BODY = 256 * 1024 * 1024
# A header line is a name and a number: far shorter. A longer line is garbage (the leftover
# of a mis-sized frame, or an attack) read in pieces of this size; only its last TAIL bytes
# are kept, where a header glued onto the garbage would be.
MAX_HEADER_LINE = 64 * 1024
TAIL = 256
# Nesting of a message (arrays and objects): LSP's deepest messages nest about ten levels.
# Deeper ones are refused before pygls, cattrs or a log line recurses over them.
MAX_DEPTH = 128


def nested_too_deep(data: object, limit: int = MAX_DEPTH) -> bool:
    """Whether the decoded message `data` nests more than `limit` arrays and objects.

    Iterative, so any depth is measured, and it stops at the first container too deep. It
    visits each array and object json.loads made once, never a string's characters: a
    1 MiB didOpen is three dictionaries.
    """
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[object] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class FrameReader:
    """Reads one message body at a time from a binary stream, resynchronising on garbage."""

    def __init__(
        self, stream: BinaryIO, max_body: int = MAX_BODY, max_line: int = MAX_HEADER_LINE
    ) -> None:
        self.stream = stream
        self.max_body = max_body
        self.max_line = max_line

    def read_line(self) -> tuple[bytes, int]:
        """The next line and its length; of a line longer than max_line only the last TAIL
        bytes are returned (the length tells). Without a final "\n": the end of the stream."""
        line = self.stream.readline(self.max_line)
        if len(line) < self.max_line or line.endswith(b"\n"):
            return line, len(line)
        length = len(line)
        tail = line[-TAIL:]
        while True:
            piece = self.stream.readline(self.max_line)
            length += len(piece)
            tail = (tail + piece)[-TAIL:]
            if not piece or piece.endswith(b"\n"):
                return tail, length

    def read_frame(self) -> bytes | None:
        """The next message body, or None at the end of the stream. Blocks (run it in a thread)."""
        length: int | None = None
        while True:
            line, size = self.read_line()
            if not line.endswith(b"\n"):
                return None  # the end of the stream, maybe inside a header line
            if not line.strip():
                if length is not None:
                    break
                # A blank line with no Content-Length before it ends no frame (an empty header
                # block, or the separator of a frame whose header was rejected): keep looking.
                continue
            match = HEADER.fullmatch(line) if size == len(line) else None
            if match is None:
                # Not a header: the tail of a frame whose Content-Length was too short, or the
                # body of one that was never announced. The header the client wrote next ends
                # this line, so the last "Content-Length:" in it (a JSON body has no raw line
                # breaks, so it cannot come from inside a string) starts the next frame.
                garbage, header, _ = line.lower().rpartition(CONTENT_LENGTH + b":")
                log.warning(
                    "discarding %d bytes of garbage in the message stream: %r",
                    size - len(line) + len(garbage) if header else size,
                    line[:80],
                )
                length = None
                if not header:
                    continue
                # (it matches: it starts with a header name and the line ends in "\n")
                match = HEADER.fullmatch(line, len(garbage))
                assert match is not None
            name, value = match.groups()
            if name.lower() != CONTENT_LENGTH:
                continue  # Content-Type and any other header: utf-8 JSON is all LSP uses
            if value.isdigit() and int(value) <= self.max_body:
                length = int(value)
            else:
                log.warning("ignoring a frame with Content-Length %r", value[:40])
                length = None
        assert length is not None  # the loop only breaks once a length was read
        body = self.stream.read(length)
        if len(body) < length:
            return None  # the stream ended inside the body
        return body
