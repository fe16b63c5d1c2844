"""The MCP tools as an agent is given them (tools/list): one per engine operation, each with
its description (paragraphs an agent reads: when to use the tool, what its text content and
each field of its result mean, how to verify a citation, the errors), its inputSchema (the
contract's request schema with a description for each parameter) and its outputSchema (the
contract's result). mcp_server/server.py serves them and answers their calls.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from citeline.engine import Settings
from citeline.engine.base.relevance import OPTIONS
from citeline.engine.contracts import schema
from citeline.engine.operations import OPERATIONS, Name

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
WHEN_RECALL = (
    'When to use profile="recall": the query is a question or a description in plain words, '
    "it is in Chinese, Japanese or Korean, or a first try found nothing. The default "
    '(profile="contract") needs every word, whole and as written, in one section: best for a '
    "few exact keywords."
)
NAMES = (
    "In the text, a path or id holding a space, a quote, a backslash, · or a control "
    "character is a JSON string, and control characters in anything read from the files "
    "but the snippets are shown escaped (\\n, \\x1b)."
)
TEXT_FORMAT = (
    "The text content is a compact rendering: a first line with the counts and the "
    "snapshot_revision, then per hit `[rank] <path> lines <line_start>-<line_end> · sha256 "
    "<content_sha256> · <heading>` and the snippet verbatim in a fenced block (with "
    "matched/missing query words when an option is not the default). structuredContent holds "
    "the full result described below (match_spans, locator, score, matched_terms). " + NAMES
)


def _recall_options() -> str:
    from citeline.engine.answer.requests import RECALL

    return ", ".join(f"{k}={v}" for k, v in RECALL.items())


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
            "through the line before the next heading (or the text before the first heading)"
            f"{_reserved_note(settings)}.",
            WHEN_RECALL + " Each argument is described in the input schema.",
            TEXT_FORMAT,
            "Each hit: path (relative to the folder, '/' separated); locator "
            "(path percent-encoded as a URL path + '#L<line_start>-L<line_end>': cite it as is); "
            "line_start, line_end (1-based, inclusive; the heading line is line_start); heading "
            '(plain text, "" before the first heading); snippet (a verbatim substring of those '
            "lines, at most 512 characters, starting near the first match); match_spans "
            "([{start,end}] UTF-8 byte offsets into the snippet, end exclusive: not character "
            "offsets); content_sha256 (SHA-256 hex of the whole file as it was read); score "
            "(lexical relevance only, not trust); matched_terms (the query terms found, as "
            "normalised: stems under stemming); concept_id (front-matter id, or the path "
            "without extension). Result: terms (the normalised query terms), total (all "
            "matching sections), truncated (total > hits returned), options (present when a "
            "relevance option is not the default).",
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
            'passage (with profile="recall" for a question in plain words).',
            "The text content lists one concept per line: `<path> · id <concept_id> · "
            '"<title>" · sha256 <content_sha256>`, the id only when it is not the path without '
            "its extension and the title only when there is one; structuredContent holds the "
            "full result. " + NAMES,
            "Each concept: concept_id (front-matter id, or the path without its extension), "
            "path (relative to the folder), title (front-matter title, else the file's first "
            'level-1 heading, else ""; with "strict": true, front-matter title or ""), '
            "content_sha256 (SHA-256 hex of the whole file: hash the file and compare before "
            "relying on it). Result: total (all matches), truncated (total > concepts "
            "returned).",
            REVISION,
            ERRORS,
        ]
    )


def _verify_description(bundle: str, settings: Settings) -> str:
    return "\n\n".join(
        [
            f"Check citations into the Markdown folder {bundle} against its files as they are "
            "now. Call it before acting on a citation you got earlier (a hit of search_sections "
            "or a match of search_lines, possibly from an earlier turn), and after you edited "
            "files you had cited. It reads only the cited files (plus a look-up by section "
            "hash when a text left its file): much cheaper than searching again. To find new "
            'passages use search_sections (profile="recall" for a question in plain words).',
            "citations: 1-100 items; pass hits of search_sections or matches of search_lines "
            "exactly as you got them (or path, line_start, line_end with section_sha256 "
            "and/or content_sha256, optionally heading; or path, line, text).",
            "The text content has one line per citation, in order: `<status> <path>:<a>-<b>`, "
            "and `→ <path>:<c>-<d>` when the text moved or changed. Statuses: valid (cite as "
            "is); moved (the same text is now at the new place: cite that, `others` counts "
            "further copies); changed (the text changed but its section, by heading, is at "
            "the new place: read it again, similarity is the share of your cited words it "
            "keeps); stale (only content_sha256 was given and the file changed: search again); "
            "missing (gone: search again; file_exists says whether the file is still there). "
            "structuredContent holds the full result. " + NAMES,
            REVISION,
            ERRORS,
        ]
    )


def _lines_description(bundle: str, settings: Settings) -> str:
    return "\n\n".join(
        [
            f"grep the Markdown files of the folder {bundle} line by line (front matter "
            f"included{_reserved_note(settings)}). Use it for an exact string: a command, "
            "flag, identifier or error message; every matching line is found. To find the "
            "passage that answers a question, use search_sections instead, with "
            'profile="recall" when the question is in plain words.',
            "The text content is grep-like: a first line with the counts and the "
            "snapshot_revision, then for each file `file: <path>` and its lines as "
            "`<line>:<column>:<text>` for a match and `<line>-<text>` for a context line, "
            "`--` between groups that do not touch. structuredContent holds the full result. "
            + NAMES,
            "Each match: path (relative to the folder), line (1-based), column (1-based, in "
            "characters, first match on the line), text (the line, or a 256-character window "
            "around the match marked with … where cut), context.before / context.after (the "
            "neighbouring lines). Matches come in path order, then line order; total counts "
            "every matching line, truncated says some were left out. To cite a match, re-read "
            "that line of the file and compare.",
            'mode="semantic" with a query in plain words (any language) finds sections by '
            "meaning instead: each match is a section (x-line_start, x-line_end, x-heading, "
            "x-content_sha256 to cite it as search_sections does) with a calibrated score in "
            "[0, 1] (higher answers more likely; at 0.5 about half do) and its most "
            "representative line; best score first, nothing under threshold (default 0.5). "
            "The text content lists them as `[rank] <path> lines <start>-<end> · sha256 <hex> "
            "· score <s> · <heading>` and the line. It needs the semantic extra on the "
            "server (an error names pip install 'citeline[semantic]' otherwise); a first call "
            "on a corpus embeds up to 20 sections (seconds), later ones reuse them.",
            REVISION,
            ERRORS,
        ]
    )


# What each input parameter means for an agent, added to the served copy of the contract's
# request schema (see wire_schema). A parameter the contract gains without an entry here keeps
# the contract's own description; tests/mcp require every served parameter to have one.
PARAMETERS: dict[str, dict[str, str]] = {
    "search": {
        "query": (
            "The words to look for, 1-512 characters with at least one letter or digit. By "
            "default every word must occur in a section, as a whole word, case-insensitive "
            "and unstemmed: give the few words the answer must contain, or use "
            'profile="recall" for a question in plain words.'
        ),
        "limit": (
            "Hits to return, 1-100 (default 20). Cost grows with it: each hit adds about "
            "{search_text} bytes of text and {search_structured} bytes of structuredContent "
            "(its snippet is up to 512 characters). Ask for 3-5 when the best answer is "
            "enough; total tells how many sections matched."
        ),
        # and one entry per relevance option, from its declaration (engine/base/relevance.py)
        **{option.key: option.agent for option in OPTIONS},
        "strict": (
            "true: okf's contract exactly (profile contract: every word; a file that cannot be "
            "parsed fails the call; the contract's lower limits). Default (false): a question "
            "in plain words works (profile recall), unparsable files are skipped and listed "
            "under skipped, the workspace limits. An explicit option still wins."
        ),
    },
    "concepts": {
        "query": (
            "Text that the concept id (front-matter id, or the path without its extension) or "
            "the title contains, case-insensitive; 1-512 characters. '/' lists every concept "
            "in a folder."
        ),
        "limit": (
            "Concepts to return, 1-100 (default 20); each costs about 150 bytes of text and "
            "as much of structuredContent."
        ),
        "strict": (
            "true: okf's contract exactly (profile contract: every word; a file that cannot be "
            "parsed fails the call; the contract's lower limits). Default (false): a question "
            "in plain words works (profile recall), unparsable files are skipped and listed "
            "under skipped, the workspace limits. An explicit option still wins."
        ),
    },
    "lines": {
        "pattern": (
            "What to find on a line: literal text (mode exact) or an RE2 regular expression "
            "(mode regex). A line never holds its line break. Not with mode semantic."
        ),
        "query": (
            "Mode semantic only (and required there): what you want, in plain words, 1-512 "
            'characters, any language ("which cluster does kubectl talk to"). Matches by '
            "meaning among the 20 sections a recall search finds for it."
        ),
        "mode": (
            '"exact" (default): the pattern is literal text. "regex": RE2 syntax (linear '
            'time; no backreferences or look-around). "semantic": sections that answer the '
            "query in other words, each with a calibrated score in [0, 1] and the section's "
            "lines to cite (x-line_start, x-line_end, x-content_sha256); needs the server's "
            "pip install 'citeline[semantic]', and its first call on a corpus embeds up to "
            "20 sections (a few seconds)."
        ),
        "case_sensitive": (
            "true (default). false: Unicode simple case folding in both modes (ß does not "
            "match ss). Not with mode semantic."
        ),
        "threshold": (
            "Mode semantic only: the least score returned, 0-1 (default 0.5: a section at "
            "0.5 answers about half the time). An empty result at 0.5 means nothing here "
            "answers well; lower it (0.3) to see weaker matches, or search_sections with "
            'profile "recall".'
        ),
        "limit": (
            "Matching lines to return, 1-1000 (default 100). Cost grows with it: each match "
            "adds about {lines_text} bytes of text and {lines_structured} bytes of "
            "structuredContent with the default context of 2; total tells how many lines "
            "matched."
        ),
        "context": (
            "Lines before and after each match, 0-10 (default 2). Use 0 when the matching "
            "line is enough: it roughly halves the cost of each match."
        ),
        "strict": (
            "true: okf's contract exactly (profile contract: every word; a file that cannot be "
            "parsed fails the call; the contract's lower limits). Default (false): a question "
            "in plain words works (profile recall), unparsable files are skipped and listed "
            "under skipped, the workspace limits. An explicit option still wins."
        ),
    },
}

PARAMETERS["verify"] = {
    "citations": (
        "1-100 citations, each a hit of search_sections or a match of search_lines as you got "
        "it; or objects of path, line_start, line_end, section_sha256 and/or content_sha256 "
        "(heading optional); or of path, line, text (a text clipped with … matches by its "
        "visible part)."
    ),
    "strict": (
        "true: verify on okf's contract's index and limits (as a strict search does). Default "
        "(false): the workspace's, as the other tools use by default."
    ),
}

# Bytes per hit or match, measured by tests/mcp/sizes.py on the PowerShell docs (docs/mcp.md).
COSTS = {
    "search_text": "650",
    "search_structured": "1,000",
    "lines_text": "250",
    "lines_structured": "370",
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    contract: Name  # the operation: "search" → search.request / search.result
    describe: Callable[[str, Settings], str]


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("search_sections", "Search sections (cited)", "search", _search_description),
    ToolSpec("search_concepts", "Search concepts", "concepts", _concepts_description),
    ToolSpec("search_lines", "Search lines (grep)", "lines", _lines_description),
    ToolSpec("verify_citations", "Verify citations", "verify", _verify_description),
)
TOOL_BY_NAME = {t.name: t for t in TOOLS}


def wire_schema(name: str) -> dict[str, Any]:
    """The contract schema `name` as served in tools/list.

    The contract's JSON Schema but for `$schema` and `$id`, and with a description for each
    request parameter. MCP already defines JSON Schema 2020-12 as the dialect of a schema
    without `$schema`, and common clients (Ajv-based TypeScript SDKs) reject a 2020-12
    `$schema` or a second compile of one `$id`. Local `$ref`s ("#/$defs/...") resolve the same
    without `$id`. The descriptions are added here, not in engine/contracts: they speak to an
    agent about MCP costs and retries, and a description changes no validation.
    """
    served = copy.deepcopy(schema(name))
    served.pop("$schema", None)
    served.pop("$id", None)
    contract, _, kind = name.partition(".")
    if kind == "request":
        texts = PARAMETERS.get(contract, {})
        for key, prop in served.get("properties", {}).items():
            if key in texts:
                prop["description"] = texts[key].format(recall=_recall_options(), **COSTS)
    return served


def output_schema(contract: Name) -> dict[str, Any]:
    """A tool's outputSchema: its operation's result contract, or, for an operation with
    several (search_lines: §8's and semantic mode's, SPEC §15), an object that is one of
    them (none uses a $ref, so each is whole inside oneOf)."""
    names = OPERATIONS[contract].result_contracts
    if len(names) == 1:
        return wire_schema(names[0])
    return {
        "type": "object",
        "title": " or ".join(schema(n)["title"] for n in names),
        "oneOf": [wire_schema(n) for n in names],
    }


def tool_list(bundle: str, settings: Settings | None = None) -> list[types.Tool]:
    settings = settings or Settings()
    return [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.describe(bundle, settings),
            input_schema=wire_schema(f"{t.contract}.request"),
            output_schema=output_schema(t.contract),
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


__all__ = ["TOOLS", "TOOL_BY_NAME", "ToolSpec", "output_schema", "tool_list", "wire_schema"]
