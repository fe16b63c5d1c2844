"""Human output for the terminal, with ripgrep's habits.

Paths as the user would open them from where the command ran, `path:line:` first on a hit so
terminals and editors jump to it, the lines that hold the matches (numbered, with elisions),
colour only on a terminal and never a marker in plain text, the summary apart from the
results (on stderr). `--json` does not come through here: it prints the contract. The
text for a terminal (escaping, colour, paths as typed) is cli/style.py's.

Imports stay light at module level: the engine's tokenizer is imported when a hit is drawn.
"""

from __future__ import annotations

import os
import sys
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from citeline.fronts.escape import escaped
from citeline.fronts.hits import (
    Sources,
    hit_label,
    match_as_hit,
    matched_words,
    query_words,
    tokenizer_of,
    verify_places,
)

from . import interrupt
from .style import (
    BOLD,
    DIM,
    ELLIPSIS,
    GREEN,
    MAGENTA,
    display_path,
    marked,
    one_line,
    paint,
    short,
    shows_escapes,
    terminal,
)

MATCH_LINES = 4  # matching lines shown per hit, beyond the first line of each matched word
WIDTH = 160  # code points of one displayed line; a longer line is cut at word boundaries
LEAD = 40  # code points kept before a cut line's first match
SNIPPET_LEAD = 80  # the contract's lead before a snippet's first match (SPEC §6)
RECALL_SHOWN = 5  # best `recall` hits shown when the contract finds nothing

Spans = tuple[tuple[int, int], ...]  # code-point ranges of a displayed text


# -- words of the query, as typed -----------------------------------------------------------


# -- reading a hit's lines back ---------------------------------------------------------------


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


# -- concepts -----------------------------------------------------------------------------------


def render_concepts(result: dict[str, Any], color: bool, *, bundle: str | None = None) -> str:
    lines = []
    for c in result["concepts"]:
        title = f"  {terminal(one_line(c['title']))}" if c["title"] else ""
        path = paint(display_path(bundle, c["path"]), MAGENTA, color)
        lines.append(f"{paint(c['concept_id'], GREEN, color)}  {path}{title}")
    return "\n".join(lines)


def concepts_summary(result: dict[str, Any]) -> str:
    noun = "concept" if result["total"] == 1 else "concepts"
    return (
        f"{len(result['concepts'])} of {result['total']} {noun} · "
        f"snapshot {short(result['snapshot_revision'])}"
    )


# -- lines ----------------------------------------------------------------------------------------


def line_finder(
    pattern: str, mode: str, case_sensitive: bool
) -> Callable[[str], list[tuple[int, int]]]:
    """Where the pattern matches in a displayed line (for highlighting only: the line and
    column come from the engine)."""
    import re2  # type: ignore[import-untyped,unused-ignore]

    opts = re2.Options()
    opts.case_sensitive = case_sensitive
    opts.never_nl = True
    opts.log_errors = False
    try:
        rx = re2.compile(re2.escape(pattern) if mode == "exact" else pattern, opts)
    except re2.error:
        return lambda _text: []

    def find(text: str) -> list[tuple[int, int]]:
        return [m.span() for m in rx.finditer(text) if m.end() > m.start()]

    return find


def render_lines(
    result: dict[str, Any],
    color: bool,
    *,
    bundle: str | None = None,
    context: int = 0,
    find: Callable[[str], list[tuple[int, int]]] | None = None,
) -> str:
    """ripgrep's --column format: `path:line:column:text`; with context, `path-line-text`
    for the lines around, and `--` between groups that do not touch."""
    out: list[str] = []
    by_file: dict[str, dict[int, tuple[bool, str, int]]] = {}
    for m in result["matches"]:
        lines = by_file.setdefault(m["path"], {})
        if context:
            before = m["context"]["before"][-context:] if context else []
            for k, text in enumerate(before):
                lines.setdefault(m["line"] - len(before) + k, (False, text, 0))
            for k, text in enumerate(m["context"]["after"][:context]):
                lines.setdefault(m["line"] + 1 + k, (False, text, 0))
        lines[m["line"]] = (True, m["text"], m["column"])
    previous: tuple[str, int] | None = None
    for path, lines in by_file.items():
        shown = paint(display_path(bundle, path), MAGENTA, color)
        for number in sorted(lines):
            is_match, text, column = lines[number]
            if context and previous is not None and previous != (path, number - 1):
                out.append(paint("--", DIM, color))
            previous = (path, number)
            line_no = paint(str(number), GREEN, color)
            if is_match:
                spans = find(text) if (color and find) else []
                out.append(f"{shown}:{line_no}:{column}:{marked(text, spans, color)}")
            else:
                out.append(f"{shown}-{line_no}-{terminal(text)}")
    return "\n".join(out)


