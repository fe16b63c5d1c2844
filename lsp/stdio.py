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
"""

from __future__ import annotations

import logging
import re
from typing import BinaryIO

log = logging.getLogger("citeline.lsp.stdio")

# RFC 7230 token characters for the name; the value runs to the end of the line.
HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\r?\n")
CONTENT_LENGTH = b"content-length"
# BufferedReader.read(n) allocates n bytes up front: a hostile or corrupt length must not
# become a MemoryError that kills the reader. Larger frames are skipped (their bytes are then
# discarded as garbage until the next header).
MAX_BODY = 256 * 1024 * 1024


class FrameReader:
    """Reads one message body at a time from a binary stream, resynchronising on garbage."""

    def __init__(self, stream: BinaryIO, max_body: int = MAX_BODY) -> None:
        self.stream = stream
        self.max_body = max_body

    def read_frame(self) -> bytes | None:
        """The next message body, or None at the end of the stream. Blocks (run it in a thread)."""
        length: int | None = None
        while True:
            line = self.stream.readline()
            if not line.endswith(b"\n"):
                return None  # the end of the stream, maybe inside a header line
            if not line.strip():
                if length is not None:
                    break
                # A blank line with no Content-Length before it ends no frame (an empty header
                # block, or the separator of a frame whose header was rejected): keep looking.
                continue
            match = HEADER.fullmatch(line)
            if match is None:
                # Not a header: the tail of a frame whose Content-Length was too short, or the
                # body of one that was never announced. The header the client wrote next ends
                # this line, so the last "Content-Length:" in it (a JSON body has no raw line
                # breaks, so it cannot come from inside a string) starts the next frame.
                garbage, header, _ = line.lower().rpartition(CONTENT_LENGTH + b":")
                log.warning(
                    "discarding %d bytes of garbage in the message stream: %r",
                    len(garbage) if header else len(line),
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
