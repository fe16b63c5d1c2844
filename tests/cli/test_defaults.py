"""Every front's defaults (a stranger's repository) and `--strict` (okf's contract exactly),
through the command line: a repository with one unparsable file still answers by default and
names it once; `--strict` fails it with parse_error (exit 5); an explicit limit wins."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.engine.base.limits import Limits, front_settings
from citeline.engine.contracts import validate

# A small site's docs as a stranger's repository holds them: Hugo's archetype with Go-template
# front matter, which YAML rejects (`{{ .Date }}` is a flow mapping with a bad key).
FILES = {
    "README.md": "# Site\n\nHow to build and deploy the site.\n",
    "docs/deploy.md": "---\ntitle: Deploying\n---\n# Deploy to GitHub Pages\n\nPush the "
    "public folder to the gh-pages branch; GitHub Pages serves it.\n",
    "docs/config.md": "# Configuration\n\nThe config file sets the base URL.\n",
    "archetypes/default.md": '---\ntitle: "{{ replace .Name "-" " " | title }}"\n'
    "date: {{ .Date }}\ndraft: true\n---\n\nBody.\n",
}
QUESTION = "how do I deploy my site to GitHub Pages"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env={"NO_COLOR": "1", "CITELINE_DAEMON": "0"})


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return write(tmp_path / "site", FILES)


def test_default_answers_a_question_and_lists_the_unparsable_file(repo: Path) -> None:
    out = run("search", str(repo), "--query", QUESTION, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    validate("search.result", result)
    assert result["options"]["profile"] == "recall"
    assert result["hits"][0]["path"] == "docs/deploy.md"
    assert [s["path"] for s in result["skipped"]] == ["archetypes/default.md"]
    assert result["skipped"][0]["line"] >= 1 and result["skipped"][0]["reason"]
    assert "strict" not in result


def test_strict_fails_the_repository_with_parse_error(repo: Path) -> None:
    out = run("search", str(repo), "--query", QUESTION, "--json", "--strict")
    assert out.returncode == 5, out.stdout
    assert json.loads(out.stdout)["error"]["code"] == "parse_error"


def test_strict_is_the_contract_and_echoed(repo: Path) -> None:
    (repo / "archetypes" / "default.md").unlink()
    out = run("search", str(repo), "--query", "GitHub Pages", "--json", "--strict")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    validate("search.result", result)
    assert result["strict"] is True
    assert "options" not in result and "skipped" not in result
    # under strict every word must occur: the question finds nothing
    out = run("search", str(repo), "--query", QUESTION, "--json", "--strict")
    assert out.returncode == 1 and json.loads(out.stdout)["total"] == 0


def test_explicit_option_wins_over_strict(repo: Path) -> None:
    (repo / "archetypes" / "default.md").unlink()
    out = run("search", str(repo), "-q", QUESTION, "--json", "--strict", "--profile", "recall")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["strict"] is True and result["options"]["profile"] == "recall"
    out = run("search", str(repo), "-q", "pages", "--json", "--strict", "--max-files", "2")
    assert out.returncode == 3 and json.loads(out.stdout)["error"]["details"]["max"] == 2


def test_stderr_names_the_skipped_files_once(repo: Path) -> None:
    out = run("search", str(repo), "--query", QUESTION)
    assert out.returncode == 0, out.stderr
    lines = [x for x in out.stderr.splitlines() if "skipped" in x]
    assert len(lines) == 1 and "archetypes/default.md" in lines[0], out.stderr


def test_concepts_skip_by_default_and_fail_under_strict(repo: Path) -> None:
    out = run("concepts", str(repo), "-q", "deploy", "--json")
    assert out.returncode == 0, out.stderr
    assert [s["path"] for s in json.loads(out.stdout)["skipped"]] == ["archetypes/default.md"]
    out = run("concepts", str(repo), "-q", "deploy", "--json", "--strict")
    assert out.returncode == 5


def test_front_settings_one_place() -> None:
    default, strict = front_settings(False), front_settings(True)
    assert default.limits == Limits.editor() and default.skip_invalid
    assert strict.limits == Limits() and not strict.skip_invalid
    assert front_settings(True, limits={"max_files": 20_000}).limits.max_files == 20_000
    assert front_settings(True, skip_invalid=True).skip_invalid
