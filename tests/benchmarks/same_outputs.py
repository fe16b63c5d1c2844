"""Same outputs before and after a restructuring (issue 29): the CLI's JSON and human output
(directly and through the warm process), the language server's answers and the MCP server's
results for a fixed set of requests, recorded with one citeline and compared with another.

Run by hand, never by pytest::

    # with the python whose citeline is the code before (a checkout of main, say)
    /venv-of-main/bin/python tests/benchmarks/same_outputs.py record /tmp/before.json
    # with this checkout's
    python tests/benchmarks/same_outputs.py compare /tmp/before.json

Each front runs as its users start it: `python -m citeline.cli.cli ...` (and
`python -m citeline.cli.entry ...` for the warm process), `... lsp` and `... mcp BUNDLE`
through `sys.executable`, so the citeline measured is the one that python imports (printed
first). The corpora are read from CITELINE_CORPORA (default /work/shared/corpora); small
bundles made here cover the errors, the reserved files, odd names and unparsable files. The
folders made here are named `<TMP>` in what is recorded. Every output is recorded as the
bytes it was sent (an answer's JSON text, with its key order). Progress and timing are not
recorded; the diagnostics are the last ones published per document.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from rpc_frames import frame, read_frame  # noqa: E402

CORPORA = Path(os.environ.get("CITELINE_CORPORA", "/work/shared/corpora"))
PY = sys.executable
CLI = [PY, "-m", "citeline.cli.cli"]
LAUNCH = [PY, "-m", "citeline.cli.entry"]


# -- bundles ----------------------------------------------------------------------------------


def corpora() -> dict[str, tuple[Path, list[str], list[str]]]:
    """name -> (folder, flags it needs, queries)."""
    return {
        "apisix": (
            CORPORA / "apisix-zh" / "docs",
            [],
            ["网关 配置", "plugin", "如何 配置 路由", "upstream health check", "jwt-auth"],
        ),
        "powershell": (
            CORPORA / "powershell-docs" / "docs" / "reference" / "docs-conceptual",
            [],
            [
                "remoting",
                "execution policy",
                "how do I run a script remotely",
                "Get-ChildItem",
                "pipeline objects",
            ],
        ),
        "tldr": (
            CORPORA / "tldr" / "docs",
            ["--raise-limits"],
            ["tar extract", "git rebase", "list files", "compress a folder", "docker run"],
        ),
    }


SMALL: dict[str, dict[str, str | bytes]] = {
    "mixed": {
        "guide.md": (
            "---\nid: guide/intro\ntitle: The Guide\n---\n# Guide\n\nIntro text about remote "
            "sessions.\n\n## Remote sessions\n\nStart a remote session with Enter-PSSession. "
            "Remote computers answer.\n\n### Cons\n\nSlow remote links.\n\n## Searching\n\n"
            "Searching and searches and searched.\n"
        ),
        "notes/crlf.md": b"# CRLF notes\r\n\r\nremote line one\r\nsecond line\r\n",
        "notes/cjk.md": "# 网关配置\n\n网关 配置 路由 说明。\n\n## 插件\n\n插件列表。\n",
        "notes/ids.md": "# InlinePrediction\n\nThe InlinePrediction feature and getHTTP2Value.\n",
        "space name ü.md": "# Ünïcode heading\n\nremote and local text\n",
        "evil\x1bname.md": "# Evil \x1b]0;title\x07 heading\n\nremote escape\r overwrite\n",
        "setext.md": "Two line\nheading\n========\n\nremote body\n",
        "index.md": "# Index\n\nremote navigation\n",
        "log.md": "# Log\n\nremote log\n",
        "plain.txt": "remote but not markdown\n",
    },
    "broken": {
        "good.md": "# Good\n\nalpha beta\n",
        "bad.md": "---\ntitle: [unclosed\n---\n# Bad\n\nalpha\n",
        "worse.md": "---\nnever closed\n\n# Worse\n\nalpha\n",
    },
    "many": {f"d{i % 3}/f{i:02}.md": f"# File {i}\n\nalpha {i} beta\n" for i in range(12)},
}


def make_small(root: Path) -> dict[str, Path]:
    out = {}
    for name, files in SMALL.items():
        base = root / name
        for rel, text in files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        out[name] = base
    return out


# -- what is recorded -------------------------------------------------------------------------


def text_of(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


class Recorder:
    def __init__(self, tmp: Path) -> None:
        self.tmp = str(tmp)
        self.out: dict[str, Any] = {}

    def clean(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(self.tmp, "<TMP>")
        if isinstance(value, dict):
            return {self.clean(k): self.clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.clean(v) for v in value]
        return value

    def put(self, key: str, value: Any) -> None:
        key = self.clean(key)
        assert key not in self.out, key
        self.out[key] = self.clean(value)


def child_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env.update(
        CITELINE_CACHE_DIR=str(tmp / "cache"),
        CITELINE_DAEMON="0",
        XDG_RUNTIME_DIR=str(tmp / "run"),
        TMPDIR=str(tmp / "run"),
        TERM="xterm",
    )
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


# -- the command line ---------------------------------------------------------------------------


def cli_cases(small: dict[str, Path]) -> Iterator[tuple[str, list[str], Path]]:
    """(name, arguments, working folder)."""
    for name, (folder, flags, queries) in corpora().items():
        for i, q in enumerate(queries):
            yield f"{name}/search{i}/json", ["search", ".", "-q", q, "--json", *flags], folder
            yield (
                f"{name}/search{i}/recall-json",
                ["search", ".", "-q", q, "--json", "--profile", "recall", "-m", "5", *flags],
                folder,
            )
            yield f"{name}/search{i}/human", ["search", ".", "-q", q, "--stats", *flags], folder
        q = queries[0]
        human = ["search", str(folder), "-q", q, "--color", "always", "-C", "2", "-m", "4"]
        yield f"{name}/search/color", [*human, "--profile", "recall", *flags], Path("/")
        yield f"{name}/concepts/json", ["concepts", ".", "-q", "a", "--json", *flags], folder
        yield f"{name}/concepts/human", ["concepts", ".", "-q", "in", "--stats", *flags], folder
        word = q.split()[0]
        yield f"{name}/lines/json", ["lines", ".", "-F", word, "--json", *flags], folder
        yield (
            f"{name}/lines/human",
            ["lines", ".", "-i", "-e", f"{word}|config", "-C", "1", "--stats", *flags],
            folder,
        )
        if flags:
            yield f"{name}/limit", ["search", ".", "-q", q, "--json"], folder
            yield f"{name}/limit-human", ["search", ".", "-q", q], folder
    mixed, broken, many = small["mixed"], small["broken"], small["many"]
    for rel in ("remote", "remote sessions", "searching", "网关", "inline prediction", "cons"):
        yield f"mixed/{rel}/json", ["search", ".", "-q", rel, "--json"], mixed
        yield f"mixed/{rel}/human", ["search", ".", "-q", rel, "--stats", "-C", "1"], mixed
        for opt in (
            ["--profile", "recall"],
            ["--match", "any"],
            ["--scope", "outline"],
            ["--cjk", "bigrams"],
            ["--stemming", "english"],
            ["--identifiers", "split"],
        ):
            yield f"mixed/{rel}/{opt[1]}", ["search", ".", "-q", rel, "--json", *opt], mixed
        yield f"mixed/{rel}/no-reserved", ["search", ".", "-q", rel, "--no-reserved"], mixed
    yield "mixed/recall-fallback", ["search", ".", "-q", "remote zebra"], mixed
    yield "mixed/recall-fallback-none", ["search", ".", "-q", "quokka zebra"], mixed
    yield "mixed/concepts", ["concepts", ".", "-q", "guide", "--json"], mixed
    yield "mixed/concepts-human", ["concepts", ".", "-q", "e", "--color", "always"], mixed
    yield "mixed/lines", ["lines", ".", "-F", "remote", "--json", "-C", "1"], mixed
    yield "mixed/lines-human", ["lines", ".", "-F", "remote", "--color", "always"], mixed
    yield "mixed/lines-dash", ["lines", ".", "-F", "-", "--json"], mixed
    yield "mixed/lines-re-bad", ["lines", ".", "-e", "(", "--json"], mixed
    yield "mixed/lines-re-bad-human", ["lines", ".", "-e", "(unclosed"], mixed
    yield "mixed/reserved", ["search", ".", "-q", "remote", "--reserved", "guide.md"], mixed
    # errors of the arguments and of the request
    for i, bad in enumerate(
        (
            ["search", ".", "-q", "x", "-m", "0", "--json"],
            ["search", ".", "-q", "x", "-m", "0"],
            ["search", ".", "-q", "x", "-C", "11"],
            ["search", ".", "-q", "x", "-C", "outline"],
            ["search", ".", "-q", "---", "--json"],
            ["search", ".", "-q", "x" * 600],
            ["search", ".", "--json"],
            ["search", ".", "-q", "x", "--match", "some", "--json"],
            ["lines", ".", "-F", "x", "-m", "5000", "--json"],
            ["lines", ".", "-F", "", "--json"],
            ["concepts", ".", "-q", "", "--json"],
            ["bogus"],
            ["search", "--max-files", "0", "-q", "x"],
            ["search", "nowhere", "-q", "x", "--json"],
            ["search", "nowhere", "-q", "x"],
            ["search", "guide.md", "-q", "x", "--json"],
        )
    ):
        yield f"errors/{i}", bad, mixed
    # limits, worded for the command line
    for i, lim in enumerate(
        (
            ["--max-files", "3"],
            ["--max-files", "3", "--raise-limits"],
            ["--max-file-bytes", "20"],
            ["--max-total-bytes", "100"],
            ["--max-sections", "4"],
            ["--max-tokens", "10"],
            ["--max-path-components", "1"],
            ["--max-path-bytes", "5"],
            ["--max-response-bytes", "300"],
        )
    ):
        yield f"limits/{i}/json", ["search", ".", "-q", "alpha", "--json", *lim], many
        yield f"limits/{i}/human", ["search", ".", "-q", "alpha", *lim], many
        yield f"limits/{i}/lines", ["lines", ".", "-F", "alpha", "--json", *lim], many
        yield f"limits/{i}/concepts", ["concepts", ".", "-q", "f", "--json", *lim], many
    # unparsable files
    for cmd in (["search", "-q", "alpha"], ["concepts", "-q", "o"], ["lines", "-F", "alpha"]):
        for extra in ([], ["--skip-invalid"]):
            for out in (["--json"], ["--stats"]):
                key = f"broken/{cmd[0]}{''.join(extra)}{out[0]}"
                yield key, [cmd[0], ".", *cmd[1:], *extra, *out], broken


def run_cli(rec: Recorder, tmp: Path, small: dict[str, Path], warm: bool) -> None:
    env = child_env(tmp, CITELINE_DAEMON="1" if warm else "0", CITELINE_DAEMON_IDLE="30")
    argv0 = LAUNCH if warm else CLI
    for name, args, cwd in cli_cases(small):
        if warm and not (name.startswith(("mixed/", "limits/", "broken/")) or "/search0/" in name):
            continue  # the warm process: a subset, through the launcher
        proc = subprocess.run([*argv0, *args], cwd=cwd, env=env, capture_output=True, timeout=600)
        rec.put(
            f"{'warm' if warm else 'cli'}:{name}",
            {
                "exit": proc.returncode,
                "stdout": text_of(proc.stdout),
                "stderr": text_of(proc.stderr),
            },
        )


# -- the language server ----------------------------------------------------------------------


class Lsp:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*CLI, "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.inbox: queue.Queue[tuple[dict[str, Any], str] | None] = queue.Queue()
        self.stash: dict[int, str] = {}  # the bodies of the answers, as sent
        self.diagnostics: dict[str, str] = {}  # the last body published for each document
        self.messages: list[str] = []
        self.ids = iter(range(1, 10**9))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while (body := read_frame(self.proc.stdout)) is not None:
            self.inbox.put((json.loads(body), text_of(body)))
        self.inbox.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(json.dumps({"jsonrpc": "2.0", **message}).encode()))
        self.proc.stdin.flush()

    def _take(self, timeout: float) -> bool:
        try:
            got = self.inbox.get(timeout=timeout)
        except queue.Empty:
            return False
        if got is None:
            raise AssertionError("the server ended")
        message, raw = got
        method = message.get("method")
        if method is not None and "id" in message:
            self.send({"id": message["id"], "result": None})
        elif method == "textDocument/publishDiagnostics":
            self.diagnostics[message["params"]["uri"]] = raw
        elif method == "window/showMessage":
            self.messages.append(raw)
        elif method is None:
            self.stash[message["id"]] = raw
        return True

    def call(self, method: str, params: Any) -> str:
        """The answer's body as the server sent it (the ids are the same in every run)."""
        msg_id = next(self.ids)
        self.send({"id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + 600
        while msg_id not in self.stash:
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer to {method}")
            self._take(1.0)
        return self.stash.pop(msg_id)

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def quiet(self, seconds: float = 1.5) -> None:
        while self._take(seconds):
            pass

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("shutdown", None)
            self.notify("exit", None)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def uri(path: Path) -> str:
    from urllib.parse import quote

    return "file://" + quote(str(path))


def lsp_session(
    rec: Recorder,
    env: dict[str, str],
    key: str,
    folders: list[Path],
    options: dict[str, Any],
    queries: list[str],
    documents: list[Path],
) -> None:
    srv = Lsp(env)
    try:
        init = srv.call(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri(folders[0]),
                "workspaceFolders": [{"uri": uri(f), "name": f.name} for f in folders],
                "capabilities": {"window": {"workDoneProgress": False}},
                "initializationOptions": options,
            },
        )
        rec.put(f"lsp:{key}/initialize", init)
        srv.notify("initialized", {})
        root = uri(folders[-1])
        for i, q in enumerate(queries):
            rec.put(f"lsp:{key}/symbol{i}", srv.call("workspace/symbol", {"query": q}))
            rec.put(f"lsp:{key}/symbol{i}-prefix", srv.call("workspace/symbol", {"query": q[:-1]}))
            for command, args in (
                ("citeline.search", {"query": q, "limit": 5}),
                ("citeline.search", {"query": q, "profile": "recall", "limit": 3, "root": root}),
                ("citeline.search", {"query": q, "profile": "contract", "match": "any"}),
                ("citeline.concepts", {"query": q.split()[0][:3]}),
                ("citeline.lines", {"pattern": q.split()[0], "limit": 10}),
            ):
                answer = srv.call(
                    "workspace/executeCommand", {"command": command, "arguments": [args]}
                )
                rec.put(f"lsp:{key}/{command}/{i}/{json.dumps(args, ensure_ascii=False)}", answer)
        rec.put(f"lsp:{key}/symbol-empty", srv.call("workspace/symbol", {"query": ""}))
        for bad_i, bad in enumerate(
            (
                {"command": "citeline.search", "arguments": [{"query": ""}]},
                {"command": "citeline.search", "arguments": [{"query": "x", "limit": 0}]},
                {"command": "citeline.search", "arguments": [{"query": "x", "bogus": 1}]},
                {"command": "citeline.search", "arguments": "alpha"},
                {"command": "citeline.search", "arguments": []},
                {"command": "citeline.search", "arguments": [{"query": "x", "root": "file:///no"}]},
                {"command": "citeline.lines", "arguments": [{"pattern": "(", "mode": "regex"}]},
                {"command": "citeline.concepts", "arguments": [{"query": "x", "limit": "2"}]},
                {"command": "citeline.nothing", "arguments": [{}]},
            )
        ):
            rec.put(f"lsp:{key}/bad{bad_i}", srv.call("workspace/executeCommand", bad))
        for doc in documents:
            rec.put(
                f"lsp:{key}/outline/{doc.name}",
                srv.call("textDocument/documentSymbol", {"textDocument": {"uri": uri(doc)}}),
            )
        srv.quiet()
        rec.put(f"lsp:{key}/diagnostics", dict(sorted(srv.diagnostics.items())))
        rec.put(f"lsp:{key}/messages", sorted(set(srv.messages)))  # their order may vary
    finally:
        srv.close()


def run_lsp(rec: Recorder, tmp: Path, small: dict[str, Path]) -> None:
    env = child_env(tmp)
    vscode = {"citeline": {"profile": "recall", "unsaved": True}}
    for name, (folder, _, queries) in corpora().items():
        docs = sorted(folder.rglob("*.md"))[:3]
        lsp_session(rec, env, name, [folder], vscode, queries[:3], docs)
    mixed, broken, many = small["mixed"], small["broken"], small["many"]
    lsp_session(
        rec,
        env,
        "small",
        [mixed, broken],
        {},
        ["remote sessions", "网关", "alpha"],
        [mixed / "guide.md", mixed / "setext.md", broken / "bad.md"],
    )
    lsp_session(
        rec,
        env,
        "small-contract",
        [mixed],
        {"profile": "contract", "skip_invalid": False},
        ["remote", "inline prediction"],
        [mixed / "notes" / "crlf.md"],
    )
    for i, limits in enumerate(
        ({"max_files": 3}, {"max_sections": 4}, {"max_file_bytes": 20}, {"max_response_bytes": 300})
    ):
        lsp_session(rec, env, f"limits{i}", [many], {"limits": limits}, ["alpha"], [])
    lsp_session(rec, env, "broken-strict", [broken], {"skip_invalid": False}, ["alpha"], [])


# -- the MCP server ---------------------------------------------------------------------------


class Mcp:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*CLI, "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.ids = iter(range(1, 10**9))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: Any) -> str:
        """The answer's line as the server sent it."""
        msg_id = next(self.ids)
        self.send({"id": msg_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError("the MCP server ended")
            answer = json.loads(line)
            if answer.get("id") == msg_id and "method" not in answer:
                return text_of(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def mcp_session(
    rec: Recorder, env: dict[str, str], key: str, args: list[str], calls: list[tuple[str, Any]]
) -> None:
    srv = Mcp(args, env)
    try:
        init = srv.call(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "same-outputs", "version": "0"},
            },
        )
        rec.put(f"mcp:{key}/initialize", init)
        srv.send({"method": "notifications/initialized"})
        rec.put(f"mcp:{key}/tools", srv.call("tools/list", {}))
        for i, (tool, arguments) in enumerate(calls):
            answer = srv.call("tools/call", {"name": tool, "arguments": arguments})
            rec.put(f"mcp:{key}/{i}/{tool}/{json.dumps(arguments, ensure_ascii=False)}", answer)
    finally:
        srv.close()


def run_mcp(rec: Recorder, tmp: Path, small: dict[str, Path]) -> None:
    env = child_env(tmp)
    bad = [
        ("search_sections", {"query": ""}),
        ("search_sections", {"query": "x", "limit": 500}),
        ("search_sections", {"query": "x", "cjk": "pairs"}),
        ("search_lines", {"pattern": "(", "mode": "regex"}),
        ("search_lines", {"pattern": "x", "mode": "semantic"}),
        ("search_concepts", {}),
        ("no_such_tool", {}),
    ]
    for name, (folder, flags, queries) in corpora().items():
        calls: list[tuple[str, Any]] = []
        for q in queries[:3]:
            calls += [
                ("search_sections", {"query": q, "limit": 5}),
                ("search_sections", {"query": q, "profile": "recall", "limit": 3}),
                ("search_concepts", {"query": q.split()[0][:3]}),
                ("search_lines", {"pattern": q.split()[0], "limit": 5, "context": 1}),
            ]
        mcp_session(rec, env, name, [str(folder), *flags], calls + bad)
        if flags:
            mcp_session(rec, env, f"{name}-limit", [str(folder)], calls[:1])
    mixed, broken, many = small["mixed"], small["broken"], small["many"]
    calls = [
        ("search_sections", {"query": "remote"}),
        ("search_sections", {"query": "remote zebra"}),
        ("search_sections", {"query": "remote zebra", "match": "any"}),
        ("search_sections", {"query": "the remote sessions", "profile": "recall"}),
        ("search_sections", {"query": "网关", "cjk": "bigrams", "context": "outline"}),
        ("search_concepts", {"query": "/"}),
        ("search_lines", {"pattern": "remote", "case_sensitive": False}),
    ]
    mcp_session(rec, env, "mixed", [str(mixed)], calls + bad)
    mcp_session(rec, env, "mixed-no-reserved", [str(mixed), "--no-reserved"], calls[:1])
    for extra in ([], ["--skip-invalid"]):
        mcp_session(
            rec,
            env,
            f"broken{''.join(extra)}",
            [str(broken), *extra],
            [("search_sections", {"query": "alpha"}), ("search_lines", {"pattern": "alpha"})],
        )
    for i, lim in enumerate(
        (["--max-files", "3"], ["--max-tokens", "10"], ["--max-response-bytes", "300"])
    ):
        mcp_session(
            rec,
            env,
            f"limits{i}",
            [str(many), *lim],
            [("search_sections", {"query": "alpha"}), ("search_lines", {"pattern": "alpha"})],
        )
    # a bundle that is not there: the server does not start
    proc = subprocess.run([*CLI, "mcp", str(tmp / "nowhere")], env=env, capture_output=True)
    rec.put("mcp:nowhere", {"exit": proc.returncode, "stderr": text_of(proc.stderr)})


# -- main -------------------------------------------------------------------------------------


def record() -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="citeline-same-"))
    try:
        (tmp / "run").mkdir(mode=0o700)
        small = make_small(tmp / "b")
        rec = Recorder(tmp)
        for step, run in (
            ("cli", lambda: run_cli(rec, tmp, small, warm=False)),
            ("warm", lambda: run_cli(rec, tmp, small, warm=True)),
            ("lsp", lambda: run_lsp(rec, tmp, small)),
            ("mcp", lambda: run_mcp(rec, tmp, small)),
        ):
            began = time.monotonic()
            run()
            print(f"{step}: {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
        return rec.out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the warm process leaves with its folder


def which() -> str:
    probe = subprocess.run(
        [PY, "-c", "import citeline.engine as e, citeline.lsp as s; print(e.__file__, s.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return probe.stdout.strip()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("record", "compare"))
    p.add_argument("file", type=Path, help="the recorded outputs (JSON)")
    args = p.parse_args()
    print(f"citeline: {which()}", file=sys.stderr)
    now = record()
    if args.action == "record":
        args.file.write_text(json.dumps(now, ensure_ascii=False, indent=1, sort_keys=True))
        print(f"{len(now)} outputs recorded in {args.file}", file=sys.stderr)
        return 0
    before = json.loads(args.file.read_text())
    differ = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    for key in differ[:10]:
        a = json.dumps(before.get(key), ensure_ascii=False, indent=1).splitlines()
        b = json.dumps(now.get(key), ensure_ascii=False, indent=1).splitlines()
        print(f"--- {key}", *list(difflib.unified_diff(a, b, lineterm="", n=1))[2:40], sep="\n")
    print(f"{len(now)} outputs, {len(differ)} differ: {', '.join(differ[:30])}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
