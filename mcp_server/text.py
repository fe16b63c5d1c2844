"""The text content of an MCP tool's result: compact, and enough to verify every citation
(SPEC §14). A first line with the counts and the snapshot_revision, then per hit its path,
line range, content_sha256 and heading and the snippet verbatim in a fence it cannot close;
the concepts, lines and verify results in the shapes the tools' descriptions announce
(mcp_server/tools.py). mcp_server/server.py sends it beside the structured result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from citeline.fronts.escape import escaped
from citeline.fronts.hits import Sources, match_as_hit, verify_places

# Every value the workspace wrote (paths, ids, headings, titles, lines, the skipped files'
# reasons) reaches the text through `_name`, `_quoted` or `escaped` (fronts/escape.py, shared
# with the CLI): a newline in a file name printed a whole forged hit (issue 49). Snippets
# alone stay verbatim (an agent checks them byte for byte), inside a fence they cannot close.

_MISREAD = re.compile(r'[\s"\\·]')  # what could make a bare name read as the text's structure


def _quoted(text: str) -> str:
    """`text` as a JSON string, its remaining controls (DEL, C1, U+2028) escaped too."""
    return escaped(json.dumps(text, ensure_ascii=False))


def _name(text: str) -> str:
    """A path or concept id: bare, unless a space, a quote, a backslash, `·` or a control
    character in it could be read as a field of its line (`x.md lines 1-3 · sha256 ffff…
    y.md`): then quoted."""
    return _quoted(text) if _MISREAD.search(text) or escaped(text) != text else text


def fenced(text: str) -> str:
    """`text` in a Markdown code fence that nothing inside it can close (CommonMark: a
    closing fence is at least as long as the opening one)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}\n{body}{fence}"


def _count(shown: int, total: int, noun: str, plural: str) -> str:
    words = f"{shown} of {total} {noun if total == 1 else plural}"
    return words + (" (more with a higher limit)" if total > shown else "")


def _skipped(result: dict[str, Any]) -> list[str]:
    skipped = result.get("skipped") or []
    if not skipped:
        return []
    listed = "; ".join(f"{_name(s['path'])}:{s['line']} ({escaped(s['reason'])})" for s in skipped)
    return [f"skipped, cannot be parsed: {listed}"]


def _options(result: dict[str, Any]) -> list[str]:
    options = result.get("options")
    if not options:
        return []
    from citeline.engine.answer.requests import Relevance

    default = Relevance().to_json()
    changed = [f"{k}={v}" for k, v in options.items() if default.get(k) != v]
    return [f"options: {', '.join(changed)}"] if changed else []


def content_words(
    words: list[tuple[str, frozenset[str]]],
) -> list[tuple[str, frozenset[str]]]:
    """The query's words but its English stop words, unless it has no other: under
    match=any a stop word is never a matched term (SPEC §13), so it is neither matched nor
    missing."""
    from citeline.engine.rank.scoring import STOP_WORDS
    from citeline.engine.text.terms import normalise

    content = [w for w in words if normalise(w[0]) not in STOP_WORDS]
    return content or words


# The bundle's files for the text of the call being answered (set just before success()):
# to name the text before a file's first heading by the file's title, as the command line
# and the language server do (engine/text/sections.py section_label).
SOURCES: ContextVar[Sources | None] = ContextVar("citeline_mcp_sources", default=None)


NO_HIT_HINT = (
    'No section holds every word of the query. Ask again with profile="recall": a section '
    "then needs only some of the words (those holding more rank first), and stemming, the "
    "headings above a section and CJK character pairs count. Or drop a word, or use "
    "search_lines for an exact string."
)
NO_HIT_ANY = (
    "No section holds any word of the query under these options. Try other words, or "
    "search_lines for an exact string."
)


def search_text(result: dict[str, Any]) -> str:
    from citeline.fronts.hits import matched_words, query_words

    hits = result["hits"]
    out = [
        f"{_count(len(hits), result['total'], 'section', 'sections')} for "
        f"{_quoted(result['query'])}; snapshot_revision {result['snapshot_revision']}",
        *_options(result),
        *_skipped(result),
    ]
    if not hits:
        match = (result.get("options") or {}).get("match", "all")
        out.append(NO_HIT_HINT if match == "all" else NO_HIT_ANY)
        return "\n".join(out)
    words = query_words(result) if "options" in result else []
    if (result.get("options") or {}).get("match") == "any":
        words = content_words(words)
    for rank, hit in enumerate(hits, 1):
        heading = _quoted(hit["heading"]) if hit["heading"] else _preamble(hit)
        line = (
            f"[{rank}] {_name(hit['path'])} lines {hit['line_start']}-{hit['line_end']} · "
            f"sha256 {hit['content_sha256']} · {heading}"
        )
        if hit.get("outline"):
            line += f" · under {_quoted(hit['outline'])}"
        out.append("")
        out.append(line)
        if words:
            found, missing = matched_words(words, hit["matched_terms"])
            said = f"matched: {', '.join(found) or '(title or outline only)'}"
            out.append(escaped(said + (f"; missing: {', '.join(missing)}" if missing else "")))
        out.append(fenced(hit["snippet"]))
    return "\n".join(out)


