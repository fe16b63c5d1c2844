"""Section search for a human, with ripgrep's habits: `path:line:` first on a hit so
terminals and editors jump to it, then the lines of the section that hold the matches
(numbered, with elisions, long lines cut at word boundaries), read back from the file the
search read or, when it changed since, from the contract's snippet (cli/render.py draws the
other operations and the notes).

Imports stay light at module level: the engine's tokenizer is imported when a hit is drawn.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from citeline.fronts.hits import Sources, hit_label, matched_words, query_words, tokenizer_of

from .style import BOLD, DIM, ELLIPSIS, GREEN, MAGENTA, display_path, marked, one_line, paint, short

MATCH_LINES = 4  # matching lines shown per hit, beyond the first line of each matched word
WIDTH = 160  # code points of one displayed line; a longer line is cut at word boundaries
LEAD = 40  # code points kept before a cut line's first match
SNIPPET_LEAD = 80  # the contract's lead before a snippet's first match (SPEC §6)
RECALL_SHOWN = 5  # best `recall` hits shown when the contract finds nothing

Spans = tuple[tuple[int, int], ...]  # code-point ranges of a displayed text


# -- one displayed line -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shown:
    number: int | None  # 1-based line of the file; None when it cannot be known
    text: str
    spans: Spans  # code-point ranges of matches in text
    match: bool  # a line holding a match (":" as grep writes it) or context ("-")


def _word(c: str) -> bool:
    return unicodedata.category(c)[0] in "LNM"


def _cjk(c: str) -> bool:
    from citeline.engine.text.terms import CJK_RE

    return CJK_RE.match(c) is not None


def _inside_word(text: str, pos: int) -> bool:
    """True when pos falls between two characters of one word (CJK characters stand alone)."""
    if pos <= 0 or pos >= len(text):
        return False
    a, b = text[pos - 1], text[pos]
    return _word(a) and _word(b) and not (_cjk(a) or _cjk(b))


def word_start(text: str, pos: int, limit: int) -> int:
    """pos moved forward past a cut word and the spaces after it, never beyond limit."""
    while pos < limit and _inside_word(text, pos):
        pos += 1
    while pos < limit and text[pos].isspace():
        pos += 1
    return pos


def word_end(text: str, end: int, floor: int) -> int:
    """end moved back before a cut word and the spaces before it, never below floor."""
    while end > floor and _inside_word(text, end):
        end -= 1
    while end > floor and text[end - 1].isspace():
        end -= 1
    return end


def clip(text: str, spans: Spans, width: int = WIDTH, lead: int = LEAD) -> tuple[str, Spans]:
    """At most `width` code points of a line around its first match, cut at word boundaries
    and marked with … where cut; spans move with the text (or are dropped outside it)."""
    if len(text) <= width:
        return text, spans
    anchor = spans[0][0] if spans else 0
    first_end = spans[0][1] if spans else 0
    start = max(0, min(anchor - lead, len(text) - width))
    if start > 0:
        start = word_start(text, start, anchor)
    end = min(len(text), start + width)
    if end < len(text):
        end = word_end(text, end, max(first_end, start + 1))
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    shift = len(prefix) - start
    kept = tuple(
        (max(s, start) + shift, min(e, end) + shift) for s, e in spans if s < end and e > start
    )
    return prefix + text[start:end] + suffix, kept


def trim_leading_word(text: str, spans: Spans) -> tuple[str, Spans]:
    """A snippet cut mid-word (it starts 80 code points before its first match): start at
    the next word boundary instead, marked with …."""
    limit = spans[0][0] if spans else len(text)
    start = word_start(text, 1, limit) if text and _word(text[0]) else 0
    if start == 0:
        return text, spans
    shift = len(ELLIPSIS) - start
    return ELLIPSIS + text[start:], tuple((s + shift, e + shift) for s, e in spans)


# -- section search -----------------------------------------------------------------------------


def _char_spans(snippet: str, byte_spans: list[dict[str, int]]) -> list[tuple[int, int]]:
    """The contract's UTF-8 byte spans as code-point ranges of the snippet."""
    raw = snippet.encode("utf-8")
    return [
        (len(raw[: s["start"]].decode("utf-8")), len(raw[: s["end"]].decode("utf-8")))
        for s in byte_spans
    ]


def _with_context(chosen: Iterable[int], lo: int, hi: int, context: int) -> list[int | None]:
    """Line indexes to show: the chosen ones and `context` lines around each within lo..hi,
    in order, with None where lines are left out."""
    wanted: set[int] = set()
    for i in chosen:
        wanted.update(range(max(lo, i - context), min(hi, i + context) + 1))
    out: list[int | None] = []
    previous: int | None = None
    for i in sorted(wanted):
        if previous is not None and i > previous + 1:
            out.append(None)
        out.append(i)
        previous = i
    return out


def _choose(found: dict[int, set[str]]) -> list[int]:
    """The first line holding each matched term (so a rarer word is never cut off), then
    further matching lines in order, up to MATCH_LINES."""
    chosen: list[int] = []
    covered: set[str] = set()
    for i in sorted(found):
        if found[i] - covered:
            chosen.append(i)
            covered |= found[i]
    for i in sorted(found):
        if len(chosen) >= MATCH_LINES:
            break
        if i not in chosen:
            chosen.append(i)
    return chosen


