"""mcp_server/server.py piece by piece, in process: the descriptions and schemas an agent is given,
the text renderings of hand-made results, progress sampling on a scripted clock, the
cancellation of an engine call, the unknown-tool error, and `main` (over pipes, not the
real stdio). The SDK round trips are test_mcp.py and test_mcp_calls.py; these pin what
those leave loose (docs/testing.md: mutation testing)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write
from inprocess import inject_faults
from waiting import readable

pytest.importorskip("mcp")
pytest.importorskip("mcp_types")

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from citeline.engine import Call, CancelToken, Engine, Settings
from citeline.engine.contracts import NAMES, schema, validate
from citeline.engine.index.parallel import default_workers
from citeline.engine.operations import Operation
from citeline.engine.store.store import default_folder
from citeline.mcp_server import server as front_module
from citeline.mcp_server import tools as tools_module
from citeline.mcp_server.server import (
    CitelineMCP,
    _Progress,
    _progress_token,
    _report_progress,
    main,
)
from citeline.mcp_server.text import NO_HIT_HINT, render_text
from citeline.mcp_server.tools import TEXT_FORMAT, VERIFY, tool_list, wire_schema

REV = "e" * 64
SHA = "a" * 64
NAV = "; the navigation files index.md and log.md at the root are never searched"


class Session:
    """The one method of a session the server uses for progress; `fail` plays a client gone."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[Any, float, float | None, str | None]] = []
        self.fail = fail

    async def send_progress_notification(
        self, token: Any, progress: float, total: float | None, message: str | None
    ) -> None:
        if self.fail:
            raise anyio.BrokenResourceError
        self.sent.append((token, progress, total, message))


class Ctx:
    """What the server reads of a ServerRequestContext: its meta and its session."""

    def __init__(self, meta: dict[str, Any] | None = None, session: Session | None = None):
        self.meta = meta
        self.session = session or Session()


def described() -> dict[str, list[str]]:
    """Each tool's description, in its paragraphs, for the bundle /docs/x."""
    return {t.name: (t.description or "").split("\n\n") for t in tool_list("/docs/x")}


FIELD = re.compile(r"([\w.]+(?:, [\w.]+| / [\w.]+)?) \(((?:[^()]|\([^()]*\))*)\)")


def fields(text: str) -> dict[str, str]:
    """`name (meaning)` entries of a description paragraph, by name."""
    return {m[1]: m[2] for m in FIELD.finditer(text)}


# -- the descriptions --------------------------------------------------------------------------


def test_search_description_paragraphs() -> None:
    intro, recall, text, each, revision, verify, errors = described()["search_sections"]
    assert intro == (
        "Find the Markdown sections that answer a question, in the document folder /docs/x, "
        "ranked by BM25, each with an exact citation. A section is a heading through the "
        f"line before the next heading (or the text before the first heading){NAV}."
    )
    # When to ask for recall (docs/mcp.md): a question in plain words, CJK, nothing found.
    assert recall.startswith('When to use profile="recall": the query is a question or a ')
    assert "it is in Chinese, Japanese or Korean, or a first try found nothing." in recall
    assert recall.endswith("few exact keywords. Each argument is described in the input schema.")
    assert text == TEXT_FORMAT
    assert (verify, errors) == (VERIFY, tools_module.ERRORS)
    assert revision.startswith("snapshot_revision: a fingerprint (SHA-256) of every file")
    # Each field as docs/mcp.md explains it.
    assert each.startswith("Each hit: path (")
    assert each.endswith("options (present when a relevance option is not the default).")
    hit, result = each.split(". Result: ")
    assert fields(hit) == {
        "path": "relative to the folder, '/' separated",
        "locator": (
            "path percent-encoded as a URL path + '#L<line_start>-L<line_end>': cite it as is"
        ),
        "line_start, line_end": "1-based, inclusive; the heading line is line_start",
        "heading": 'plain text, "" before the first heading',
        "snippet": (
            "a verbatim substring of those lines, at most 512 characters, starting near the "
            "first match"
        ),
        "match_spans": (
            "[{start,end}] UTF-8 byte offsets into the snippet, end exclusive: not character "
            "offsets"
        ),
        "content_sha256": "SHA-256 hex of the whole file as it was read",
        "score": "lexical relevance only, not trust",
        "matched_terms": "the query terms found, as normalised: stems under stemming",
        "concept_id": "front-matter id, or the path without extension",
    }
    assert hit.count("; ") == 10  # the entries are separated by semicolons, nothing else
    assert fields(result) == {
        "terms": "the normalised query terms",
        "total": "all matching sections",
        "truncated": "total > hits returned",
        "options": "present when a relevance option is not the default",
    }
    assert result.startswith("terms (") and result.count("), ") == 3


