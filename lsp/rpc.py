"""The language server's JSON-RPC edge: reading each message body, answering malformed
ones as JSON-RPC 2.0 requires, and the ONE mapping of errors to JSON-RPC answers.

- Errors (SPEC §10): the engine's table of codes (engine/base/errors.py ERRORS) gives each code's
  JSON-RPC code — schema_validation → -32602, cancelled → -32800, everything else → -32803;
  ``data`` is the envelope's error object ``{code, message, details}``, its remedy worded for
  an editor (fronts/remedies.py). A bug is -32603, its traceback in the log only.
- Malformed messages (CitelineProtocol.handle_body): invalid JSON → -32700 and a message of
  the wrong shape → -32600 (id null when it cannot be read), params that do not fit the
  method → -32602 with the request's id; notifications are never answered, only logged.
  pygls 2.1 would only send window/showMessage, and the client would wait forever.
- ``workspace/executeCommand`` is overridden as a coroutine, so that a cancelled command
  reaches its handler (pygls' built-in one runs commands as a nested task that
  ``$/cancelRequest`` never reaches). The commands are the operations of the engine's table
  (engine/operations.py), advertised and dispatched from COMMANDS.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, cast

import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcRequestCancelled,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, MsgId
from pygls.protocol.language_server import lsp_method

from citeline.engine import CitelineError
from citeline.engine.base.errors import (
    INVALID_PARAMS,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    internal_error,
    reported,
)
from citeline.engine.operations import OPERATIONS
from citeline.fronts.json_names import json_type
from citeline.fronts.remedies import EDITOR, worded

from .stdio import MAX_DEPTH, nested_too_deep

log = logging.getLogger("citeline.lsp")

T = TypeVar("T")

# workspace/executeCommand's commands: one per operation of the engine's table.
COMMANDS = tuple(f"citeline.{name}" for name in OPERATIONS)


class CommandRunner(Protocol):
    """What the protocol needs of its server: a coroutine that answers a command."""

    async def run_command(self, params: types.ExecuteCommandParams) -> dict[str, Any]: ...


class JsonRpcRequestFailed(JsonRpcException):
    """LSP's RequestFailed (-32803): the request was valid but could not be answered."""

    CODE = REQUEST_FAILED
    MESSAGE = "Request failed"


# The JSON-RPC errors of the engine's table of codes (engine/base/errors.py ERRORS).
RPC_ERRORS: dict[int, type[JsonRpcException]] = {
    INVALID_PARAMS: JsonRpcInvalidParams,
    REQUEST_CANCELLED: JsonRpcRequestCancelled,
    REQUEST_FAILED: JsonRpcRequestFailed,
}


def rpc_error(err: CitelineError) -> JsonRpcException:
    """Map an engine error to the JSON-RPC error of SPEC §10 (envelope error object as data),
    with what to change worded for an editor."""
    err = worded(err, EDITOR)
    kind = RPC_ERRORS[reported(err.code).rpc]
    return kind(err.message, data=err.to_json()["error"])


def bug_error(exc: BaseException, where: str) -> JsonRpcInternalError:
    """JSON-RPC -32603 for a bug (an exception that is not a CitelineError): one line for
    the user, the internal_error envelope's error object as data, the traceback in the log."""
    log.error("internal error in %s", where, exc_info=exc)
    data = internal_error(exc)["error"]
    return JsonRpcInternalError(data["message"], data=data)


