"""`-g/--glob` (ripgrep's habit): which files of the bundle are captured, on search, lines and
concepts; excluded files are not captured at all, and the result says which globs applied."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.engine import Call, Engine, Settings
from citeline.engine.contracts import validate

FILES = {
    "guide.md": "---\ntitle: Deploy guide\n---\n# Deploying\n\nDeploy the site to pages.\n",
    "old/guide.md": "# Deploying (old edition)\n\nDeploy the site to pages, old way.\n",
    "old/deep/more.md": "# Deploy more\n\nDeploy again.\n",
    "draft-plan.md": "# Draft\n\nDeploy plan draft.\n",
    "notes/deploy.markdown": "# Notes\n\nDeploy notes.\n",
}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cwd=cwd, env={"NO_COLOR": "1"})


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "b", FILES)


def _json(*args: str) -> dict:
    out = run(*args, "--json")
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def _paths(result: dict) -> set[str]:
    items = result.get("hits") or result.get("matches") or result.get("concepts") or []
    return {item["path"] for item in items}


def test_exclude_a_folder_from_search_lines_concepts(bundle: Path) -> None:
    every = _json("search", str(bundle), "--query", "deploy", "--profile", "recall")
    assert "old/guide.md" in _paths(every)
    assert "globs" not in every  # nothing given: nothing echoed, as before
    res = _json("search", str(bundle), "--query", "deploy", "--profile", "recall", "-g", "!old/**")
    assert _paths(res) == {"guide.md", "draft-plan.md", "notes/deploy.markdown"}
    assert res["globs"] == ["!old/**"]
    assert res["snapshot_revision"] != every["snapshot_revision"]  # of what was captured
    validate("search.result", res)
    lines = _json("lines", str(bundle), "-F", "Deploy", "--glob", "!old/**")
    assert _paths(lines) == {"guide.md", "draft-plan.md", "notes/deploy.markdown"}
    assert lines["globs"] == ["!old/**"]
    assert lines["snapshot_revision"] == res["snapshot_revision"]
    validate("lines.result", lines)
    concepts = _json("concepts", str(bundle), "--query", "guide", "-g", "!old/**")
    assert _paths(concepts) == {"guide.md"}
    validate("concepts.result", concepts)


def test_later_globs_win_and_include_only(bundle: Path) -> None:
    res = _json("lines", str(bundle), "-F", "Deploy", "-g", "*.md", "-g", "!draft*")
    assert _paths(res) == {"guide.md", "old/guide.md", "old/deep/more.md"}
    assert res["globs"] == ["*.md", "!draft*"]
    # ripgrep: the last matching glob decides, so a later include wins over an earlier exclude
    res = _json(
        "lines", str(bundle), "-F", "Deploy", "-g", "*.md", "-g", "!old/**", "-g", "old/deep/*"
    )
    assert _paths(res) == {"guide.md", "draft-plan.md", "old/deep/more.md"}
    # any including glob: only the files one of them matches
    res = _json("lines", str(bundle), "-F", "Deploy", "-g", "!old/**", "-g", "old/deep/*")
    assert _paths(res) == {"old/deep/more.md"}
    only = _json("lines", str(bundle), "-F", "Deploy", "-g", "notes/**")
    assert _paths(only) == {"notes/deploy.markdown"}
    braces = _json("lines", str(bundle), "-F", "Deploy", "-g", "{notes,old}/*.{markdown,md}")
    assert _paths(braces) == {"notes/deploy.markdown", "old/guide.md"}


def test_human_output_leaves_excluded_files_out(bundle: Path) -> None:
    out = run(
        "search",
        "b",
        "--query",
        "deploy",
        "--profile",
        "recall",
        "-g",
        "!old/**",
        cwd=bundle.parent,
    )
    assert out.returncode == 0, out.stderr
    assert "old/" not in out.stdout
    assert "guide.md" in out.stdout


def test_excluding_the_only_match_is_no_hit_not_an_error(bundle: Path) -> None:
    out = run("lines", str(bundle), "-F", "old way", "--json", "-g", "!old/guide.md")
    assert out.returncode == 1, out.stderr
    res = json.loads(out.stdout)
    assert res["matches"] == [] and res["total"] == 0


@pytest.mark.parametrize("glob", ["[abc", "!", "", "a{b", "a}b"])
def test_bad_globs_are_schema_validation(bundle: Path, glob: str) -> None:
    out = run("lines", str(bundle), "-F", "x", "--json", "-g", glob)
    assert out.returncode == 2, (out.stdout, out.stderr)
    err = json.loads(out.stdout)["error"]
    assert err["code"] == "schema_validation"
    assert "glob" in err["message"]
    validate("error", json.loads(out.stdout))


def test_excluded_folder_is_not_walked(bundle: Path) -> None:
    """`!old/**` with nothing including after it: old/ is never listed, so a file name there
    that fails any walk (not UTF-8) does not fail the request; with an including glob after
    it, old/ must be walked, and it does."""
    import os

    with open(os.path.join(os.fsencode(bundle / "old"), b"bad\xff.md"), "wb") as f:
        f.write(b"Deploy\n")
    excluded = Settings(globs=("!old/**",))
    res = Engine(excluded).lines(Call(bundle, excluded), {"pattern": "Deploy"})
    assert _paths(res) == {"guide.md", "draft-plan.md", "notes/deploy.markdown"}
    from citeline.engine import CitelineError

    included = Settings(globs=("!old/**", "old/*.md"))
    with pytest.raises(CitelineError) as err:
        Engine(included).lines(Call(bundle, included), {"pattern": "Deploy"})
    assert err.value.code == "bundle_invalid"


def test_excluded_files_do_not_count_in_limits(bundle: Path) -> None:
    from citeline.engine import Limits

    few = Settings(limits=Limits(max_files=3), globs=("!old/**",))
    res = Engine(few).lines(Call(bundle, few), {"pattern": "Deploy"})
    assert _paths(res) == {"guide.md", "draft-plan.md", "notes/deploy.markdown"}


@pytest.mark.parametrize("journal", [False, True])
def test_a_long_lived_engine_applies_each_calls_globs(bundle: Path, journal: bool) -> None:
    """The same engine (stat index, journal) under changing glob lists: each answer is the
    one a fresh engine gives."""
    from dataclasses import replace

    engine = Engine(Settings(), journal=journal)
    for globs in [(), ("!old/**",), (), ("*.markdown",), ("!old/**",)]:
        settings = replace(Settings(), globs=globs)
        warm = engine.lines(engine.call(bundle, settings=settings), {"pattern": "Deploy"})
        cold = Engine(settings, cache=False).lines(Call(bundle, settings), {"pattern": "Deploy"})
        assert warm == cold, globs
        (bundle / "old" / f"new{len(globs)}.md").write_text("# New\n\nDeploy new.\n")
        (bundle / "notes" / f"n{len(globs)}.markdown").write_text("Deploy n.\n")
