"""A fault injected into the engine for the unexpected-error tests: Engine.search, concepts,
lines and symbols raise an exception that is not a CitelineError whenever the query (or
pattern, or document) is "boom", and the outline of a document (analysis.outline_tree)
whenever its bytes hold "boom".

Installed in this process (`install(monkeypatch.setattr)`, undone with the monkeypatch) or
at the start of a server subprocess (fronts_harness.FAULTY, with plain setattr).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _asked(request: Any) -> Any:
    if isinstance(request, str):
        return request
    if isinstance(request, dict):
        return request.get("query") or request.get("pattern")
    return getattr(request, "query", None) or getattr(request, "pattern", None)


def install(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    import citeline.engine.core as core

    def faulty(real: Any) -> Any:
        def call(self: Any, bundle: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            if _asked(request) == "boom":
                raise ZeroDivisionError("injected fault")
            return real(self, bundle, request, *args, **kwargs)

        return call

    import citeline.engine.text.analysis as analysis

    for name in ("search", "concepts", "lines", "symbols"):
        set_attr(core.Engine, name, faulty(getattr(core.Engine, name)))
    real_outline = analysis.outline_tree

    def outline(data: bytes) -> Any:
        if b"boom" in data:
            raise ZeroDivisionError("injected fault")
        return real_outline(data)

    set_attr(analysis, "outline_tree", outline)
