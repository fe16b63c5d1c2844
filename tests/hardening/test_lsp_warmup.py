"""The start-up warm-up (docs/lsp.md "Responsiveness"): the server parses each folder in the
background, and requests wait for a running warm-up rather than parse the same files beside
it. Observed through the server's DEBUG log, which names every engine job as it ends."""

from __future__ import annotations

import time
from pathlib import Path

from rpc import RawServer, engine_job_log, workspace


def test_requests_wait_for_the_warm_up(tmp_path: Path) -> None:
    folder = workspace(tmp_path / "ws", files=1500)
    srv = RawServer(env={"CITELINE_LOG": "DEBUG"})
    try:
        srv.initialize(folder, initializationOptions={"limits": {"max_tokens": 10**9}})
        sent = time.monotonic()  # right after `initialized`: the warm-up has just begun
        search = srv.request(
            "workspace/executeCommand",
            {"command": "citeline.search", "arguments": [{"query": "hashtable bucket"}]},
        )
        symbols = srv.request("workspace/symbol", {"query": "zebra"})
        assert srv.response(search, timeout=120)["result"]["total"] > 0
        assert srv.response(symbols, timeout=120)["result"]
        latency = time.monotonic() - sent
        jobs = [(name, secs) for name, how, secs in engine_job_log(srv) if how == "finished"]
    finally:
        srv.close()
    timed = dict(jobs)  # each title ends once here
    order = [
        name
        for name, _ in jobs
        if name in ("citeline: indexing", "citeline.search", "citeline: symbols")
    ]
    assert order[0] == "citeline: indexing", jobs  # the requests ended after the warm-up
    assert sorted(order) == ["citeline.search", "citeline: indexing", "citeline: symbols"], jobs
    warm_up = timed["citeline: indexing"]
    # The requests were sent while the warm-up ran (so the test tests something) ...
    assert latency > warm_up / 2, (latency, jobs)
    # ... and did not analyse the files themselves: they used the warm-up's index.
    assert timed["citeline.search"] < warm_up / 4, jobs
    assert timed["citeline: symbols"] < warm_up / 4, jobs
