"""What the engine's Warmer (engine/base/warmer.py) makes of an index between requests: its
lexicon and its sections' held names, and whether anything of that is left to make, so that
an answer hands the Warmer a job only when there is one (a job per answer started a thread
per answer, 4% of a warm as-you-type request on tldr)."""

from __future__ import annotations

from collections.abc import Callable

from ..index.index import Index
from . import naming


def warm(index: Index, pause: Callable[[], None]) -> None:
    """Make `index`'s lexicon and hold its names, calling `pause` between steps."""
    index.make_lexicon(pause)
    naming.hold_all(index, pause)


def wanted(index: Index) -> bool:
    """Whether warm(index) has anything left to make."""
    return index.lexicon_wanted() or naming.holding_wanted(index)


__all__ = ["wanted", "warm"]