def test_descriptions_without_reserved_files_end_their_sentence() -> None:
    (tools,) = [tool_list("/d", Settings(reserved=()))]
    by_name = {t.name: (t.description or "").split("\n\n")[0] for t in tools}
    assert by_name["search_sections"].endswith("(or the text before the first heading).")
    assert "(front matter included). Use it for an exact string" in by_name["search_lines"]


def test_concepts_description_paragraphs() -> None:
    intro, text, each, revision, errors = described()["search_concepts"]
    assert intro == (
        "List the documents (concepts) of the Markdown folder /docs/x whose concept_id or "
        "title contains the query (case-insensitive substring), sorted by concept_id. Use it "
        "to find which files exist on a topic; use search_sections to find the passage (with "
        'profile="recall" for a question in plain words).'
    )
    assert text.startswith("The text content lists one concept per line: `")
    assert text.endswith("; structuredContent holds the full result. " + tools_module.NAMES)
    assert each.startswith("Each concept: concept_id (")
    assert each.endswith("truncated (total > concepts returned).")
    concept, result = each.split(". Result: ")
    assert fields(concept) == {
        "concept_id": "front-matter id, or the path without its extension",
        "path": "relative to the folder",
        # the concept title rule (docs/cli.md, "Concept search"), okf's under strict
        "title": 'front-matter title, else the file\'s first level-1 heading, else ""; '
        'with "strict": true, front-matter title or ""',
        "content_sha256": (
            "SHA-256 hex of the whole file: hash the file and compare before relying on it"
        ),
    }
    assert fields(result) == {"total": "all matches", "truncated": "total > concepts returned"}
    assert (revision, errors) == (tools_module.REVISION, tools_module.ERRORS)


def test_concepts_description_shows_the_line_the_text_has() -> None:
    """The line format the description gives, filled in, is the line concepts_text writes
    (docs/mcp.md: `path · id <concept_id> · "title" · sha256 <hex>`)."""
    text = described()["search_concepts"][1]
    (template,) = re.findall(r"`([^`]+)`", text)
    concept = {"concept_id": "install", "path": "guide.md", "title": "Guide", "content_sha256": SHA}
    filled = (
        template.replace("<path>", concept["path"])
        .replace("<concept_id>", concept["concept_id"])
        .replace("<title>", concept["title"])
        .replace("<content_sha256>", SHA)
    )
    rendered = render_text("search_concepts", concepts_result([concept]))
    assert rendered.split("\n")[1] == filled
    assert "the id only when it is not the path without its extension" in text
    assert "the title only when there is one" in text


def test_lines_description_paragraphs() -> None:
    intro, text, each, semantic, revision, errors = described()["search_lines"]
    assert intro == (
        f"grep the Markdown files of the folder /docs/x line by line (front matter included{NAV}). "
        "Use it for an exact string: a command, flag, identifier or error message; every "
        "matching line is found. To find the passage that answers a question, use "
        'search_sections instead, with profile="recall" when the question is in plain words.'
    )
    assert text.startswith(
        "The text content is grep-like: a first line with the counts and the "
        "snapshot_revision, then for each file `file: <path>` and its lines as "
    )
    assert text.endswith(
        "`--` between groups that do not touch. structuredContent holds the full result. "
        + tools_module.NAMES
    )
    # The formats it names are those lines_text writes (with values filled in).
    assert re.findall(r"`([^`]+)`", text) == [
        "file: <path>",
        "<line>:<column>:<text>",
        "<line>-<text>",
        "--",
    ]
    assert " for a match and `<line>-<text>` for a context line, `--` between" in text
    assert each.startswith("Each match: path (")
    assert each.endswith(
        "truncated says some were left out. To cite a match, re-read that line of the file "
        "and compare."
    )
    assert fields(each) == {
        "path": "relative to the folder",
        "line": "1-based",
        "column": "1-based, in characters, first match on the line",
        "text": "the line, or a 256-character window around the match marked with … where cut",
        "context.before / context.after": "the neighbouring lines",
    }
    assert "(the neighbouring lines). Matches come in path order, then line order; " in each
    assert "; total counts every matching line, truncated says" in each
    # Semantic mode (SPEC §15): what a match is, what its score means, what it needs.
    assert semantic.startswith('mode="semantic" with a query in plain words')
    assert re.findall(r"`([^`]+)`", semantic) == [
        "[rank] <path> lines <start>-<end> · sha256 <hex> · score <s> · <heading>"
    ]
    for said in ("x-content_sha256", "calibrated score", "threshold (default 0.5)"):
        assert said in semantic
    assert "pip install 'citeline[semantic]'" in semantic
    assert (revision, errors) == (tools_module.REVISION, tools_module.ERRORS)


