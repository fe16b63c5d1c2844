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
def _schemas() -> dict[str, dict[str, Any]]:
    """Every schema, read when one is first asked for (a lazy constant)."""
    folder = resources.files(__name__)
    return {n: json.loads(folder.joinpath(f"{n}.json").read_text(encoding="utf-8")) for n in NAMES}


def schema(name: str) -> dict[str, Any]:
    """The schema `name` (e.g. "search.result") as a dict."""
    if name not in NAMES:
        raise KeyError(f"no contract named {name!r}; known: {', '.join(NAMES)}")
    return _schemas()[name]


def validate(name: str, value: Any) -> None:
    """Raise jsonschema.ValidationError when `value` breaks the contract `name`."""
    import jsonschema

    jsonschema.validate(value, schema(name), cls=jsonschema.Draft202012Validator)
