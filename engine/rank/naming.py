"""The words that name a section, as the ranking's two name bonuses read them
(engine/rank/rank.py): the heading path (document title, heading, outline) for the heading
bonus, and the name (the heading; before the first heading, the document's title) for
as-you-type symbol search.

Reading them means tokenising the section's heading, about ten microseconds, and an
as-you-type session rescores the same few thousand candidates at every keystroke. So a
block's words are computed section by section while few of its sections are asked for,
and once a block has been asked for more than a share of its sections
(`_BUILD_SHARE`), the words of all its sections are held: one list of the block's distinct
name words and, per section, the ids of its words (a few bytes a section). They are keyed
by the block's content address and the tokenisation, so a later snapshot that keeps the
block keeps them; a one-shot call never pays for a whole block, and a ranking holds a few
thousand sections at most, so no keystroke pays for many blocks. A long-lived front also
holds, built between requests by the engine's Warmer (engine/base/warmer.py), every block's
names under each tokenisation its rankings read (`hold_all`, for an index of 32 blocks or
more): at ten times tldr a session reaches
all 177 blocks, and at a ranking's budget it took four rounds of typing to hold them.

What is held belongs to the index's lineage (`Held`, in `Index.lineage`): the bundle's index
and those made from it after edits share it, another bundle's index has its own, and
`Engine.close` drops it.

Either way the words are those of the same `Tokenizer.tokens` call on the same text:
what is held is a cache of a pure function, and scores never depend on it.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ..index.blocks import Block
from ..index.index import Index
from ..text.terms import Tokenizer
from .stems import stem_of

# A block is held once more than this share of its sections (and at least _BUILD_MIN) were
# asked for one at a time: building it costs about as much as reading that many sections
# again, so the cost stays within a small factor of what was needed anyway.
_BUILD_SHARE = 8
_BUILD_MIN = 64
# Sections one ranking may hold (a block is held whole, so one block at least): about
# 20 ms of tokenising (3 µs a section), so that no keystroke pays for many blocks at once.
_BUILD_PER_RANKING = 6_144
# An index of fewer blocks is left to the rankings' budget, which holds all of tldr's 18
# within a few keystrokes; building them right after the first answer raised the server's
# peak with an empty cache by 3-4 MiB (168-169 against 165 MiB).
_PREPARE_BLOCKS = 32
# The builder steps aside for requests this often, in sections: about a millisecond.
_PAUSE_EVERY = 256
# Held blocks, counted in sections, least recently used dropped first: 30–35 bytes a section
# with its share of the words (measured with tracemalloc on ten times tldr: 11.0 MiB for
# 383,650 sections as typed, 12.8 MiB stemmed), so at most ~40 MiB; a `recall` session
# holds two tokenisations, and this holds both of ten times tldr.
_HELD_SECTIONS = 1_200_000


_Key = tuple[str, str]  # the block's content address, the tokenisation's name


def _tokenization(tokenizer: Tokenizer) -> str:
    return f"{tokenizer.cjk}/{tokenizer.stemming}/{tokenizer.identifiers}"


def _path_text(block: Block, s: int) -> str:
    return f"{block.title[block.sec_doc[s]]}\n{block.heading[s]}\n{block.outline[s]}"


def _name_text(block: Block, s: int) -> str:
    return block.heading[s] if block.sec_level[s] > 0 else block.title[block.sec_doc[s]]


@dataclass(frozen=True, slots=True)
class HeldNames:
    """The name words of every section of one block under one tokenisation."""

    words: tuple[str, ...]  # the block's distinct name words
    path_at: array  # section s's heading-path word ids: path_ids[path_at[s]:path_at[s + 1]]
    path_ids: array
    name_at: array
    name_ids: array

    @classmethod
    def build(
        cls, block: Block, tokenizer: Tokenizer, pause: Callable[[], None] | None = None
    ) -> HeldNames:
        """`pause`: called every _PAUSE_EVERY sections (the builder steps aside so)."""
        tokens = tokenizer.tokens
        ids: dict[str, int] = {}
        path_at, path_ids = array("I", [0]), array("I")
        name_at, name_ids = array("I", [0]), array("I")
        doc, title = -1, []
        for s in range(block.sections):
            if pause is not None and s % _PAUSE_EVERY == 0:
                pause()
            if block.sec_doc[s] != doc:  # (each document's title is tokenised once)
                doc = block.sec_doc[s]
                title = tokens(block.title[doc])
            heading = tokens(block.heading[s])
            # _path_text joins the three with line breaks, which no token spans and
            # normalisation keeps apart: its tokens are theirs, in order.
            path = title + heading + tokens(block.outline[s])
            name = heading if block.sec_level[s] > 0 else title
            for words, at, out in ((path, path_at, path_ids), (name, name_at, name_ids)):
                for word in dict.fromkeys(words):
                    out.append(ids.setdefault(word, len(ids)))
                at.append(len(out))
        return cls._sorted(ids, path_at, path_ids, name_at, name_ids)

    @classmethod
    def _sorted(
        cls, ids: dict[str, int], path_at: array, path_ids: array, name_at: array, name_ids: array
    ) -> HeldNames:
        """The words in order, so that a query's words are found by bisection."""
        order = sorted(ids)
        new = array("I", [0]) * len(order)
        for rank, word in enumerate(order):
            new[ids[word]] = rank
        path_ids = array("I", [new[i] for i in path_ids])
        name_ids = array("I", [new[i] for i in name_ids])
        return cls(tuple(order), path_at, path_ids, name_at, name_ids)

    def stemmed(self, pause: Callable[[], None] | None = None) -> HeldNames:
        """These names (the words as typed) under English stemming. A stemming tokeniser's
        tokens are the stems of the unstemmed one's (engine/rank/stems.py), so a section's stems
        are its words' stems in the order first met: no tokenising again, a third of the
        time of building them from the text."""
        ids: dict[str, int] = {}
        to = [ids.setdefault(stem_of(word), len(ids)) for word in self.words]
        fields: list[array] = []
        for at, old in ((self.path_at, self.path_ids), (self.name_at, self.name_ids)):
            new_at, new_ids = array("I", [0]), array("I")
            for s in range(len(at) - 1):
                if pause is not None and s % _PAUSE_EVERY == 0:
                    pause()
                new_ids.extend(dict.fromkeys([to[i] for i in old[at[s] : at[s + 1]]]))
                new_at.append(len(new_ids))
            fields += [new_at, new_ids]
        return HeldNames._sorted(ids, *fields)

    def ids_of(self, words: frozenset[str], span: tuple[str, str] | None = None) -> frozenset[int]:
        """The ids of those of `words` that name some section of the block. `span`: the
        least and greatest of `words`, which only the block's words between them can be
        (a prefix's expansions are one run of the sorted words: scanning the block's run
        costs less than a bisection per word once the words are many, at 177 blocks a
        ranking)."""
        vocab = self.words
        if span is not None:
            lo = bisect.bisect_left(vocab, span[0])
            hi = bisect.bisect_right(vocab, span[1], lo)
            if hi - lo <= 4 * len(words):
                return frozenset([i for i in range(lo, hi) if vocab[i] in words])
        out = []
        for word in words:
            i = bisect.bisect_left(vocab, word)
            if i < len(vocab) and vocab[i] == word:
                out.append(i)
        return frozenset(out)

    def path(self, s: int) -> frozenset[str]:
        return self._words(_slice(self.path_at, self.path_ids, s))

    def name(self, s: int) -> frozenset[str]:
        return self._words(_slice(self.name_at, self.name_ids, s))

    def _words(self, ids: array) -> frozenset[str]:
        words = self.words
        return frozenset([words[i] for i in ids])


