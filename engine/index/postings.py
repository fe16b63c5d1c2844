"""A term's postings over the whole index, as arrays the ranker computes on at once.

A block keeps each term's postings as a range of its flat arrays (section in the block,
weighted tf). The ranker wants them across every block, numbered by the index's global
section number: `gather` joins a term's ranges into one pair of arrays (sections ascending,
as the blocks are in order), and `merge` sums several terms' postings per section (a stem's
words, engine/rank/stems.py). With numpy, scoring a posting costs a few nanoseconds instead of a
Python loop's step; the arithmetic is the same IEEE double operations in the same order, so
every score is the same float the loop gave (tests/engine/test_rank_arrays.py).

numpy is imported by the first ranking, not with the module: the worker processes that
build blocks, and a process that never ranks, do without its 15 MiB and 50 ms.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from .blocks import Block

# One term's run in one block: (the block, the global id of its first section, the run's
# start and end in the block's posting arrays).
Where = tuple["Block", int, int, int]
Views = dict[int, tuple["np.ndarray", "np.ndarray"]]  # by id(block): its p_sec and p_tf


@dataclass(frozen=True, slots=True)
class Postings:
    """One term's postings across the index: global section numbers, ascending, and the
    weighted tf in each."""

    secs: NDArray[np.int32]
    tfs: NDArray[np.int32]

    @property
    def df(self) -> int:
        return len(self.secs)


@functools.cache
def empty() -> Postings:
    """No postings (one object, made when first asked for)."""
    import numpy as np

    return Postings(np.zeros(0, np.int32), np.zeros(0, np.int32))


def views(blocks: Sequence[Block]) -> Views:
    """Zero-copy views of each block's posting arrays, by the block's identity (an Index
    makes them once: a block's arrays never change)."""
    import numpy as np

    return {id(b): (np.asarray(b.p_sec), np.asarray(b.p_tf)) for b in blocks}


def gather(views: Views, places: Sequence[Where]) -> Postings:
    """The postings of one term from its ranges in each block (Index.where), through the
    index's `views` (Index.posting_views)."""
    if not places:
        return empty()
    import numpy as np

    secs, tfs = [], []
    for block, base, lo, hi in places:
        p_sec, p_tf = views[id(block)]
        secs.append(p_sec[lo:hi] + base)  # (int32, as the blocks hold them: 8 bytes a posting)
        tfs.append(p_tf[lo:hi])
    if len(secs) == 1:
        return Postings(secs[0], tfs[0])
    return Postings(np.concatenate(secs), np.concatenate(tfs))


def merge(parts: Sequence[Postings]) -> Postings:
    """Several terms' postings as one: per section, the sum of their tfs."""
    parts = [p for p in parts if p.df]
    if not parts:
        return empty()
    if len(parts) == 1:
        return parts[0]
    import numpy as np

    secs = np.concatenate([p.secs for p in parts])
    tfs = np.concatenate([p.tfs for p in parts])
    order, inverse = np.unique(secs, return_inverse=True)
    summed = np.zeros(len(order), np.int64)
    np.add.at(summed, inverse, tfs)
    return Postings(order, summed.astype(tfs.dtype))


__all__ = ["Postings", "Views", "Where", "empty", "gather", "merge", "views"]