def test_recall_profile_is_spelled_out_in_the_profile_parameter() -> None:
    from citeline.engine.answer.requests import RECALL

    served = wire_schema("search.request")["properties"]["profile"]["description"]
    listed = ", ".join(f"{k}={v}" for k, v in RECALL.items())
    assert f'"recall" (the default without strict): {listed}, for questions in plain words' in (
        served
    )
    assert "match=any, context=outline, cjk=bigrams, stemming=english" in served


# -- the schemas -------------------------------------------------------------------------------


def test_wire_schema_leaves_the_contract_untouched() -> None:
    """The served copy gains descriptions; the contract every front validates with does not."""
    for name in NAMES:
        served = wire_schema(name)
        assert "$schema" not in served and "$id" not in served
        on_disk = json.loads(
            resources.files("citeline.engine.contracts").joinpath(f"{name}.json").read_text()
        )
        assert schema(name) == on_disk, name
    served_query = wire_schema("search.request")["properties"]["query"]["description"]
    own_query = schema("search.request")["properties"]["query"]["description"]
    assert served_query.startswith("The words to look for") and own_query.startswith("1-512")


def test_tool_list_titles_and_annotations() -> None:
    titles = {
        "search_sections": "Search sections (cited)",
        "search_concepts": "Search concepts",
        "search_lines": "Search lines (grep)",
        "verify_citations": "Verify citations",
    }
    tools = tool_list("/d")
    assert [t.name for t in tools] == list(titles)
    for tool in tools:
        assert tool.title == titles[tool.name]
        # Read-only, closed-world (docs/mcp.md); a repeated call reads the disk afresh.
        assert tool.annotations == types.ToolAnnotations(
            title=titles[tool.name],
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
        wire = tool.model_dump(by_alias=True, exclude_none=True)
        assert wire["annotations"] == {
            "title": titles[tool.name],
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }


# -- the text of hand-made results -------------------------------------------------------------


def hit(rank: int, heading: str = "Alpha", **extra: Any) -> dict[str, Any]:
    return {
        "path": f"d/f{rank}.md",
        "line_start": rank,
        "line_end": rank + 2,
        "heading": heading,
        "snippet": f"alpha {rank}",
        "content_sha256": SHA,
        "matched_terms": ["alpha"],
        **extra,
    }


def search_result(hits: list[dict[str, Any]], total: int, **extra: Any) -> dict[str, Any]:
    return {
        "query": "alpha 网关",
        "terms": ["alpha"],
        "hits": hits,
        "total": total,
        "truncated": total > len(hits),
        "snapshot_revision": REV,
        **extra,
    }


def test_search_text_of_two_hits() -> None:
    result = search_result([hit(1), hit(2, heading="", outline="Top > Alpha")], total=2)
    assert render_text("search_sections", result) == "\n".join(
        [
            f'2 of 2 sections for "alpha 网关"; snapshot_revision {REV}',
            "",
            f'[1] d/f1.md lines 1-3 · sha256 {SHA} · "Alpha"',
            "```\nalpha 1\n```",
            "",
            f"[2] d/f2.md lines 2-4 · sha256 {SHA} · (text before the first heading)"
            ' · under "Top > Alpha"',
            "```\nalpha 2\n```",
        ]
    )


def test_search_text_counts_in_the_singular() -> None:
    one = render_text("search_sections", search_result([hit(1)], total=1))
    assert one.startswith(f'1 of 1 section for "alpha 网关"; snapshot_revision {REV}\n\n[1] ')
    more = render_text("search_sections", search_result([hit(1)], total=3))
    assert more.startswith('1 of 3 sections (more with a higher limit) for "alpha 网关"; ')


def test_search_text_without_hits_is_the_count_then_the_hint() -> None:
    empty = render_text("search_sections", search_result([], total=0))
    assert empty == f'0 of 0 sections for "alpha 网关"; snapshot_revision {REV}\n{NO_HIT_HINT}'


def test_search_text_says_which_words_matched_under_options() -> None:
    options = {"profile": "contract", "match": "any"}
    hits = [
        hit(1, matched_terms=["alpha"]),
        hit(2, matched_terms=[]),  # found by its title or outline alone
        hit(3, matched_terms=["alpha", "网关"]),
    ]
    result = search_result(hits, total=3, query="alpha beta 网关", options=options)
    lines = render_text("search_sections", result).split("\n")
    assert lines[1] == "options: match=any"
    said = [line for line in lines if line.startswith("matched: ")]
    assert said == [
        "matched: alpha; missing: beta, 网关",
        "matched: (title or outline only); missing: alpha, beta, 网关",
        "matched: alpha, 网关; missing: beta",
    ]
    everything = search_result([hit(1)], total=1, query="alpha", options=options)
    assert "matched: alpha" in render_text("search_sections", everything).split("\n")


def test_search_text_leaves_stop_words_out_of_matched_and_missing() -> None:
    """Under match=any stop words are not matched terms (SPEC §13): the text neither lists
    them as matched nor as missing, unless the query has no other word."""
    options = {"profile": "recall", "match": "any"}
    hits = [hit(1, matched_terms=["alpha"]), hit(2, matched_terms=[])]
    result = search_result(hits, total=2, query="the alpha of a beta", options=options)
    said = [x for x in render_text("search_sections", result).split("\n") if "matched" in x]
    assert said == [
        "matched: alpha; missing: beta",
        "matched: (title or outline only); missing: alpha, beta",
    ]
    only = search_result([hit(1, matched_terms=["the"])], total=1, query="The a", options=options)
    said = [x for x in render_text("search_sections", only).split("\n") if "matched" in x]
    assert said == ["matched: The; missing: a"]
    # the contract lists every word: all are required (and matched)
    contract = {"profile": "contract", "match": "all", "context": "outline"}
    every = search_result(
        [hit(1, matched_terms=["the", "alpha"])], total=1, query="the alpha", options=contract
    )
    assert "matched: the, alpha" in render_text("search_sections", every).split("\n")


def test_options_all_default_make_no_options_line() -> None:
    result = search_result([hit(1)], total=1, options={"profile": "contract", "match": "all"})
    lines = render_text("search_sections", result).split("\n")
    assert lines[1] == "" and not any(line.startswith("options") for line in lines)


def test_skipped_files_are_listed_on_one_line() -> None:
    skipped = [
        {"path": "a.md", "line": 3, "reason": "invalid UTF-8"},
        {"path": "b.md", "line": 1, "reason": "front matter"},
    ]
    text = render_text("search_sections", search_result([], total=0, skipped=skipped))
    assert text.split("\n")[1] == (
        "skipped, cannot be parsed: a.md:3 (invalid UTF-8); b.md:1 (front matter)"
    )


def concepts_result(concepts: list[dict[str, Any]], total: int | None = None) -> dict[str, Any]:
    total = len(concepts) if total is None else total
    return {
        "query": "é",
        "concepts": concepts,
        "total": total,
        "truncated": total > len(concepts),
        "snapshot_revision": REV,
    }


def test_concepts_text_names_the_id_only_when_it_is_not_the_path() -> None:
    concepts = [
        {"concept_id": "v1.2", "path": "v1.2.md", "title": "", "content_sha256": SHA},
        {"concept_id": "notes", "path": "notes", "title": "Notes", "content_sha256": SHA},
        {"concept_id": "x", "path": "a.b/c.md", "title": "Ç", "content_sha256": SHA},
    ]
    assert render_text("search_concepts", concepts_result(concepts)).split("\n") == [
        f'3 of 3 concepts for "é"; snapshot_revision {REV}',
        f"v1.2.md · sha256 {SHA}",
        f'notes · "Notes" · sha256 {SHA}',
        f'a.b/c.md · id x · "Ç" · sha256 {SHA}',
    ]


def lines_result(matches: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "pattern": "x",
        "mode": "regex",
        "matches": matches,
        "total": len(matches),
        "truncated": False,
        "snapshot_revision": REV,
    }


def lines_match(
    path: str, line: int, column: int, text: str, after: list[str] | None = None
) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "column": column,
        "text": text,
        "context": {"before": [], "after": after or []},
    }


