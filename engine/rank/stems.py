"""English stems at query time, over an index of the words as typed (SPEC §13 `stemming`).

An index keeps every word as the tokenizer found it, whatever the `stemming` option: the
option changes how a query is matched, not what is indexed. A query under
`stemming=english` is made of stems, and here a stem stands for the group of indexed words
that stem to it (`run` → `run`, `runs`, `running`): its tf in a section is the sum of theirs
and its df the number of sections holding any of them. These are exactly the tf, df and
section lengths an index of stems would hold, since stemming maps each token to one token;
so a ranking over stems is the same as before, and the words as typed stay in the index for
`match=any` to rank by too (engine/rank/scoring.py, `typed`). One index then serves every
`stemming` value, in about the memory an index of stems took.

Finding a stem's words: Snowball's English stemmer only ever rewrites the last two
characters of what it keeps (`possibility` → `possibl`, `hoping` → `hope`, `dying` →
`die`), so every word whose stem is s starts with s minus its last two characters. The
words of the vocabulary with that prefix are stemmed (each word once per process) and
those whose stem is s form the group. tests/engine/test_stems.py checks the prefix rule
on every word of the real corpora.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..index.index import Index, most_frequent
from ..index.postings import Postings, gather, merge
from ..text.terms import english_stem

# Stems' postings a view keeps (its words' joined across the blocks and summed), counted in
# postings (8 bytes each): a stem of a common word merges tens of thousands, and
# as-you-type queries ask for the same stems again. At least this many, or three quarters
# of the index's postings: a larger index's stems merge more, and a fixed bound held a
# session's stems at 38k files (1.3M postings) but not at ten times that, where each
# keystroke merged again what the last one had.
_REMEMBERED_POSTINGS = 1_000_000
_REMEMBERED_SHARE = 0.75
# Prefixes whose matching words a view keeps for the next keystrokes: enough for typing on
# and correcting a character or two, too few to answer a repeated session from memory.
_TYPED_KEPT = 4


def stem_of(token: str) -> str:
    """The stem the `stemming=english` tokenizer gives an indexed token. The tokenizer
    never stems a CJK bigram, and Snowball leaves every token of two characters or fewer
    as it is, so Snowball's answer is the tokenizer's for every token."""
    return english_stem(token)


def stem_prefix(stem: str) -> str:
    """What every word with this stem starts with (at least its first character)."""
    return stem[: max(1, len(stem) - 2)]


class Stemmed:
    """An index seen through stems: `postings`, `df` and `expand` take stems; everything
    else is the index's own."""

    __slots__ = ("__weakref__", "_held", "_lock", "_postings", "_typed", "_where", "index")

    def __init__(self, index: Index) -> None:
        self.index = index
        self._where: OrderedDict[str, Postings] = OrderedDict()
        self._held = 0  # postings kept in _where
        self._postings = sum(len(block.p_sec) for block in index.blocks)
        self._lock = threading.Lock()
        # The last prefixes expanded, each with the words it matched (word, stem, sections
        # holding the word): a user typing on narrows them (see _matching).
        self._typed: OrderedDict[str, list[tuple[str, str, int]]] = OrderedDict()

    @property
    def n(self) -> int:
        return self.index.n

    def words(self, stem: str) -> list[str]:
        """The indexed words whose stem is `stem`, in vocabulary order."""
        with self._lock:
            for typed, matched in reversed(self._typed.items()):
                if stem.startswith(typed):
                    # Every word of a stem that starts with a prefix is among the words
                    # that prefix matched: it starts with stem_prefix(stem), which starts
                    # with stem_prefix(typed), and its stem starts with typed.
                    mine = stem_prefix(stem)
                    return sorted(w for w, st, _ in matched if st == stem and w.startswith(mine))
        return sorted(w for w, _ in self.index.prefixed(stem_prefix(stem)) if stem_of(w) == stem)

    def postings(self, stem: str) -> Postings:
        """The stem's postings: its words' summed per section."""
        with self._lock:
            known = self._where.get(stem)
            if known is not None:
                self._where.move_to_end(stem)
                return known
        index = self.index
        views = index.posting_views()
        found = merge([gather(views, index.where(word)) for word in self.words(stem)])
        with self._lock:
            if stem not in self._where:
                self._where[stem] = found
                self._held += found.df
            bound = max(_REMEMBERED_POSTINGS, int(self._postings * _REMEMBERED_SHARE))
            while self._held > bound and len(self._where) > 1:
                _, dropped = self._where.popitem(last=False)
                self._held -= dropped.df
        return found

    def df(self, stem: str) -> int:
        return self.postings(stem).df

    def expand(self, prefix: str) -> list[str]:
        """Stems that start with `prefix` (itself included), and the stems of the words
        that do, as Index.expand gives words, counted by the sections holding their words.

        The words count because a prefix is a word being typed: `runnin` is on its way to
        `running`, whose stem `run` does not start with it."""
        counts: dict[str, int] = {}
        for _, stem, count in self._matching(prefix):
            counts[stem] = counts.get(stem, 0) + count
        return most_frequent(counts)

    def _matching(self, prefix: str) -> list[tuple[str, str, int]]:
        """The indexed words that start with `prefix` or whose stem does, with their stems
        and the sections holding them.

        A word that `prefix + c` matches is one that `prefix` matches (its stem or itself
        starts with the longer prefix, so with the shorter), so a prefix typed on from one
        of the last few filters that one's words instead of stemming the vocabulary under
        `stem_prefix` again: exactly the same words, found among far fewer."""
        with self._lock:
            known = None
            for k in range(len(prefix), 0, -1):
                known = self._typed.get(prefix[:k])
                if known is not None:
                    break
        if known is not None:
            found = [
                entry
                for entry in known
                if entry[1].startswith(prefix) or entry[0].startswith(prefix)
            ]
        else:
            found = []
            for word, count in self.index.prefixed(stem_prefix(prefix)):
                stem = stem_of(word)
                if stem.startswith(prefix) or word.startswith(prefix):
                    found.append((word, stem, count))
        with self._lock:
            self._typed[prefix] = found
            self._typed.move_to_end(prefix)
            while len(self._typed) > _TYPED_KEPT:
                self._typed.popitem(last=False)
        return found


def stemmed(index: Index) -> Stemmed:
    """The index's stem view, one per index (it remembers merged postings)."""
    return index.derived.get("stems.view", lambda: Stemmed(index))


__all__ = ["Stemmed", "stem_of", "stem_prefix", "stemmed"]
