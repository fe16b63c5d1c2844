"""End-to-end: citeline.el (editors/emacs) with a real Eglot session against `citeline lsp`.

Runs the ERT suite of editors/emacs/test/citeline-test.el in batch mode on the
fixture workspace (a git repository, so project.el finds the root). The unit
tests run without a server; the e2e tests print their observations as
`CITELINE-RESULT <name> <json>` lines, checked here against the fixture.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from editor_fixtures import REPO, cli_search, editor_or_skip, expected_column

pytestmark = pytest.mark.editor

PACKAGE = REPO / "editors" / "emacs"


def run_ert(env: dict[str, str], selector: str = "t") -> tuple[str, dict]:
    """Run the ERT tests chosen by `selector` (an ERT selector, as Lisp)."""
    emacs = editor_or_skip("emacs")
    cmd = [
        "timeout",
        "120",
        emacs,
        "--batch",
        "-L",
        str(PACKAGE),
        "-l",
        str(PACKAGE / "test" / "citeline-test.el"),
        "--eval",
        f"(ert-run-tests-batch-and-exit '{selector})",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env["CITELINE_WS"])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"emacs failed ({proc.returncode}):\n{output}"
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("CITELINE-RESULT "):
            _, name, payload = line.split(" ", 2)
            results[name] = json.loads(payload)
    return output, results


def test_ert_suite_against_real_server(workspace, editor_env):
    output, results = run_ert(editor_env, '(not "citeline-e2e-unsaved-text")')
    assert "0 unexpected" in output
    assert "skipped" not in output.split("Ran ", 1)[1], output  # e2e tests really ran
    assert "[eglot] Connected! Server `citeline'" in output

    # citeline-search: the hits in server order, same as the CLI's.
    cli = cli_search(workspace, "ordered hashtable", "recall")
    rows = results["search"]["rows"]
    assert [(r[0], r[1]) for r in rows] == [(h["path"], h["line_start"]) for h in cli["hits"]]
    assert rows[0] == [
        "notes/hashing.md",
        1,
        "notes/hashing.md",
        "Ordered hashtable — An ordered hashtable keeps insertion order while hashing keys."
        "  (L1-L4)",
    ]
    assert results["search"]["revision"] == cli["snapshot_revision"]

    # citeline-lines: 0-based character columns in the xref locations.
    expected = []
    for rel, line in [("notes/hashing.md", 1), ("notes/hashing.md", 3), ("notes/unicode.md", 3)]:
        cp, _byte = expected_column(workspace, rel, line, "hashtable")
        expected.append([rel, line, cp - 1])
    assert [r[:3] for r in results["lines"]] == expected
    assert results["grep"] == [["guide.md", 8], ["notes/hashing.md", 5], ["notes/unicode.md", 1]]
    assert results["concepts"] == ["guide — User Guide"]
    assert "not a valid RE2 regular expression" in results["error"]

    # workspace/symbol (xref-find-apropos and raw) and documentSymbol (imenu).
    assert results["apropos"] == [["notes/hashing.md", 5]]
    assert results["symbols"] == [
        ["Installation", "guide.md", 3, 7],
        ["Configuration", "guide.md", 7, 11],
        ["Troubleshooting", "guide.md", 11, 14],
        ["Ordered hashtable", "notes/hashing.md", 0, 4],
        ["Collisions", "notes/hashing.md", 4, 7],
        ["Café notes", "notes/unicode.md", 0, 3],
    ]
    assert [(o[0], o[2]) for o in results["outline"]] == [
        ("Installation", 4),
        ("Configuration", 8),
        ("Troubleshooting", 12),
    ]
    assert results["settings"] == [2, 1]


def test_unsaved_text_is_searched_and_marked(workspace, editor_env):
    # citeline-unsaved: the word typed into guide.md (not saved) is found and marked.
    _, results = run_ert(editor_env, '"citeline-e2e-unsaved-text"')
    unsaved = results["unsaved"]
    if unsaved["unsupported"]:
        pytest.skip("this server does not accept the `unsaved` setting yet (SPEC §11)")
    assert len(unsaved["search"]) == 1
    assert unsaved["search"][0].startswith("[unsaved] Troubleshooting — ")
    # Line matches carry no flag (SPEC §8); the line typed but not saved is found.
    assert [t.removeprefix("[unsaved] ") for t in unsaved["lines"]] == [
        "The zebrafish setting is new."
    ]
    assert unsaved["lines_at"] == [["guide.md", 16, 4]]
    assert (workspace / "guide.md").read_text("utf-8").count("zebrafish") == 0


def test_package_byte_compiles_cleanly(tmp_path, editor_env):
    emacs = editor_or_skip("emacs")
    src = PACKAGE / "citeline.el"
    copy = tmp_path / "citeline.el"
    copy.write_bytes(src.read_bytes())
    proc = subprocess.run(
        [
            "timeout",
            "120",
            emacs,
            "--batch",
            "--eval",
            "(setq byte-compile-error-on-warn t)",
            "-f",
            "batch-byte-compile",
            str(copy),
        ],
        env=editor_env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "citeline.elc").exists()