def test_lines_text_keeps_every_context_line_and_marks_a_one_line_gap() -> None:
    matches = [
        lines_match("a.md", 1, 1, "x1", after=["two", "three"]),
        lines_match("a.md", 5, 3, "ax5"),
    ]
    assert render_text("search_lines", lines_result(matches)).split("\n") == [
        f'2 of 2 matching lines for regex "x"; snapshot_revision {REV}',
        "file: a.md",
        "1:1:x1",
        "2-two",
        "3-three",
        "--",  # line 4 is left out: the groups do not touch
        "5:3:ax5",
    ]


# -- the server object -------------------------------------------------------------------------


def test_server_identity_and_instructions(tmp_path: Path) -> None:
    bundle = write(tmp_path / "docs", {"a.md": "# A\n"})
    front = CitelineMCP(str(bundle), Settings(reserved=()))
    try:
        options = front.server.create_initialization_options()
    finally:
        front.engine.close()
    assert options.server_name == "citeline"
    assert options.server_version == version("citeline")
    assert options.title == "citeline"
    assert options.description == "Cited section search over a folder of Markdown files."
    instructions = options.instructions or ""
    assert instructions.startswith(f"citeline searches the Markdown files under {bundle} and ")
    for said in (
        "cites sections exactly (path, 1-based line range, verbatim snippet, file SHA-256). ",
        'Use search_sections for questions (profile="recall" for a question in plain words, '
        "a CJK query, or when no section holds every word), search_concepts to list documents "
        "by id/title, search_lines for exact strings or regexes. ",
    ):
        assert said in instructions
    assert instructions.endswith(VERIFY)
    # The tools are described with the server's own settings: no reserved files here.
    assert all("navigation files" not in (t.description or "") for t in front.tools)


