"""The size rule docs/architecture.md promises: no module or class larger than it allows
unless docs/architecture.md says why (issue 29). The import rules (layers, no front imported
by the engine, no circle) are import-linter's contracts: tests/contracts/test_import_contracts.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {
    "engine": "citeline.engine",
    "lsp": "citeline.lsp",
    "cli": "citeline.cli",
    "mcp_server": "citeline.mcp_server",
    "fronts": "citeline.fronts",
}
MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 250
# Larger than the rule, each with its sentence in docs/architecture.md ("## Sizes"), and the
# lines it may reach: a ratchet (issue 50: at most four, none may grow; lower a ceiling when
# its unit shrinks, drop the entry when the unit is back within the rule).
LARGER = {
    "engine/core.py": 602,
    "engine/core.py:Engine": 536,
    "engine/capture/ignore.py": 479,
    "cli/cli.py": 1237,
}
MAX_LARGER = 4


def test_modules_and_classes_keep_the_size_rule_or_say_why() -> None:
    larger: dict[str, int] = {}
    for folder in PACKAGES:
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            text = path.read_text(encoding="utf-8")
            if text.count("\n") > MAX_MODULE_LINES:
                larger[rel] = text.count("\n")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    assert node.end_lineno is not None
                    if node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                        larger[f"{rel}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert len(LARGER) <= MAX_LARGER
    # A new one needs its reason (and one of the four places); one back within the rule leaves.
    assert set(larger) == set(LARGER), larger
    grown = {unit: (lines, LARGER[unit]) for unit, lines in larger.items() if lines > LARGER[unit]}
    assert not grown, f"larger than their ceilings (lines, ceiling): {grown}"
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    sizes = doc.split("## Sizes", 1)[1].split("\n## ", 1)[0]
    for item in LARGER:
        shown = item.replace(":", "`'s `") if ":" in item else item
        assert f"`{shown}`" in sizes, f"docs/architecture.md does not say why {item} is larger"
