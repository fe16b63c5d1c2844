"""The worked example in docs/contract.md is what citeline really prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "contract.md"


def test_worked_example_matches_real_output(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    source = re.search(r"```markdown\n(.*?)\n```", text, re.S)
    shown = re.search(r"```json\n(\{.*?\})\n```", text, re.S)
    assert source and shown, "docs/contract.md lost its worked example"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "hashing.md").write_text(source.group(1) + "\n", encoding="utf-8")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "citeline.cli.cli",
            "search",
            "notes",
            "--query",
            "ordered hashtable",
            "--json",
            "--strict",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(shown.group(1))
