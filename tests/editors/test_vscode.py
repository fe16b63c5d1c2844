"""End-to-end: the packaged VS Code extension (editors/vscode) inside a real VS Code.

code-server 4.100.3 (VS Code 1.100.3 in the browser) runs with the .vsix that `npm run
package` built installed and `citeline.server.command` pointing at this Python's citeline;
Debian's chromium, driven by Playwright, uses it as a person would: the command palette,
the Citeline results view, the pickers, the editor and its status bar (`Ln L, Col C`), the
notifications and the Problems view. What the window shows is checked against the fixture's
text and against the same search through the CLI.

scripts/test installs code-server (outside the clone), chromium and Playwright and packages
the extension; without them these tests skip, and fail under CITELINE_REQUIRE_EDITORS=1.
A failing step saves a screenshot into a temporary folder named in its message.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from editor_fixtures import FILES as EDITOR_FILES
from editor_fixtures import cli_search, lsp_command, require_editors
from vscode_driver import (
    CHROMIUM,
    STEP_TIMEOUT_MS,
    CodeServer,
    Failures,
    Window,
    browser_args,
    css_id,
    missing,
    screenshot_on_failure,
)

pytestmark = pytest.mark.editor

HEADING = "Limits and how to raise them"
CAFE_LINE = "Le café crème: raise the limit with max_files, a setting."
FILLER = "Filler text that the query does not mention, line {n}."
LIMITS = "\n".join(
    [
        f"# {HEADING}",
        "",
        "When a workspace is too large, a limit stops the search.",
        "",
        CAFE_LINE,
        "",
        # Longer than the window: opening the section must not scroll to its end.
        *(FILLER.format(n=n) for n in range(1, 81)),
        "",
        "## Other settings",
        "",
        "Each setting has a default of its own.",
        "",
    ]
)
# Search by meaning (SPEC §15): the Neovim and Emacs tests' guide.md, with its front matter
# (its title is part of each section's passage). "my server crashes when I run it" shares
# "server" and "run" with its sections and with testing.md; recall ranks Installation (and
# "a run" of testing.md) above Troubleshooting, which only the model finds to be the answer
# (the only section at or above the default threshold of 0.5). A handful of short sections:
# the server embeds them in a second or two.
SETUP = EDITOR_FILES["guide.md"]
SEMANTIC_QUERY = "my server crashes when I run it"
FILES: dict[str, str] = {
    "limits.md": LIMITS,
    "guide/setup.md": SETUP,
    # Holds "a" and "the" of "raise a limit" and nothing else of it: no hit (SPEC §13).
    "testing.md": "# Testing\n\nA test is a check of the thing, a story of a run.\n",
    "guide/intro.md": "# Introduction\n\nThe café opens at nine. Raise your hand.\n",
}
QUERY = "raise a limit"


@cache
def cli(workspace: Path, query: str) -> dict[str, Any]:
    """The same search through the CLI (recall, as the extension's default), once per query:
    the window must show the server's answer, and the server must agree with the CLI."""
    return cli_search(workspace, query)


def section_text(text: str, first: int, last: int) -> str:
    """Lines first..last (1-based) as the editor selects them (LF kept between them)."""
    return "\n".join(text.split("\n")[first - 1 : last])


def utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def write(root: Path, files: Mapping[str, str | bytes]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, "utf-8")
    return root


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def code_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeServer]:
    why = missing()
    if why is not None:
        if require_editors():
            pytest.fail(f"{why} and CITELINE_REQUIRE_EDITORS=1")
        pytest.skip(why)
    server = CodeServer(tmp_path_factory.mktemp("code-server"), lsp_command(), dict(os.environ))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(code_server: CodeServer) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=browser_args())
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def failures() -> Failures:
    return Failures()


def big_workspace(root: Path, pages: int = 1500) -> Path:
    """Enough pages for a first build that takes a while (its progress shows), and a file
    that cannot be parsed (invalid UTF-8)."""
    words = ("gateway", "route", "token", "index", "cache", "file", "folder", "server")
    files: dict[str, str | bytes] = {
        f"pages/p{i:04}.md": f"# Page {i}\n\n"
        + "\n\n".join(
            f"## Part {j}\n\n" + " ".join(words[(i * 7 + j + k) % len(words)] for k in range(60))
            for j in range(6)
        )
        + "\n"
        for i in range(pages)
    }
    files["broken.md"] = b"# Broken\n\nbad bytes: \xff\xfe here\n"
    return write(root, files)


