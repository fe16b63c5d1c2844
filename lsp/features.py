"""The language server's features: each builds its request and Call, runs it in the job
pool (lsp/jobs.py) and converts the answer (lsp/symbols.py): the commands, workspace and
document symbols, a folder's diagnostics and the warm-up. Module-level functions over the
server's state (lsp/server.py registers them as its handlers), as jedi-language-server's are.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import itertools
import logging
import os
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from citeline.engine import (
    Call,
    CancelToken,
    CitelineError,
    Problem,
    Progress,
    Relevance,
    SectionHit,
)
from citeline.engine.answer.requests import SymbolsRequest, front_request, strict_of
from citeline.engine.base.errors import ParseIssue
from citeline.engine.capture.capture import read_inside
from citeline.engine.operations import OPERATIONS
from citeline.fronts import names
from citeline.fronts.hits import Sources, hit_label

from . import diagnostics
from . import symbols as conv
from .rpc import rpc_error, schema

if TYPE_CHECKING:
    from pygls.workspace import Workspace

    from citeline.engine import Engine
    from citeline.engine.base.limits import Settings

    from .diagnostics import Diagnostics
    from .jobs import Job
    from .places import Places
    from .settings import ServerSettings

log = logging.getLogger("citeline.lsp")
T = TypeVar("T")


class CitelineServer(Protocol):
    """What the features need of the server (lsp/server.py's CitelineServer has it): its
    engine, settings, workspace and folders (lsp/places.py), and how it runs a job. Named
    here, not imported, so that the server imports its features and never the reverse (no
    import circle)."""

    engine: Engine
    options: ServerSettings
    places: Places
    diagnostics: Diagnostics

    @property
    def workspace(self) -> Workspace: ...

    @property
    def work_done_progress(self) -> Any: ...

    def engine_settings(self, folder: str, strict: bool = False) -> Settings: ...

    def overlay(self, folder: str) -> dict[str, bytes] | None: ...

    def client_has_progress(self) -> bool: ...

    def tell(self, folder: str, message: str | None, key: str | None = None) -> None: ...

    def tell_failure(self, folder: str, exc: JsonRpcException) -> None: ...

    async def run_engine(
        self,
        job: Job[T],
        *,
        work_done_token: types.ProgressToken | None = None,
        title: str = "citeline",
        after_warm_up: bool = True,
    ) -> T: ...


async def execute_command(ls: CitelineServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """workspace/executeCommand: one operation of the table, its request the one argument
    (its `root` choosing the workspace folder)."""
    # When the request arrived: a capture started after it (by a request that waited
    # beside it for the warm-up, say) is as fresh as its own (Engine.capture).
    arrived = time.monotonic()
    args = params.arguments or []
    try:
        if len(args) != 1:
            raise schema(
                f"{params.command} takes exactly one argument, the request object; "
                f"got {len(args)}.",
                field="arguments",
            )
        request = args[0]
        root = None
        labels = False
        if isinstance(request, Mapping):
            request = dict(request)
            root = request.pop("root", None)
            if params.command == "citeline.search" and "labels" in request:
                labels = request.pop("labels")
                if not isinstance(labels, bool):
                    raise schema("labels must be a boolean.", field="labels")
        bundle = ls.places.choose_folder(root)
        if params.command == "citeline.search" and isinstance(request, dict):
            request = ls.options.search_request(request)
    except CitelineError as err:
        raise rpc_error(err) from None
    operation = OPERATIONS[params.command.removeprefix("citeline.")]
    request = front_request(operation.name, request)  # the fronts' one default (recall)
    overlay = ls.overlay(bundle) if operation.unsaved else None
    settings = ls.engine_settings(bundle, strict=strict_of(request))

    def job(cancel: CancelToken, progress: Progress | None) -> dict[str, Any]:
        call = Call(bundle, settings, cancel, progress, overlay or None, arrived)
        if not labels:
            return operation.run(ls.engine, call, request)
        texts: dict[str, str] = {}
        result = ls.engine.search(call, request, texts=texts)
        return with_labels(result, bundle, texts)

    try:
        return await ls.run_engine(
            job, work_done_token=params.work_done_token, title=params.command
        )
    except JsonRpcException as exc:
        ls.tell_failure(bundle, exc)
        raise


def with_labels(result: dict[str, Any], bundle: str, texts: Mapping[str, str]) -> dict[str, Any]:
    """A search result with `x-labels`: each hit's name as workspace/symbol gives it (the
    heading on one line; for the text before a file's first heading the file's title, else
    its path), from the bytes the search read. The editors' lists ask for it (`"labels":
    true`) so that they name a hit as every other front does, without a YAML parser of their
    own; hits keep §6's fields."""
    sources = Sources(bundle, texts)
    names = []
    for hit in result["hits"]:
        name = hit_label(hit, sources.lines(hit["path"], hit["content_sha256"]))
        names.append(name if name == hit["path"] else conv.display(name))
    return {**result, "x-labels": names}


async def workspace_symbols(
    ls: CitelineServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation]:
    folders = [path for _, path in ls.places.folders()]
    opts = ls.options
    engine = ls.engine
    request = SymbolsRequest(params.query, opts.symbol_cap, opts.list_cap, opts.relevance_options)
    arrived = time.monotonic()
    overlays = {path: ls.overlay(path) for path in folders}

    def job(cancel: CancelToken, progress: Progress | None) -> list[tuple[str, SectionHit]]:
        per_folder = []
        for path in folders:
            call = Call(path, ls.engine_settings(path), cancel, progress, overlays[path], arrived)
            hits = engine.symbols(call, request)
            per_folder.append([(path, h) for h in hits])
        if len(per_folder) == 1:
            return per_folder[0]
        # The engine lists (score 0) when the query holds no word, and its ranked hits
        # score above 0: asking it, not the query, keeps the two in step.
        listing = all(h.score == 0.0 for hits in per_folder for _, h in hits)
        # heapq.merge is stable: equal scores keep folder order, and each folder's
        # own order (the engine's ranking or listing order) is kept.
        merged = heapq.merge(*per_folder, key=lambda ph: -ph[1].score)
        cap = opts.list_cap if listing else opts.symbol_cap
        return list(itertools.islice(merged, cap))

    found = await ls.run_engine(
        job, work_done_token=params.work_done_token, title="citeline: symbols"
    )
    return [conv.workspace_symbol(path, hit) for path, hit in found]


async def document_symbols(
    ls: CitelineServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol]:
    uri = params.text_document.uri
    doc = ls.workspace.get_text_document(uri)
    units = ls.workspace.position_codec.client_num_units
    is_open = any(d is doc for d in ls.workspace.text_documents.values())
    text = doc.source if is_open else None
    closed = None if is_open else ls.places.closed_document(doc.path)
    max_bytes = ls.options.engine.limits.max_file_bytes

    def job(cancel: CancelToken, progress: Progress | None) -> list[types.DocumentSymbol]:
        if text is not None:
            data: bytes | None = text.encode("utf-8", "surrogatepass")
        elif closed is not None:
            data = read_inside(*closed, max_bytes)
        else:
            data = None
        if data is None:
            return []
        from citeline.engine.text import analysis  # the parser: when a document is outlined

        found = analysis.outline_tree(data)
        if isinstance(found, ParseIssue):
            return []
        lay, heads = found
        return conv.document_symbols(lay, heads, units)

    return await ls.run_engine(job)


def problems_of(
    ls: CitelineServer, folder: str, cancel: CancelToken, found: list[Problem] | None = None
) -> list[Problem]:
    """Parse errors of the folder's searchable files (`found`: those of the index the
    warm-up just built); open documents use the editor text."""
    opts = ls.options
    if found is None:
        call = Call(folder, ls.engine_settings(folder), cancel)
        found = ls.engine.problems(call, opts.relevance_options.analysis)
    open_docs = ls.places.open_texts(folder)
    out = [p for p in found if p.path not in open_docs]
    for rel, text in open_docs.items():
        if not any(p.path == rel for p in found) and not captured(ls, folder, rel):
            continue
        from citeline.engine.text import analysis

        outline = analysis.outline_tree(text.encode("utf-8", "surrogatepass"))
        if isinstance(outline, ParseIssue):
            out.append(Problem(rel, outline.line, outline.reason))
    out.sort(key=lambda p: p.path)
    return out


def captured(ls: CitelineServer, folder: str, rel: str) -> bool:
    """Whether the last capture of `folder` holds `rel` (a searchable file)."""
    known = ls.engine.reuse.known(os.path.abspath(folder))
    reserved = rel in ls.options.engine.reserved
    return known is not None and rel in known.files and not reserved


async def check_folder(
    ls: CitelineServer, folder: str, after_warm_up: bool = True, found: list[Problem] | None = None
) -> None:
    """textDocument/publishDiagnostics for `folder`: its files' parse problems (problems_of)
    per document, and the user told once per change of its situation (files left out of
    search, or a check that failed on the workspace itself)."""

    def job(cancel: CancelToken, progress: Progress | None) -> list[Problem]:
        return problems_of(ls, folder, cancel, found)

    try:
        problems = await ls.run_engine(job, after_warm_up=after_warm_up)
    except JsonRpcException as exc:
        log.warning("diagnostics for %s: %s", folder, exc.message)
        ls.tell_failure(folder, exc)
        return
    if problems and ls.options.engine.skip_invalid:
        message, key = diagnostics.skipped_message(folder, problems)
        ls.tell(folder, message, key=key)
    else:
        ls.tell(folder, None)
    editor_uris = {}
    if problems and not names.volume_rules(folder).exact:
        editor_uris = {rel: uri for rel, (uri, _) in ls.places.open_documents(folder).items()}
    ls.diagnostics.publish(folder, diagnostics.by_uri(folder, problems, editor_uris))


async def warm_up(
    ls: CitelineServer,
    folders: list[str] | None,
    previous: asyncio.Future[Any] | None,
    gate: asyncio.Future[Any],
) -> None:
    """Capture and index `folders` (all by default) once `previous` has ended, then open
    `gate` (requests wait on it) and check each folder's diagnostics."""
    # Each folder's parse problems, from the index of the settings' options (the first
    # wanted): published without capturing the folder once more.
    problems: dict[str, list[Problem]] = {}
    try:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])  # one warm-up at a time: they share the files
        if folders is None:
            folders = [path for _, path in ls.places.folders()]
        token: str | None = None
        if ls.client_has_progress():
            token = f"citeline-warmup-{uuid.uuid4()}"
            try:
                await ls.work_done_progress.create_async(token)
            except Exception as exc:  # the client refused: warm up silently
                log.info("no warm-up progress: %s", exc)
                token = None
        opts = ls.options
        # What the editors ask first: their searches use `recall`, symbols the settings'.
        recall = Relevance.from_mapping({"profile": "recall"}).analysis
        wanted = list(dict.fromkeys([opts.relevance_options.analysis, recall]))

        def job(cancel: CancelToken, progress: Progress | None) -> None:
            # Its captures are left to the requests that arrived before they started
            # (those waiting for the warm-up now): they are as fresh as their own.
            begun = time.monotonic()
            for folder in folders:
                for options in wanted:
                    try:
                        call = Call(
                            folder, ls.engine_settings(folder), cancel, progress, None, begun
                        )
                        index = ls.engine.prepare(call, options)
                    except CitelineError as err:
                        if err.code == "cancelled":
                            raise
                        log.info("warm-up of %s: %s", folder, err.message)
                        break
                    problems.setdefault(folder, list(index.problems))

        started = time.monotonic()
        try:
            await ls.run_engine(
                job, work_done_token=token, title="citeline: indexing", after_warm_up=False
            )
        except JsonRpcException as exc:
            log.info("warm-up stopped: %s", exc.message)
        log.info("warm-up of %d folder(s) took %.2fs", len(folders), time.monotonic() - started)
    finally:
        if not gate.done():
            gate.set_result(None)
    for folder in folders:
        await check_folder(ls, folder, after_warm_up=False, found=problems.get(folder))
    # What the warm-up built lives as long as the server: out of the cyclic collector's
    # way, so that its full collections during requests need not walk it again.
    gc.collect()
    gc.freeze()


__all__ = [
    "captured",
    "check_folder",
    "document_symbols",
    "execute_command",
    "problems_of",
    "warm_up",
    "workspace_symbols",
]
