"""The worked example of docs/agents.md is what `citeline verify` really prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def citeline(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citeline", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "CITELINE_DAEMON": "0", "NO_COLOR": "1"},
        timeout=120,
    )


def test_agents_worked_example(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    example = text[text.index("## A worked example") :]
    source = re.search(r"```markdown\n(.*?)\n```", example, re.S)
    shown = re.findall(r"```text\n(.*?)\n```", example, re.S)
    assert source and len(shown) == 3, "docs/agents.md lost its worked example"
    notes = tmp_path / "notes"
    notes.mkdir()
    page = notes / "limits.md"
    page.write_text(source.group(1) + "\n", encoding="utf-8")
    hits = citeline("search", "notes", "-q", "response size", "--json", cwd=tmp_path)
    assert hits.returncode == 0, hits.stderr
    outputs = []
    done = citeline("verify", "notes", cwd=tmp_path, stdin=hits.stdout)
    outputs.append((done.returncode, done.stdout))
    body = page.read_text()
    body = body.replace("afresh.\n", "afresh.\nNothing is kept but what a stat proves unchanged.\n")
    page.write_text(body)
    done = citeline("verify", "notes", cwd=tmp_path, stdin=hits.stdout)
    outputs.append((done.returncode, done.stdout))
    page.write_text(body.replace("fewer hits", "fewer results"))
    done = citeline("verify", "notes", cwd=tmp_path, stdin=hits.stdout)
    outputs.append((done.returncode, done.stdout))
    assert outputs == [(0, shown[0] + "\n"), (1, shown[1] + "\n"), (1, shown[2] + "\n")]
