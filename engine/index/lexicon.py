"""The words of a whole index, for the prefix look-ups that would otherwise visit every block.

An as-you-type prefix asks which indexed words start with it and how many sections hold
each (Index.expand, and stems.py for a stem's words). Asked of each block, that is two
bisections and a slice per block: nothing at tldr's 18 blocks, a third of a keystroke at
ten times tldr's 177, where the same 92k words recur in every copy. A Lexicon holds an
index's distinct words once, sorted, with the sections holding each summed over its blocks.

Made from the blocks, it costs a pass over every block's words (1.97M at ten times tldr,
about a second), so an index makes one only once it has many blocks, and only when a
long-lived front asks it to after an answer, in the engine's background thread
(Index.make_lexicon): neither a one-shot call nor a server's first answer pays for it. An
index made from another's blocks with a few of them changed (an edit) derives its lexicon
from the other's instead: the removed blocks' words subtracted and the added ones' added,
kept as a small table of changes beside the base it shares, so an edit costs the changed
blocks' words, not the vocabulary.

Either way the answer is exact: counts are sums of integers, a word that no section holds
any more is left out, and tests/engine/test_lexicon.py compares answers with the blocks'.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..base.codec import I64, StringTable, first_at_least, prefix_range, sample_of
from .blocks import Block

# A derived lexicon whose changes hold more words than this share of its base is made
# afresh from the blocks instead: each look-up reads a change per word it returns.
_CHANGES_SHARE = 8
# A background make steps aside for requests this often, in words: about a millisecond
# (a block of ten times tldr has 11,000, some 6 ms).
_PAUSE_EVERY = 2_048


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The distinct words of some blocks and the sections holding each: a base table, and
    the changes of a derived lexicon against it."""

    words: StringTable  # the base's words, sorted, distinct
    counts: array  # I64: the sections holding each of them in the base
    sample: list[str]  # every SAMPLE-th word, for first_at_least
    changes: Mapping[str, int]  # word → sections gained (or lost, < 0) since the base
    new: tuple[str, ...]  # the words of `changes` the base does not hold, sorted
    # The blocks holding each base word, by key: keys[holders[k]] for k in at[i]:at[i + 1]
    # (2 bytes a word and block: 3.9 MB at ten times tldr), so that a word's postings are
    # looked for in those only; a derived lexicon leaves out the removed ones and adds
    # every added block (Index.where asks each of those).
    keys: tuple[str, ...]
    at: array  # I64
    holders: array  # H (I past 65,536 blocks)
    removed: frozenset[str]  # keys of base blocks not in the index any more
    added: tuple[str, ...]  # keys of the blocks added since the base

    @classmethod
    def of(cls, blocks: Sequence[Block], pause: Callable[[], None] | None = None) -> Lexicon:
        """`pause`: called before each block and every _PAUSE_EVERY words (a background
        make waits there while the engine serves a request)."""
        import numpy as np

        found: dict[str, int] = {}
        spread: dict[str, int] = {}  # word → blocks holding it
        get, spread_of = found.get, spread.get
        for block in blocks:
            # (one block's words at a time: all of them at once would be 2M strings; a
            # set difference and numpy sums in place of this loop cost 40% more here)
            words = block.prefixed("")  # (every word starts with "")
            for at in range(0, len(words), _PAUSE_EVERY):
                if pause is not None:
                    pause()
                for word, count in words[at : at + _PAUSE_EVERY]:
                    found[word] = get(word, 0) + count
                    spread[word] = spread_of(word, 0) + 1
        order = sorted(found)
        table = StringTable.of(order)
        counts = array(I64, [found[w] for w in order])
        del found
        # Each word's run of `holders` is placed from the blocks-per-word counts, then
        # filled block by block (so in block order): a block's words at a time, where a
        # sort of all 2M pairs passed 50 MB through at ten times tldr.
        starts = np.zeros(len(order) + 1, np.int64)
        np.cumsum(np.array([spread[w] for w in order], np.int64), out=starts[1:])
        del spread
        place = {w: i for i, w in enumerate(order)}
        fill = starts[:-1].copy()
        code = "H" if len(blocks) <= 1 << 16 else "I"
        holders = np.zeros(int(starts[-1]), np.uint16 if code == "H" else np.uint32)
        for b, block in enumerate(blocks):
            if pause is not None:
                pause()
            ids = np.fromiter((place[w] for w in block.vocab), np.int64, len(block.vocab))
            holders[fill[ids]] = b  # (a block's words are distinct)
            fill[ids] += 1
        del place, fill
        keys = tuple(block.key for block in blocks)
        runs = array(I64, starts.tobytes())
        return cls(
            table,
            counts,
            sample_of(table),
            {},
            (),
            keys,
            runs,
            array(code, holders.tobytes()),
            frozenset(),
            (),
        )

    def derive(self, removed: Sequence[Block], added: Sequence[Block]) -> Lexicon | None:
        """The lexicon of these blocks' index: this one's without `removed`'s words and
        with `added`'s (None once the changes are too many to be worth keeping apart)."""
        changes = dict(self.changes)
        for blocks, sign in ((removed, -1), (added, 1)):
            for block in blocks:
                for word, count in block.prefixed(""):
                    changes[word] = changes.get(word, 0) + sign * count
        changes = {w: c for w, c in changes.items() if c}  # a block swapped for its new self
        if len(changes) * _CHANGES_SHARE > len(self.words):
            return None
        known = set(self.new)
        new = sorted(w for w in changes if w in known or not self._holds(w))
        gone = {b.key for b in removed}
        return replace(
            self,
            changes=changes,
            new=tuple(new),
            removed=self.removed | (gone - set(self.added)),
            added=(*[k for k in self.added if k not in gone], *[b.key for b in added]),
        )

    def holding(self, word: str) -> list[str]:
        """The keys of the blocks that may hold `word`: among the index's, every one that
        does (the base's that do, then every added one)."""
        i = first_at_least(self.words, self.sample, word)
        out: list[str] = []
        if i < len(self.words) and self.words[i] == word:
            keys, removed = self.keys, self.removed
            out = [keys[k] for k in self.holders[self.at[i] : self.at[i + 1]]]
            if removed:
                out = [k for k in out if k not in removed]
        return [*out, *self.added] if self.added else out

    def _holds(self, word: str) -> bool:
        i = first_at_least(self.words, self.sample, word)
        return i < len(self.words) and self.words[i] == word

    def prefixed(self, prefix: str) -> list[tuple[str, int]]:
        """(word, sections holding it) for each word starting with `prefix`, in word
        order within the base, then the words new since it."""
        i, j = prefix_range(self.words, self.sample, prefix)
        pairs = zip(self.words.between(i, j), self.counts[i:j], strict=True)
        changes = self.changes
        if not changes:
            return list(pairs)
        out = [(w, c + changes.get(w, 0)) for w, c in pairs]
        out = [pair for pair in out if pair[1] > 0]
        new = self.new
        k = bisect.bisect_left(new, prefix)
        while k < len(new) and new[k].startswith(prefix):
            count = changes[new[k]]
            if count > 0:
                out.append((new[k], count))
            k += 1
        return out


__all__ = ["Lexicon"]
