"""Human output for the terminal: hits with highlighted spans, summaries, a progress bar."""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

BOLD_RED = "\x1b[1;31m"
MAGENTA = "\x1b[35m"
GREEN = "\x1b[32m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"
RESET = "\x1b[0m"
SNIPPET_LINES = 6  # of the snippet shown per hit; --json has all of it


def use_color(choice: str, stream: IO[str]) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{RESET}" if color and text else text


def highlight(snippet: str, spans: list[dict[str, int]], color: bool) -> str:
    """The snippet with its byte-offset spans marked (colour, or [brackets] without)."""
    raw = snippet.encode("utf-8")
    out = []
    pos = 0
    for span in spans:
        out.append(raw[pos : span["start"]].decode("utf-8"))
        word = raw[span["start"] : span["end"]].decode("utf-8")
        out.append(paint(word, BOLD_RED, True) if color else f"[{word}]")
        pos = span["end"]
    out.append(raw[pos:].decode("utf-8"))
    return "".join(out)


def short(revision: str) -> str:
    return revision[:6] + "…"


def render_search(result: dict[str, Any], color: bool) -> str:
    blocks = []
    for hit in result["hits"]:
        where = paint(f"{hit['path']}:{hit['line_start']}-{hit['line_end']}", MAGENTA, color)
        heading = paint(hit["heading"] or "(no heading)", BOLD, color)
        score = paint(f"{hit['score']:.3f}", DIM, color)
        body = highlight(hit["snippet"], hit["match_spans"], color).split("\n")
        if len(body) > SNIPPET_LINES:
            body = [*body[:SNIPPET_LINES], "…"]
        indented = "\n".join("    " + line for line in body)
        blocks.append(f"{where}  {heading}  {score}\n{indented}\n")
    noun = "section" if result["total"] == 1 else "sections"
    summary = (
        f"{len(result['hits'])} of {result['total']} {noun} · "
        f"snapshot {short(result['snapshot_revision'])}"
    )
    return "\n".join([*blocks, skipped_note(result) + summary])


def render_concepts(result: dict[str, Any], color: bool) -> str:
    lines = []
    for c in result["concepts"]:
        title = f"  {c['title']}" if c["title"] else ""
        lines.append(
            f"{paint(c['concept_id'], GREEN, color)}  {paint(c['path'], MAGENTA, color)}{title}"
        )
    noun = "concept" if result["total"] == 1 else "concepts"
    lines.append(
        f"{skipped_note(result)}{len(result['concepts'])} of {result['total']} {noun} · "
        f"snapshot {short(result['snapshot_revision'])}"
    )
    return "\n".join(lines)


def render_lines(result: dict[str, Any], color: bool) -> str:
    """ripgrep-like: path:line:column: text."""
    lines = []
    for m in result["matches"]:
        path = paint(m["path"], MAGENTA, color)
        where = f"{path}:{paint(str(m['line']), GREEN, color)}:{m['column']}"
        lines.append(f"{where}: {m['text']}")
    noun = "match" if result["total"] == 1 else "matches"
    lines.append(
        f"{len(result['matches'])} of {result['total']} {noun} · "
        f"snapshot {short(result['snapshot_revision'])}"
    )
    return "\n".join(lines)


def skipped_note(result: dict[str, Any]) -> str:
    skipped = result.get("skipped") or []
    return "".join(f"skipped {s['path']}:{s['line']}: {s['reason']}\n" for s in skipped)


class ProgressBar:
    """Shown on stderr once work has taken longer than `delay` seconds, if stderr is a TTY."""

    def __init__(self, stream: IO[str] | None = None, delay: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
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
        self.stream.write(f"\r{stage:>8} {bar} {done}/{total}")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False
