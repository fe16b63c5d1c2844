"""`citeline search|concepts|lines|lsp|mcp`: the command-line front over citeline.engine."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from citeline.engine import CitelineError, Engine, Limits, Settings
from citeline.engine.parallel import default_workers
from citeline.engine.present import encode

from . import render

EXIT = {
    "schema_validation": 2,
    "resource_limit": 3,
    "bundle_not_found": 4,
    "bundle_invalid": 4,
    "parse_error": 5,
    "cancelled": 130,
}
NO_MATCH = 1  # like grep and ripgrep: success, but nothing matched


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", nargs="?", default=".", help="folder of Markdown files (default: .)")
    p.add_argument(
        "--json", action="store_true", help="print the contract JSON (or error envelope)"
    )
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    _add_capture(p)


def _add_capture(p: argparse.ArgumentParser) -> None:
    """What settings_from() reads: ignore handling, skipping, reserved files, limits."""
    p.add_argument("--no-ignore", action="store_true", help="do not honour .gitignore files")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="leave unparsable files out of the search (listed under 'skipped')",
    )
    p.add_argument(
        "--reserved",
        action="append",
        metavar="NAME",
        help="root file that is captured but never searched (repeatable; default index.md, log.md)",
    )
    p.add_argument("--no-reserved", action="store_true", help="search index.md and log.md too")
    group = p.add_argument_group("limits (each raises the SPEC default)")
    for f in fields(Limits):
        group.add_argument(
            "--" + f.name.replace("_", "-"), type=int, metavar="N", help=f"default {f.default:,}"
        )


def _add_relevance(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("relevance options (SPEC §13; defaults are the contract)")
    g.add_argument("--profile", choices=("contract", "recall"))
    g.add_argument("--match", choices=("all", "any"))
    g.add_argument("--context", dest="context_mode", choices=("section", "outline"))
    g.add_argument("--cjk", choices=("runs", "bigrams"))
    g.add_argument("--stemming", choices=("none", "english"))
    g.add_argument("--identifiers", choices=("whole", "split"))


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="citeline",
        description="Find the Markdown section that answers a query, and cite it exactly.",
    )
    sub = top.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", help="ranked sections (BM25) with cited snippets")
    _add_common(s)
    s.add_argument("-q", "--query", required=True)
    s.add_argument("-n", "--limit", type=int, default=None, help="hits to show (1-100, default 20)")
    _add_relevance(s)

    c = sub.add_parser("concepts", help="files whose concept id or title contains the query")
    _add_common(c)
    c.add_argument("-q", "--query", required=True)
    c.add_argument("-n", "--limit", type=int, default=None, help="1-100, default 20")

    ln = sub.add_parser("lines", help="grep-like line search (exact or RE2 regex)")
    _add_common(ln)
    what = ln.add_mutually_exclusive_group(required=True)
    what.add_argument("-F", "--exact", metavar="TEXT")
    what.add_argument("-e", "--regex", metavar="PATTERN")
    ln.add_argument("-i", "--ignore-case", action="store_true")
    ln.add_argument("-n", "--limit", type=int, default=None, help="1-1000, default 100")
    ln.add_argument("-C", "--context", type=int, default=None, help="0-10, default 2")

    sub.add_parser("lsp", help="run the language server on stdio")
    m = sub.add_parser("mcp", help="run the MCP server on stdio")
    m.add_argument("bundle", nargs="?", default=".", help="folder of Markdown files (default: .)")
    _add_capture(m)
    return top


def settings_from(args: argparse.Namespace) -> Settings:
    raised = {
        f.name: getattr(args, f.name) for f in fields(Limits) if getattr(args, f.name) is not None
    }
    reserved: tuple[str, ...] = ("index.md", "log.md")
    if args.no_reserved:
        reserved = ()
    if args.reserved:
        reserved = tuple(args.reserved)
    return Settings(
        limits=Limits.from_mapping(raised),
        reserved=reserved,
        use_ignore=not args.no_ignore,
        skip_invalid=args.skip_invalid,
    )


def request_from(args: argparse.Namespace) -> dict[str, Any]:
    req: dict[str, Any] = {}
    if args.command == "lines":
        exact = args.exact is not None
        req = {
            "pattern": args.exact if exact else args.regex,
            "mode": "exact" if exact else "regex",
            "case_sensitive": not args.ignore_case,
        }
        if args.context is not None:
            req["context"] = args.context
    else:
        req["query"] = args.query
    if args.limit is not None:
        req["limit"] = args.limit
    if args.command == "search":
        for key in ("profile", "match", "cjk", "stemming", "identifiers"):
            if getattr(args, key) is not None:
                req[key] = getattr(args, key)
        if args.context_mode is not None:
            req["context"] = args.context_mode
    return req


def run_query(args: argparse.Namespace) -> int:
    color = render.use_color(args.color, sys.stdout)
    progress = render.ProgressBar()
    try:
        settings = settings_from(args)
        request = request_from(args)
        # One request: nothing to remember; big cold parses use the other cores.
        engine = Engine(settings, memo_bytes=0, workers=default_workers())
        method = {"search": engine.search, "concepts": engine.concepts, "lines": engine.lines}
        result = method[args.command](args.bundle, request, progress=progress)
    except CitelineError as err:
        progress.clear()
        return report(err, args.json)
    except KeyboardInterrupt:
        progress.clear()
        return report(CitelineError("cancelled", "Interrupted; nothing was returned."), args.json)
    progress.clear()
    if args.json:
        sys.stdout.write(encode(result) + "\n")
    else:
        draw = {
            "search": render.render_search,
            "concepts": render.render_concepts,
            "lines": render.render_lines,
        }[args.command]
        sys.stdout.write(draw(result, color) + "\n")
    return 0 if result["total"] else NO_MATCH


def report(err: CitelineError, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(encode(err.to_json()) + "\n")
    else:
        sys.stderr.write(f"citeline: {err.code}: {err.message}\n")
    return EXIT[err.code]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "lsp":
        from .server import main as serve

        return serve() or 0
    if args.command == "mcp":
        from .mcp import main as serve_mcp

        try:
            settings = settings_from(args)
        except CitelineError as err:
            return report(err, False)
        return serve_mcp(os.path.abspath(args.bundle), settings) or 0
    try:
        return run_query(args)
    except BrokenPipeError:
        # Output piped into `head`: stop quietly like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
