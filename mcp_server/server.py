"""`citeline mcp [BUNDLE]`: the MCP front (stdio) over one Engine, the bundle fixed at start.

Four tools, one per engine call: `search_sections` (SPEC §6/§13), `search_concepts` (§9),
`search_lines` (§8) and `verify_citations` (§18). Their inputSchema/outputSchema are the
JSON Schemas of engine/contracts, served as they are except for the two document-identity
keys `$schema` and `$id` and a description added to every input parameter
(mcp_server/tools.py: the tools, their descriptions and schemas). A result is returned once
in full, as MCP structured output (structuredContent, the contract's result byte for byte),
and once as a compact text rendering (mcp_server/text.py `render_text`) that still lets an
agent verify every citation (SPEC §14): per hit the path, line range, content_sha256 and the
snippet verbatim, and the snapshot_revision once. An engine error is a tool error (isError)
whose only content is the §10 envelope as compact JSON text. Built on the SDK's low-level
`mcp.server.lowlevel.Server`: the high-level MCPServer derives schemas from Python
signatures and cannot serve a given JSON Schema as it is.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from citeline.engine import Call, CancelToken, CitelineError, Engine, Settings
from citeline.engine.answer.present import encode
from citeline.engine.answer.requests import STRICT, front_request, strict_of
from citeline.engine.base.errors import internal_error, printable, reported
from citeline.engine.base.limits import front_settings
from citeline.engine.capture.capture import check_bundle
from citeline.engine.operations import OPERATIONS, Operation
from citeline.engine.semantic.models import ModelSpec
from citeline.fronts.hits import Sources
from citeline.fronts.remedies import MCP, with_limit_advice, worded

from .stdio import Lines
from .text import SOURCES, render_text
from .tools import TOOL_BY_NAME, VERIFY, tool_list

log = logging.getLogger("citeline.mcp")

SERVER_NAME = "citeline"
PROGRESS_INTERVAL = 0.25  # seconds between two progress notifications of one call

RESTART_ADVICE = "Or restart the server (citeline mcp) with --raise-limits to raise every limit."


def success(tool: str, result: dict[str, Any], *, say_skipped: bool = True) -> types.CallToolResult:
    """`structuredContent` is the result as it is (with `skipped` whenever files are skipped);
    the text names the skipped files only when `say_skipped` (once per change of the list)."""
    shown = result if say_skipped else {k: v for k, v in result.items() if k != "skipped"}
    return types.CallToolResult(
        content=[types.TextContent(text=render_text(tool, shown))], structured_content=result
    )


def bug(exc: BaseException) -> types.CallToolResult:
    """The tool error for an exception that is not a CitelineError: the internal_error
    envelope (one line, no traceback) as text, like failure()."""
    return types.CallToolResult(
        content=[types.TextContent(text=encode(internal_error(exc)))], is_error=True
    )


def failure(err: CitelineError) -> types.CallToolResult:
    # No structuredContent on errors: TypeScript-SDK clients validate any structuredContent
    # against outputSchema even when isError is set, and would replace our envelope by a
    # schema-mismatch exception. The envelope travels as the text content.
    return types.CallToolResult(
        content=[types.TextContent(text=encode(err.to_json()))], is_error=True
    )


class _Progress:
    """Engine progress (from the worker thread), sampled by the event loop."""

    def __init__(self) -> None:
        self.state: tuple[str, int, int] | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.state = (stage, done, total)


class CitelineMCP:
    """The MCP front: one engine for the server's lifetime, one fixed bundle."""

    def __init__(
        self,
        bundle: str,
        settings: Settings | None = None,
        *,
        cache: bool = True,
        reread: bool = False,
        background: bool = True,
        strict_settings: Settings | None = None,
        strict: bool = False,
        embedding: ModelSpec | None = None,
    ) -> None:
        self.bundle = bundle
        # A request with "strict": true runs with these (okf's limits, parse errors block);
        # the others with `settings` (engine/base/limits.py front_settings gives both).
        self.strict_settings = strict_settings or front_settings(True)
        self.strict = strict  # `citeline mcp --strict`: a request without the field is strict
        self.reported_skipped: list[Any] | None = None  # the list the text last named
        self.engine = Engine.long_lived(
            settings or front_settings(False),
            cache=cache,
            reread=reread,
            embed_in_background=background,  # the rest's vectors (--no-background-embedding: off)
            embedding=embedding,  # the model of hybrid and semantic requests (SPEC §15)
        )
        # Descriptions name the bundle as printable text: a path that is not valid UTF-8
        # would make every message carrying it unencodable (the engine keeps the real path).
        shown = printable(bundle)
        self.tools = tool_list(shown, self.engine.settings)
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            title="citeline",
            description="Cited section search over a folder of Markdown files.",
            instructions=(
                f"citeline searches the Markdown files under {shown} and cites sections "
                "exactly (path, 1-based line range, verbatim snippet, file SHA-256). Use "
                'search_sections for questions (profile="recall" for a question in plain '
                "words, a CJK query, or when no section holds every word), search_concepts to "
                "list documents by id/title, search_lines for exact strings or regexes. " + VERIFY
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = TOOL_BY_NAME.get(params.name)
        if spec is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Unknown tool {params.name!r}; tools: {', '.join(TOOL_BY_NAME)}.",
            )
        request: dict[str, Any] = dict(params.arguments or {})
        if self.strict and STRICT not in request:
            request[STRICT] = True
        token = _progress_token(ctx)
        try:
            result = await self._run(OPERATIONS[spec.contract], request, ctx, token)
            skipped = result.get("skipped")
            say = skipped is not None and skipped != self.reported_skipped
            if skipped is not None:
                self.reported_skipped = skipped
            SOURCES.set(Sources(self.bundle))
            return success(spec.name, result, say_skipped=say)
        except CitelineError as err:
            return failure(with_limit_advice(worded(err, MCP), RESTART_ADVICE))
        except Exception as exc:  # a bug: a tool error saying so, the traceback in the log
            log.error("internal error in tool %s", params.name, exc_info=exc)
            return bug(exc)

    async def _run(
        self,
        operation: Operation[Any],
        request: dict[str, Any],
        ctx: ServerRequestContext[Any],
        progress_token: str | int | None,
    ) -> dict[str, Any]:
        """Run one engine call in a worker thread; a cancelled call stops the engine."""
        cancel = CancelToken()
        progress = _Progress() if progress_token is not None else None
        settings = self.strict_settings if strict_of(request) else self.engine.settings
        call = Call(self.bundle, settings, cancel, progress)
        request = front_request(operation.name, request)  # the fronts' one default

        def work() -> dict[str, Any]:
            return operation.run(self.engine, call, request)

        try:
            if progress is None or progress_token is None:
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            return await _with_progress(work, ctx, progress_token, progress)
        except anyio.get_cancelled_exc_class():
            cancel.cancel()  # the abandoned thread stops at its next check
            raise

    async def serve(self) -> None:
        # The SDK's transport, but for stdin: every line answered or bounded (mcp_stdio).
        lines = Lines(sys.stdin.buffer)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answer_to(write_stream)
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )


def _progress_token(ctx: ServerRequestContext[Any]) -> str | int | None:
    meta = ctx.meta or {}
    token = meta.get("progress_token")
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


async def _with_progress(
    work: Callable[[], dict[str, Any]],
    ctx: ServerRequestContext[Any],
    token: str | int,
    progress: _Progress,
) -> dict[str, Any]:
    """`work` in a thread while a sibling task reports its progress.

    The engine's error is carried out of the task group by hand: raised inside it, it would
    reach the caller wrapped in an ExceptionGroup.
    """
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_report_progress, ctx, token, progress)
        try:
            outcome["result"] = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except Exception as err:  # a CitelineError, or a bug: call_tool answers either
            outcome["error"] = err
        finally:
            tg.cancel_scope.cancel()
    if "error" in outcome:
        raise outcome["error"]
    result: dict[str, Any] = outcome["result"]
    return result


async def _report_progress(
    ctx: ServerRequestContext[Any], token: str | int, progress: _Progress
) -> None:
    sent: tuple[str, int, int] | None = None
    step = 0
    while True:
        await anyio.sleep(PROGRESS_INTERVAL)
        state = progress.state
        if state is None or state == sent:
            continue
        stage, done, total = state
        step += 1  # progress must increase even when a new stage restarts at 0
        try:
            await ctx.session.send_progress_notification(
                token, step, None, f"{stage}: {done}/{total}"
            )
        except Exception:  # a client gone or not listening must not fail the search
            return
        sent = state


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("citeline")
    except Exception:
        return "0"


def main(
    bundle: str,
    settings: Settings | None = None,
    *,
    cache: bool = True,
    reread: bool = False,
    background: bool = True,
    strict_settings: Settings | None = None,
    strict: bool = False,
    embedding: ModelSpec | None = None,
) -> int:
    """Serve MCP on stdio for `bundle` (an absolute path) until the client closes stdin."""
    try:
        check_bundle(bundle)  # fail fast; every call still captures a fresh snapshot
    except CitelineError as err:
        sys.stderr.write(f"citeline: {err.code}: {err.message}\n")
        return reported(err.code).exit  # the command line's exit status
    front = CitelineMCP(
        bundle,
        settings,
        cache=cache,
        reread=reread,
        background=background,
        strict_settings=strict_settings,
        strict=strict,
        embedding=embedding,
    )
    try:
        anyio.run(front.serve)
    except KeyboardInterrupt:
        return 130
    return 0


__all__ = ["CitelineMCP", "bug", "failure", "main", "success"]