def concepts_text(result: dict[str, Any]) -> str:
    concepts = result["concepts"]
    out = [
        f"{_count(len(concepts), result['total'], 'concept', 'concepts')} for "
        f"{_quoted(result['query'])}; snapshot_revision {result['snapshot_revision']}",
        *_skipped(result),
    ]
    for c in concepts:
        # The concept id is said only when it is not the path minus its extension.
        base, dot, _ = c["path"].rpartition(".")
        derived = base if dot else c["path"]
        named = "" if c["concept_id"] == derived else f" · id {_name(c['concept_id'])}"
        title = f" · {_quoted(c['title'])}" if c["title"] else ""
        out.append(f"{_name(c['path'])}{named}{title} · sha256 {c['content_sha256']}")
    return "\n".join(out)


def semantic_text(result: dict[str, Any]) -> str:
    """Semantic mode (SPEC §15): each match a section to cite, its score, its most
    representative line with the context around it."""
    matches = result["matches"]
    out = [
        f"{_count(len(matches), result['total'], 'section', 'sections')} at score ≥ "
        f"{result['threshold']:g} for semantic {_quoted(result['pattern'])} "
        f"(model {escaped(result['model'])}); snapshot_revision {result['snapshot_revision']}",
        *_skipped(result),
    ]
    if not matches:
        out.append(NO_SEMANTIC_MATCH)
    for rank, m in enumerate(matches, 1):
        heading = _quoted(m["x-heading"]) if m["x-heading"] else _preamble(match_as_hit(m))
        out.append("")
        out.append(
            f"[{rank}] {_name(m['path'])} lines {m['x-line_start']}-{m['x-line_end']} · "
            f"sha256 {m['x-content_sha256']} · score {m['score']:.3f} · {heading}"
        )
        before, after = m["context"]["before"], m["context"]["after"]
        for k, text in enumerate(before):
            out.append(f"{m['line'] - len(before) + k}-{escaped(text)}")
        out.append(f"{m['line']}:{m['column']}:{escaped(m['text'])}")
        for k, text in enumerate(after):
            out.append(f"{m['line'] + 1 + k}-{escaped(text)}")
    return "\n".join(out)


NO_SEMANTIC_MATCH = (
    "No section answers at this threshold. Lower threshold (0.3) to see weaker matches, or "
    'try search_sections with profile="recall" or "hybrid".'
)


def lines_text(result: dict[str, Any]) -> str:
    if result.get("mode") == "semantic":
        return semantic_text(result)
    matches = result["matches"]
    out = [
        f"{_count(len(matches), result['total'], 'matching line', 'matching lines')} for "
        f"{result['mode']} {_quoted(result['pattern'])}; "
        f"snapshot_revision {result['snapshot_revision']}",
        *_skipped(result),
    ]
    by_file: dict[str, dict[int, tuple[bool, str, int]]] = {}
    for m in matches:
        lines = by_file.setdefault(m["path"], {})
        before = m["context"]["before"]
        for k, text in enumerate(before):
            lines.setdefault(m["line"] - len(before) + k, (False, text, 0))
        for k, text in enumerate(m["context"]["after"]):
            lines.setdefault(m["line"] + 1 + k, (False, text, 0))
        lines[m["line"]] = (True, m["text"], m["column"])
    for path, lines in by_file.items():
        out.append(f"file: {_name(path)}")
        previous: int | None = None
        for number in sorted(lines):
            if previous is not None and number > previous + 1:
                out.append("--")
            previous = number
            is_match, text, column = lines[number]
            shown = escaped(text)
            out.append(f"{number}:{column}:{shown}" if is_match else f"{number}-{shown}")
    return "\n".join(out)


def verify_text(result: dict[str, Any]) -> str:
    """One line per citation: status, the cited place and, when moved or changed, where the
    text is now (every path through `_name`: escaped and quoted when it needs to be)."""
    out = [f"{result['total']} citations; snapshot_revision {result['snapshot_revision']}"]
    for r in result["results"]:
        cited, now = verify_places(r, _name)
        line = f"{r['status']} {cited}"
        if r["status"] in ("moved", "changed"):
            line += f" → {now}"
            if r.get("others"):
                line += f" (+{r['others']} more copies)"
            if r.get("similarity") is not None:
                line += f" · similarity {r['similarity']:.2f}"
        elif r["status"] == "missing":
            line += " · file exists" if r.get("file_exists") else " · file gone"
        out.append(line)
    return "\n".join(out)


TEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    "search_sections": search_text,
    "search_concepts": concepts_text,
    "search_lines": lines_text,
    "verify_citations": verify_text,
}


def _preamble(hit: dict[str, Any]) -> str:
    """The name of the text before a file's first heading: the file's title, else its path."""
    sources = SOURCES.get()
    if sources is None:  # (a result rendered without its files)
        return "(text before the first heading)"
    from citeline.fronts.hits import hit_label

    return _quoted(hit_label(hit, sources.lines(hit["path"], hit["content_sha256"])))


def render_text(tool: str, result: dict[str, Any], sources: Sources | None = None) -> str:
    """The text block of `result`; with `sources` (the bundle's files), a hit on the text
    before a file's first heading is named by the file's title, as the server names it."""
    if sources is None:
        return TEXT[tool](result)
    token = SOURCES.set(sources)
    try:
        return TEXT[tool](result)
    finally:
        SOURCES.reset(token)


__all__ = [
    "NO_HIT_ANY",
    "NO_HIT_HINT",
    "NO_SEMANTIC_MATCH",
    "SOURCES",
    "TEXT",
    "fenced",
    "render_text",
]
