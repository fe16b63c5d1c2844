"""A real VS Code for the end-to-end tests: code-server (VS Code 1.100.3 in the browser)
with the packaged extension installed, driven by Debian's chromium through Playwright.

scripts/install-code-server installs code-server into a folder outside the clone (kept
between runs); scripts/test runs it and packages the extension. Everything a test starts
is private: code-server's user data, extensions and XDG folders live in a temporary folder,
it listens on a loopback port with no authentication, and it runs in its own process
group, which is what stopping it ends. The browser resolves no host name but 127.0.0.1, so
neither it nor the workbench it shows reaches anything but this code-server.

Every wait is a wait for a condition (Playwright's auto-waiting locators and expect, or a
line read from code-server's output), bounded by a timeout; none is a sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
CODE_SERVER_VERSION = "4.100.3"  # as scripts/install-code-server pins it
CHROMIUM = Path("/usr/lib/chromium/chromium")  # /usr/bin/chromium is a shell wrapper

# Generous bounds for one condition on a loaded 2-core machine; a passing run meets each in
# a fraction of it.
START_TIMEOUT_S = 60  # code-server listening
LOAD_TIMEOUT_MS = 90_000  # a window's workbench, extensions registered
STEP_TIMEOUT_MS = 30_000  # one UI step (a view filling, an editor opening, a status change)


def code_server_home() -> Path:
    """Where scripts/install-code-server puts code-server (outside the clone)."""
    explicit = os.environ.get("CITELINE_CODE_SERVER_HOME")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "citeline-ci" / f"code-server-{CODE_SERVER_VERSION}"


def code_server_binary() -> Path:
    return code_server_home() / "node_modules" / ".bin" / "code-server"


def vsix_path() -> Path:
    version = json.loads((EXTENSION / "package.json").read_text("utf-8"))["version"]
    return EXTENSION / f"citeline-{version}.vsix"


def missing() -> str | None:
    """Why the VS Code tests cannot run here, or None when they can."""
    if not (code_server_binary().exists() and os.access(code_server_binary(), os.X_OK)):
        return f"code-server is not installed in {code_server_home()} (scripts/test installs it)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright's Python package is missing (pip install -e '.[test]')"
    vsix = vsix_path()
    if not vsix.exists():
        return f"{vsix} is missing (cd editors/vscode && npm run build && npm run package)"
    sources = [*(EXTENSION / "src").rglob("*.ts"), EXTENSION / "package.json"]
    newer = [p for p in sources if p.stat().st_mtime > vsix.stat().st_mtime]
    if newer:
        stale = newer[0].relative_to(REPO)
        return f"{vsix.name} is older than {stale} (npm run build && npm run package)"
    return None


# What a test run must not do: reach the network, show tours, update anything.
USER_SETTINGS: dict[str, Any] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "security.workspace.trust.enabled": False,
    "chat.commandCenter.enabled": False,
    "git.enabled": False,
    "editor.minimap.enabled": False,
    # The editor highlights other occurrences of the word under the cursor after a delay;
    # off, the only highlights in the editor are the extension's decorations.
    "editor.occurrencesHighlight": "off",
    "editor.selectionHighlight": False,
    "files.autoSave": "off",
}


class CodeServer:
    """One code-server process with the extension installed, in its own process group."""

    def __init__(self, home: Path, server_command: list[str], env: dict[str, str]) -> None:
        self.home = home
        self.log_path = home / "code-server.log"
        self.server_command = server_command
        self.env = dict(env)
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def _dirs(self) -> dict[str, Path]:
        names = ("user-data", "extensions", "config", "data", "cache", "home")
        dirs = {name: self.home / name for name in names}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        return dirs

    def _environment(self, dirs: dict[str, Path]) -> dict[str, str]:
        env = dict(self.env)
        env.update(
            HOME=str(dirs["home"]),
            XDG_CONFIG_HOME=str(dirs["config"]),
            XDG_DATA_HOME=str(dirs["data"]),
            XDG_CACHE_HOME=str(dirs["cache"]),
            # The extension gallery at a loopback port nothing listens on: no request leaves
            # the machine, and each fails at once.
            EXTENSIONS_GALLERY=json.dumps(
                {"serviceUrl": "http://127.0.0.1:9/gallery", "itemUrl": "http://127.0.0.1:9/item"}
            ),
        )
        for name in ("VSCODE_IPC_HOOK_CLI", "VSCODE_CWD", "VSCODE_PID"):
            env.pop(name, None)
        return env

    def start(self) -> None:
        dirs = self._dirs()
        env = self._environment(dirs)
        settings = {
            **USER_SETTINGS,
            "citeline.server.command": self.server_command[0],
            "citeline.server.args": self.server_command[1:],
        }
        user = dirs["user-data"] / "User"
        user.mkdir(parents=True, exist_ok=True)
        (user / "settings.json").write_text(json.dumps(settings, indent=2), "utf-8")
        common = [
            str(code_server_binary()),
            "--user-data-dir",
            str(dirs["user-data"]),
            "--extensions-dir",
            str(dirs["extensions"]),
        ]
        installed = subprocess.run(
            [*common, "--install-extension", str(vsix_path())],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if installed.returncode != 0 or not any(dirs["extensions"].glob("citeline.citeline-*")):
            raise RuntimeError(
                f"code-server --install-extension failed ({installed.returncode}):\n"
                f"{installed.stdout}\n{installed.stderr}"
            )
        log = self.log_path.open("w", encoding="utf-8")
        proc = self.proc = subprocess.Popen(
            [
                *common,
                "--auth",
                "none",
                "--bind-addr",
                "127.0.0.1:0",  # code-server prints the port it got
                "--disable-workspace-trust",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-getting-started-override",
                "--ignore-last-opened",
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: stop() ends the whole group
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                log.flush()
                lines.put(line)
            lines.put(None)
            log.close()

        threading.Thread(target=pump, daemon=True).start()
        listening = re.compile(r"HTTP server listening on (http://127\.0\.0\.1:\d+)/")
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"code-server did not listen in {START_TIMEOUT_S} s") from None
            if line is None:
                raise RuntimeError(f"code-server exited:\n{self.log_path.read_text('utf-8')}")
            found = listening.search(line)
            if found:
                self.url = found.group(1)
                return

    def folder_url(self, folder: Path) -> str:
        return f"{self.url}/?folder={quote(str(folder))}"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        # Its group, even when code-server itself has exited: the extension hosts and the
        # language servers it started are in it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        # Whatever of the group outlived code-server's own exit.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def browser_args() -> list[str]:
    args = [
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--metrics-recording-only",
        # Only this machine's code-server can be reached from the page.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # chromium's sandbox refuses to run as root
    return args


class Failures:
    """A folder for the screenshots of failed steps, named in the failure's message."""

    def __init__(self) -> None:
        self.folder: Path | None = None

    def path(self, name: str) -> Path:
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="citeline-vscode-e2e-"))
        return self.folder / name


