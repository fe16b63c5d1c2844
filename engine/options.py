"""What changes the analysis of a file: the tokenisation and the outline field (SPEC §13).

A module of its own so that the fronts' fast paths can name options without importing the
parser (markdown-it-py, PyYAML).
"""

from __future__ import annotations

from dataclasses import dataclass

from .terms import Tokenizer


@dataclass(frozen=True, slots=True)
class AnalysisOptions:
    tokenizer: Tokenizer = Tokenizer()
    outline: bool = False


__all__ = ["AnalysisOptions"]
