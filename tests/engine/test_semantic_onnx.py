"""The ONNX model folder backend (SPEC §15; engine/semantic/onnx_folder.py) with the int8
all-MiniLM-L6-v2 (tests/onnx_model.py): vectors, the model's id, the folder's config, the
errors, and semantic and hybrid answers through the Engine."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from embedding_servers import short_bundle
from onnx_model import minilm_folder

from citeline.engine import Engine
from citeline.engine.base.cancel import CancelToken
from citeline.engine.base.errors import CitelineError
from citeline.engine.contracts import validate
from citeline.engine.semantic.models import ModelSpec
from citeline.engine.semantic.onnx_folder import OnnxFolderBackend


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return minilm_folder(tmp_path_factory.mktemp("onnx"))


def onnx(folder: Path, **more: object) -> OnnxFolderBackend:
    return OnnxFolderBackend(ModelSpec.from_mapping({"folder": str(folder), **more}))


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_unit_and_mean_what_they_say(folder: Path) -> None:
    backend = onnx(folder)
    assert backend.dim == 384 and backend.max_tokens == 96
    q = backend.embed_query("how do I stop a windows service")
    near, far = backend.embed_passages(
        [
            "Services › Stop a service\nUse Stop-Service to stop a running service.",
            "Bread › Kneading\nKnead the dough for ten minutes.",
        ]
    )
    assert all(abs(math.sqrt(dot(v, v)) - 1) < 1e-9 for v in (q, near, far))
    assert dot(q, near) > dot(q, far) + 0.3
    # batched or one by one: the same vectors (padding does not leak into the mean)
    texts = ["a short one", "a much longer passage about services, printers and more words"]
    together = backend.embed_passages(texts)
    alone = [backend.embed_passages([t])[0] for t in texts]
    for a, b in zip(together, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5


def test_the_model_id_names_folder_hash_budget_pooling_and_prefixes(
    folder: Path, tmp_path: Path
) -> None:
    mean = onnx(folder)
    assert mean.model_id.startswith("minilm-") and mean.model_id.endswith("@onnx/384d/96t/mean")
    cls = onnx(folder, pooling="cls")
    assert cls.model_id.endswith("/cls")
    q = "stop a service"
    assert dot(mean.embed_query(q), cls.embed_query(q)) < 0.999
    prefixed = onnx(folder, query_prefix="query: ", passage_prefix="passage: ")
    assert "/prefix-" in prefixed.model_id
    longer = onnx(folder, max_tokens=128)
    assert "/128t/" in longer.model_id
    # the same model in another folder with another tokenizer: another hash
    other = tmp_path / "minilm"
    other.mkdir()
    (other / "model.onnx").symlink_to((folder / "model.onnx").resolve())
    tok = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tok["normalizer"] = None  # (a tokenizer that keeps case: other tokens, other vectors)
    (other / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    assert onnx(other).model_id.split("@")[0] != mean.model_id.split("@")[0]
    ids = {mean.model_id, cls.model_id, prefixed.model_id, longer.model_id}
    assert len(ids) == 4


def test_the_folder_s_config_is_read(folder: Path, tmp_path: Path) -> None:
    own = tmp_path / "cls-model"
    own.mkdir()
    (own / "model.onnx").symlink_to((folder / "model.onnx").resolve())
    (own / "tokenizer.json").symlink_to((folder / "tokenizer.json").resolve())
    (own / "1_Pooling").mkdir()
    (own / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert onnx(own).model_id.endswith("/cls")
    (own / "citeline.json").write_text('{"pooling": "mean", "query_prefix": "q: "}')
    got = onnx(own)
    assert "/mean/prefix-" in got.model_id
    assert onnx(own, pooling="cls").model_id.endswith("/cls/" + got.model_id.split("/")[-1])


def test_errors_name_the_folder_or_the_extra(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CitelineError) as err:
        onnx(tmp_path)
    assert str(tmp_path) in err.value.message and "model.onnx" in err.value.message
    assert err.value.details["missing"] == "semantic"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    (broken / "tokenizer.json").symlink_to((folder / "tokenizer.json").resolve())
    with pytest.raises(CitelineError) as err:
        onnx(broken)
    assert "does not load" in err.value.message and str(broken) in err.value.message
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(CitelineError) as err:
        onnx(folder)
    assert "pip install 'citeline[onnx]'" in err.value.message


def test_a_cancelled_embedding_stops(folder: Path) -> None:
    backend = onnx(folder)
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(CitelineError) as err:
        backend.embed_passages(["one", "two"], cancel)
    assert err.value.code == "cancelled"


def test_semantic_and_hybrid_through_the_engine(folder: Path, tmp_path: Path) -> None:
    bundle = short_bundle(tmp_path / "docs")
    engine = Engine(
        cache=tmp_path / "cache", embedding=ModelSpec.from_mapping({"folder": str(folder)})
    )
    try:
        got = engine.lines(
            engine.call(bundle), {"mode": "semantic", "query": "how do I stop a windows service"}
        )
        validate("lines.semantic.result", got)
        assert got["model"].endswith("@onnx/384d/96t/mean")
        assert got["matches"][0]["path"] == "services.md"
        assert got["matches"][0]["x-heading"] == "Stop a service"
        hybrid = engine.search(
            engine.call(bundle), {"query": "remove a printer", "profile": "hybrid"}
        )
        assert hybrid["options"]["model"] == got["model"]
        assert hybrid["hits"][0]["heading"] == "Remove a printer"
        off = engine.lines(
            engine.call(bundle), {"mode": "semantic", "query": "a recipe for chocolate cake"}
        )
        assert off["matches"] == []
    finally:
        engine.close()
