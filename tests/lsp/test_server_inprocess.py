"""The language server in process (tests/inprocess.LspServer: lsp/server.py's features on a
fresh server, over pipes, spoken to in raw JSON-RPC). The same protocol as the subprocess
suites test, here so that mutation testing (docs/testing.md) sees the server's code run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write
from inprocess import LspServer
from pygls.uris import from_fs_path

FILES = {
    "guide.md": "# Ordered hashtable\n\nAn ordered hashtable keeps order.\n\n## Buckets\n\n"
    "bucket text\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys.\n",
    "index.md": "# Index\n\nhashtable navigation\n",
}


def uri(path: Path) -> str:
    found = from_fs_path(str(path))
    assert found is not None
    return found


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    return write(tmp_path / "ws", FILES)


@pytest.fixture()
def lsp() -> Iterator[LspServer]:
    server = LspServer()
    try:
        yield server
    finally:
        server.close()


def test_serves_and_exits_after_shutdown(lsp: LspServer, folder: Path) -> None:
    init = lsp.initialize([folder])["result"]
    assert init["serverInfo"]["name"] == "citeline"
    assert init["capabilities"]["workspaceSymbolProvider"]
    assert init["capabilities"]["executeCommandProvider"]["commands"] == [
        "citeline.search",
        "citeline.lines",
        "citeline.concepts",
        "citeline.verify",
    ]
    found = lsp.call("workspace/symbol", {"query": "hashtable"})["result"]
    assert [(s["name"], s["location"]["uri"]) for s in found] == [
        ("Hashtable basics", uri(folder / "notes" / "b.md")),  # the shorter section first
        ("Ordered hashtable", uri(folder / "guide.md")),
    ]
    assert lsp.call("shutdown") == {"jsonrpc": "2.0", "id": 3, "result": None}
    lsp.notify("exit")
    assert lsp.wait(10) == 0


def command(lsp: LspServer, name: str, *arguments: Any) -> dict[str, Any]:
    return lsp.call("workspace/executeCommand", {"command": name, "arguments": list(arguments)})


# -- workspace folders ---------------------------------------------------------------------------


def test_a_root_uri_alone_is_the_workspace(lsp: LspServer, folder: Path) -> None:
    """A client that sends rootUri and no workspaceFolders (LSP before 3.6)."""
    answer = lsp.call(
        "initialize",
        {"processId": None, "rootUri": uri(folder), "workspaceFolders": None, "capabilities": {}},
    )
    assert "result" in answer
    lsp.notify("initialized", {})
    found = command(lsp, "citeline.search", {"query": "bucket"})["result"]
    assert [h["path"] for h in found["hits"]] == ["guide.md"]


def test_no_folder_open_is_bundle_not_found(lsp: LspServer) -> None:
    lsp.initialize([])
    answer = command(lsp, "citeline.search", {"query": "bucket"})
    assert answer["error"]["code"] == -32803
    assert answer["error"]["data"] == {
        "code": "bundle_not_found",
        "message": "No workspace folder is open; open a folder or pass a root URI.",
        "details": {"root": None},
    }


def test_root_as_a_uri_or_a_path_or_neither(lsp: LspServer, tmp_path: Path) -> None:
    first = write(tmp_path / "one", {"a.md": "# A\n\nkumquat one\n"})
    second = write(tmp_path / "two", {"b.md": "# B\n\nkumquat two\n"})
    lsp.initialize([first, second])

    def paths(root: Any) -> Any:
        answer = command(lsp, "citeline.search", {"query": "kumquat", "root": root})
        if "error" in answer:
            return answer["error"]
        return [h["path"] for h in answer["result"]["hits"]]

    assert paths(None) == ["a.md"]  # the first folder
    assert paths(uri(second)) == ["b.md"]
    assert paths(str(second)) == ["b.md"]  # a path works too
    assert paths(str(second) + "/") == ["b.md"]
    wrong = paths(str(tmp_path))
    assert wrong["code"] == -32602
    assert wrong["data"]["details"] == {
        "field": "root",
        "root": str(tmp_path),
        "folders": [uri(first), uri(second)],
    }
    assert wrong["message"] == (
        f"root {str(tmp_path)!r} is not a workspace folder; open folders: "
        f"{uri(first)}, {uri(second)}."
    )
    typed = paths(5)
    assert typed["code"] == -32602
    assert typed["message"] == "root must be a file URI of a workspace folder."


def test_command_arguments_are_one_request_object(lsp: LspServer, folder: Path) -> None:
    lsp.initialize([folder])
    two = command(lsp, "citeline.search", {"query": "a"}, {"query": "b"})
    assert two["error"]["code"] == -32602
    assert two["error"]["message"] == (
        "citeline.search takes exactly one argument, the request object; got 2."
    )
    assert two["error"]["data"]["details"] == {"field": "arguments"}
    none = lsp.call("workspace/executeCommand", {"command": "citeline.lines"})
    assert none["error"]["message"].endswith("got 0.")
    text = lsp.call(
        "workspace/executeCommand", {"command": "citeline.search", "arguments": "alpha"}
    )
    assert text["error"]["code"] == -32602
    assert text["error"]["message"] == (
        "citeline.search arguments must be an array with one request object; got a string."
    )
    unknown = command(lsp, "citeline.nothing", {})
    assert unknown["error"]["code"] == -32602
    assert unknown["error"]["message"] == (
        "Unknown command 'citeline.nothing'; citeline offers citeline.search, citeline.lines, "
        "citeline.concepts, citeline.verify."
    )
    # not an object: the engine's own schema error
    assert command(lsp, "citeline.search", "alpha")["error"]["data"]["code"] == (
        "schema_validation"
    )


# -- document symbols of what cannot be read ---------------------------------------------------


def test_document_symbols_of_missing_broken_or_unsaved_documents(
    lsp: LspServer, folder: Path
) -> None:
    lsp.initialize([folder])

    def outline(target: str) -> Any:
        answer = lsp.call("textDocument/documentSymbol", {"textDocument": {"uri": target}})
        return answer["result"]

    assert [s["name"] for s in outline(uri(folder / "guide.md"))] == ["Ordered hashtable"]
    assert outline(uri(folder / "missing.md")) == []
    (folder / "bad.md").write_bytes(b"# Bad\n\xff\n")
    assert outline(uri(folder / "bad.md")) == []  # unparsable: no outline
    assert outline("untitled:Untitled-1") == []  # no file behind it
    lsp.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": "untitled:Untitled-2",
                "languageId": "markdown",
                "version": 1,
                "text": "# Draft\n",
            }
        },
    )
    assert [s["name"] for s in outline("untitled:Untitled-2")] == ["Draft"]
    # JSON may carry a lone surrogate ("\ud800"): the text is not UTF-8, so no outline, and
    # no internal error either
    lsp.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": "untitled:Untitled-3",
                "languageId": "markdown",
                "version": 1,
                "text": "# Draft\n\ud800\n",
            }
        },
    )
    assert outline("untitled:Untitled-3") == []


# -- messages that are not requests --------------------------------------------------------------


def test_responses_from_the_client_are_never_answered(lsp: LspServer, folder: Path) -> None:
    lsp.initialize([folder])
    for stray in (
        {"jsonrpc": "2.0", "result": 1},  # no id
        {"jsonrpc": "1.0", "id": 77, "result": None},
        {"jsonrpc": "2.0", "id": 78, "error": {"code": 1, "message": "x"}},
    ):
        lsp.send(stray)
    answer = lsp.call("workspace/symbol", {"query": "hashtable"})
    assert answer["id"] == 2 and answer["result"]
    assert not lsp.stash  # nothing else was answered
    assert any("ignoring a malformed response" in line for line in lsp.log)


# -- what the user is told -------------------------------------------------------------------------


def messages(lsp: LspServer, timeout: float) -> list[str]:
    return [p["message"] for p in lsp.notifications("window/showMessage", timeout)]


def wait_for(lsp: LspServer, method: str, check: Any, timeout: float = 15.0) -> list[Any]:
    """The `method` notifications until one satisfies `check`."""
    import time

    deadline = time.monotonic() + timeout
    seen: list[Any] = []
    while time.monotonic() < deadline:
        seen += lsp.notifications(method, 0.2)
        if any(check(p) for p in seen):
            return seen
    raise AssertionError(f"no {method} satisfying the check: {seen}")


def test_skipped_files_are_told_once_per_situation(lsp: LspServer, folder: Path) -> None:
    (folder / "bad.md").write_bytes(b"# Bad\n\xff\n")
    lsp.initialize([folder])
    told = wait_for(lsp, "window/showMessage", lambda p: "cannot be parsed" in p["message"])
    (one,) = [p for p in told if "cannot be parsed" in p["message"]]
    assert one == {
        "type": 2,  # Warning
        "message": f"citeline: 1 file in {folder} cannot be parsed and is left out of search "
        "(see the diagnostics). Whether such files block search is the setting skip_invalid "
        "(VS Code: citeline.skipInvalid; Neovim: settings.skip_invalid; Emacs: :skip_invalid "
        "in citeline-settings).",
    }
    (folder / "worse.md").write_bytes(b"# Worse\n\xfe\n")
    lsp.notify("textDocument/didSave", {"textDocument": {"uri": uri(folder / "worse.md")}})
    told = wait_for(lsp, "window/showMessage", lambda p: "2 files" in p["message"])
    assert any(
        p["message"].startswith(f"citeline: 2 files in {folder} cannot be parsed and are left")
        for p in told
    )
    # the same situation again: nothing new is said
    lsp.notify("textDocument/didSave", {"textDocument": {"uri": uri(folder / "worse.md")}})
    assert messages(lsp, 1.0) == []


def test_a_failure_of_the_workspace_is_told_once(lsp: LspServer, folder: Path) -> None:
    lsp.initialize([folder], initializationOptions={"limits": {"max_files": 1}})
    for _ in range(2):
        answer = command(lsp, "citeline.search", {"query": "hashtable"})
        assert answer["error"]["data"]["code"] == "resource_limit"
    told = [m for m in messages(lsp, 1.0) if "max_files" in m]
    assert len(told) == 1 and told[0].startswith("citeline: ")
    # a request's own mistake is not the workspace's: nothing is shown
    assert command(lsp, "citeline.search", {"query": ""})["error"]["code"] == -32602
    assert messages(lsp, 0.5) == []


def test_invalid_settings_are_told_and_the_previous_ones_stay(lsp: LspServer, folder: Path) -> None:
    lsp.initialize([folder], initializationOptions={"symbols": {"cap": 1}})
    lsp.notify("workspace/didChangeConfiguration", {"settings": {"symbols": {"cap": 0}}})
    told = wait_for(lsp, "window/showMessage", lambda p: p["type"] == 1)
    (error,) = [p for p in told if p["type"] == 1]
    assert error["message"] == (
        "citeline: Invalid citeline setting: symbols.cap must be a positive integer, got 0. "
        "The previous settings stay in effect."
    )
    assert len(lsp.call("workspace/symbol", {"query": "hashtable"})["result"]) == 1


# -- the client process --------------------------------------------------------------------------


def test_a_client_process_not_visible_here_is_not_watched(lsp: LspServer, folder: Path) -> None:
    lsp.initialize([folder], processId=2**22 + 4321)  # above any pid_max
    assert lsp.call("workspace/symbol", {"query": "hashtable"})["result"]
    assert lsp.poll() is None
    assert any("is not a process visible here" in line for line in lsp.log)


def test_without_pidfd_the_client_process_is_polled(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from citeline.lsp import server as module
    from citeline.lsp import transport

    def no_pidfd(pid: int) -> int:
        raise OSError("pidfd_open not supported")

    monkeypatch.setattr(module.os, "pidfd_open", no_pidfd)
    monkeypatch.setattr(transport, "PARENT_POLL_INTERVAL", 0.05)
    parent = subprocess.Popen(["sleep", "30"])
    served = LspServer()
    try:
        served.initialize([folder], processId=parent.pid)
        assert served.call("workspace/symbol", {"query": "hashtable"})["result"]
        assert served.poll() is None
        parent.kill()
        parent.wait()
        assert served.wait(5) == 0, "still serving after the client process died"
        assert any(f"the client process {parent.pid} is gone" in line for line in served.log)
    finally:
        parent.kill()
        served.close()


# -- warm-up progress the client refuses -----------------------------------------------------------


def test_a_refused_progress_token_warms_up_silently(lsp: LspServer, folder: Path) -> None:
    lsp._raw()
    lsp.send(
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": None,
                "rootUri": uri(folder),
                "workspaceFolders": [{"uri": uri(folder), "name": "ws"}],
                "capabilities": {"window": {"workDoneProgress": True}},
            },
        }
    )
    assert "result" in lsp.response(1)
    lsp.notify("initialized", {})
    create = lsp.next_message(10)
    assert create is not None and create["method"] == "window/workDoneProgress/create"
    lsp.send({"id": create["id"], "error": {"code": -32603, "message": "no progress here"}})
    assert lsp.call("workspace/symbol", {"query": "hashtable"})["result"]
    assert not [m for m in lsp.seen if m.get("method") == "$/progress"]
    assert any("no warm-up progress" in line for line in lsp.log)