def test_version_is_0_without_package_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    assert front_module._version() == version("citeline") != "0"
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert front_module._version() == "0"


def test_engine_options(tmp_path: Path) -> None:
    bundle = str(write(tmp_path / "docs", {"a.md": "# A\n"}))
    default = CitelineMCP(bundle)
    chosen = CitelineMCP(bundle, cache=False, reread=True)
    try:
        assert default.engine.reread is False and chosen.engine.reread is True
        assert default.engine.reuse.store.folder == default_folder()
        assert chosen.engine.reuse.store.folder is None
        assert default.engine.workers.count == default_workers()
    finally:
        default.engine.close()
        chosen.engine.close()


async def test_unknown_tool_is_invalid_params_naming_the_tools(tmp_path: Path) -> None:
    front = CitelineMCP(str(write(tmp_path / "docs", {"a.md": "# A\n"})))
    try:
        with pytest.raises(MCPError) as caught:
            await front.call_tool(
                Ctx(),  # type: ignore[arg-type]
                types.CallToolRequestParams(name="search_all", arguments={}),
            )
    finally:
        front.engine.close()
    assert caught.value.code == types.INVALID_PARAMS == -32602
    assert caught.value.message == (
        "Unknown tool 'search_all'; tools: search_sections, search_concepts, search_lines, "
        "verify_citations."
    )


async def test_a_bug_is_logged_with_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    inject_faults(monkeypatch)
    front = CitelineMCP(str(write(tmp_path / "b", {"a.md": "# A\n\nalpha\n"})))
    params = types.CallToolRequestParams(name="search_sections", arguments={"query": "boom"})
    try:
        with caplog.at_level(logging.ERROR, logger="citeline.mcp"):
            result = await front.call_tool(Ctx(), params)  # type: ignore[arg-type]
    finally:
        front.engine.close()
    assert result.is_error
    (record,) = [r for r in caplog.records if r.name == "citeline.mcp"]
    assert record.getMessage() == "internal error in tool search_sections"
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError


