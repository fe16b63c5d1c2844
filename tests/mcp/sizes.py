"""What an agent reads from each MCP tool: bytes of the tool result as sent (text content +
structuredContent), with the text as the serialized JSON (the MCP specification's default)
and as citeline's compact rendering. Run by hand, not by pytest:

    python tests/mcp/sizes.py [CORPORA]   # default ../shared/corpora

Prints a Markdown table (the one in docs/mcp.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from citeline.engine import Engine, Limits, Settings
from citeline.engine.answer.present import encode
from citeline.mcp_server import server as mcp
from citeline.mcp_server.text import render_text
from citeline.mcp_server.tools import TOOL_BY_NAME

CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # (label, corpus folder, tool, arguments)
    (
        "search_sections, 20 hits",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_sections",
        {"query": "remote computer"},
    ),
    (
        "search_sections recall, 20 hits",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_sections",
        {"query": "how do I run a command on a remote computer", "profile": "recall"},
    ),
    (
        "search_sections, 5 hits",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_sections",
        {"query": "remote computer", "limit": 5},
    ),
    (
        "search_sections zh recall, 20 hits",
        "apisix-zh/docs",
        "search_sections",
        {"query": "限流插件配置", "profile": "recall"},
    ),
    (
        "search_sections, no hit",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_sections",
        {"query": "remote computer zeppelin"},
    ),
    (
        "search_lines defaults (100 matches, context 2)",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_lines",
        {"pattern": "Get-Process"},
    ),
    (
        "search_lines context 0",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_lines",
        {"pattern": "Get-Process", "context": 0},
    ),
    (
        "search_concepts, 20 concepts",
        "powershell-docs/docs/reference/docs-conceptual",
        "search_concepts",
        {"query": "remot"},
    ),
]


def wire_bytes(result: Any) -> int:
    """The CallToolResult as the server writes it (JSON, UTF-8)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def measure(corpora: Path) -> list[str]:
    settings = Settings(limits=Limits.editor(), skip_invalid=True)
    engine = Engine(settings)
    rows = [
        "| call | JSON text | compact text | structuredContent | result before | result after |",
        "|---|---|---|---|---|---|",
    ]
    for label, folder, tool, args in CASES:
        contract = TOOL_BY_NAME[tool].contract
        method = {"search": engine.search, "concepts": engine.concepts, "lines": engine.lines}
        data = method[contract](engine.call(corpora / folder), args)
        text = render_text(tool, data)
        old = mcp.types.CallToolResult(
            content=[mcp.types.TextContent(text=encode(data))], structured_content=data
        )
        new = mcp.success(tool, data)
        structured = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
        rows.append(
            f"| {label} | {len(encode(data).encode()):,} | {len(text.encode()):,} | "
            f"{structured:,} | {wire_bytes(old):,} | {wire_bytes(new):,} |"
        )
    return rows


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    print("\n".join(measure(root)))
