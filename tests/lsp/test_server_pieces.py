"""Pieces of the language server tested in process, with exact values: work-done progress
(what the editor's progress bar shows), which folder a changed file belongs to and what a
change notification does, the -32603 answer to a bug, and the log filter for error answers.
The session tests (test_lsp_server.py) see these only through a real client's timing."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from citeline.engine import Call
from citeline.lsp import features
from citeline.lsp import jobs as job_pool
from citeline.lsp import server as srv


class FakeProgress:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object, object]] = []

    def begin(self, token: object, value: object) -> None:
        self.sent.append(("begin", token, value))

    def report(self, token: object, value: object) -> None:
        self.sent.append(("report", token, value))

    def end(self, token: object, value: object) -> None:
        self.sent.append(("end", token, value))


class FakeServer:
    def __init__(self) -> None:
        self.work_done_progress = FakeProgress()


class ImmediateLoop:
    """call_soon_threadsafe that runs the call at once (the engine's thread is this one)."""

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        fn(*args)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(job_pool.time, "monotonic", lambda: now[0])
    return now


def progress() -> tuple[job_pool.WorkDone, FakeProgress]:
    fake = FakeServer()
    return job_pool.WorkDone(fake, ImmediateLoop(), "tok-1"), fake.work_done_progress  # type: ignore[arg-type]


def reports(fake: FakeProgress) -> list[tuple[str | None, int | None]]:
    out = []
    for kind, token, value in fake.sent:
        assert token == "tok-1"
        if kind == "report":
            assert isinstance(value, types.WorkDoneProgressReport)
            out.append((value.message, value.percentage))
    return out


def test_progress_begins_at_zero_percent_and_ends_with_its_message() -> None:
    bar, fake = progress()
    bar.begin("citeline.search")
    bar.end("done")
    (begin_kind, _, begin), (end_kind, _, end) = fake.sent
    assert begin_kind == "begin" and end_kind == "end"
    assert begin == types.WorkDoneProgressBegin(
        title="citeline.search", cancellable=False, percentage=0
    )
    assert end == types.WorkDoneProgressEnd(message="done")


def test_progress_reports_stage_count_and_whole_percent(clock: list[float]) -> None:
    bar, fake = progress()
    bar("capture", 1, 3)
    assert reports(fake) == [("capture 1/3", 33)]  # rounded down, never 34
    clock[0] += srv.PROGRESS_INTERVAL
    bar("analyse", 2, 3)
    assert reports(fake)[-1] == ("analyse 2/3", 66)
    clock[0] += srv.PROGRESS_INTERVAL
    bar("analyse", 0, 0)  # nothing to do is all done
    assert reports(fake)[-1] == ("analyse 0/0", 100)


def test_progress_at_most_ten_reports_a_second_but_always_the_last(clock: list[float]) -> None:
    bar, fake = progress()
    bar("capture", 1, 100)
    clock[0] += srv.PROGRESS_INTERVAL / 2
    bar("capture", 2, 100)  # too soon: dropped
    assert reports(fake) == [("capture 1/100", 1)]
    bar("capture", 100, 100)  # the last one is never dropped
    assert reports(fake)[-1] == ("capture 100/100", 100)
    # the interval counts from the last report sent, not the last call
    clock[0] += srv.PROGRESS_INTERVAL - 0.01
    bar("analyse", 5, 100)
    assert len(reports(fake)) == 2
    clock[0] += 0.01
    bar("analyse", 6, 100)
    assert reports(fake)[-1] == ("analyse 6/100", 6)


def test_the_first_report_is_sent_at_once(clock: list[float]) -> None:
    clock[0] = srv.PROGRESS_INTERVAL  # a young clock: the first report is still due
    bar, fake = progress()
    bar("capture", 1, 10)
    assert reports(fake) == [("capture 1/10", 10)]


def citeline_log(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The messages citeline logged during the test."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("citeline")]


def errors_sent(ls: srv.CitelineServer) -> list[tuple[Any, Any]]:
    """The (id, error) pairs the protocol answers with, instead of writing them."""
    sent: list[tuple[Any, Any]] = []
    ls.protocol.send_error = lambda msg_id, err: sent.append((msg_id, err))  # type: ignore[method-assign]
    return sent


_MADE: list[srv.CitelineServer] = []


@pytest.fixture(autouse=True)
def _close_servers_made() -> Iterator[None]:
    """Each server made by server_with has its engine closed when its test ends."""
    yield
    while _MADE:
        _MADE.pop().engine.close()


def server_with(folders: list[str]) -> srv.CitelineServer:
    ls = srv.CitelineServer()
    ls.places.folders = lambda: [(f"file://{p}", p) for p in folders]  # type: ignore[method-assign]
    _MADE.append(ls)
    return ls


def test_a_file_belongs_to_the_deepest_folder_that_holds_it(tmp_path: Path) -> None:
    outer, inner, sibling = tmp_path / "ws", tmp_path / "ws" / "sub", tmp_path / "ws-other"
    ls = server_with([str(outer), str(inner), str(sibling)])
    assert ls.places.folder_of(str(inner / "a.md")) == str(inner)
    assert ls.places.folder_of(str(outer / "a.md")) == str(outer)
    assert ls.places.folder_of(str(sibling / "a.md")) == str(sibling)  # not "ws" by prefix
    assert ls.places.folder_of(str(tmp_path / "elsewhere.md")) is None
    assert ls.places.folder_of(str(outer)) is None  # the folder itself is not in it
    # given in the other order, the deepest still wins
    ls.places.folders = lambda: [(f"file://{p}", p) for p in (str(inner), str(outer))]  # type: ignore[method-assign]
    assert ls.places.folder_of(str(inner / "b" / "c.md")) == str(inner)


def test_a_change_on_disk_marks_the_file_and_rechecks_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    ls = server_with([str(folder)])
    marked: list[tuple[str, list[str] | None]] = []
    checked: list[str] = []
    ls.engine.changed = lambda bundle, paths=None: marked.append((bundle, paths))  # type: ignore[method-assign]
    ls.schedule_check = lambda f, delay=0.0: checked.append(f)  # type: ignore[method-assign]
    ls.document_changed((folder / "d" / "a.md").as_uri())
    assert marked == [(str(folder), ["d/a.md"])]
    assert checked == [str(folder)]
    # a file that is not Markdown: read again next time, no diagnostics to redo
    ls.document_changed((folder / "notes.txt").as_uri())
    assert marked[-1] == (str(folder), ["notes.txt"]) and checked == [str(folder)]
    ls.document_changed((folder / "B.MARKDOWN").as_uri())
    assert checked == [str(folder)] * 2
    # unsaved text: nothing on disk changed, but the diagnostics follow the buffer
    ls.document_changed((folder / "c.md").as_uri(), on_disk=False)
    assert len(marked) == 3 and checked == [str(folder)] * 3
    ls.document_changed((tmp_path / "outside.md").as_uri())  # no folder: nothing
    ls.document_changed("untitled:Untitled-1")  # not a file: nothing
    assert len(marked) == 3 and len(checked) == 3


def test_a_bug_is_answered_with_one_line_and_the_internal_error_envelope(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, "citeline"):
        err = srv.bug_error(KeyError("boom"), "citeline.search")
    assert err.code == -32603
    assert isinstance(err.data, dict) and err.data["code"] == "internal_error"
    assert str(err) == err.data["message"]
    assert "\n" not in err.data["message"]
    (record,) = [r for r in caplog.records if r.name.startswith("citeline")]
    assert record.getMessage() == "internal error in citeline.search"
    assert record.exc_info is not None and isinstance(record.exc_info[1], KeyError)


def test_the_commands_are_advertised() -> None:
    commands = srv.server.protocol.fm.commands
    assert set(srv.COMMANDS) <= set(commands)
    assert all(callable(commands[name]) for name in srv.COMMANDS)


def test_error_answers_are_not_logged_as_crashes() -> None:
    quiet = srv._QuietRequestErrors()

    def record(exc: BaseException | None) -> logging.LogRecord:
        info = (type(exc), exc, None) if exc is not None else None
        return logging.LogRecord("pygls", logging.ERROR, __file__, 1, "failed", (), info)

    answered = JsonRpcInvalidParams("bad", data={"code": "schema_validation"})
    assert quiet.filter(record(answered)) is False  # our own answer: not a crash
    assert quiet.filter(record(JsonRpcException("no data"))) is True
    assert quiet.filter(record(ValueError("a bug"))) is True
    assert quiet.filter(record(None)) is True


def test_a_progress_report_from_another_thread_reaches_the_loop() -> None:
    """The engine reports from its worker thread; the report is sent from the loop."""

    async def run() -> list[tuple[str | None, int | None]]:
        fake = FakeServer()
        bar = job_pool.WorkDone(fake, asyncio.get_running_loop(), "tok-1")  # type: ignore[arg-type]
        await asyncio.to_thread(bar, "capture", 5, 10)
        await asyncio.sleep(0)
        return reports(fake.work_done_progress)

    assert asyncio.run(run()) == [("capture 5/10", 50)]


class Left(Exception):
    """os._exit, caught: main() ends the process with it."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class FakePool:
    def __init__(self) -> None:
        self.shut: list[tuple[bool, bool]] = []

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.shut.append((wait, cancel_futures))


class FakeEngine:
    closed = 0

    def close(self, wait: bool = False) -> None:
        self.closed += 1


class FakeProtocol:
    def __init__(self, shutdown: bool) -> None:
        self._shutdown = shutdown


class FakeLS:
    """What main() uses of the server: start_io, then the clean-up it always does."""

    def __init__(self, exit_requested: bool, shutdown: bool, fail: bool = False) -> None:
        self.exit_requested = exit_requested
        self.protocol = FakeProtocol(shutdown)
        self.fail = fail
        self.pool = FakePool()
        self.engine = FakeEngine()
        self.events: list[str] = []

    def start_io(self) -> None:
        self.events.append("served")
        if self.fail:
            raise RuntimeError("the transport broke")

    def cancel_all(self) -> None:
        self.events.append("cancelled")


CONFIGURED: list[dict[str, Any]] = []


def run_main(monkeypatch: pytest.MonkeyPatch, ls: FakeLS, level: str | None = None) -> int:
    def leave(code: int) -> None:
        raise Left(code)

    monkeypatch.setattr(srv, "server", ls)
    monkeypatch.setattr(srv.os, "_exit", leave)
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: CONFIGURED.append(kw))
    monkeypatch.setattr(logging, "shutdown", lambda: None)
    if level is None:
        monkeypatch.delenv("CITELINE_LOG", raising=False)
    else:
        monkeypatch.setenv("CITELINE_LOG", level)
    for name in ("citeline", "pygls"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.getLogger(name).level)
    rpc_log = logging.getLogger("pygls.protocol.json_rpc")
    monkeypatch.setattr(rpc_log, "filters", list(rpc_log.filters))
    try:
        srv.main()
    except Left as left:
        return left.code
    raise AssertionError("main() returned instead of leaving with os._exit")


@pytest.mark.parametrize(
    ("exit_requested", "shutdown", "code"),
    [(False, False, 0), (True, True, 0), (True, False, 1), (False, True, 0)],
)
def test_main_exit_code_is_1_only_for_exit_without_shutdown(
    monkeypatch: pytest.MonkeyPatch, exit_requested: bool, shutdown: bool, code: int
) -> None:
    """LSP: `exit` after `shutdown` ends with 0, `exit` without it with 1; the end of
    stdin (no `exit`) is a normal end."""
    ls = FakeLS(exit_requested, shutdown)
    assert run_main(monkeypatch, ls) == code
    # whatever the ending: engine work cancelled, the pool and the engine stopped at once
    assert ls.events == ["served", "cancelled"]
    assert ls.pool.shut == [(False, True)]
    assert ls.engine.closed == 1


def test_main_cleans_up_and_leaves_even_when_serving_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ls = FakeLS(False, False, fail=True)
    assert run_main(monkeypatch, ls) == 0
    assert ls.events == ["served", "cancelled"] and ls.engine.closed == 1


def test_main_log_level_from_the_environment_and_quiet_error_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    CONFIGURED.clear()
    run_main(monkeypatch, FakeLS(False, False), level="debug")
    # stdout carries the protocol: the log goes to stderr, each line saying whose it is
    assert [
        {
            "stream": sys.stderr,
            "level": logging.WARNING,
            "format": "citeline-lsp %(levelname)s %(name)s: %(message)s",
        }
    ] == CONFIGURED
    assert logging.getLogger("citeline").level == logging.DEBUG
    assert logging.getLogger("pygls").level == logging.DEBUG
    filters = logging.getLogger("pygls.protocol.json_rpc").filters
    assert any(isinstance(f, srv._QuietRequestErrors) for f in filters)
    run_main(monkeypatch, FakeLS(False, False))
    assert logging.getLogger("citeline").level == logging.WARNING
    assert logging.getLogger("pygls").level == logging.WARNING


def test_choose_folder_by_uri_or_path_and_the_error_naming_the_open_ones(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    ls = server_with([str(one), str(two)])
    assert ls.places.choose_folder(None) == str(one)  # the first folder by default
    assert ls.places.choose_folder(f"file://{two}") == str(two)  # the client's own URI
    assert ls.places.choose_folder(two.as_uri()) == str(two)
    assert ls.places.choose_folder(f"file://{two}/") == str(two)  # another spelling of it
    assert ls.places.choose_folder(str(two)) == str(two)  # a plain path
    assert ls.places.choose_folder(str(two) + "/") == str(two)  # normalised
    with pytest.raises(srv.CitelineError) as err:
        ls.places.choose_folder(42)
    assert err.value.code == "schema_validation"
    assert err.value.message == "root must be a file URI of a workspace folder."
    assert err.value.details["field"] == "root"
    with pytest.raises(srv.CitelineError) as err:
        ls.places.choose_folder((tmp_path / "three").as_uri())
    assert err.value.code == "schema_validation"
    assert err.value.details["field"] == "root"
    assert err.value.message == (
        f"root {(tmp_path / 'three').as_uri()!r} is not a workspace folder; open "
        f"folders: file://{one}, file://{two}."
    )
    ls.places.folders = lambda: []  # type: ignore[method-assign]
    with pytest.raises(srv.CitelineError) as err:
        ls.places.choose_folder(two.as_uri())
    assert err.value.message.endswith("open folders: none.")
    with pytest.raises(srv.CitelineError) as err:
        ls.places.choose_folder(None)
    assert err.value.code == "bundle_not_found"


def test_a_folder_given_with_a_trailing_slash_still_holds_its_files(tmp_path: Path) -> None:
    ls = server_with([str(tmp_path / "ws") + "/"])
    assert ls.places.folder_of(str(tmp_path / "ws" / "a.md")) == str(tmp_path / "ws") + "/"


def test_captured_is_a_searchable_file_of_the_last_capture(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text("# A\n")
    (ws / "index.md").write_text("# Index\n")
    ls = server_with([str(ws)])
    assert features.captured(ls, str(ws), "a.md") is False  # nothing captured yet
    ls.engine.prepare(ls.engine.call(ws))
    assert features.captured(ls, str(ws), "a.md") is True
    assert features.captured(ls, str(ws), "b.md") is False  # not in the capture
    assert features.captured(ls, str(ws), "index.md") is False  # captured, but reserved


def test_a_failure_on_the_workspace_itself_is_told_once_per_folder(tmp_path: Path) -> None:
    ls = server_with([str(tmp_path)])
    told: list[tuple[str, str]] = []
    ls.tell = lambda folder, message, key=None: told.append((folder, message))  # type: ignore[method-assign]
    for code in ("resource_limit", "parse_error", "bundle_invalid"):
        exc = JsonRpcException(f"{code} happened.", data={"code": code})
        ls.tell_failure("/ws", exc)
        assert told[-1] == ("/ws", f"citeline: {code} happened.")
    ls.tell_failure("/ws", JsonRpcException("bad query", data={"code": "schema_validation"}))
    ls.tell_failure("/ws", JsonRpcException("odd", data="resource_limit"))
    assert len(told) == 3  # a bad request, or data that is not an error object: nothing


def test_a_new_check_replaces_the_pending_one() -> None:
    async def run() -> tuple[bool, bool, int]:
        ls = server_with([])
        ls.schedule_check("/ws", delay=30)
        first = ls.pending_check["/ws"]
        ls.schedule_check("/other", delay=30)
        ls.schedule_check("/ws", delay=30)
        second = ls.pending_check["/ws"]
        kept = not ls.pending_check["/other"].cancelled()
        for handle in ls.pending_check.values():
            handle.cancel()
        return first.cancelled() and second is not first, kept, len(ls.pending_check)

    assert asyncio.run(run()) == (True, True, 2)


def test_the_server_says_why_it_leaves_when_its_client_is_gone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ls = server_with([])
    cancelled: list[bool] = []
    ls.cancel_all = lambda: cancelled.append(True)  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, "citeline"):
        ls.parent_gone(4242)
    assert citeline_log(caplog) == ["the client process 4242 is gone: exiting"]
    assert cancelled == [True]


def test_asking_whether_a_process_lives_does_not_signal_it() -> None:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert srv.process_alive(child.pid) is True
        time.sleep(0.2)
        assert child.poll() is None  # signal 0 only: a real signal would have ended it
    finally:
        child.kill()
        child.wait()


def run_jobs_here(ls: srv.CitelineServer) -> list[tuple[srv.CancelToken, Any]]:
    """Make run_engine run each job at once in this thread; returns the (cancel token,
    progress) handed to each job, in order."""
    handed: list[tuple[srv.CancelToken, Any]] = []

    async def run_engine(job: Callable[..., Any], **_: Any) -> Any:
        token, progress = srv.CancelToken(), (lambda *a: None)
        handed.append((token, progress))
        return job(token, progress)

    ls.run_engine = run_engine  # type: ignore[method-assign]
    return handed


def test_commands_hand_the_engine_their_folder_cancel_progress_arrival_and_unsaved_text(
    tmp_path: Path,
) -> None:
    """What run_command gives the engine: the chosen folder, the request as sent (a request
    that is not an object is the engine's to refuse, not a missing `root`), the job's own
    cancel token and progress, the time the request arrived (a capture started after it is
    fresh enough to share) and, except for concepts (file names and titles only), the
    open documents' unsaved text."""
    folder = str(tmp_path / "ws")
    ls = server_with([folder])
    seen: list[tuple[str, Any, Any, dict[str, Any]]] = []

    def spy(name: str) -> Callable[..., dict[str, Any]]:
        def answer(call: Call, request: Any) -> dict[str, Any]:
            kw = {f: getattr(call, f) for f in ("cancel", "progress", "fresh_after", "overlay")}
            seen.append((name, call.bundle, request, kw))
            return {"answered": name}

        return answer

    for name in ("search", "lines", "concepts"):
        setattr(ls.engine, name, spy(name))
    unsaved = {"a.md": b"# Unsaved\n"}
    ls.overlay = lambda f: unsaved if f == folder else None  # type: ignore[method-assign]
    handed = run_jobs_here(ls)

    def run(command: str, request: Any) -> Any:
        params = types.ExecuteCommandParams(command=command, arguments=[request])
        return asyncio.run(ls.run_command(params))

    before = time.monotonic()
    assert run("citeline.search", {"query": "a"}) == {"answered": "search"}
    assert run("citeline.lines", {"exact": "a"}) == {"answered": "lines"}
    assert run("citeline.concepts", {"query": "a"}) == {"answered": "concepts"}
    assert run("citeline.search", "not an object") == {"answered": "search"}
    after = time.monotonic()
    assert [(n, b) for n, b, _, _ in seen] == [
        ("search", folder),
        ("lines", folder),
        ("concepts", folder),
        ("search", folder),
    ]
    assert seen[1][2] == {"exact": "a"} and seen[3][2] == "not an object"
    for (name, _, _, kw), (token, progress) in zip(seen, handed, strict=True):
        assert kw["cancel"] is token and kw["progress"] is progress, name
        assert before <= kw["fresh_after"] <= after, name
        assert kw.get("overlay") == (None if name == "concepts" else unsaved), name


def test_workspace_symbols_hand_the_engine_cancel_progress_arrival_and_unsaved_text(
    tmp_path: Path,
) -> None:
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    ls = server_with([one, two])
    seen: list[tuple[Any, Any]] = []

    def symbols(call: Any, request: Any) -> list[Any]:
        seen.append((call, request))
        return []

    ls.engine.symbols = symbols  # type: ignore[method-assign]
    ls.overlay = lambda f: {"a.md": f.encode()} if f == two else None  # type: ignore[method-assign]
    handed = run_jobs_here(ls)
    before = time.monotonic()
    found = asyncio.run(features.workspace_symbols(ls, types.WorkspaceSymbolParams(query="hash")))
    after = time.monotonic()
    assert found == []
    assert [(c.bundle, r.query) for c, r in seen] == [(one, "hash"), (two, "hash")]
    ((token, progress),) = handed
    for call, request in seen:
        assert call.cancel is token and call.progress is progress
        assert before <= call.fresh_after <= after
        assert call.overlay == (None if call.bundle == one else {"a.md": two.encode()})
        assert call.settings == ls.engine_settings(call.bundle)
        assert (request.cap, request.list_cap) == (ls.options.symbol_cap, ls.options.list_cap)


def test_unsaved_text_with_a_lone_surrogate_is_searched_as_the_bytes_it_stands_for(
    tmp_path: Path,
) -> None:
    """JSON may carry "\\ud800" in an open document: with `unsaved` its text is searched as
    the bytes UTF-8 would give it (surrogatepass), which are not UTF-8, so the file is a
    parse error like a broken file on disk, and not an internal error of the server."""
    folder = str(tmp_path / "ws")
    ls = server_with([folder])
    ls.places.open_texts = lambda f: {"a.md": "# A\n\ud800\n", "b.md": "# B\n"}  # type: ignore[method-assign]
    assert ls.overlay(folder) is None  # the setting is off by default
    assert ls.apply_settings({"unsaved": True})
    assert ls.overlay(folder) == {"a.md": b"# A\n\xed\xa0\x80\n", "b.md": b"# B\n"}


def test_shutdown_cancels_engine_jobs_and_stops_both_pools_without_waiting() -> None:
    """`shutdown` (the end of start_io, after `exit` or a lost client) cancels every running
    engine job, drops the jobs still queued in both pools and returns at once: a job stuck
    in a slow folder must not hold the editor's "stop server" up."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    ls = server_with([])
    running, other = srv.CancelToken(), srv.CancelToken()
    ls.tokens.update({running, other})
    ls._thread_pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    busy = [ls.pool.submit(release.wait) for _ in range(4)]  # every engine worker taken
    queued = ls.pool.submit(lambda: "ran")
    reader_busy = ls._thread_pool.submit(release.wait)
    reader_queued = ls._thread_pool.submit(lambda: "ran")
    try:
        done = threading.Event()
        stopper = threading.Thread(target=lambda: (ls.shutdown(), done.set()), daemon=True)
        stopper.start()
        assert done.wait(10), "shutdown waited for the running jobs"
        assert running.is_cancelled and other.is_cancelled
        assert queued.cancelled() and reader_queued.cancelled()
        assert not any(f.done() for f in [*busy, reader_busy])  # still running: not waited on
        with pytest.raises(RuntimeError):
            ls.pool.submit(lambda: None)
        with pytest.raises(RuntimeError):
            ls._thread_pool.submit(lambda: None)
    finally:
        release.set()


def fake_open_documents(
    monkeypatch: pytest.MonkeyPatch, docs: dict[str, tuple[str | None, str]]
) -> None:
    """The editor's open documents: URI -> (file path or None, text)."""
    from types import SimpleNamespace

    workspace = SimpleNamespace(
        text_documents={
            uri: SimpleNamespace(path=path, source=text) for uri, (path, text) in docs.items()
        }
    )
    monkeypatch.setattr(srv.CitelineServer, "workspace", property(lambda self: workspace))


def test_open_texts_are_the_open_markdown_documents_of_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    fake_open_documents(
        monkeypatch,
        {
            "u1": (str(ws / "a.md"), "A"),
            "u2": (str(ws / "sub" / "B.MARKDOWN"), "B"),
            "u3": (str(ws / "notes.txt"), "not Markdown"),
            "u4": (str(tmp_path / "ws-other" / "c.md"), "another folder"),
            "u5": (str(tmp_path / "d.md"), "outside"),
            "u6": (None, "untitled"),
        },
    )
    ls = server_with([str(ws)])
    expected = {"a.md": "A", "sub/B.MARKDOWN": "B"}
    assert ls.places.open_texts(str(ws)) == expected
    assert ls.places.open_texts(str(ws) + "/") == expected  # the folder spelt with a slash
    assert ls.places.open_texts(str(tmp_path / "elsewhere")) == {}


def test_problems_of_a_folder_follow_the_editor_text_of_its_open_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk's parse errors, except for open documents, whose editor text decides; an
    open document that the folder's capture does not hold (a new, unsaved file that is
    not searched) has none."""
    folder = str(tmp_path / "ws")
    ls = server_with([folder])
    broken_yaml = "---\ntitle: [unclosed\n---\n# X\n"
    open_docs = {
        "new.md": broken_yaml,  # neither on disk nor captured: no diagnostics
        "fixed.md": "# Fixed in the editor\n",  # broken on disk
        "broken-in-editor.md": broken_yaml,  # fine on disk, captured
        "surrogate.md": "# A\n\ud800\n",  # captured
        "still-broken.md": broken_yaml,  # broken on disk, not in the last capture
    }
    ls.places.open_texts = lambda f: open_docs if f == folder else {}  # type: ignore[method-assign]
    searchable = {"broken-in-editor.md", "surrogate.md"}
    monkeypatch.setattr(features, "captured", lambda _ls, f, rel: rel in searchable)
    on_disk = [
        srv.Problem("fixed.md", 1, "invalid UTF-8 (byte 0xff at offset 0)"),
        srv.Problem("closed.md", 4, "invalid YAML in front matter: on disk"),
        srv.Problem("still-broken.md", 9, "invalid YAML in front matter: on disk"),
    ]
    asked: list[tuple[Any, ...]] = []

    def problems(call: Any, analysis: Any) -> list[Any]:
        asked.append((call.bundle, analysis, call.settings, call.cancel))
        return on_disk

    ls.engine.problems = problems  # type: ignore[method-assign]
    yaml_reason = "invalid YAML in front matter: expected ',' or ']', but got '<stream end>'"
    expected = [
        srv.Problem("broken-in-editor.md", 2, yaml_reason),
        srv.Problem("closed.md", 4, "invalid YAML in front matter: on disk"),
        srv.Problem("still-broken.md", 2, yaml_reason),
        srv.Problem("surrogate.md", 2, "invalid UTF-8 (byte 0xed at offset 4)"),
    ]
    token = srv.CancelToken()
    assert features.problems_of(ls, folder, token) == expected
    opts = ls.options
    assert asked == [(folder, opts.relevance_options.analysis, opts.engine, token)]
    # the warm-up hands over the problems of the index it built: not asked again
    assert features.problems_of(ls, folder, token, found=on_disk) == expected
    assert len(asked) == 1


def test_check_folder_runs_after_the_warm_up_and_says_which_folder_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = str(tmp_path / "ws")
    ls = server_with([folder])
    runs: list[dict[str, Any]] = []
    checked: list[tuple[Any, ...]] = []
    failures: list[Any] = []
    outcome: list[Any] = [[]]

    async def run_engine(job: Callable[..., Any], **kw: Any) -> Any:
        runs.append(kw)
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        token = srv.CancelToken()
        kw["token"] = token
        return job(token, None)

    def problems_of(_ls: Any, f: str, cancel: Any, found: Any = "not given") -> list[Any]:
        checked.append((f, cancel, found))
        return []

    ls.run_engine = run_engine  # type: ignore[method-assign]
    monkeypatch.setattr(features, "problems_of", problems_of)
    ls.tell_failure = lambda f, exc: failures.append((f, exc))  # type: ignore[method-assign]
    ls.text_document_publish_diagnostics = lambda params: None  # type: ignore[method-assign]
    handed = [srv.Problem("a.md", 1, "r")]
    asyncio.run(features.check_folder(ls, folder))
    asyncio.run(features.check_folder(ls, folder, after_warm_up=False, found=handed))
    assert [r["after_warm_up"] for r in runs] == [True, False]
    assert checked == [(folder, runs[0]["token"], None), (folder, runs[1]["token"], handed)]
    outcome[0] = JsonRpcException("the folder is gone.", data={"code": "bundle_not_found"})
    with caplog.at_level(logging.WARNING, "citeline"):
        asyncio.run(features.check_folder(ls, folder))
    logged = citeline_log(caplog)
    assert logged == [f"diagnostics for {folder}: the folder is gone."]
    assert failures == [(folder, outcome[0])]


def test_skipped_files_are_told_once_per_set_and_again_after_they_were_fixed(
    tmp_path: Path,
) -> None:
    """With skip_invalid (the editors' default), check_folder tells the user which files
    are left out, once per folder and set of files: the same set again says nothing,
    another set of the same size does, and so does a set again after a check that found
    none."""
    folder = str(tmp_path / "ws")
    ls = server_with([folder])
    assert ls.options.engine.skip_invalid
    outcome: list[list[Any]] = []

    async def run_engine(job: Callable[..., Any], **_: Any) -> Any:
        return outcome[-1]

    shown: list[str] = []
    ls.run_engine = run_engine  # type: ignore[method-assign]
    ls.window_show_message = lambda params: shown.append(params.message)  # type: ignore[method-assign]
    ls.text_document_publish_diagnostics = lambda params: None  # type: ignore[method-assign]
    a, b = srv.Problem("a.md", 1, "r"), srv.Problem("b.md", 1, "r")
    one = (
        f"citeline: 1 file in {folder} cannot be parsed and is left out of search (see the "
        "diagnostics). Whether such files block search is the setting skip_invalid (VS Code: "
        "citeline.skipInvalid; Neovim: settings.skip_invalid; Emacs: :skip_invalid in "
        "citeline-settings)."
    )
    for problems, told in (
        ([a], [one]),
        ([a], []),  # the same file again: nothing new to say
        ([b], [one]),  # another file, the same words
        ([], []),  # all fine: nothing to say ...
        ([b], [one]),  # ... but the same file broken again is told again
        ([a, b], [one.replace("1 file", "2 files").replace("is left", "are left")]),
    ):
        outcome.append(problems)
        before = len(shown)
        asyncio.run(features.check_folder(ls, folder))
        assert shown[before:] == told, problems
    # each folder has its own situation: the same file name elsewhere is news
    other = str(tmp_path / "other")
    outcome.append([a])
    asyncio.run(features.check_folder(ls, other))
    assert shown[-1] == one.replace(folder, other)


def test_a_lost_client_is_logged_and_the_server_shuts_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broken pipe to the client ends start_io with one error line, not a traceback, and
    the engine's jobs and pools are stopped as after `shutdown`."""
    import io

    ls = server_with([])
    token = srv.CancelToken()
    ls.tokens.add(token)

    async def serve(frames: Any) -> None:
        raise BrokenPipeError

    ls.serve = serve  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, "citeline"):
        ls.start_io(io.BytesIO(), io.BytesIO())
    logged = citeline_log(caplog)
    assert logged == ["the connection to the client is lost; shutting down"]
    assert token.is_cancelled
    with pytest.raises(RuntimeError):
        ls.pool.submit(lambda: None)


def test_threads_are_named_after_what_they_do(tmp_path: Path) -> None:
    """A thread dump of a busy server (py-spy, faulthandler) shows citeline's own threads
    by name: the one reading stdin and the engine's workers."""
    import threading

    from inprocess import LspServer

    (tmp_path / "a.md").write_text("# Alpha\n\nalpha text\n")
    lsp = LspServer()
    try:
        lsp.initialize([tmp_path])
        assert lsp.call("workspace/symbol", {"query": "alpha"})["result"]
        names = [t.name for t in threading.enumerate()]
        assert sum(n.startswith("citeline-stdin") for n in names) == 1, names
        assert any(n.startswith("citeline-engine") for n in names), names
    finally:
        lsp.close()


async def warm_up_done(ls: srv.CitelineServer) -> None:
    """Wait for the warm-up's gate, then for its background task (diagnostics) to end."""
    await asyncio.wait_for(asyncio.shield(ls.warming), 10)
    for _ in range(1000):
        if not ls.background:
            return
        await asyncio.sleep(0.01)


def test_warm_ups_run_one_at_a_time_on_their_folders_with_both_profiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The warm-up prepares each folder (only the added ones when folders are added) for the
    settings' options and for `recall` (what the editors search with), hands the capture's
    start time to the engine (requests waiting for it may share that capture), and a
    second warm-up waits for the first: they would read the same files. A client that
    refuses the progress token gets a warm-up without progress."""
    import threading
    from types import SimpleNamespace

    from citeline.engine.text.options import AnalysisOptions
    from citeline.engine.text.terms import Tokenizer

    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    ls = server_with([one, two])
    prepared: list[tuple[str, Any, float]] = []
    calls: list[str] = []
    first_may_finish = threading.Event()

    def prepare(call: Any, options: Any) -> Any:
        folder = call.bundle
        calls.append(folder)
        if len(calls) == 1:
            first_may_finish.wait(10)  # the first call of the first warm-up takes a while
        assert call.settings is ls.options.engine and isinstance(call.cancel, srv.CancelToken)
        prepared.append((folder, options, call.fresh_after))
        return SimpleNamespace(problems=[srv.Problem(f"{len(prepared)}.md", 1, "r")])

    checked: list[tuple[str, bool, Any]] = []

    async def check_folder(
        _ls: Any, folder: str, after_warm_up: bool = True, found: Any = None
    ) -> None:
        checked.append((folder, after_warm_up, found))

    class Refusing:
        async def create_async(self, token: str) -> None:
            raise RuntimeError("the client refused the token")

    ls.engine.prepare = prepare  # type: ignore[method-assign]
    monkeypatch.setattr(features, "check_folder", check_folder)
    ls.client_has_progress = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(srv.CitelineServer, "work_done_progress", property(lambda s: Refusing()))
    monkeypatch.setattr(features.gc, "freeze", lambda: None)  # not the test process's objects

    async def scenario() -> float:
        before = time.monotonic()
        ls.start_warm_up([one])  # a folder was added
        ls.start_warm_up()  # then the settings changed: every folder again
        await asyncio.sleep(0.3)
        assert calls == [one]  # the second waits while the first is busy
        first_may_finish.set()
        await warm_up_done(ls)
        return before

    with caplog.at_level(logging.INFO, "citeline"):
        before = asyncio.run(scenario())
    default = ls.options.relevance_options.analysis
    recall = AnalysisOptions(
        Tokenizer(cjk="bigrams", stemming="english", identifiers="split"),
        outline=True,
        fields=True,
    )
    wanted = [default, recall] if default != recall else [recall]
    order = [one] * len(wanted) + [f for f in (one, two) for _ in wanted]
    assert [(f, o) for f, o, _ in prepared] == list(zip(order, wanted * 3, strict=True))
    assert all(before <= at <= time.monotonic() for _, _, at in prepared)
    # each folder's diagnostics from the problems of the first index built for it
    assert [(f, w) for f, w, _ in checked] == [(one, False), (one, False), (two, False)]
    assert checked[1][2][0].path == f"{len(wanted) + 1}.md"
    assert checked[2][2][0].path == f"{2 * len(wanted) + 1}.md"
    logged = citeline_log(caplog)
    assert logged.count("no warm-up progress: the client refused the token") == 2
    assert not ls.background  # finished tasks are not kept


def test_spawned_tasks_are_held_until_they_end() -> None:
    """asyncio keeps only a weak reference to a task: the server holds each background task
    (warm-ups, diagnostics) until it ends, then lets it go."""
    ls = server_with([])

    async def scenario() -> None:
        release = asyncio.Event()
        ls.spawn(release.wait())
        await asyncio.sleep(0)
        (task,) = ls.background
        assert not task.done()
        release.set()
        await asyncio.wait_for(task, 5)
        await asyncio.sleep(0)
        assert ls.background == set()

    asyncio.run(scenario())


@pytest.mark.parametrize("pid", [None, 0, -1, "self"])
def test_no_client_process_to_watch(pid: Any) -> None:
    """processId null (not started by a process), 0 or negative (os.kill would read them as
    process groups) or the server's own pid: nothing is watched."""
    import os

    ls = server_with([])
    watched: list[Any] = []
    ls.spawn = lambda coro: (watched.append(coro), coro.close())  # type: ignore[method-assign,func-returns-value]

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        loop.add_reader = lambda fd, cb: watched.append(fd)  # type: ignore[method-assign,assignment]
        ls.watch_parent(os.getpid() if pid == "self" else pid)

    asyncio.run(scenario())
    assert watched == []


def test_a_live_client_process_is_watched_and_a_missing_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """pid 1 is a live process like any other (a client that is PID 1 of its container); a
    pid that is not a process here belongs to a client in another PID namespace: logged,
    not watched."""
    import os
    import subprocess

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its pid names no process now
    ls = server_with([])
    polled: list[Any] = []  # without pidfd_open (not Linux >= 5.3) the pid is polled
    ls.spawn = lambda coro: (polled.append(coro), coro.close())  # type: ignore[method-assign,func-returns-value]

    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        readers: list[int] = []
        loop.add_reader = lambda fd, cb: readers.append(fd)  # type: ignore[method-assign,assignment]
        ls.watch_parent(1)
        ls.watch_parent(gone.pid)
        for fd in readers:
            os.close(fd)
        return readers

    with caplog.at_level(logging.WARNING, "citeline"):
        readers = asyncio.run(scenario())
    assert len(readers) + len(polled) == 1  # pid 1 only
    logged = citeline_log(caplog)
    assert logged == [f"processId {gone.pid} is not a process visible here: not watching it"]


def test_a_failing_stdin_ends_serving_with_one_logged_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Failing:
        def read_frame(self) -> bytes:
            raise OSError("Input/output error")

    ls = server_with([])
    with caplog.at_level(logging.ERROR, "citeline"):
        asyncio.run(asyncio.wait_for(ls.serve(Failing()), 10))  # type: ignore[arg-type]
    logged = citeline_log(caplog)
    assert logged == ["reading stdin failed: Input/output error"]


def test_a_warm_up_goes_on_after_a_folder_fails_and_stops_when_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A folder the warm-up cannot prepare (over a limit, say) is logged and left for its
    requests to report; the next folder is still prepared. A cancelled warm-up (a shutdown)
    stops at once. With a client that accepts it, the warm-up reports progress."""
    import re
    from types import SimpleNamespace

    one, two, three = (str(tmp_path / n) for n in ("one", "two", "three"))
    ls = server_with([one, two, three])
    prepared: list[tuple[str, Any]] = []

    def prepare(call: Any, options: Any) -> Any:
        folder = call.bundle
        prepared.append((folder, call.progress))
        if folder == one:
            raise srv.CitelineError("resource_limit", "too many files in one.")
        if folder == two:
            raise srv.CitelineError("cancelled", "The request was cancelled.")
        return SimpleNamespace(problems=[])

    class Accepting(FakeProgress):
        async def create_async(self, token: str) -> None:
            self.sent.append(("create", token, None))

    client = Accepting()
    checked: list[str] = []

    async def check_folder(
        _ls: Any, folder: str, after_warm_up: bool = True, found: Any = None
    ) -> None:
        checked.append(folder)

    ls.engine.prepare = prepare  # type: ignore[method-assign]
    monkeypatch.setattr(features, "check_folder", check_folder)
    ls.client_has_progress = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(srv.CitelineServer, "work_done_progress", property(lambda s: client))
    monkeypatch.setattr(features.gc, "freeze", lambda: None)

    async def scenario() -> None:
        ls.start_warm_up()
        await warm_up_done(ls)

    with caplog.at_level(logging.INFO, "citeline"):
        asyncio.run(scenario())
    # one: its first option failed, the rest of it skipped; two: cancelled, so three
    # is never reached
    assert [f for f, _ in prepared] == [one, two]
    assert all(callable(p) for _, p in prepared)  # progress goes to the client
    kinds = [kind for kind, _, _ in client.sent]
    assert kinds[:2] == ["create", "begin"] and kinds[-1] == "end"
    logged = citeline_log(caplog)
    assert f"warm-up of {one}: too many files in one." in logged
    assert "warm-up stopped: The request was cancelled." in logged
    took = [m for m in logged if m.startswith("warm-up of 3 folder(s) took ")]
    assert len(took) == 1 and re.fullmatch(r"warm-up of 3 folder\(s\) took \d+\.\d\ds", took[0])
    assert float(took[0].split()[-1][:-1]) < 60
    assert checked == [one, two, three]  # every folder's diagnostics, failed or not


def test_settings_switch_the_cache_and_rereading_and_a_bad_change_keeps_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    ls = server_with([])
    shown: list[Any] = []
    ls.window_show_message = lambda params: shown.append(params)  # type: ignore[method-assign]
    assert ls.apply_settings({"cache": False, "reread": True}) is True
    assert ls.engine.reuse.store.folder is None and ls.engine.reread is True
    assert ls.apply_settings({"cache": True, "reread": False}) is True
    assert ls.engine.reuse.store.folder == str(tmp_path / "cache")
    assert ls.engine.reread is False
    good = ls.options
    with caplog.at_level(logging.WARNING, "citeline"):
        assert ls.apply_settings({"cache": "yes", "reread": True}) is False
    assert ls.options is good and ls.engine.reread is False  # nothing changed
    logged = citeline_log(caplog)
    assert len(logged) == 1 and logged[0].startswith("invalid settings: ")
    assert "cache" in logged[0]
    (params,) = shown
    assert params.type == types.MessageType.Error
    assert params.message.endswith(" The previous settings stay in effect.")
    assert logged[0][len("invalid settings: ") :] in params.message


def test_an_engine_job_is_logged_under_its_title(caplog: pytest.LogCaptureFixture) -> None:
    """The DEBUG log names each engine job and how it ended (tests and bug reports read it);
    a job given no title is `citeline`'s."""
    ls = server_with([])
    with caplog.at_level(logging.DEBUG, "citeline"):
        assert asyncio.run(ls.run_engine(lambda c, p: 42, after_warm_up=False)) == 42
    logged = citeline_log(caplog)
    assert [m.rsplit(" after ", 1)[0] for m in logged] == ["engine job citeline finished"]


def test_run_engine_hands_each_job_its_token_and_progress_and_says_how_it_ended(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Each engine job gets its own cancel token and, when the client gave a token, the
    progress to report to; the progress ends with how the request ended (done, the error
    code, internal_error, or cancelled when the client cancelled it), and the DEBUG log says
    how the engine call itself ended (a cancelled request's call may run on and finish)."""
    import threading

    ls = server_with([])
    fake = FakeProgress()
    monkeypatch.setattr(srv.CitelineServer, "work_done_progress", property(lambda s: fake))
    monkeypatch.setattr(job_pool, "log", logging.getLogger("citeline.test-run-engine"))
    handed: list[tuple[Any, Any]] = []
    release = threading.Event()

    def ok(cancel: Any, progress: Any) -> str:
        handed.append((cancel, progress))
        return "answer"

    def over(cancel: Any, progress: Any) -> None:
        raise srv.CitelineError("resource_limit", "too big.")

    def stopped(cancel: Any, progress: Any) -> None:
        raise srv.CitelineError("cancelled", "stopped.")

    def bug(cancel: Any, progress: Any) -> None:
        raise ValueError("a bug")

    def slow(cancel: Any, progress: Any) -> bool:
        release.wait(10)
        return bool(cancel.is_cancelled)

    async def scenario() -> None:
        run = ls.run_engine
        assert await run(ok, work_done_token="t1", title="T", after_warm_up=False) == "answer"
        for job in (over, stopped, bug):
            with pytest.raises(JsonRpcException):
                await run(job, work_done_token="t2", title="T", after_warm_up=False)
        task = asyncio.ensure_future(run(slow, work_done_token="t3", title="T"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        for _ in range(500):
            if any("T finished" in r.getMessage() for r in caplog.records[-1:]):
                break
            await asyncio.sleep(0.01)

    try:
        with caplog.at_level(logging.DEBUG, "citeline.test-run-engine"):
            asyncio.run(scenario())
        ((token, progress),) = handed
        assert isinstance(token, srv.CancelToken) and isinstance(progress, job_pool.WorkDone)
        ends = [value.message for kind, _, value in fake.sent if kind == "end"]
        assert ends == ["done", "resource_limit", "cancelled", "internal_error", "cancelled"]
        jobs = [
            r.getMessage().rsplit(" after ", 1)[0]
            for r in caplog.records
            if r.getMessage().startswith("engine job")
        ]
        assert jobs == [
            "engine job T finished",
            "engine job T failed (resource_limit)",
            "engine job T stopped (cancelled)",
            "engine job T failed",
            "engine job T finished",  # the cancelled request's call ran on
        ]
        assert "internal error in T" in [r.getMessage() for r in caplog.records]
        assert ls.tokens == set()  # no job left to cancel at shutdown
    finally:
        release.set()


def test_an_unparsable_body_is_logged_and_answered_with_a_parse_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ls = server_with([])
    sent = errors_sent(ls)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": ' + b"x" * 300
    try:
        json.loads(body)
    except ValueError as exc:
        reason = str(exc)
    with caplog.at_level(logging.WARNING, "citeline"):
        ls.protocol.handle_body(body)
    logged = citeline_log(caplog)
    assert logged == [f"unparsable message ({reason}): {body[:200]!r}"]
    ((msg_id, err),) = sent
    assert msg_id is None and isinstance(err, srv.JsonRpcParseError)
    assert err.message == f"Parse error: {reason}."


def test_a_message_that_is_not_an_object_is_an_invalid_request() -> None:
    ls = server_with([])
    sent = errors_sent(ls)
    for data, kind in (
        ([{"jsonrpc": "2.0"}], "an array"),
        ("hello", "a string"),
        (7, "a number"),
    ):
        assert ls.protocol.checked_message(data) is None
        msg_id, err = sent.pop()
        assert msg_id is None and isinstance(err, srv.JsonRpcInvalidRequest)
        assert err.message == f"Invalid Request: expected an object, got {kind}."
    # "method" makes it a request, even beside a stray "result": the client is answered
    both = {"jsonrpc": "2.0", "id": 5, "method": "citeline/unknown", "result": 1}
    assert ls.protocol.checked_message(both) is None
    ((msg_id, err),) = sent
    assert msg_id == 5 and isinstance(err, srv.JsonRpcInvalidParams)


@pytest.mark.parametrize(
    ("data", "answered_id", "problem"),
    [
        ({"id": 1, "method": "workspace/symbol"}, 1, 'jsonrpc must be "2.0"'),
        ({"jsonrpc": "2.0", "id": 2, "method": 5}, 2, "method must be a string"),
        ({"jsonrpc": "2.0", "id": 3}, 3, "method is missing"),
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, None, "id must be an integer or a string"),
    ],
)
def test_an_invalid_request_is_answered_and_logged_with_its_problem(
    data: dict[str, Any], answered_id: Any, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    ls = server_with([])
    sent = errors_sent(ls)
    with caplog.at_level(logging.WARNING, "citeline"):
        assert ls.protocol.checked_message(data) is None
    ((msg_id, err),) = sent
    assert msg_id == answered_id and isinstance(err, srv.JsonRpcInvalidRequest)
    assert err.message == f"Invalid Request: {problem}."
    logged = citeline_log(caplog)
    assert logged == [f"invalid request ({problem}): {json.dumps(data)[:200]}"]


def test_a_malformed_response_is_logged_and_never_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ls = server_with([])
    sent = errors_sent(ls)
    malformed = [
        {"jsonrpc": "1.0", "id": 77, "result": None},  # not 2.0
        {"jsonrpc": "2.0", "result": 1},  # no id
        {"jsonrpc": "2.0", "id": 79, "error": "bad", "filler": "x" * 300},  # not an error
    ]
    with caplog.at_level(logging.WARNING, "citeline"):
        for data in malformed:
            assert ls.protocol.checked_message(data) is None
    assert sent == []
    logged = citeline_log(caplog)
    expected = [f"ignoring a malformed response: {json.dumps(d)[:200]}" for d in malformed]
    assert [m for m in logged if m.startswith("ignoring")] == expected
    # a well-formed response to an unknown request is structured (pygls ignores it)
    reply = ls.protocol.checked_message({"jsonrpc": "2.0", "id": 80, "result": 1})
    assert reply is not None and reply.id == 80 and sent == []


def test_params_that_do_not_fit_the_method_are_answered_or_logged_with_where(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A request whose params do not fit its method gets -32602 naming every field that is
    wrong and where; a notification (nothing to answer) is logged the same way. An
    unknown notification with params is handed on (pygls ignores it)."""
    ls = server_with([])
    sent = errors_sent(ls)
    request = {"jsonrpc": "2.0", "id": 9, "method": "textDocument/documentSymbol", "params": {}}
    opened = {"textDocument": {"uri": "file:///a.md"}}
    notification = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened}
    stray = {"jsonrpc": "2.0", "id": 10, "method": "citeline/unknown", "result": 1}
    with caplog.at_level(logging.WARNING, "citeline"):
        assert ls.protocol.checked_message(request) is None
        assert ls.protocol.checked_message(notification) is None
        assert ls.protocol.checked_message(stray) is None
    (msg_id, err), (stray_id, stray_err) = sent
    assert msg_id == 9 and isinstance(err, srv.JsonRpcInvalidParams)
    assert err.message == (
        "Invalid params for textDocument/documentSymbol: required field missing @ "
        "$.params.text_document."
    )
    # not a cattrs validation error: its own words
    assert stray_id == 10 and stray_err.message == (
        "Invalid params for citeline/unknown: JsonRPCRequestMessage.__init__() got an "
        "unexpected keyword argument 'result'."
    )
    logged = citeline_log(caplog)
    assert logged == [
        "ignoring notification textDocument/didOpen: Invalid params for "
        "textDocument/didOpen: "
        + "; ".join(
            f"required field missing @ $.params.text_document.{f}"
            for f in ("language_id", "version", "text")
        )
        + "."
    ]
    unknown = {"jsonrpc": "2.0", "method": "$/unknownNotification", "params": {}}
    assert isinstance(ls.protocol.checked_message(unknown), srv.JsonRPCNotification)


def test_only_execute_command_arguments_are_checked_before_conversion() -> None:
    ls = server_with([])
    sent = errors_sent(ls)
    command = {"command": "citeline.search", "arguments": "alpha"}
    symbols = {"query": "a", "arguments": "not checked here"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "workspace/symbol", "params": symbols}
    assert ls.protocol.checked_message(message) is not None and sent == []
    message = {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand"}
    assert ls.protocol.checked_message({**message, "params": command}) is None
    ((msg_id, err),) = sent
    assert msg_id == 2 and isinstance(err, srv.JsonRpcInvalidParams)
    assert err.data["code"] == "schema_validation"
    assert err.data["details"] == {"field": "arguments"}
    assert err.message == (
        "citeline.search arguments must be an array with one request object; got a string."
    )


def test_a_handler_that_raises_is_logged_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    ls = server_with([])
    boom = RuntimeError("boom")
    reported: list[tuple[Any, Any]] = []

    def handle_message(message: Any) -> None:
        raise boom

    ls.protocol.handle_message = handle_message  # type: ignore[method-assign]
    ls._report_server_error = lambda exc, kind: reported.append((exc, kind))  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, "citeline"):
        ls.protocol.handle_body(
            b'{"jsonrpc": "2.0", "method": "$/unknownNotification", "params": {}}'
        )
    records = [r for r in caplog.records if r.name.startswith("citeline")]
    assert [r.getMessage() for r in records] == ["unable to handle message"]
    assert records[0].exc_info is not None and records[0].exc_info[1] is boom
    assert reported == [(boom, JsonRpcException)]
    assert ls.version == srv.VERSION  # what initialize's serverInfo reports