def hit_lines(
    hit: dict[str, Any], file_lines: list[str], tokenizer: Any, context: int
) -> tuple[int, list[Shown | None]]:
    """(line of the first match, lines to show) for a hit whose file was read back."""
    first: int = hit["line_start"] - 1
    last: int = min(hit["line_end"], len(file_lines)) - 1
    terms = frozenset(hit["matched_terms"])
    spans: dict[int, list[tuple[int, int]]] = {}
    found: dict[int, set[str]] = {}
    for i in range(first, last + 1):
        for token, start, end in tokenizer.located(file_lines[i]):
            if token in terms:
                spans.setdefault(i, []).append((start, end))
                found.setdefault(i, set()).add(token)
    if not found:  # matched through the title or the outline only: show where it starts
        opening = next((i for i in range(first, last + 1) if file_lines[i].strip()), first)
        chosen, jump = [opening], first
    else:
        chosen, jump = _choose(found), min(found)
    shown: list[Shown | None] = []
    for row in _with_context(chosen, first, last, context):
        if row is None:
            shown.append(None)
            continue
        text, kept = clip(file_lines[row], _fold(spans.get(row, [])))
        shown.append(Shown(row + 1, text, kept, row in found))
    return jump + 1, shown


def _fold(ranges: list[tuple[int, int]]) -> Spans:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return tuple(out)


def snippet_lines(hit: dict[str, Any], context: int) -> tuple[int, list[Shown | None]]:
    """The lines of the contract's snippet that hold spans, when the file cannot be read
    back unchanged. Their line numbers are known only when the snippet starts at the
    section's start (its first match lies within the contract's 80-code-point lead)."""
    text = hit["snippet"]
    spans = _char_spans(text, hit["match_spans"])
    from_start = not spans or spans[0][0] < SNIPPET_LEAD
    pieces: list[tuple[str, Spans]] = []
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        inside = tuple((s - pos, min(e, end) - pos) for s, e in spans if pos <= s < end)
        pieces.append((line.removesuffix("\r"), inside))
        pos = end + 1
    if not from_start and pieces:
        pieces[0] = trim_leading_word(*pieces[0])
    holding = [i for i, (_, sp) in enumerate(pieces) if sp]
    chosen = holding[:MATCH_LINES] or [0]
    shown: list[Shown | None] = []
    for i in _with_context(chosen, 0, len(pieces) - 1, context):
        if i is None:
            shown.append(None)
            continue
        line, inside = pieces[i]
        clipped, kept = clip(line, inside)
        number = hit["line_start"] + i if from_start else None
        shown.append(Shown(number, clipped, kept, bool(inside)))
    jump = hit["line_start"] + (holding[0] if holding and from_start else 0)
    return jump, shown


def _draw_lines(shown: Sequence[Shown | None], color: bool) -> list[str]:
    width = max((len(str(s.number)) for s in shown if s and s.number), default=1)
    out = []
    for s in shown:
        if s is None:
            out.append("  " + ELLIPSIS.rjust(width))
            continue
        number = str(s.number) if s.number else ""
        mark = ":" if s.match else "-"
        gutter = paint(number.rjust(width), GREEN, color) + mark if number else " " * width + mark
        out.append(f"  {gutter} {marked(s.text, s.spans, color)}".rstrip())
    return out


def render_search(
    result: dict[str, Any],
    color: bool,
    *,
    bundle: str | None = None,
    sources: Sources | None = None,
    context: int = 0,
) -> str:
    """One block per hit: `path:line: heading  (lines a-b, score s)` and its matching lines."""
    tokenizer = tokenizer_of(result)
    words = query_words(result) if "options" in result else []
    blocks = []
    for hit in result["hits"]:
        file_lines = sources.lines(hit["path"], hit["content_sha256"]) if sources else None
        if file_lines is not None and hit["line_end"] <= len(file_lines):
            jump, shown = hit_lines(hit, file_lines, tokenizer, context)
            changed = ""
        else:
            jump, shown = snippet_lines(hit, context)
            changed = ", changed since the search" if sources else ""
        where = paint(display_path(bundle, hit["path"]), MAGENTA, color)
        heading = paint(one_line(hit_label(hit, file_lines)), BOLD, color)
        about = f"lines {hit['line_start']}-{hit['line_end']}, score {hit['score']:.3f}{changed}"
        if words:
            found, missing = matched_words(words, hit["matched_terms"])
            about += f"; matched: {', '.join(found)}" if found else ""
            about += f"; missing: {', '.join(missing)}" if missing else ""
        line = paint(str(jump), GREEN, color)
        head = f"{where}:{line}: {heading}  {paint(f'({about})', DIM, color)}"
        blocks.append("\n".join([head, *_draw_lines(shown, color)]))
    return "\n\n".join(blocks)


def no_hit_notice(recall_total: int | None) -> str:
    """Said when the contract finds no section holding every word of the query."""
    first = "No section holds every word of the query."
    if recall_total is None:
        return first
    if recall_total == 0:
        return first + " None holds any of them either (--profile recall)."
    return f"{first}\nBest sections with --profile recall, which accepts any of the words:"


def search_summary(result: dict[str, Any]) -> str:
    noun = "section" if result["total"] == 1 else "sections"
    return (
        f"{len(result['hits'])} of {result['total']} {noun} · "
        f"snapshot {short(result['snapshot_revision'])}"
    )