class Windows:
    """The tests' VS Code windows, each a browser page on its own folder, loading side by
    side from the start: the main workspace; one whose settings name a server that does
    not exist; a large one with a broken file."""

    def __init__(self, browser: Any, code_server: CodeServer, root: Path) -> None:
        self.main_ws = write(root / "ws", FILES)
        self.missing_command = str(root / "no-such-dir" / "citeline")
        self.missing_ws = write(
            root / "missing",
            {
                "notes.md": "# Notes\n\nNothing to see.\n",
                ".vscode/settings.json": json.dumps(
                    {"citeline.server.command": self.missing_command}
                ),
            },
        )
        self.big_ws = big_workspace(root / "big")
        self.contexts: list[Any] = []
        self.main = self._load(browser, code_server, self.main_ws)
        self.missing = self._load(browser, code_server, self.missing_ws)
        self.big = self._load(browser, code_server, self.big_ws)

    def _load(self, browser: Any, code_server: CodeServer, folder: Path) -> Window:
        from playwright.sync_api import expect

        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(STEP_TIMEOUT_MS)
        self.contexts.append(context)
        window = Window(context.new_page(), expect)
        window.load(code_server.folder_url(folder))
        return window

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture(scope="module")
def windows(
    browser: Any, code_server: CodeServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Windows]:
    w = Windows(browser, code_server, tmp_path_factory.mktemp("vscode"))
    try:
        yield w
    finally:
        w.close()


@pytest.fixture(scope="module")
def main_ws(windows: Windows) -> Path:
    return windows.main_ws


@pytest.fixture(scope="module")
def main_window(windows: Windows, code_server: CodeServer, failures: Failures) -> Window:
    """The window on the main workspace, shared by the tests that read it."""
    w = windows.main
    with screenshot_on_failure(w.page, failures, "main-window-load", code_server.log_path):
        w.wait_ready()
    return w


@pytest.fixture
def step(request: pytest.FixtureRequest, failures: Failures, code_server: CodeServer) -> Any:
    """`with step(window):` runs a test's steps with a screenshot on failure."""

    def wrap(window: Window) -> Any:
        return screenshot_on_failure(window.page, failures, request.node.name, code_server.log_path)

    return wrap


def search_in_view(window: Window, query: str) -> None:
    """A section search into the results view; what the view shows after is its answer
    (the view is cleared first, so an earlier answer cannot pass for it)."""
    window.clear_results()
    window.run_command("citeline: Search Sections in Results View (Full Search)")
    window.answer_input("citeline: Search Sections (results view)", query)
    window.expect(window.results_message()).to_contain_text(f"“{query}”")


# --------------------------------------------------------------------------------- tests


def test_results_view_shows_the_servers_hits_with_their_words_highlighted(
    main_window: Window, main_ws: Path, step: Any
) -> None:
    expected = cli(main_ws, QUERY)
    hits = expected["hits"]
    assert [(h["path"], h["heading"]) for h in hits][:1] == [("limits.md", HEADING)]
    # The CLI agrees with SPEC §13: the section holding only "a" and "the" is no hit.
    assert "testing.md" not in {h["path"] for h in hits}
    with step(main_window):
        search_in_view(main_window, QUERY)
        w = main_window
        n = expected["total"]
        w.expect(w.results_message()).to_contain_text(
            f"“{QUERY}”: {n} section{'s' if n != 1 else ''}"
        )
        w.expect(w.results_message()).to_contain_text("ranked by the recall profile")
        rows = w.result_rows(1)
        w.expect(rows).to_have_count(len(hits))
        # path:lines first, then the heading; in the server's order
        labels = [w.row_label(rows.nth(i)) for i in range(len(hits))]
        assert labels == [
            f"{h['path']}:{h['line_start']}-{h['line_end']} — {h['heading']}" for h in hits
        ]
        assert w.row_highlights(rows.first) == ["Limits", "raise"]
        # The snippet lines under the hits: the matched words highlighted, never "a"; each
        # hit's lines arrive together, and the first hit's café line is its last.
        cafe = w.results.locator(".monaco-list-row[aria-level='2']", has_text="café crème")
        w.expect(cafe).to_be_visible()
        assert w.row_highlights(cafe) == ["raise", "limit"]  # not "the", not "a"
        lines = w.result_rows(2)
        shown = [w.row_highlights(lines.nth(i)) for i in range(lines.count())]
        flat = [word.lower() for words in shown for word in words]
        assert {"limits", "raise", "limit"} <= set(flat), shown
        assert "a" not in flat and "the" not in flat, shown


