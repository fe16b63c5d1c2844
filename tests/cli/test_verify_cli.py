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


def test_warm_process_answers_verify_from_a_file(tmp_path: Path) -> None:
    from test_daemon import Warm, same

    runtime = tmp_path / "run"
    runtime.mkdir()
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env |= {"CITELINE_CACHE_DIR": str(tmp_path / "cache"), "XDG_RUNTIME_DIR": str(runtime)}
    env["NO_COLOR"] = "1"
    warm = Warm(env, runtime)
    docs = write(tmp_path / "docs", {"a.md": DOC})
    try:
        hits = warm.start("search", str(docs), "-q", "installer", "--json")
        (tmp_path / "hits.json").write_bytes(hits.out)
        (docs / "a.md").write_text("x\n" + DOC)
        args = ("verify", str(docs), "--from", str(tmp_path / "hits.json"))
        got = warm.call(*args)
        assert got.warm, got.err
        assert (got.code, got.out) == (1, "moved  a.md:4-5 → a.md:5-6\n".encode())
        same(got, warm.here(*args))
        piped = warm.call("verify", str(docs), "--json")  # standard input: its own process
        assert not piped.warm
    finally:
        sock = warm.socket()
        if sock.exists():
            sock.unlink()
            warm.wait_gone()