def guarded(handler: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """A request handler whose unexpected exceptions are answered by bug_error, not by
    pygls (which would send the traceback to the client as the error's data)."""

    @functools.wraps(handler)
    async def run(*args: Any, **kwargs: Any) -> T:
        try:
            return await handler(*args, **kwargs)
        except CitelineError as err:
            raise rpc_error(err) from None
        except JsonRpcException:
            raise
        except Exception as exc:
            raise bug_error(exc, getattr(handler, "__name__", "a request")) from None

    return run


def schema(message: str, **details: Any) -> CitelineError:
    return CitelineError("schema_validation", message, details)


class CitelineProtocol(LanguageServerProtocol):
    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(  # type: ignore[override]  # a coroutine on purpose
        self, params: types.ExecuteCommandParams
    ) -> Any:
        """Run a command as the request's own task, so `$/cancelRequest` reaches it."""
        if params.command not in COMMANDS:
            raise JsonRpcInvalidParams(
                f"Unknown command {params.command!r}; citeline offers {', '.join(COMMANDS)}."
            )
        runner = cast(CommandRunner, self._server)  # a CitelineServer (lsp/server.py)
        return await guarded(runner.run_command)(params)

    # -- reading messages (instead of pygls' run_async, see CitelineServer.start_io) ------

    def handle_body(self, body: bytes) -> None:
        """Parse, check and dispatch one message body."""
        try:
            data = json.loads(body.decode("utf-8"))  # LSP bodies are utf-8 only
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            log.warning("unparsable message (%s): %r", exc, body[:200])
            self.send_error(None, JsonRpcParseError(f"Parse error: {exc}."))
            return
        except RecursionError:  # json's own limit, near 1,000 levels: the id is not known
            log.warning("unparsable message (nested too deeply): %r", body[:200])
            self.send_error(
                None,
                JsonRpcParseError(f"Parse error: nested more than {MAX_DEPTH} levels deep."),
            )
            return
        if nested_too_deep(data):
            # Refused before cattrs, pygls or a log line recurses over it.
            msg_id = data.get("id") if isinstance(data, dict) else None
            id_ok = isinstance(msg_id, str | int) and not isinstance(msg_id, bool)
            log.warning("invalid request (nested too deeply): %r", body[:200])
            # A notification or a response is never answered (JSON-RPC 2.0 §4.1, §5).
            silent = isinstance(data, dict) and (
                "id" not in data if "method" in data else ("result" in data or "error" in data)
            )
            if not silent:
                self.send_error(
                    msg_id if id_ok else None,
                    JsonRpcInvalidRequest(
                        f"Invalid Request: nested more than {MAX_DEPTH} levels deep."
                    ),
                )
            return
        message = self.checked_message(data)
        if message is None:
            return
        try:
            self.handle_message(message)
        except Exception as exc:  # pygls answers handler errors itself: this is a bug
            log.exception("unable to handle message")
            self._server._report_server_error(exc, JsonRpcException)

    def checked_message(self, data: Any) -> Any | None:
        """The structured message, or None once it has been answered (or logged) as invalid.

        pygls 2.1 raises on these inside its read loop and only shows the user an error, so a
        client would wait forever for the answer to its request.
        """
        if not isinstance(data, dict):
            # LSP never batches: an array is answered like any other non-object.
            self.send_error(
                None,
                JsonRpcInvalidRequest(
                    f"Invalid Request: expected an object, got {json_type(data)}."
                ),
            )
            return None
        msg_id = data.get("id")
        id_ok = isinstance(msg_id, str | int) and not isinstance(msg_id, bool)
        method = data.get("method")
        if "method" not in data and ("result" in data or "error" in data):
            # A response to one of our requests: never answered, whatever is wrong with it.
            if data.get("jsonrpc") == self.VERSION and "id" in data:
                with contextlib.suppress(JsonRpcException):  # structure_message logs it
                    return self.structure_message(data)
            log.warning("ignoring a malformed response: %.200s", json.dumps(data))
            return None
        problem = None
        if data.get("jsonrpc") != self.VERSION:
            problem = 'jsonrpc must be "2.0"'
        elif not isinstance(method, str):
            problem = "method must be a string" if "method" in data else "method is missing"
        elif "id" in data and not id_ok:
            problem = "id must be an integer or a string"
        if problem is not None:
            log.warning("invalid request (%s): %.200s", problem, json.dumps(data))
            self.send_error(
                msg_id if id_ok else None, JsonRpcInvalidRequest(f"Invalid Request: {problem}.")
            )
            return None
        is_request = "id" in data
        assert isinstance(method, str)  # (checked above)
        error = self.raw_params_problem(method, data.get("params"))
        if error is None:
            fallback = JsonRPCRequestMessage if is_request else JsonRPCNotification
            try:
                return self._converter.structure(data, self.get_message_type(method) or fallback)
            except Exception as exc:  # cattrs: a params shape that does not fit the method
                detail = (
                    "; ".join(cattrs.transform_error(exc))
                    if isinstance(exc, cattrs.ClassValidationError)
                    else str(exc)
                )
                error = JsonRpcInvalidParams(f"Invalid params for {method}: {detail}.")
        if is_request:
            self.send_error(msg_id, error)
        else:
            log.warning("ignoring notification %s: %s", method, error.message)
        return None

    def raw_params_problem(self, method: str, params: Any) -> JsonRpcException | None:
        """Checks that must see the params before cattrs converts them."""
        if method == types.WORKSPACE_EXECUTE_COMMAND and isinstance(params, dict):
            args = params.get("arguments")
            if args is not None and not isinstance(args, list):
                # cattrs would turn a string into a list of its characters (and an object
                # into a list of its keys): "alpha" would become five arguments.
                return rpc_error(
                    schema(
                        f"{params.get('command')} arguments must be an array with one request "
                        f"object; got {json_type(args)}.",
                        field="arguments",
                    )
                )
        return None

    def send_error(self, msg_id: MsgId | None, error: JsonRpcException) -> None:
        # Built by hand: lsprotocol's ResponseErrorMessage drops an `id` of None, and
        # JSON-RPC requires `"id": null` when the request's id could not be read.
        self._send_data(
            {
                "jsonrpc": self.VERSION,
                "id": msg_id,
                "error": self._converter.unstructure(error.to_response_error()),
            }
        )


__all__ = [
    "COMMANDS",
    "CitelineProtocol",
    "JsonRpcRequestFailed",
    "bug_error",
    "guarded",
    "rpc_error",
    "schema",
]
