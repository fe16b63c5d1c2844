"""`citeline verify` end to end: a real `search --json` piped into `verify` (SPEC §18)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bundles import write_bundle as write

from citeline.engine.contracts import validate

CITELINE = [sys.executable, "-m", "citeline"]
DOC = "# Guide\nIntro.\n\n## Install\nRun the installer with admin rights.\n"


def run(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env_off = {"CITELINE_DAEMON": "0", "NO_COLOR": "1"}
    import os

    return subprocess.run(
        [*CITELINE, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env_off},
        timeout=120,
    )


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "b", {"docs/a.md": DOC, "docs/z.md": "# Z\nother\n"})


def test_search_piped_into_verify(bundle: Path) -> None:
    found = run("search", "-q", "installer", "--json", cwd=bundle)
    assert found.returncode == 0, found.stderr
    done = run("verify", cwd=bundle, stdin=found.stdout)
    assert (done.returncode, done.stdout) == (0, "valid  docs/a.md:4-5\n")
    (bundle / "docs/a.md").write_text("new\nlines\n" + DOC)
    done = run("verify", "--json", cwd=bundle, stdin=found.stdout)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    validate("verify.result", result)
    assert [r["status"] for r in result["results"]] == ["moved"]
    human = run("verify", "--from", str(bundle.parent / "hits.json"), cwd=bundle)
    assert human.returncode == 2  # no such file: schema_validation
    (bundle.parent / "hits.json").write_text(found.stdout)
    human = run("verify", "--from", str(bundle.parent / "hits.json"), cwd=bundle)
    assert (human.returncode, human.stdout) == (1, "moved  docs/a.md:4-5 → docs/a.md:6-7\n")


def test_renamed_file_and_escaped_paths(bundle: Path) -> None:
    found = run("search", "-q", "installer", "--json", cwd=bundle)
    (bundle / "docs/a.md").rename(bundle / "docs/new\x1bname.md")
    done = run("verify", cwd=bundle, stdin=found.stdout)
    assert done.returncode == 1
    assert done.stdout == "moved  docs/a.md:4-5 → docs/new\\x1bname.md:4-5\n"


def test_lines_result_is_accepted_and_bad_input_is_schema_validation(bundle: Path) -> None:
    found = run("lines", "-F", "installer", "--json", cwd=bundle)
    done = run("verify", "--json", cwd=bundle, stdin=found.stdout)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["results"][0]["status"] == "valid"
    for bad in ("not json", "[1]", '{"citations": []}'):
        done = run("verify", "--json", cwd=bundle, stdin=bad)
        assert done.returncode == 2
        assert json.loads(done.stdout)["error"]["code"] == "schema_validation"
