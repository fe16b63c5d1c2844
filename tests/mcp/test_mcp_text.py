"""lsp/mcp.py's text content, in process (SPEC §14): what an agent reads beside the
structured result — counts, the revision once, per hit enough to verify the citation,
grep-like lines. The SDK round trips are test_mcp.py and test_mcp_calls.py."""

from __future__ import annotations

from typing import Any

from citeline.lsp.mcp import render_text

REV = "f" * 64


def lines_result(matches: list[dict[str, Any]], total: int | None = None) -> dict[str, Any]:
    return {
        "pattern": "x",
        "mode": "exact",
        "matches": matches,
        "total": len(matches) if total is None else total,
        "truncated": total is not None and total > len(matches),
        "snapshot_revision": REV,
    }


def match(path: str, line: int, before: list[str], after: list[str]) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "column": 2,
        "text": f"x at {line}",
        "context": {"before": before, "after": after},
    }


def test_lines_text_groups_by_file_and_separates_gaps() -> None:
    result = lines_result(
        [
            match("a.md", 3, ["one", "two"], ["four"]),
            match("a.md", 5, ["four"], []),  # touches the first group: no separator
            match("a.md", 9, [], ["ten"]),
            match("b.md", 1, [], []),
        ],
        total=7,
    )
    assert render_text("search_lines", result).split("\n") == [
        f'4 of 7 matching lines (more with a higher limit) for exact "x"; snapshot_revision {REV}',
        "file: a.md",
        "1-one",
        "2-two",
        "3:2:x at 3",
        "4-four",
        "5:2:x at 5",
        "--",
        "9:2:x at 9",
        "10-ten",
        "file: b.md",
        "1:2:x at 1",
    ]


def test_counts_agree_in_number() -> None:
    one = render_text("search_lines", lines_result([match("a.md", 1, [], [])]))
    assert one.startswith('1 of 1 matching line for exact "x"; ')
    none = render_text("search_lines", lines_result([]))
    assert none == f'0 of 0 matching lines for exact "x"; snapshot_revision {REV}'
