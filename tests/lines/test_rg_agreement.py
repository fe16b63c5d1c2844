"""Line search agrees with ripgrep on the real corpora (read in place, never copied).

For each pattern the set of (path, line) pairs citeline reports equals the set ripgrep
prints over the same files. Patterns are chosen to mean the same in RE2 and in ripgrep's
Rust regex dialect: ASCII classes are spelled out (`[0-9]`, `[ \\t]`) because `\\d`, `\\w`,
`\\s` and `\\b` are Unicode-aware in ripgrep but ASCII in RE2.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from needs import corpus, tool

from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.contracts import validate

LIMIT = 1000

pytestmark = pytest.mark.corpus

# (mode, pattern, case_sensitive)
Case = tuple[str, str, bool]

APISIX: list[Case] = [
    ("exact", "上游", True),
    ("exact", "插件配置", True),
    ("exact", "健康检查", True),
    ("exact", "Admin API", True),
    ("exact", "etcd", True),
    ("exact", "X-API-KEY", False),
    ("exact", "consumer", False),
    ("exact", "prometheus", False),
    ("exact", "插件", True),  # over 1,000 lines: totals and the first 1,000 compared
    ("exact", "apisix", False),  # over 1,000 lines
    ("regex", r"curl .*-X (PUT|POST)", True),
    ("regex", r"插件.*配置", True),
    ("regex", r'"[a-z_]+": ?(true|false)', True),
    ("regex", r'^ *"?uri"?: ?"/', False),
    ("regex", r"apisix-[a-z]+", False),
    ("regex", r"\p{Han}{20,}", True),
    ("regex", r"^ *- \[[a-z]", False),
    ("regex", r"[（(][^)）]*[)）]$", True),
    ("regex", r"^#{2,3} ", True),  # over 1,000 lines
    ("regex", r"[0-9]+\.[0-9]+\.[0-9]+", True),  # over 1,000 lines
]

POWERSHELL: list[Case] = [
    ("exact", "Get-Process", True),
    ("exact", "get-childitem", False),
    ("exact", "$PSItem", True),
    ("exact", "-ErrorAction Stop", True),
    ("exact", "[switch]", False),
    ("exact", "ms.date:", True),
    ("exact", "PIPELINE INPUT", False),
    ("exact", "Windows PowerShell", True),  # over 1,000 lines
    ("exact", "中文", True),  # CJK that does not occur: both find nothing
    ("regex", r"Get-[A-Z][a-z]+Item", True),
    ("regex", r"^ms\.date: [0-9]{2}/[0-9]{2}/[0-9]{4}", True),
    ("regex", r"Set-[A-Z][a-z]+ -[A-Z]", True),
    ("regex", r"^ *-?(true|false)$", False),
    ("regex", r"^[ \t]*PS> ", True),
    ("regex", r"(?i)\[switch\]", True),
    ("regex", r"about_[a-z]+_[a-z]+", False),  # over 1,000 lines
    ("regex", r"\$[A-Za-z]+ = ", True),  # over 1,000 lines
    ("regex", r"[\x{4e00}-\x{9fff}]", True),
]

CORPUS_CASES = [("apisix-zh", c) for c in APISIX] + [("powershell-docs", c) for c in POWERSHELL]


def rg_command(rg: str, pattern: str, mode: str, case_sensitive: bool) -> list[str]:
    cmd = [
        rg,
        "--no-config",
        "--line-number",
        "--no-heading",
        "--with-filename",
        "--no-ignore",
        "--hidden",
        "--null",
        "--color=never",
        "-g",
        "*.md",
        "-g",
        "!/index.md",  # reserved navigation files at the root are never searched
        "-g",
        "!/log.md",
    ]
    if mode == "exact":
        cmd.append("--fixed-strings")
    cmd.append("--case-sensitive" if case_sensitive else "--ignore-case")
    return [*cmd, "-e", pattern]


def rg_lines(
    rg: str, root: Path, pattern: str, mode: str, case_sensitive: bool
) -> list[tuple[str, int]]:
    cmd = rg_command(rg, pattern, mode, case_sensitive)
    out = subprocess.run(cmd, cwd=root, capture_output=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr.decode("utf-8", "replace")
    found = []
    for record in out.stdout.decode("utf-8").splitlines():
        path, _, rest = record.partition("\0")
        found.append((path.removeprefix("./"), int(rest.split(":", 1)[0])))
    return sorted(found)


def citeline_lines(root: Path, pattern: str, mode: str, case_sensitive: bool) -> dict[str, Any]:
    result = Engine(reread=True, hold_bytes=0).lines(
        Call(root, Settings()),
        {"pattern": pattern, "mode": mode, "case_sensitive": case_sensitive, "limit": LIMIT},
    )
    validate("lines.result", result)
    return result


@pytest.mark.parametrize(
    ("corpus_name", "case"),
    CORPUS_CASES,
    ids=[f"{n}:{c[0]}:{c[1]}:{c[2]}" for n, c in CORPUS_CASES],
)
def test_agrees_with_ripgrep(corpus_name: str, case: Case) -> None:
    rg = tool("rg")  # first: a missing rg must fail under CITELINE_REQUIRE_TOOLS, never skip
    root = corpus(corpus_name)
    mode, pattern, case_sensitive = case
    expected = rg_lines(rg, root, pattern, mode, case_sensitive)
    assert expected or pattern == "中文", "the comparison must compare something"
    result = citeline_lines(root, pattern, mode, case_sensitive)
    got = [(m["path"], m["line"]) for m in result["matches"]]
    assert got == sorted(got), "matches are in path order, then line order"
    assert result["total"] == len(expected)
    assert result["truncated"] == (len(expected) > LIMIT)
    assert got == expected[:LIMIT]
    # The reported column is where the match starts in the line, in code points.
    if mode == "exact" and case_sensitive:
        for m in result["matches"][:50]:
            line = (root / m["path"]).read_text(encoding="utf-8-sig").split("\n")[m["line"] - 1]
            assert line.find(pattern) == m["column"] - 1


def test_pattern_sets_are_large_enough() -> None:
    for cases in (APISIX, POWERSHELL):
        assert sum(mode == "exact" for mode, _, _ in cases) >= 8
        assert sum(mode == "regex" for mode, _, _ in cases) >= 8
        assert any(not cs for _, _, cs in cases)
    cjk = [p for _, p, _ in APISIX + POWERSHELL if any("\u4e00" <= ch <= "\u9fff" for ch in p)]
    assert len(cjk) >= 4


def test_default_settings_suffice_for_line_search() -> None:
    """powershell-docs: invalid YAML front matter and more tokens than the default limit
    block a section search, not a line search (it indexes no tokens, parses no YAML)."""
    root = corpus("powershell-docs")
    with pytest.raises(CitelineError) as info:
        Engine(reread=True, hold_bytes=0).search(Call(root, Settings()), {"query": "ForEach"})
    assert info.value.code == "parse_error"
    result = citeline_lines(root, "title: ForEach-Object", "exact", True)
    assert ("reference/7.6/Microsoft.PowerShell.Core/ForEach-Object.md", 11) in [
        (m["path"], m["line"]) for m in result["matches"]
    ]
