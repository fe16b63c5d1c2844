"""MCP calls through the real server object and the SDK's client: cancellation reaches the
engine, parallel calls run side by side on the one engine, the server keeps serving.

In process (mcp.Client on the server's lowlevel Server, over memory streams) so that the
engine's side can be watched: a spy around the engine method records the CancelToken each
call got and how the engine call ended.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bundles import write_bundle as write
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from citeline.engine import Call, CancelToken, CitelineError, Engine, Settings
from citeline.mcp_server.server import CitelineMCP

FILES = {
    "guide.md": "# Installing\n\nRun the installer, then an ordered hashtable check.\n",
    "notes/hash tables.md": "# Ordered hashtable\n\nAn ordered hashtable keeps order.\n",
    "index.md": "# Index\n\nordered hashtable navigation, never searched\n",
}


def slow_bundle(root: Path, files: int) -> Path:
    """Distinct files (analyses are memoised by SHA-256), many seconds of engine work."""
    for i in range(files):
        body = "".join(
            f"# Heading {i} {j}\n\nword{i} text {j} hashtable alpha beta gamma.\n\n"
            for j in range(20)
        )
        write(root, {f"d{i // 50}/f{i}.md": body})
    return root


class Spy:
    """Wraps an engine method: the token of each call, its progress, how it ended."""

    def __init__(self, real: Callable[..., dict[str, Any]], barrier: int = 0) -> None:
        self.real = real
        self.tokens: list[CancelToken | None] = []
        self.outcomes: list[str] = []  # "result" or the CitelineError code
        self.working = threading.Event()  # the engine has reported progress
        self.finished = threading.Event()
        self.barrier = threading.Barrier(barrier, timeout=20) if barrier else None
        self._lock = threading.Lock()

    def __call__(self, call: Call, request: Any) -> dict[str, Any]:
        with self._lock:
            self.tokens.append(call.cancel)
        if self.barrier is not None:
            self.barrier.wait()  # every call must be running at once to get past this

        def progress(stage: str, done: int, total: int) -> None:
            if stage != "capture" and done > 0:
                self.working.set()
            if call.progress is not None:
                call.progress(stage, done, total)

        try:
            result = self.real(replace(call, progress=progress), request)
        except CitelineError as err:
            with self._lock:
                self.outcomes.append(err.code)
            raise
        finally:
            self.finished.set()
        with self._lock:
            self.outcomes.append("result")
        return result


async def wait_for(event: threading.Event, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not event.is_set():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def data_of(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data


async def test_cancelled_call_stops_the_engine(tmp_path: Path) -> None:
    bundle = slow_bundle(tmp_path / "slow", files=1000)
    front = CitelineMCP(str(bundle))
    spy = Spy(front.engine.search)
    front.engine.search = spy  # type: ignore[method-assign]
    try:
        async with Client(front.server) as client:
            call = asyncio.ensure_future(
                client.call_tool("search_sections", {"query": "hashtable"})
            )
            assert await wait_for(spy.working, 60), "the engine never started analysing"
            assert not spy.finished.is_set()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            # The engine stops at its next check, long before it could have finished.
            assert await wait_for(spy.finished, 10), "the engine kept running after the cancel"
            assert spy.outcomes == ["cancelled"]
            (token,) = spy.tokens
            assert token is not None and token.is_cancelled
            # The server is still serving, with the right answer.
            lines = data_of(
                await client.call_tool("search_lines", {"pattern": "word7 ", "limit": 1})
            )
            assert lines["total"] == 20 and lines["truncated"] is True
            assert [(m["path"], m["line"]) for m in lines["matches"]] == [("d0/f7.md", 3)]
    finally:
        front.engine.close()


async def test_parallel_calls_run_at_once_on_one_engine(tmp_path: Path) -> None:
    bundle = write(tmp_path / "docs", FILES)
    front = CitelineMCP(str(bundle))
    spy = Spy(front.engine.search, barrier=6)  # a deadlock (then BrokenBarrier) if serialised
    front.engine.search = spy  # type: ignore[method-assign]
    expected = Engine().search(
        Call(bundle, Settings()), {"query": "ordered hashtable", "strict": True}
    )
    assert [h["path"] for h in expected["hits"]] == ["notes/hash tables.md", "guide.md"]
    try:
        async with Client(front.server) as client:
            results = await asyncio.gather(
                *(
                    client.call_tool(
                        "search_sections", {"query": "ordered hashtable", "strict": True}
                    )
                    for _ in range(6)
                )
            )
    finally:
        front.engine.close()
    assert [data_of(r) for r in results] == [expected] * 6
    assert spy.outcomes == ["result"] * 6
    tokens = spy.tokens
    assert len({id(t) for t in tokens}) == 6  # one CancelToken per call, never shared


async def test_cancelled_call_leaves_the_server_serving(tmp_path: Path) -> None:
    """Over stdio, the real `citeline mcp` process: a call the client gives up on is
    answered no more, and the next call is answered correctly and soon."""
    bundle = slow_bundle(tmp_path / "slow", files=1200)  # over a second of work, cold
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "citeline.cli.cli", "mcp", str(bundle)]
    )
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        with pytest.raises(TimeoutError):  # the search takes ten times longer than that
            async with asyncio.timeout(0.1):
                await session.call_tool("search_sections", {"query": "hashtable"})
        started = time.monotonic()
        lines = await session.call_tool("search_lines", {"pattern": "word7 ", "limit": 1})
        took = time.monotonic() - started
    data = data_of(lines)
    assert data["total"] == 20 and data["truncated"] is True
    assert [(m["path"], m["line"]) for m in data["matches"]] == [("d0/f7.md", 3)]
    print(f"\nline search after a cancelled section search: {took:.2f} s")


# -- start-up --------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["folder", "dangling"])
def test_a_symbolic_link_bundle_stops_the_server(tmp_path: Path, target: str) -> None:
    """docs/mcp.md: a folder that is a symbolic link stops the server at once: one line on
    stderr and exit code 4 (SPEC §2: a link, dangling or not, is bundle_invalid)."""
    real = write(tmp_path / "docs", FILES)
    link = tmp_path / "link"
    link.symlink_to(real if target == "folder" else tmp_path / "nowhere")
    out = subprocess.run(
        [sys.executable, "-m", "citeline.cli.cli", "mcp", str(link)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.returncode == 4
    assert out.stdout == ""
    assert out.stderr.startswith("citeline: bundle_invalid: ")
    assert len(out.stderr.splitlines()) == 1
    assert f"{str(link)!r} is a symbolic link" in out.stderr
    # The folder it points to is served as it is.
    assert Engine().search(Call(real, Settings()), {"query": "hashtable"})["total"] == 2