# -- progress token, progress reports, cancellation --------------------------------------------


def test_progress_token_is_a_string_or_an_integer() -> None:
    for meta, token in (
        ({"progress_token": "p1"}, "p1"),
        ({"progress_token": 7}, 7),
        ({"progress_token": 0}, 0),
        ({"progress_token": True}, None),  # JSON true is no token, though bool is an int
        ({"progress_token": 1.5}, None),
        ({}, None),
        (None, None),
    ):
        assert _progress_token(Ctx(meta)) == token, meta  # type: ignore[arg-type]


class Done(Exception):
    """Ends a scripted run of the progress reporter."""


def scripted_sleep(progress: _Progress, script: list[Any]) -> Callable[[float], Any]:
    """anyio.sleep for the reporter: each wake-up shows the engine's next state."""
    steps = iter(script)

    async def sleep(seconds: float) -> None:
        assert seconds == 0.25  # about four reports a second (docs/mcp.md)
        try:
            progress.state = next(steps)
        except StopIteration:
            raise Done from None

    return sleep


async def test_progress_reports_each_new_state_once_with_increasing_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    progress = _Progress()
    assert progress.state is None
    script = [
        None,  # nothing reported yet: nothing sent
        ("capture", 0, 3),
        ("capture", 0, 3),  # unchanged: not sent again
        ("capture", 3, 3),
        ("analyse", 0, 2),  # a new stage starts at 0; the step still goes up
        ("analyse", 0, 2),
    ]
    monkeypatch.setattr(front_module.anyio, "sleep", scripted_sleep(progress, script))
    ctx = Ctx()
    with pytest.raises(Done):
        await _report_progress(ctx, "tok", progress)  # type: ignore[arg-type]
    assert ctx.session.sent == [
        ("tok", 1, None, "capture: 0/3"),
        ("tok", 2, None, "capture: 3/3"),
        ("tok", 3, None, "analyse: 0/2"),
    ]


async def test_progress_stops_quietly_when_the_client_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    progress = _Progress()
    script = [("capture", 1, 2), ("capture", 2, 2)]
    monkeypatch.setattr(front_module.anyio, "sleep", scripted_sleep(progress, script))
    # Returns (no Done): the first failed send ends the reporter, not the search.
    await _report_progress(Ctx(session=Session(fail=True)), 1, progress)  # type: ignore[arg-type]


class Blocking:
    """An engine method that works until cancelled (or gives up after `patience` seconds)."""

    def __init__(self, patience: float = 5.0) -> None:
        self.patience = patience
        self.started = threading.Event()
        self.calls: list[tuple[CancelToken, Any]] = []
        self.ended: list[str] = []

    def __call__(self, engine: Engine, call: Call, request: object) -> Any:
        cancel, progress = call.cancel, call.progress
        assert cancel is not None
        self.calls.append((cancel, progress))
        self.started.set()
        deadline = time.monotonic() + self.patience
        while time.monotonic() < deadline:
            if cancel.is_cancelled:
                self.ended.append("cancelled")
                return {}
            time.sleep(0.005)
        self.ended.append("gave up")
        return {}


@pytest.mark.parametrize("token", [None, "tok"])
async def test_a_cancelled_call_returns_at_once_and_cancels_the_engine(
    tmp_path: Path, token: str | None
) -> None:
    """The worker thread is abandoned on cancel (not awaited) and its CancelToken set, so the
    engine stops at its next check; with a progress token too (the reporter's path)."""
    front = CitelineMCP(str(write(tmp_path / "docs", {"a.md": "# A\n"})))
    method = Blocking()
    cancelled_after = -1.0
    try:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await front._run(Operation("search", dict, method, False), {}, Ctx(), token)  # type: ignore[arg-type]

            tg.start_soon(call)
            for _ in range(2000):  # a broken _run may never start the engine: fail, not hang
                if method.started.is_set():
                    break
                await anyio.sleep(0.005)
            assert method.started.is_set(), "the engine method was never called"
            started = time.monotonic()
            tg.cancel_scope.cancel()
        cancelled_after = time.monotonic() - started
        for _ in range(400):  # the abandoned thread notices the token soon
            if method.ended:
                break
            await anyio.sleep(0.005)
    finally:
        front.engine.close()
    assert cancelled_after < 1.0
    assert method.ended == ["cancelled"]
    ((cancel, progress),) = method.calls
    assert cancel.is_cancelled
    # The engine is given a progress callback only when the client asked for progress.
    assert (progress is None) == (token is None)


