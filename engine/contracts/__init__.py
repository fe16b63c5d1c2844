"""JSON Schemas of every request and result: the wire contract shared by all fronts."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

NAMES = (
    "search.request",
    "search.result",
    "concepts.request",
    "concepts.result",
    "lines.request",
    "lines.result",
    "lines.semantic.result",
    "verify.request",
    "verify.result",
    "error",
)


@cache
def schema(name: str) -> dict[str, Any]:
    """The schema `name` (e.g. "search.result") as a dict."""
    if name not in NAMES:
        raise KeyError(f"no contract named {name!r}; known: {', '.join(NAMES)}")
    text = resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def validate(name: str, value: Any) -> None:
    """Raise jsonschema.ValidationError when `value` breaks the contract `name`."""
    import jsonschema

    jsonschema.validate(value, schema(name), cls=jsonschema.Draft202012Validator)
