"""The start-up warm-up (docs/lsp.md "Responsiveness"): the server parses each folder in the
background, and requests wait for a running warm-up rather than parse the same files beside
it. Observed through the server's DEBUG log, which names every engine job as it ends and how
many files the engine had analysed by then."""

from __future__ import annotations

import time
from pathlib import Path

from rpc import RawServer, logged_jobs, workspace

FILES = 1500


def test_requests_wait_for_the_warm_up(tmp_path: Path) -> None:
    folder = workspace(tmp_path / "ws", files=FILES)
    srv = RawServer(env={"CITELINE_LOG": "DEBUG"})
    try:
        # No persistent cache: every block the warm-up has must be analysed in this process.
        options = {"limits": {"max_tokens": 10**9}, "cache": False}
        srv.initialize(folder, initializationOptions=options)
        sent = time.monotonic()  # right after `initialized`: the warm-up has just begun
        search = srv.request(
            "workspace/executeCommand",
            {"command": "citeline.search", "arguments": [{"query": "hashtable bucket"}]},
        )
        symbols = srv.request("workspace/symbol", {"query": "zebra"})
        assert srv.response(search, timeout=120)["result"]["total"] > 0
        assert srv.response(symbols, timeout=120)["result"]
        latency = time.monotonic() - sent
        titles = {"citeline: indexing", "citeline.search", "citeline: symbols"}
        log = logged_jobs(srv, lambda log: titles <= {e[0] for e in log if e[1] == "finished"})
        jobs = [(name, s, n) for name, how, s, n in log if how == "finished"]
    finally:
        srv.close()
    timed = {name: secs for name, secs, _ in jobs}  # each title ends once here
    analysed = {name: n for name, _, n in jobs}
    order = [
        name
        for name, _, _ in jobs
        if name in ("citeline: indexing", "citeline.search", "citeline: symbols")
    ]
    assert order[0] == "citeline: indexing", jobs  # the requests ended after the warm-up
    assert sorted(order) == ["citeline.search", "citeline: indexing", "citeline: symbols"], jobs
    # The requests were sent while the warm-up ran (so the test tests something) ...
    assert latency > timed["citeline: indexing"] / 2, (latency, jobs)
    # ... the warm-up analysed every file (for each profile it builds) ...
    assert analysed["citeline: indexing"] >= FILES, jobs
    # ... and the requests analysed none themselves: they used the warm-up's indexes.
    assert analysed["citeline.search"] == analysed["citeline: indexing"], jobs
    assert analysed["citeline: symbols"] == analysed["citeline: indexing"], jobs