# -- main --------------------------------------------------------------------------------------


def test_main_refuses_a_bundle_that_is_not_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    assert main(str(missing)) == 4
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        f"citeline: bundle_not_found: Bundle {str(missing)!r} does not exist. Give the path "
        "of a folder of Markdown files.\n"
    )
    (tmp_path / "f.md").write_text("# not a folder\n", encoding="utf-8")
    assert main(str(tmp_path / "f.md")) == 4
    assert capsys.readouterr().err.startswith("citeline: bundle_invalid: ")


def test_main_builds_the_server_it_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = str(write(tmp_path / "docs", {"a.md": "# A\n"}))
    served: list[CitelineMCP] = []

    def run(serve: Callable[[], Any]) -> None:  # anyio.run, without serving stdio
        served.append(serve.__self__)  # type: ignore[attr-defined]
        assert serve.__func__ is CitelineMCP.serve  # type: ignore[attr-defined]

    monkeypatch.setattr(front_module.anyio, "run", run)
    settings = Settings(reserved=())
    assert main(bundle, settings) == 0
    assert main(bundle, settings, cache=False, reread=True) == 0
    try:
        first, second = served
        assert first.bundle == second.bundle == bundle
        assert first.engine.settings is settings and second.engine.settings is settings
        assert first.engine.reread is False and second.engine.reread is True
        assert first.engine.reuse.store.folder == default_folder()
        assert second.engine.reuse.store.folder is None
    finally:
        for front in served:
            front.engine.close()


def test_main_exits_130_on_ctrl_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(serve: Callable[[], Any]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(front_module.anyio, "run", interrupted)
    assert main(str(write(tmp_path / "docs", {"a.md": "# A\n"}))) == 130


def test_main_serves_stdio_until_it_closes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole of `main` on pipes standing in for stdin and stdout: initialize, one call,
    then EOF, and main returns 0."""
    bundle = str(write(tmp_path / "docs", {"a.md": "# Alpha\n\nalpha here\n"}))
    to_server, from_server = os.pipe(), os.pipe()
    stdin = io.TextIOWrapper(os.fdopen(to_server[0], "rb"), encoding="utf-8")
    stdout = io.TextIOWrapper(os.fdopen(from_server[1], "wb"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("sys.stdout", stdout)
    writer = os.fdopen(to_server[1], "w", encoding="utf-8")
    reader = from_server[0]  # read unbuffered: select() must see every byte not yet read
    pending = bytearray()
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(main(bundle, cache=False)))
    thread.start()

    def receive() -> dict[str, Any]:
        # A server that died or never answers fails the test instead of blocking it.
        deadline = time.monotonic() + 60
        while b"\n" not in pending:
            if readable(reader, 0.1):
                pending.extend(os.read(reader, 1 << 16))
            else:
                assert thread.is_alive() and time.monotonic() < deadline, "no answer from main"
        line, _, rest = bytes(pending).partition(b"\n")
        pending[:] = rest
        answer: dict[str, Any] = json.loads(line)
        return answer

    def send(message: dict[str, Any]) -> None:
        writer.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        writer.flush()

    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": types.LATEST_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            }
        )
        init = receive()
        send({"method": "notifications/initialized"})
        arguments = {"query": "alpha"}
        params = {"name": "search_sections", "arguments": arguments}
        send({"id": 2, "method": "tools/call", "params": params})
        call = receive()
    finally:
        writer.close()
        thread.join(30)
    os.close(reader)
    assert codes == [0]
    assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "citeline"
    assert init["result"]["serverInfo"]["version"] == version("citeline")
    assert call["id"] == 2 and call["result"]["isError"] is False
    data = call["result"]["structuredContent"]
    validate("search.result", data)
    assert [h["heading"] for h in data["hits"]] == ["Alpha"]
    assert call["result"]["content"][0]["text"] == render_text("search_sections", data)
