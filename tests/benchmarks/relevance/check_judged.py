"""Validate the judged relevance query sets (judged_*.json, SPECS below).

Checks structure, counts, dev/held-out split sizes, unique ids, and that every
answer points at a real Markdown heading line (outside front matter, code
fences and HTML comments) whose text equals the recorded ``heading``, and, when the
answer records a ``line_end``, that it is the section's last line (the line before the
next heading, or the file's last line).

Usage: python3 tests/benchmarks/relevance/check_judged.py
Exit status 0 when everything passes, 1 otherwise.  Stdlib only.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locate import bundle_path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SetSpec:
    """Expected shape of one judged set."""

    filename: str
    id_prefix: str
    total: int
    dev: int
    heldout: int


SPECS: tuple[SetSpec, ...] = (
    SetSpec("judged_en.json", "en", 50, 40, 10),
    SetSpec("judged_zh.json", "zh", 20, 15, 5),
    SetSpec("judged_tldr.json", "tldr", 30, 22, 8),
    # Written after the ranking was tuned, and never tuned on: every query is held out.
    SetSpec("judged_ref.json", "ref", 25, 0, 25),
    SetSpec("judged_cmd.json", "cmd", 24, 0, 24),
    # Issue 52's sets over corpora of kinds not used before (a framework's docs with link
    # lists and code, a "today I learned" repository, docs in English, Chinese, Japanese and
    # Korean), written and committed before any ranking ran on them.
    SetSpec("judged_nuxt.json", "nuxt", 37, 13, 24),
    SetSpec("judged_til.json", "til", 45, 15, 30),
    SetSpec("judged_fastapi.json", "fastapi", 38, 14, 24),
)

SPLITS = frozenset({"dev", "heldout"})
MAX_ANSWERS = 3
FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
ID_RE = re.compile(r"^(?P<prefix>[a-z]+)-(?P<num>\d{3})$")


def read_lines(path: Path) -> list[str]:
    """Return the file's lines without line terminators (BOM removed)."""
    text = path.read_text(encoding="utf-8-sig")
    return text.split("\n")


def _content_lines(path: Path) -> list[str]:
    """The file's lines as SPEC §3 counts them: a final LF ends the last line."""
    lines = read_lines(path)
    return lines[:-1] if lines and lines[-1] == "" else lines


def front_matter_end(lines: list[str]) -> int:
    """Return the 0-based index of the first line after front matter."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for idx in range(1, len(lines)):
        if lines[idx].rstrip() in ("---", "..."):
            return idx + 1
    return 0


def heading_text(line: str) -> str | None:
    """Return the ATX heading text of ``line`` or None if it isn't one."""
    match = HEADING_RE.match(line)
    if match is None:
        return None
    text = match.group(2) or ""
    return CLOSING_HASHES_RE.sub("", text).strip()


def real_headings(lines: list[str]) -> dict[int, str]:
    """Map 1-based line numbers to heading text for real headings."""
    found: dict[int, str] = {}
    fence: str | None = None
    in_comment = False
    for idx in range(front_matter_end(lines), len(lines)):
        line = lines[idx]
        if fence is not None:
            close = FENCE_RE.match(line)
            if (
                close is not None
                and close.group(1)[0] == fence[0]
                and len(close.group(1)) >= len(fence)
                and not close.group(2).strip()
            ):
                fence = None
            continue
        if in_comment:
            if "-->" in line:
                in_comment = line.rfind("<!--") > line.rfind("-->")
            continue
        opener = FENCE_RE.match(line)
        if opener is not None and not (opener.group(1)[0] == "`" and "`" in opener.group(2)):
            fence = opener.group(1)
            continue
        text = heading_text(line)
        if text is not None:
            found[idx + 1] = text
        if "<!--" in line and line.rfind("<!--") > line.rfind("-->"):
            in_comment = True
    return found


