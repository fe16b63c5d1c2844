"""What changes the analysis of a file: the tokenisation, the outline field and the
structure (SPEC §13).

A module of its own so that the fronts' fast paths can name options without importing the
parser (markdown-it-py, PyYAML).
"""

from __future__ import annotations

from dataclasses import dataclass

from .terms import Tokenizer


@dataclass(frozen=True, slots=True)
class AnalysisOptions:
    """What an index is built with. `stemming` is not among it: an index keeps the words
    as typed and a stemmed query reads them through engine/rank/stems.py, so a tokenizer given
    with stemming is kept without it (one index serves both values)."""

    tokenizer: Tokenizer = Tokenizer()
    outline: bool = False
    # SPEC §13 `structure: fields`: link destinations, anchors and reference definitions
    # weigh 0, and navigation sections are marked (engine/text/fields.py).
    fields: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokenizer", self.tokenizer.unstemmed)


__all__ = ["AnalysisOptions"]
