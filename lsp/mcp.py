"""`citeline mcp [BUNDLE]`: the MCP front (stdio) over one Engine, the bundle fixed at start.

Three tools, one per engine call: `search_sections` (SPEC §6/§13), `search_concepts` (§9) and
`search_lines` (§8). Their inputSchema/outputSchema are the JSON Schemas of engine/contracts,
served as they are except for the two document-identity keys `$schema` and `$id` (see
`wire_schema`). A result is returned twice, as MCP structured output (structuredContent) and as
one text block holding the compact JSON every front writes (byte-identical to `citeline search
--json`). An engine error is a tool error (isError) whose only content is the §10 envelope as
compact JSON text.

Built on the SDK's low-level `mcp.server.lowlevel.Server`: the high-level MCPServer derives
schemas from Python signatures and cannot serve a given JSON Schema as it is.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from citeline.engine import CancelToken, CitelineError, Engine, Settings
from citeline.engine.capture import check_bundle
from citeline.engine.contracts import schema
from citeline.engine.parallel import default_workers
from citeline.engine.present import encode

SERVER_NAME = "citeline"
PROGRESS_INTERVAL = 0.25  # seconds between two progress notifications of one call

# Exit codes when the server cannot start (same table as the CLI).
EXIT_CODES = {"bundle_not_found": 4, "bundle_invalid": 4}

EngineCall = Callable[..., dict[str, Any]]


# -- descriptions an agent reads ------------------------------------------------------------

VERIFY = (
    "Before relying on a citation, verify it: (1) read lines line_start..line_end of the file "
    "at <bundle>/<path>; (2) check that snippet occurs verbatim in them (byte for byte, CRLF "
    "kept); (3) hash the whole file with SHA-256 and compare with content_sha256. If any check "
    "fails, the file changed since the search: search again. Quote only text that passed."
)
ERRORS = (
    'On failure the call is a tool error (isError) whose text is {"error":{"code","message",'
    '"details"}} with code schema_validation (fix the arguments), resource_limit, '
    "bundle_not_found, bundle_invalid, parse_error (the message names the file and line) or "
    "cancelled."
)
REVISION = (
    "snapshot_revision: a fingerprint (SHA-256) of every file read for this answer (path, size "
    "and SHA-256 of each); two answers with the same revision searched the same bytes, whatever "
    "front (CLI, editor, MCP) computed them. Every call reads the folder afresh from disk."
)


def _reserved_note(settings: Settings) -> str:
    if not settings.reserved:
        return ""
    names = " and ".join(settings.reserved)
    return f"; the navigation files {names} at the root are never searched"


def _search_description(bundle: str, settings: Settings) -> str:
    return "\n\n".join(
        [
            "Find the Markdown sections that answer a question, in the document folder "
            f"{bundle}, ranked by BM25, each with an exact citation. A section is a heading "
            "through the line before the next heading (or the text before the first heading).",
            "Arguments: query (words; by default every word must occur in the section, as a "
            "whole word, case-insensitive, no stemming), limit (1-100, default 20). Relevance "
            'options (defaults are the strict contract): match="any" (at least one word; more '
            'words matched ranks first), context="outline" (the headings above a section count '
            'too), cjk="bigrams" (Chinese/Japanese/Korean text matched by character pairs), '
            'stemming="english" (search matches searching), identifiers="split" (InlinePrediction '
            'also matches inline and prediction), profile="recall" (all five at once). If a '
            'strict query finds nothing, retry with profile="recall".',
            "Each hit: path (relative to the folder, '/' separated); locator "
            "(path percent-encoded as a URL path + '#L<line_start>-L<line_end>': cite it as is); "
            "line_start, line_end (1-based, inclusive; the heading line is line_start); heading "
            '(plain text, "" before the first heading); snippet (a verbatim substring of those '
            "lines, at most 512 characters, starting near the first match); match_spans "
            "([{start,end}] UTF-8 byte offsets into the snippet, end exclusive: not character "
            "offsets); content_sha256 (SHA-256 hex of the whole file as it was read); score "
            "(lexical relevance only, not trust); matched_terms (the query terms found); "
            "concept_id (front-matter id, or the path without extension). Result: terms (the "
            "normalised query words), total (all matching sections), truncated (total > hits "
            "returned), options (present when a relevance option is not the default).",
            REVISION,
            VERIFY,
            ERRORS,
        ]
    )


def _concepts_description(bundle: str, settings: Settings) -> str:
    return "\n\n".join(
        [
            f"List the documents (concepts) of the Markdown folder {bundle} whose concept_id "
            "or title contains the query (case-insensitive substring), sorted by concept_id. "
            "Use it to find which files exist on a topic; use search_sections to find the "
            "passage.",
            "Each concept: concept_id (front-matter id, or the path without its extension), "
            'path (relative to the folder), title (front-matter title, or ""), '
            "content_sha256 (SHA-256 hex of the whole file: hash the file and compare before "
            "relying on it). Result: total (all matches), truncated (total > concepts "
            "returned); limit 1-100, default 20.",
            REVISION,
            ERRORS,
        ]
    )


def _lines_description(bundle: str, settings: Settings) -> str:
    return "\n\n".join(
        [
            f"grep the Markdown files of the folder {bundle} line by line (front matter "
            f"included{_reserved_note(settings)}). "
            'mode "exact" (literal substring, default) or "regex" (RE2 syntax: linear time, no '
            "backreferences); case_sensitive (default true); limit 1-1000 (default 100); "
            "context 0-10 lines before and after (default 2).",
            "Each match: path (relative to the folder), line (1-based), column (1-based, in "
            "characters, first match on the line), text (the line, or a 256-character window "
            "around the match marked with … where cut), context.before / context.after (the "
            "neighbouring lines). Matches come in path order, then line order; total counts "
            "every matching line, truncated says some were left out. To cite a match, re-read "
            "that line of the file and compare.",
            REVISION,
            ERRORS,
        ]
    )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    contract: str  # "search" → search.request / search.result
    describe: Callable[[str, Settings], str]


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("search_sections", "Search sections (cited)", "search", _search_description),
    ToolSpec("search_concepts", "Search concepts", "concepts", _concepts_description),
    ToolSpec("search_lines", "Search lines (grep)", "lines", _lines_description),
)
TOOL_BY_NAME = {t.name: t for t in TOOLS}


def wire_schema(name: str) -> dict[str, Any]:
    """The contract schema `name` as served in tools/list.

    Identical to engine/contracts/<name>.json but for `$schema` and `$id`. MCP already defines
    JSON Schema 2020-12 as the dialect of a schema without `$schema`, and common clients
    (Ajv-based TypeScript SDKs) reject a 2020-12 `$schema` or a second compile of one `$id`.
    Local `$ref`s ("#/$defs/...") resolve the same without `$id`.
    """
    served = copy.deepcopy(schema(name))
    served.pop("$schema", None)
    served.pop("$id", None)
    return served


def tool_list(bundle: str, settings: Settings | None = None) -> list[types.Tool]:
    settings = settings or Settings()
    return [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.describe(bundle, settings),
            input_schema=wire_schema(f"{t.contract}.request"),
            output_schema=wire_schema(f"{t.contract}.result"),
            annotations=types.ToolAnnotations(
                title=t.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
        for t in TOOLS
    ]


def success(result: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=encode(result))], structured_content=result
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

    def __init__(self, bundle: str, settings: Settings | None = None) -> None:
        self.bundle = bundle
        self.engine = Engine(settings or Settings(), workers=default_workers())
        self.tools = tool_list(bundle, self.engine.settings)
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            title="citeline",
            description="Cited section search over a folder of Markdown files.",
            instructions=(
                f"citeline searches the Markdown files under {bundle} and cites sections "
                "exactly (path, 1-based line range, verbatim snippet, file SHA-256). Use "
                "search_sections for questions, search_concepts to list documents by id/title, "
                "search_lines for exact strings or regexes. " + VERIFY
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )

    def _method(self, contract: str) -> EngineCall:
        calls: dict[str, EngineCall] = {
            "search": self.engine.search,
            "concepts": self.engine.concepts,
            "lines": self.engine.lines,
        }
        return calls[contract]

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
        token = _progress_token(ctx)
        try:
            result = await self._run(self._method(spec.contract), request, ctx, token)
        except CitelineError as err:
            return failure(err)
        return success(result)

    async def _run(
        self,
        method: EngineCall,
        request: dict[str, Any],
        ctx: ServerRequestContext[Any],
        progress_token: str | int | None,
    ) -> dict[str, Any]:
        """Run one engine call in a worker thread; a cancelled call stops the engine."""
        cancel = CancelToken()
        progress = _Progress() if progress_token is not None else None

        def work() -> dict[str, Any]:
            return method(self.bundle, request, cancel=cancel, progress=progress)

        try:
            if progress is None or progress_token is None:
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            return await _with_progress(work, ctx, progress_token, progress)
        except anyio.get_cancelled_exc_class():
            cancel.cancel()  # the abandoned thread stops at its next check
            raise

    async def serve(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
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
        except CitelineError as err:
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


def main(bundle: str, settings: Settings | None = None) -> int:
    """Serve MCP on stdio for `bundle` (an absolute path) until the client closes stdin."""
    try:
        check_bundle(bundle)  # fail fast; every call still captures a fresh snapshot
    except CitelineError as err:
        sys.stderr.write(f"citeline: {err.code}: {err.message}\n")
        return EXIT_CODES.get(err.code, 1)
    front = CitelineMCP(bundle, settings)
    try:
        anyio.run(front.serve)
    except KeyboardInterrupt:
        return 130
    return 0


__all__ = ["TOOLS", "CitelineMCP", "failure", "main", "success", "tool_list", "wire_schema"]