def _slice(at: array, ids: array, s: int) -> array:
    """Section s's run of `ids` (one field of a block, as HeldNames keeps it)."""
    return ids[at[s] : at[s + 1]]


def _read(
    groups: Sequence[frozenset[Any]],
    asked: frozenset[Any],
    path: Collection[Any],
    name: Collection[Any],
) -> tuple[int, int, float]:
    """Names.read over words or word ids (each of `name` distinct)."""
    path_bits = name_bits = 0
    for i, group in enumerate(groups):
        if not group.isdisjoint(path):
            path_bits |= 1 << i
        if not group.isdisjoint(name):
            name_bits |= 1 << i
    if name_bits != (1 << len(groups)) - 1 or not name:
        return path_bits, name_bits, 0.0
    return path_bits, name_bits, len(asked.intersection(name)) / len(name)


class Held:
    """The held names of one lineage of indexes (Index.lineage: a bundle's index and those
    made from it after edits), by block content address and tokenisation, least recently
    used dropped first beyond _HELD_SECTIONS; the blocks `hold_all` is to hold; and how often
    each block not held was read section by section. Another bundle's lineage has its own."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: OrderedDict[_Key, HeldNames] = OrderedDict()
        self.sections = 0
        self.asked: dict[_Key, int] = {}  # sections read one at a time, per block not held
        # Blocks `hold_all` is to hold (pending until held), in building order.
        self.pending: OrderedDict[_Key, tuple[Block, Tokenizer]] = OrderedDict()
        self.closed = False

    def hold(self, key: _Key, names: HeldNames, sections: int) -> None:
        with self.lock:
            if key in self.held:
                return
            self.held[key] = names
            self.asked.pop(key, None)
            self.sections += sections
            while self.sections > _HELD_SECTIONS and len(self.held) > 1:
                _, dropped = self.held.popitem(last=False)
                self.sections -= len(dropped.path_at) - 1

    def held_for(self, key: _Key) -> HeldNames | None:
        with self.lock:
            names = self.held.get(key)
            if names is not None:
                self.held.move_to_end(key)
            return names

    def close(self) -> None:
        """Drop everything held; a build under way ends after its block."""
        with self.lock:
            self.closed = True
            self.held.clear()
            self.asked.clear()
            self.pending.clear()
            self.sections = 0

    def build_pending(self, pause: Callable[[], None] | None) -> None:
        """Hold every pending block, in order (the caller's thread: the engine's Warmer)."""
        while True:
            with self.lock:
                # A block stays pending until it is held: rankings meanwhile read it
                # section by section rather than build it too.
                while self.pending and not self.closed:
                    key, (block, tokenizer) = next(iter(self.pending.items()))
                    if key not in self.held:
                        break
                    del self.pending[key]
                else:
                    return
            self.hold(key, _built(self, block, tokenizer, pause), block.sections)
            with self.lock:
                self.pending.pop(key, None)


def held_of(index: Index) -> Held:
    """The held names of `index`'s lineage."""
    held = index.lineage.get("names")
    if held is None:  # (setdefault is atomic: two first rankings get the same one)
        held = index.lineage.setdefault("names", Held())
    return held