class Checker:
    """Collects validation errors for the judged sets."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self._heading_cache: dict[Path, dict[int, str]] = {}

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def headings_of(self, path: Path) -> dict[int, str]:
        if path not in self._heading_cache:
            self._heading_cache[path] = real_headings(read_lines(path))
        return self._heading_cache[path]

    def check_answer(self, where: str, bundle: Path, answer: Any) -> None:
        if not isinstance(answer, dict) or not (
            {"path", "line_start", "heading"}
            <= set(answer)
            <= {"path", "line_start", "line_end", "heading"}
        ):
            self.error(
                where, f"answer must have path, line_start, heading (and line_end): {answer!r}"
            )
            return
        rel, line_start, heading = (
            answer["path"],
            answer["line_start"],
            answer["heading"],
        )
        if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
            self.error(where, f"path must be relative with '/' separators: {rel!r}")
            return
        if not isinstance(line_start, int) or isinstance(line_start, bool) or line_start < 1:
            self.error(where, f"line_start must be a positive int: {line_start!r}")
            return
        if not isinstance(heading, str) or not heading:
            self.error(where, f"heading must be a non-empty string: {heading!r}")
            return
        path = (bundle / rel).resolve()
        if bundle.resolve() not in path.parents:
            self.error(where, f"path escapes the bundle: {rel}")
            return
        if not path.is_file():
            self.error(where, f"no such file: {rel}")
            return
        heads = self.headings_of(path)
        actual = heads.get(line_start)
        if actual is None:
            self.error(where, f"{rel}:{line_start} is not a real heading line")
        elif actual != heading:
            self.error(where, f"{rel}:{line_start} heading is {actual!r}, not {heading!r}")
        if "line_end" in answer:
            later = [n for n in heads if n > line_start]
            last = min(later) - 1 if later else len(_content_lines(path))
            if answer["line_end"] != last:
                end = answer["line_end"]
                self.error(where, f"{rel}:{line_start} section ends at {last}, not {end}")

    def check_query(
        self, spec: SetSpec, bundle: Path, index: int, query: Any, seen: set[str]
    ) -> str | None:
        where = f"{spec.filename}[{index}]"
        keys = {"id", "query", "answers", "split", "kind"}
        if not isinstance(query, dict) or set(query) != keys:
            self.error(where, f"query object must have exactly the keys {sorted(keys)}")
            return None
        qid = query["id"]
        match = ID_RE.match(qid) if isinstance(qid, str) else None
        if match is None or match.group("prefix") != spec.id_prefix:
            self.error(where, f"bad id {qid!r} (want '{spec.id_prefix}-NNN')")
        elif qid in seen:
            self.error(where, f"duplicate id {qid}")
        else:
            seen.add(qid)
            where = f"{spec.filename}:{qid}"
        text = query["query"]
        if not isinstance(text, str) or not text.strip():
            self.error(where, "query text must be a non-empty string")
        kind = query["kind"]
        if not isinstance(kind, str) or not kind.strip():
            self.error(where, "kind must be a non-empty string")
        split = query["split"]
        if split not in SPLITS:
            self.error(where, f"split must be one of {sorted(SPLITS)}: {split!r}")
        answers = query["answers"]
        if not isinstance(answers, list) or not 1 <= len(answers) <= MAX_ANSWERS:
            self.error(where, f"answers must be a list of 1..{MAX_ANSWERS} items")
            return split if split in SPLITS else None
        keys_seen: set[tuple[str, int]] = set()
        for answer in answers:
            if isinstance(answer, dict):
                key = (str(answer.get("path")), int(answer.get("line_start") or 0))
                if key in keys_seen:
                    self.error(where, f"duplicate answer {key}")
                keys_seen.add(key)
            self.check_answer(where, bundle, answer)
        return split if split in SPLITS else None

    def check_set(self, spec: SetSpec) -> None:
        file_path = HERE / spec.filename
        try:
            data = json.loads(file_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            self.error(spec.filename, f"cannot load: {exc}")
            return
        if not isinstance(data, dict) or set(data) != {"bundle", "queries"}:
            self.error(spec.filename, "top level must be {bundle, queries}")
            return
        bundle_rel = data["bundle"]
        if not isinstance(bundle_rel, str) or bundle_rel.startswith("/"):
            self.error(spec.filename, f"bundle must be repo-relative: {bundle_rel!r}")
            return
        bundle = bundle_path(bundle_rel)
        if not bundle.is_dir():
            self.error(spec.filename, f"bundle directory not found: {bundle}")
            return
        queries = data["queries"]
        if not isinstance(queries, list):
            self.error(spec.filename, "queries must be a list")
            return
        seen: set[str] = set()
        texts: set[str] = set()
        counts = {"dev": 0, "heldout": 0}
        for index, query in enumerate(queries):
            split = self.check_query(spec, bundle, index, query, seen)
            if split is not None:
                counts[split] += 1
            if isinstance(query, dict) and isinstance(query.get("query"), str):
                norm = " ".join(query["query"].lower().split())
                if norm in texts:
                    self.error(spec.filename, f"duplicate query text {norm!r}")
                texts.add(norm)
        if len(queries) != spec.total:
            self.error(spec.filename, f"{len(queries)} queries, want {spec.total}")
        if counts["dev"] != spec.dev or counts["heldout"] != spec.heldout:
            self.error(
                spec.filename,
                f"split dev/heldout = {counts['dev']}/{counts['heldout']},"
                f" want {spec.dev}/{spec.heldout}",
            )


def main() -> int:
    checker = Checker()
    for spec in SPECS:
        checker.check_set(spec)
    for message in checker.errors:
        print(f"ERROR {message}", file=sys.stderr)
    if checker.errors:
        print(f"{len(checker.errors)} error(s)", file=sys.stderr)
        return 1
    print("judged sets OK: " + ", ".join(f"{s.filename} ({s.total})" for s in SPECS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
