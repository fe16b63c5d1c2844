"""citeline.engine: cited section search over a folder of Markdown. Pure: no LSP, no printing.

Names are imported on first use, so that a process that only needs part of the engine
(the command line's cached path, say) does not pay for the rest.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_WHERE = {
    "CODES": "base.errors",
    "CitelineError": "base.errors",
    "Call": "call",
    "CancelToken": "base.cancel",
    "CapturedFile": "capture.snapshot",
    "Progress": "capture.capture",
    "Snapshot": "capture.snapshot",
    "Engine": "core",
    "SectionHit": "answer.present",
    "Index": "index.index",
    "Problem": "index.index",
    "Limits": "base.limits",
    "Settings": "base.limits",
    "ConceptsRequest": "answer.requests",
    "Relevance": "answer.requests",
    "SearchRequest": "answer.requests",
    "SymbolsRequest": "answer.requests",
}

if TYPE_CHECKING:
    from .answer.present import SectionHit
    from .answer.requests import ConceptsRequest, Relevance, SearchRequest, SymbolsRequest
    from .base.cancel import CancelToken
    from .base.errors import CODES, CitelineError
    from .base.limits import Limits, Settings
    from .call import Call
    from .capture.capture import Progress
    from .capture.snapshot import CapturedFile, Snapshot
    from .core import Engine
    from .index.index import Index, Problem


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CODES",
    "Call",
    "CancelToken",
    "CapturedFile",
    "CitelineError",
    "ConceptsRequest",
    "Engine",
    "Index",
    "Limits",
    "Problem",
    "Progress",
    "Relevance",
    "SearchRequest",
    "SectionHit",
    "Settings",
    "Snapshot",
    "SymbolsRequest",
]