def test_opening_a_hit_puts_the_cursor_on_its_heading(
    main_window: Window, main_ws: Path, step: Any
) -> None:
    w = main_window
    hits = cli(main_ws, QUERY)["hits"]
    hit = hits[0]
    assert hit["heading"] == HEADING and hit["line_end"] > 80  # longer than the window
    selected = utf16(section_text(LIMITS, hit["line_start"], hit["line_end"]))
    with step(w):
        search_in_view(w, QUERY)
        w.result_rows(1).first.click()
        w.wait_editor("limits.md")
        # The section selected, the cursor on its heading (not at the section's end)
        w.wait_cursor(hit["line_start"], 1, selected)
        editor = w.page.locator(".editor-instance .monaco-editor").first
        w.expect(editor.locator(".view-line", has_text=HEADING)).to_be_visible()
        # Escape leaves the cursor where it is: on the heading, still in view
        w.page.keyboard.press("Escape")
        w.wait_cursor(hit["line_start"], 1)
        w.expect(editor.locator(".view-line", has_text=HEADING)).to_be_visible()
        # The matched words are decorated in the editor, one decoration per span of the
        # file's hits (all in view: the snippets are the section's first lines). The
        # extension's decoration type is the only one the editor draws here (occurrence
        # and selection highlights are off in the test's settings).
        spans = sum(len(h["match_spans"]) for h in hits if h["path"] == "limits.md")
        assert spans >= 5  # Limits, raise (heading); limit; raise, limit (the café line)
        decorated = editor.locator(".view-overlays .cdr[class*='ced-']")
        w.expect(decorated).to_have_count(spans)


def test_opening_a_snippet_line_puts_the_cursor_on_its_matched_word(
    main_window: Window, step: Any
) -> None:
    w = main_window
    line = LIMITS.split("\n").index(CAFE_LINE) + 1
    column = utf16(CAFE_LINE[: CAFE_LINE.index("raise")]) + 1
    with step(w):
        search_in_view(w, QUERY)
        w.results.locator(".monaco-list-row[aria-level='2']", has_text="café crème").click()
        w.wait_editor("limits.md")
        w.wait_cursor(line, column, len("raise"))


def test_quick_pick_keeps_the_servers_order_and_opens_on_the_heading(
    main_window: Window, main_ws: Path, step: Any
) -> None:
    w = main_window
    query = "raise limit"
    hits = cli(main_ws, query)["hits"]
    with step(w):
        w.run_command("citeline: Search Sections (Quick Pick)")
        w.wait_quick_input_title("^citeline: Search Sections")
        w.quick_input_box.fill(query)
        w.wait_quick_input_title(re.compile(rf"— {len(hits)} sections?"))
        rows = w.quick_rows()
        w.expect(rows).to_have_count(len(hits))
        got = [
            (
                w.pick_label(rows.nth(i)),
                str(rows.nth(i).locator(".label-description").inner_text()).strip(),
            )
            for i in range(len(hits))
        ]
        assert got == [
            (h["heading"], f"{h['path']}:{h['line_start']}-{h['line_end']}") for h in hits
        ]
        w.page.keyboard.press("Enter")
        w.expect(w.quick_input).to_be_hidden()
        first = hits[0]
        w.wait_editor(Path(first["path"]).name)
        text = (main_ws / first["path"]).read_text("utf-8")
        selected = utf16(section_text(text, first["line_start"], first["line_end"]))
        w.wait_cursor(first["line_start"], 1, selected)


def test_line_search_in_the_view_opens_at_the_match(
    main_window: Window, main_ws: Path, step: Any
) -> None:
    w = main_window
    expected = []
    for rel in sorted(FILES):
        for n, text in enumerate(FILES[rel].split("\n"), 1):
            if "café" in text:
                expected.append((rel, n, text.index("café") + 1))
    assert len(expected) == 2
    with step(w):
        w.clear_results()
        w.run_command("citeline: Search Lines in Results View")
        w.answer_input("citeline: Search Lines (results view) — exact", "café")
        w.expect(w.results_message()).to_contain_text("“café” (exact): 2 lines")
        files = w.result_rows(1)
        w.expect(files).to_have_count(2)
        assert [w.row_label(files.nth(i)) for i in range(2)] == [e[0] for e in expected]
        matches = w.result_rows(2)
        w.expect(matches).to_have_count(2)
        where = [
            str(matches.nth(i).locator(".label-description").inner_text()).strip() for i in range(2)
        ]
        assert where == [f"{line}:{col}" for _, line, col in expected]
        assert [w.row_highlights(matches.nth(i)) for i in range(2)] == [["café"], ["café"]]
        rel, line, col = expected[1]
        matches.nth(1).click()
        w.wait_editor(Path(rel).name)
        w.wait_cursor(line, col, len("café"))