def render_semantic(
    result: dict[str, Any],
    color: bool,
    *,
    bundle: str | None = None,
    context: int = 0,
    sources: Sources | None = None,
) -> str:
    """Semantic matches (SPEC §15), one section each: `path:start-end score heading` (the
    text before a file's first heading named by the file's title, as hits are), then its
    most representative line (`  line: text`), with `context` lines around it."""
    out: list[str] = []
    for m in result["matches"]:
        place = paint(display_path(bundle, m["path"]), MAGENTA, color)
        lines = paint(f"{m['x-line_start']}-{m['x-line_end']}", GREEN, color)
        score = paint(f"{m['score']:.2f}", BOLD, color)
        hit = match_as_hit(m)
        file_lines = sources.lines(hit["path"], hit["content_sha256"]) if sources else None
        label = terminal(one_line(hit_label(hit, file_lines)))
        out.append(f"{place}:{lines} {score} {label}")
        before = m["context"]["before"][-context:] if context else []
        after = m["context"]["after"][:context] if context else []
        for k, text in enumerate(before):
            out.append(f"  {m['line'] - len(before) + k}- {terminal(text)}")
        out.append(f"  {paint(str(m['line']), GREEN, color)}: {terminal(m['text'])}")
        for k, text in enumerate(after):
            out.append(f"  {m['line'] + 1 + k}- {terminal(text)}")
    return "\n".join(out)


def lines_summary(result: dict[str, Any]) -> str:
    noun = "match" if result["total"] == 1 else "matches"
    if result.get("mode") == "semantic":
        noun = "section" if result["total"] == 1 else "sections"
        noun += f" at ≥ {result['threshold']:g} · {result['model']}"
    return (
        f"{len(result['matches'])} of {result['total']} {noun} · "
        f"snapshot {short(result['snapshot_revision'])}"
    )


# The one-line summary of each operation's result (engine/operations.py: one per operation).
# -- verify ---------------------------------------------------------------------------------------


def render_verify(result: dict[str, Any]) -> str:
    """One line per citation: its status, the cited `path:a-b` and, when the text moved or
    changed, `→ path:c-d` (where it is now)."""
    out = []
    for r in result["results"]:
        cited, now = verify_places(r, escaped)
        line = f"{r['status']}  {cited}"
        if r["status"] in ("moved", "changed"):
            line += f" → {now}"
        if r["status"] == "changed" and r.get("similarity") is not None:
            line += f" (similarity {r['similarity']:.2f})"
        out.append(line)
    return "\n".join(out) + "\n"


def verify_summary(result: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for r in result["results"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"{result['total']} citations: {shown} · snapshot {short(result['snapshot_revision'])}"


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "search": search_summary,
    "lines": lines_summary,
    "concepts": concepts_summary,
    "verify": verify_summary,
}


# -- notes on stderr ----------------------------------------------------------------------------


SKIPPED_SHOWN = 3  # files named in the summary; --json lists every one


def skipped_notes(result: dict[str, Any], bundle: str | None = None) -> list[str]:
    """One summary of the unparsable files left out of the search (the default; --strict fails
    instead): how many, the first few with line and reason."""
    skipped = result.get("skipped") or []
    if not skipped:
        return []
    named = "; ".join(
        f"{display_path(bundle, s['path'])}:{s['line']}: {s['reason']}"
        for s in skipped[:SKIPPED_SHOWN]
    )
    more = len(skipped) - SKIPPED_SHOWN
    rest = f"; and {more} more (--json lists them)" if more > 0 else ""
    files = "file" if len(skipped) == 1 else "files"
    return [terminal(f"citeline: skipped {len(skipped)} unparsable {files}: {named}{rest}")]


def reserved_note(root: str, reserved: Sequence[str]) -> str | None:
    """Said once when reserved navigation files at the root were left out of the search, and
    when a root file's name differs from a reserved one only by case or Unicode form
    (`INDEX.md`): reserved names are exact (SPEC §2), so it is searched, even on a volume
    where both names open the same file (macOS, Windows). The names are the root's stored
    ones, never what a lookup by another spelling finds there."""
    try:
        with os.scandir(root) as entries:
            stored = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
    except OSError:
        return None
    present = [name for name in reserved if name in stored]
    wanted = {_loose(name): name for name in reserved}
    near = [name for name in stored if name not in reserved and _loose(name) in wanted]
    notes = []
    if present:
        names = terminal(" and ".join(present))
        verb = "is" if len(present) == 1 else "are"
        notes.append(
            f"{names} at the root {verb} not searched (navigation files); --no-reserved "
            "includes them"
        )
    if near:
        names = terminal(" and ".join(near))
        verb = "is" if len(near) == 1 else "are"
        exact = terminal(", ".join(dict.fromkeys(wanted[_loose(n)] for n in near)))
        notes.append(
            f"{names} at the root {verb} searched: reserved names are exact ({exact}); "
            f"--reserved {terminal(near[0])} leaves it out"
        )
    return " · ".join(notes) or None


def _loose(name: str) -> str:
    return unicodedata.normalize("NFC", name).lower()


class ProgressBar:
    """Shown on stderr once work has taken longer than `delay` seconds, if stderr is a TTY."""

    def __init__(self, stream: IO[str] | None = None, delay: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        # (it redraws its line with \r and clears it with an escape sequence)
        self.enabled = self.stream.isatty() and shows_escapes(self.stream)
        self.delay = delay
        self.started = time.monotonic()
        self.shown = False
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay or (now - self.last < 0.05 and done < total):
            return
        self.last = now
        width = 30
        filled = width * done // max(total, 1)
        bar = "█" * filled + "·" * (width - filled)
        interrupt.progress_shown(True)  # before it shows: a Ctrl-C may land at any point
        self.stream.write(f"\r{terminal(stage):>8} {bar} {done}/{total}")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write(interrupt.CLEAR)
            self.stream.flush()
            self.shown = False
            interrupt.progress_shown(False)