@contextlib.contextmanager
def screenshot_on_failure(page: Any, failures: Failures, name: str, log: Path) -> Iterator[None]:
    """Runs a test's steps; on failure, saves a screenshot of the window (and the page's
    HTML) and names them and code-server's log in the error."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        shot = failures.path(f"{name}.png")
        notes = []
        try:
            page.screenshot(path=str(shot), timeout=10_000)
            failures.path(f"{name}.html").write_text(page.content(), "utf-8")
            notes.append(f"screenshot: {shot}")
        except Exception as again:  # the page itself may be gone
            notes.append(f"no screenshot ({again})")
        if log.exists():
            kept = failures.path("code-server.log")
            shutil.copyfile(log, kept)
            notes.append(f"code-server log: {kept}")
        raise AssertionError(f"{exc}\n{'; '.join(notes)}") from exc


def css_id(element_id: str) -> str:
    """A CSS selector for an element id with dots (VS Code's status bar items)."""
    return "#" + element_id.replace(".", "\\.")


_WATCH_JS = """(needle) => {
  const bar = document.getElementById("workbench.parts.statusbar");
  const seen = [];
  const record = () => {
    for (const item of bar.querySelectorAll(".statusbar-item")) {
      const text = (item.textContent || "").trim();
      if (text.includes(needle) && seen[seen.length - 1] !== text) seen.push(text);
    }
  };
  new MutationObserver(record).observe(bar, {
    subtree: true, childList: true, characterData: true, attributes: true,
  });
  record();
  window.__citelineWatch = { needle, seen, bar };
}"""


class StatusWatch:
    """What watch_status_bar() recorded."""

    def __init__(self, page: Any, needle: str) -> None:
        self.page = page
        self.needle = needle

    def wait_gone(self, timeout_ms: int) -> list[str]:
        """Waits until the text was seen and is no longer shown; returns what was seen."""
        self.page.wait_for_function(
            """() => {
              const w = window.__citelineWatch;
              return w.seen.length > 0 && !(w.bar.textContent || "").includes(w.needle);
            }""",
            timeout=timeout_ms,
        )
        return [str(t) for t in self.page.evaluate("() => window.__citelineWatch.seen")]


class Window:
    """One VS Code window (a browser page on a folder), with the steps the tests take."""

    def __init__(self, page: Any, expect: Any) -> None:
        self.page = page
        # Playwright's assertions wait 5 s by default, which a loaded machine exceeds (an
        # answer still on its way, the view's progress bar showing): they wait as long as
        # any other step.
        expect.set_options(timeout=STEP_TIMEOUT_MS)
        self.expect = expect

    def load(self, url: str) -> None:
        """Starts loading the window; wait_ready() waits for it (windows load side by side)."""
        self.page.goto(url, wait_until="commit", timeout=LOAD_TIMEOUT_MS)

    def wait_ready(self) -> None:
        # The Citeline icon in the activity bar: the workbench is up and the extension is
        # registered (its commands are in the palette from then on).
        self.page.locator(".activitybar a.action-label[aria-label='Citeline']").wait_for(
            timeout=LOAD_TIMEOUT_MS
        )

    def quick_open(self, name: str) -> None:
        """Opens a file by name through Quick Open (Ctrl+P)."""
        self.page.keyboard.press("Control+P")
        self.quick_input_box.wait_for(timeout=STEP_TIMEOUT_MS)
        self.quick_input_box.fill(name)
        self.quick_rows().filter(has_text=name).first.wait_for(timeout=STEP_TIMEOUT_MS)
        self.page.keyboard.press("Enter")

    def watch_status_bar(self, needle: str) -> StatusWatch:
        """Records, from now on, every status bar text holding `needle` (a progress may
        come and go between two looks; an observer sees each change)."""
        self.page.evaluate(_WATCH_JS, needle)
        return StatusWatch(self.page, needle)

    # -- quick input: the command palette, pickers and input boxes ------------------------

    @property
    def quick_input(self) -> Any:
        return self.page.locator(".quick-input-widget")

    @property
    def quick_input_box(self) -> Any:
        return self.quick_input.locator(".quick-input-box input")

    def quick_rows(self) -> Any:
        return self.quick_input.locator(".quick-input-list .monaco-list-row")

    def run_command(self, title: str) -> None:
        """Runs a command from the command palette (F1), chosen by its exact title."""
        self.page.keyboard.press("F1")
        self.quick_input_box.wait_for(timeout=STEP_TIMEOUT_MS)
        self.quick_input_box.fill(f">{title}")
        row = self.quick_rows().filter(
            has=self.page.locator(".label-name", has_text=re.compile(f"^{re.escape(title)}$"))
        )
        # The palette lists recently used commands first: the row with the exact title.
        row.first.click(timeout=STEP_TIMEOUT_MS)

    @staticmethod
    def pick_label(row: Any) -> str:
        """A picker row's label (its first line; the detail is the second)."""
        first = row.locator(".quick-input-list-row").first
        return str(first.locator(".label-name").inner_text()).strip()

    def wait_quick_input_title(self, pattern: str | re.Pattern[str]) -> None:
        self.expect(self.quick_input.locator(".quick-input-title")).to_have_text(
            re.compile(pattern) if isinstance(pattern, str) else pattern,
            timeout=STEP_TIMEOUT_MS,
        )

    def answer_input(self, title: str, text: str) -> None:
        """Types `text` into the input box titled `title` and accepts it."""
        self.wait_quick_input_title(re.escape(title))
        self.quick_input_box.fill(text)
        self.page.keyboard.press("Enter")
        self.expect(self.quick_input).to_be_hidden(timeout=STEP_TIMEOUT_MS)

    # -- the Citeline results view -------------------------------------------------------

    @property
    def results(self) -> Any:
        return self.page.locator(".pane", has=self.page.locator(".pane-header", has_text="Results"))

    def clear_results(self) -> None:
        """Empties the results view (citeline: Clear Results) and waits until it is."""
        self.run_command("citeline: Clear Results")
        self.expect(self.results.locator(".monaco-list-row")).to_have_count(0)

    def results_message(self) -> Any:
        return self.results.locator(".tree-explorer-viewlet-tree-view > .message")

    def result_rows(self, level: int) -> Any:
        return self.results.locator(f".monaco-list-row[aria-level='{level}']")

    @staticmethod
    def row_label(row: Any) -> str:
        return str(row.locator(".label-name").inner_text()).strip()

    @staticmethod
    def row_highlights(row: Any) -> list[str]:
        return [str(t) for t in row.locator(".label-name .highlight").all_inner_texts()]

    # -- editors and the status bar ------------------------------------------------------

    def wait_editor(self, name: str) -> None:
        """The active editor tab is `name`."""
        self.expect(self.page.locator(".tabs-container .tab.active .label-name")).to_have_text(
            name, timeout=STEP_TIMEOUT_MS
        )

    def wait_cursor(self, line: int, column: int, selected: int | None = None) -> None:
        """The status bar shows the cursor at `line`, `column` (and, when given, the
        number of characters selected)."""
        text = f"Ln {line}, Col {column}"
        pattern = rf"^{text} \({selected} selected\)$" if selected else rf"^{text}$"
        self.expect(self.page.locator(css_id("status.editor.selection"))).to_have_text(
            re.compile(pattern), timeout=STEP_TIMEOUT_MS
        )

    def toasts(self) -> Any:
        return self.page.locator(".notifications-toasts .notification-toast")