def cli_semantic(workspace: Path, query: str, code_server: CodeServer) -> dict[str, Any]:
    """The same search by meaning through the CLI, in the cache of code-server's language
    server (its vectors are there: nothing is embedded twice)."""
    env = {k: v for k, v in os.environ.items() if k != "CITELINE_CACHE_DIR"}
    env.update(HOME=str(code_server.home / "home"), XDG_CACHE_HOME=str(code_server.home / "cache"))
    cmd = [*lsp_command()[:-1], "lines", str(workspace), "--semantic", query, "--json"]
    # (exit status 1 when nothing is found, as grep's)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_search_by_meaning_shows_the_section_that_answers_and_opens_it(
    main_window: Window, main_ws: Path, code_server: CodeServer, step: Any
) -> None:
    w = main_window
    # recall ranks another section first: the answer below is the model's
    recall = cli(main_ws, SEMANTIC_QUERY)["hits"]
    assert recall and recall[0]["heading"] != "Troubleshooting", recall
    troubleshooting = SETUP.split("\n").index("# Troubleshooting") + 1
    with step(w):
        w.clear_results()
        w.run_command("citeline: Search by Meaning in Results View")
        w.answer_input("citeline: Search by Meaning (results view)", SEMANTIC_QUERY)
        # The first search by meaning loads the model and embeds the candidates: seconds.
        w.expect(w.results_message()).to_contain_text(
            f"“{SEMANTIC_QUERY}” by meaning: 1 section at score ≥ 0.5", timeout=STEP_TIMEOUT_MS
        )
        rows = w.result_rows(1)
        w.expect(rows).to_have_count(1)
        assert w.row_label(rows.first) == (
            f"guide/setup.md:{troubleshooting}-{troubleshooting + 2} — Troubleshooting"
        )
        score = str(rows.first.locator(".label-description").inner_text()).strip()
        assert re.fullmatch(r"[01]\.\d\d", score) and 0.5 <= float(score) <= 1, score
        rows.first.click()
        w.wait_editor("setup.md")
        # the cursor at the start of the section's line that the server chose (its body)
        w.wait_cursor(troubleshooting + 2, 1)
    # The window showed the server's answer: the CLI's, score for score.
    expected = cli_semantic(main_ws, SEMANTIC_QUERY, code_server)
    assert [(m["path"], m["x-heading"], m["line"]) for m in expected["matches"]] == [
        ("guide/setup.md", "Troubleshooting", troubleshooting + 2)
    ]
    assert score == f"{expected['matches'][0]['score']:.2f}"


def test_a_missing_server_gives_one_clear_message(windows: Windows, step: Any) -> None:
    w = windows.missing
    with step(w):
        w.wait_ready()
        w.run_command("citeline: Search Sections in Results View (Full Search)")
        w.answer_input("citeline: Search Sections (results view)", "notes")
        toast = w.toasts().filter(has_text="could not be started")
        w.expect(toast).to_have_count(1)
        w.expect(toast).to_contain_text(windows.missing_command)
        w.expect(toast).to_contain_text("pip install citeline")
        for button in ("Open Settings", "Show Log"):
            w.expect(toast.get_by_role("button", name=button)).to_be_visible()
        # The language client's own report of the same failure would have been sent
        # before ours: with ours shown, the one toast is all there is.
        assert w.toasts().count() == 1, w.toasts().all_inner_texts()
        # The view says it too, in its message line.
        w.expect(w.results_message()).to_contain_text("could not be started")


def test_first_build_progress_and_a_broken_files_diagnostic(windows: Windows, step: Any) -> None:
    w = windows.big
    with step(w):
        w.wait_ready()
        progress = w.watch_status_bar("citeline: indexing")
        # Opening a Markdown file starts the extension, and the server's first build
        w.quick_open("p0001.md")
        w.wait_editor("p0001.md")
        seen = progress.wait_gone(timeout_ms=120_000)
        assert any(re.search(r"citeline: indexing: \w+ \d+/\d+", text) for text in seen), seen
        # The broken file is reported: one error in the status bar and the Problems view
        problems = w.page.locator(css_id("status.problems"))
        w.expect(problems).to_have_attribute("aria-label", re.compile(r"Errors: 1\b"))
        w.page.keyboard.press("Control+Shift+M")
        panel = w.page.locator(".markers-panel")
        w.expect(panel.locator(".monaco-list-row", has_text="broken.md")).to_be_visible()
        w.expect(panel).to_contain_text("UTF-8")
        toast = w.toasts().filter(has_text="cannot be parsed")
        w.expect(toast).to_contain_text("1 file in")
        # Search still works, without the broken file
        search_in_view(w, "gateway token")
        w.expect(w.results_message()).to_contain_text("sections")
        w.expect(w.result_rows(1).first).to_contain_text("pages/")


