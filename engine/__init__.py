"""citeline.engine: cited section search over a folder of Markdown. Pure: no LSP, no printing."""

from .cancel import CancelToken
from .capture import CapturedFile, Snapshot
from .core import Engine, Index, Problem, SectionHit
from .errors import CODES, CitelineError
from .limits import Limits, Settings
from .requests import ConceptsRequest, Relevance, SearchRequest

__all__ = [
    "CODES",
    "CancelToken",
    "CapturedFile",
    "CitelineError",
    "ConceptsRequest",
    "Engine",
    "Index",
    "Limits",
    "Problem",
    "Relevance",
    "SearchRequest",
    "SectionHit",
    "Settings",
    "Snapshot",
]
