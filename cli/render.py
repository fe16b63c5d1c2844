"""Human output for the terminal, with ripgrep's habits.

Paths as the user would open them from where the command ran, `path:line:` first on a hit so
terminals and editors jump to it, the lines that hold the matches (numbered, with elisions),
colour only on a terminal and never a marker in plain text, the summary apart from the
results (on stderr). `--json` does not come through here: it prints the contract. Section
search's hits are drawn by cli/sections.py, and the text for a terminal (escaping, colour,
paths as typed) is cli/style.py's.
"""

from __future__ import annotations

import os
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import IO, Any

from citeline.fronts.escape import escaped
from citeline.fronts.hits import Sources, hit_label, match_as_hit, verify_places

from . import interrupt
from .sections import search_summary
from .style import (
    BOLD,
    DIM,
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