OKAPI = "# Okapi habitat\n\nThe okapi lives in the Ituri forest.\n"


def test_a_hit_whose_text_moved_is_marked_on_save_and_re_anchored(
    main_window: Window, main_ws: Path, step: Any
) -> None:
    """Issue 53: saving a Markdown file sends the view's hits to citeline.verify; a hit
    whose text moved is marked `moved → path:lines`, and Re-anchor opens it there."""
    w = main_window
    okapi = main_ws / "okapi.md"
    okapi.write_text(OKAPI, "utf-8")
    try:
        with step(w):
            search_in_view(w, "okapi")
            rows = w.result_rows(1)
            w.expect(rows).to_have_count(1)
            assert w.row_label(rows.first) == "okapi.md:1-3 — Okapi habitat"
            rows.first.click()
            w.wait_editor("okapi.md")
            # The section selected, the cursor on its heading: the editor has the keyboard
            # (before that, keys would go to the results view's tree).
            w.wait_cursor(1, 1, utf16(OKAPI.rstrip("\n")))
            # Two lines typed above the heading, saved in the editor: the section's text
            # is the same, two lines down.
            w.page.keyboard.press("Control+Home")
            w.page.keyboard.type("Intro line")
            w.page.keyboard.press("Enter")
            w.page.keyboard.press("Enter")
            w.page.keyboard.press("Control+S")
            w.expect(rows.first.locator(".label-description")).to_have_text("moved → okapi.md:3-5")
            assert okapi.read_text("utf-8") == "Intro line\n\n" + OKAPI
            w.expect(w.results_message()).to_contain_text("1 no longer where it was")
            # Re-anchor, the row's inline action: the row names the new place, and the
            # editor selects the section there, the cursor on its heading.
            rows.first.hover()
            rows.first.locator(".action-label[aria-label^='Re-anchor']").click()
            w.expect(rows.first.locator(".label-name")).to_have_text("okapi.md:3-5 — Okapi habitat")
            w.expect(rows.first.locator(".label-description")).to_have_text("")
            w.wait_cursor(3, 1, utf16(OKAPI.rstrip("\n")))
    finally:
        okapi.unlink(missing_ok=True)


QUOKKA = (
    "---\ntitle: Quokka field notes\n---\nA quokka smiles at the camera.\n\n"
    "## Diet\n\nThe quokka eats leaves.\n"
)


def test_text_before_the_first_heading_is_named_by_the_files_title(
    main_window: Window, main_ws: Path, step: Any
) -> None:
    """Issue 51: the results view and the Quick Pick name a file's preamble by its title
    (the server's x-labels), as Go to Symbol does, not by its path."""
    w = main_window
    quokka = main_ws / "quokka.md"
    quokka.write_text(QUOKKA, "utf-8")
    try:
        hits = cli(main_ws, "quokka")["hits"]
        preamble = next(h for h in hits if h["heading"] == "")
        where = f"quokka.md:{preamble['line_start']}-{preamble['line_end']}"
        with step(w):
            search_in_view(w, "quokka")
            rows = w.result_rows(1)
            w.expect(rows).to_have_count(len(hits))
            labels = {w.row_label(rows.nth(i)) for i in range(len(hits))}
            assert f"{where} — Quokka field notes" in labels, labels
            assert not any(label == where for label in labels), labels
            w.run_command("citeline: Search Sections (Quick Pick)")
            w.wait_quick_input_title("^citeline: Search Sections")
            w.quick_input_box.fill("quokka")
            picks = w.quick_rows()
            w.expect(picks).to_have_count(len(hits))
            names = {w.pick_label(picks.nth(i)) for i in range(len(hits))}
            assert names == {"Quokka field notes", "Diet"}, names
            w.page.keyboard.press("Escape")
            w.expect(w.quick_input).to_be_hidden()
    finally:
        quokka.unlink(missing_ok=True)