def holding_wanted(index: Index) -> bool:
    """Whether hold_all has a block left to plan or to hold."""
    store = held_of(index)
    with store.lock:
        return bool(_to_plan(index, store)) or (bool(store.pending) and not store.closed)


def _to_plan(index: Index, store: Held) -> list[Tokenizer]:
    """The tokenisations hold_all would plan now (under `store.lock`): those rankings read
    and it has not planned, when all would fit in what is held and the index is big enough."""
    done = _prepared(index)
    new = [tok for tok in _used(index) if tok not in done]
    fits = index.n * (len(done) + len(new)) <= _HELD_SECTIONS
    if new and fits and len(index.blocks) >= _PREPARE_BLOCKS and not store.closed:
        return new
    return []


def _used(index: Index) -> set[Tokenizer]:
    """The tokenisations rankings read `index`'s names under (for hold_all)."""
    return index.derived.get("naming.used", set)


def _prepared(index: Index) -> set[Tokenizer]:
    """Those of them hold_all has planned already."""
    return index.derived.get("naming.prepared", set)


class Names:
    """The name words of an index's sections under one tokenisation, for one ranking, as
    the bonuses ask about them: which of the query's groups of words (a term, or the words
    a prefix or stem stands for) a section's heading path or name holds."""

    __slots__ = (
        "_blocks",
        "_budget",
        "_deferred",
        "_known",
        "_name",
        "_spans",
        "_store",
        "asked",
        "groups",
        "index",
        "tokenizer",
    )

    def __init__(
        self, index: Index, tokenizer: Tokenizer, groups: Sequence[Collection[str]]
    ) -> None:
        """`groups`: the query's groups of words under this tokenisation (group i sets
        bit i of what `read` gives); `asked` holds every word of them."""
        self.index = index
        self.tokenizer = tokenizer
        self.groups = tuple(frozenset(group) for group in groups)
        self.asked = frozenset().union(*self.groups)
        # (`asked` is the union of the groups, so its ids are the union of theirs)
        self._spans = tuple((min(g), max(g)) if len(g) > 8 else None for g in self.groups)
        self._name = _tokenization(tokenizer)
        self._budget = _BUILD_PER_RANKING  # sections this ranking may still build
        # per block (by id): its held words, or None while it is read section by section
        self._blocks: dict[int, HeldNames | None] = {}
        self._deferred: set[int] = set()  # (by id) blocks hold_all has yet to hold
        # per held block (by id): it, and the ids of `asked` and of each group's words
        # among its names
        self._known: dict[int, tuple[HeldNames, frozenset[int], tuple[frozenset[int], ...]]] = {}
        self._store = store = held_of(index)
        with store.lock:
            _used(index).add(tokenizer)

    def read(self, g: int) -> tuple[int, int, float]:
        """What the bonuses ask of section g: the bits of the groups with a word in its
        heading path (document title, heading, outline), the same for its name (its
        heading, else its document's title), and how fully the name says the query: 0
        unless it holds a word of every group, else the share of its words that are asked
        (`docker run` names `docker run` fully, `docker container run` for two words of
        three). Both bits 0: neither holds an asked word, and no bonus changes its score."""
        block, s = self.index.locate(g)
        known = self._known.get(id(block))
        if known is None:
            held = self._held(block)
            if held is None:
                tokens = self.tokenizer.tokens
                return _read(
                    self.groups,
                    self.asked,
                    frozenset(tokens(_path_text(block, s))),
                    frozenset(tokens(_name_text(block, s))),
                )
            ids = tuple(
                held.ids_of(group, span)
                for group, span in zip(self.groups, self._spans, strict=True)
            )
            known = self._known[id(block)] = (held, frozenset().union(*ids), ids)
        held, asked, groups = known
        # A section's ids are distinct (one per word), so they count its words.
        return _read(
            groups,
            asked,
            _slice(held.path_at, held.path_ids, s),
            _slice(held.name_at, held.name_ids, s),
        )

    def _held(self, block: Block) -> HeldNames | None:
        blocks = self._blocks
        b = id(block)  # the index holds its blocks as long as this ranking lasts
        if b in blocks:
            held = blocks[b]
            if held is not None or self._budget <= 0 or b in self._deferred:
                return held
        key = (block.key, self._name)
        store = self._store
        held = store.held_for(key)
        if held is None:
            with store.lock:
                if key in store.pending:  # hold_all will hold it between requests
                    self._deferred.add(b)
                    blocks[b] = None
                    return None
                asked = store.asked[key] = store.asked.get(key, 0) + 1
                if len(store.asked) > 4 * len(store.held) + 4_096:  # blocks long gone
                    store.asked.clear()
            if self._budget > 0 and asked > max(_BUILD_MIN, block.sections // _BUILD_SHARE):
                self._budget -= block.sections
                held = _built(store, block, self.tokenizer)
                store.hold(key, held, block.sections)
        blocks[b] = held
        return held


def _built(
    store: Held, block: Block, tokenizer: Tokenizer, pause: Callable[[], None] | None = None
) -> HeldNames:
    """HeldNames.build, or a stemming tokenisation's from the block's words as typed when
    those are held (a `recall` search asks for both). They are not held for it otherwise:
    building both costs more than the stems alone, and held twice as many sections."""
    if tokenizer.stemming != "none":
        plain = store.held_for((block.key, _tokenization(tokenizer.unstemmed)))
        if plain is not None:
            return plain.stemmed(pause)
    return HeldNames.build(block, tokenizer, pause)


def hold_all(index: Index, pause: Callable[[], None] | None = None) -> None:
    """Hold the names of every block of `index` under each tokenisation a ranking has read
    them under (once per index and tokenisation: a later index of the workspace shares its
    unchanged blocks, already held), the blocks asked about most first, calling `pause`
    before each (the engine's Warmer runs it between requests; until a block is held,
    rankings read it section by section). Not when they would not all fit in what is held,
    nor for an index of fewer than _PREPARE_BLOCKS blocks."""
    store = held_of(index)
    with store.lock:
        new = _to_plan(index, store)
        if new:
            _prepared(index).update(new)
            # The words as typed first: a block's stems are then derived from them (_built).
            toks = sorted(new, key=lambda tok: tok.stemming != "none")
            names = [_tokenization(tok) for tok in toks]

            def asked(block: Block) -> int:
                return max(store.asked.get((block.key, name), 0) for name in names)

            for block in sorted(index.blocks, key=asked, reverse=True):  # (stable)
                for tok, name in zip(toks, names, strict=True):
                    if (block.key, name) not in store.held:
                        store.pending.setdefault((block.key, name), (block, tok))
    store.build_pending(pause)


def forget(index: Index) -> None:
    """Drops every block held for `index`'s lineage (tests compare held and unheld answers),
    and what was noted of `index` for hold_all."""
    store = held_of(index)
    with store.lock:
        store.held.clear()
        store.asked.clear()
        store.pending.clear()
        store.sections = 0
        _used(index).clear()
        _prepared(index).clear()


__all__ = ["Held", "HeldNames", "Names", "forget", "held_of", "hold_all"]
