"""The MCP server's stdin: one JSON-RPC message a line, every line answered or bounded.

The SDK's stdio transport reads lines of any length, and a line it cannot validate — not
JSON, not a JSON-RPC message, or nested deeper than its parser allows (about 200 levels; a
100,000-deep message, issue 31) — is handed to the session as an exception, which logs it at
debug level and answers nothing: the client waits forever for its reply. `Lines` is the
`stdin` given to the SDK's `stdio_server` instead (its stdout and the rest stay the SDK's):

- a line is read in pieces of at most `max_line` bytes, so that a longer one (which no MCP
  request needs) costs no more than that, and is refused with -32600;
- a line that is not JSON gets -32700, one that is JSON but not a valid JSON-RPC message (or
  nests deeper than the SDK parses, or has an id that is no string or integer, which the SDK
  would take for a notification) gets -32600, as JSON-RPC 2.0 requires: with the request's
  id when it can be read, else null. A notification or a response is never answered, only
  logged (JSON-RPC 2.0 §4.1);
- a valid line is passed on for the SDK to validate (again: a few microseconds for what MCP
  sends) and dispatch.

Replies go through the session's own write stream, so they never interleave with its output.
"""

from __future__ import annotations

import json
import logging
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.message import SessionMessage

from citeline.fronts.json_names import json_type

log = logging.getLogger("citeline.mcp")

MAX_LINE = 4 * 1024 * 1024  # bytes of one message: MCP requests are far smaller
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class Lines:
    """An async iterator of the valid message lines of a binary stream (see the module)."""

    def __init__(self, stream: BinaryIO, max_line: int = MAX_LINE) -> None:
        self.stream = stream
        self.max_line = max_line
        self.replies: Any = None  # the session's write stream, set once it exists
        self._ready = anyio.Event()

    def answer_to(self, write_stream: Any) -> None:
        """Where error replies go: the write stream of stdio_server."""
        self.replies = write_stream
        self._ready.set()

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            got = await anyio.to_thread.run_sync(self.read_line, abandon_on_cancel=True)
            if got is None:
                raise StopAsyncIteration
            line, size = got
            if size > self.max_line:
                log.warning("refusing a message of %d bytes (at most %d)", size, self.max_line)
                await self.reply(
                    None,
                    INVALID_REQUEST,
                    f"Invalid Request: a message is at most {self.max_line} bytes; this line "
                    f"held {size}.",
                )
                continue
            text = line.decode("utf-8", "replace")  # as the SDK's own reader decodes
            if not text.strip():
                continue  # a blank line between messages is no message
            problem = check(text)
            if problem is None:
                return text
            msg_id, code, message = problem
            log.warning("%s: %.200r", message, text)
            if code is not None:
                await self.reply(msg_id, code, message)

    def read_line(self) -> tuple[bytes, int] | None:
        """The next line and its size in bytes (of a line over max_line only the size);
        None at the end of the stream."""
        line = self.stream.readline(self.max_line + 1)
        if not line:
            return None
        size = len(line)
        if size <= self.max_line or line.endswith(b"\n"):
            return line, size
        while not line.endswith(b"\n"):
            line = self.stream.readline(self.max_line)
            if not line:
                break
            size += len(line)
        return b"", size

    async def reply(self, msg_id: str | int | None, code: int, message: str) -> None:
        await self._ready.wait()
        error = types.JSONRPCError(
            jsonrpc="2.0", id=msg_id, error=types.ErrorData(code=code, message=message)
        )
        await self.replies.send(SessionMessage(error))


def check(text: str) -> tuple[str | int | None, int | None, str] | None:
    """None for a line the SDK takes; else (id, error code or None to stay silent, what is
    wrong). The SDK's own validation decides, so that nothing it would drop passes here."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # pydantic's ValidationError
        errors = exc.errors() if hasattr(exc, "errors") else []
    else:
        return _bad_id(text) if isinstance(message, types.JSONRPCNotification) else None
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, PARSE_ERROR, f"Parse error: {exc}."
    except RecursionError:
        return None, PARSE_ERROR, "Parse error: the message is nested too deeply to be read."
    msg_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(msg_id, str | int) or isinstance(msg_id, bool):
        msg_id = None
    # A notification or a response is never answered (JSON-RPC 2.0 §4.1, §5).
    silent = isinstance(data, dict) and (
        "id" not in data if "method" in data else ("result" in data or "error" in data)
    )
    code = None if silent else INVALID_REQUEST
    if not isinstance(data, dict):
        return msg_id, code, f"Invalid Request: expected an object, got {json_type(data)}."
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid" and "recursion" in str(first.get("msg")):
        return msg_id, code, "Invalid Request: the message is nested too deeply to be read."
    where = ".".join(str(part) for part in first.get("loc", ()))
    what = f"{where}: {first.get('msg')}" if where else str(first.get("msg", "invalid"))
    return msg_id, code, f"Invalid Request: not a JSON-RPC 2.0 message ({what})."


def _bad_id(text: str) -> tuple[None, int, str] | None:
    """A request whose id is no string or integer (an object, an array, a boolean, 1.5, 1.0,
    null) validates as a notification, its id dropped as an unknown field, and the SDK
    answered nothing: the client waited forever (issue 49). MCP allows neither null nor a
    fraction. Only notifications are read again, and they are few."""
    data = json.loads(text)
    if "id" not in data:
        return None
    given = data["id"]
    kind = (
        "a number with a fraction or an exponent" if isinstance(given, float) else json_type(given)
    )
    return None, INVALID_REQUEST, f"Invalid Request: id must be an integer or a string, got {kind}."
