"""The searchable part of one snapshot: its blocks, the collection statistics, the checks.

An Index is immutable and belongs to one snapshot_revision and one set of analysis
options. It is assembled from blocks (blocks.py) and knows, for the SPEC §2 order of
checks, the parse problems, the first duplicate concept id, the first over-long heading
or title and the section and token totals, so that checking a request is O(1) once the
index exists.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..base.errors import CitelineError, parse_error
from ..base.limits import MAX_HEADING_BYTES, Settings, limit_error
from .blocks import Block
from .hashes import SectionHashes
from .lexicon import Lexicon
from .postings import Postings, Views, Where, gather, views

T = TypeVar("T")

K1 = 1.2
B = 0.75
MAX_EXPANSIONS = 64  # of the last term when it is matched as a prefix
# An index of at least this many blocks answers prefix look-ups from a Lexicon (lexicon.py)
# rather than block by block, once one is made (`make_lexicon`, which a long-lived engine runs
# in the background after an answer) or derived from the previous index's: docs/
# performance.md has the measurements that set it.
LEXICON_BLOCKS = 32
_REMEMBERED_TERMS = 4096  # posting locations an index keeps for terms already looked up


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Section:
    """One section of the index, with what a hit or a symbol shows of it."""

    path: str
    sha256: str
    concept_id: str
    title: str
    heading: str
    level: int
    first: int  # 0-based first line
    last: int  # 0-based last line, inclusive
    start: int  # code-point offsets of its text in the decoded file
    end: int
    outline: str
    h1: str = ""  # for the preamble/body section: the file's first H1 (section_label)


# (the first duplicate concept id, the first heading or title over the length limit)
Checked = tuple[tuple[str, str, str] | None, tuple[str, int, int, str] | None]


def sections_in(places: Sequence[Where]) -> int:
    """How many sections a term's postings name: its df (one posting per section)."""
    return sum(hi - lo for _, _, lo, hi in places)


def most_frequent(counts: dict[str, int]) -> list[str]:
    """The MAX_EXPANSIONS terms held by the most sections (ties by term), in term order:
    what a prefix stands for, whether the terms are indexed words or stems."""
    ranked = sorted(counts, key=lambda t: (-counts[t], t))[:MAX_EXPANSIONS]
    return sorted(ranked)


class Derived:
    """What a later stage derives from one index (rank's length denominators, the stem
    view, zero-copy posting views), made on first use and held as long as the index: state
    derived from an index lives with it, never in a module's globals, and goes with it."""

    def __init__(self) -> None:
        self._made: dict[Hashable, Any] = {}
        self._lock = threading.RLock()  # (re-entrant: one state may be made of another)

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            try:
                return self._made[key]
            except KeyError:
                value = self._made[key] = make()
                return value


class Index:
    def __init__(
        self,
        blocks: Sequence[Block],
        checked: Checked | None = None,
        previous: Index | None = None,
    ) -> None:
        """`checked`: the result of checked() for these same blocks, when known (the cache
        keeps it with the list of blocks). `previous`: an index most of whose blocks these
        are (the one before an edit), whose lexicon this one's is derived from."""
        self.blocks = tuple(blocks)
        sizes = [block.sections for block in self.blocks]
        self.bases = [0, *itertools.accumulate(sizes)][: len(sizes)]  # first id of each block
        self.n = n = sum(sizes)
        total = sum(block.total_length for block in self.blocks)
        self.avglen = (total / n if n else 0.0) or 1.0  # (lengths are never negative)
        self.tokens = sum(block.tokens for block in self.blocks)
        self.problems = tuple(
            sorted(
                (
                    Problem(b.paths[i], line, reason)
                    for b in self.blocks
                    for i, line, reason in zip(
                        b.prob_input, b.prob_line, b.prob_reason, strict=True
                    )
                ),
                key=lambda p: p.path,
            )
        )
        self._where: OrderedDict[str, tuple[Where, ...]] = OrderedDict()
        self._checked = checked
        self._lock = threading.Lock()
        self._lexicon: Lexicon | None = None
        self._blocks_at: dict[str, tuple[Block, int]] | None = None
        if previous is not None and previous._lexicon is not None:
            self._lexicon = _derived(previous, self.blocks)
        # Section hashes for verify's look-up by hash (hashes.py): made on first use.
        earlier = previous.hashes if previous is not None else None
        self.hashes: SectionHashes = SectionHashes(earlier)
        if previous is not None:
            self.hashes.keep(self.blocks)
        self.derived = Derived()
        # Caches of pure functions of blocks that outlive one index, shared with the indexes
        # made from it after edits (rank/naming.py's held names); another bundle has its own.
        self.lineage: dict[str, Any] = previous.lineage if previous is not None else {}

    # -- the checks of SPEC §2, in order, after capture ----------------------------------

    def check(self, settings: Settings) -> None:
        if self.problems and not settings.skip_invalid:
            raise parse_error([p.to_json() for p in self.problems], "cannot be parsed")
        duplicate, long = self.checked()
        if duplicate is not None:
            cid, first, second = duplicate
            raise CitelineError(
                "bundle_invalid",
                f"Concept id {cid!r} is used by both {first!r} and {second!r}; "
                "give one of them another front-matter id.",
                {"reason": "duplicate_concept_id", "concept_id": cid, "paths": [first, second]},
            )
        if long is not None:
            path, line, size, what = long
            raise CitelineError(
                "resource_limit",
                f"The {what} at {path}:{line} is {size} UTF-8 bytes; at most "
                f"{MAX_HEADING_BYTES} are allowed. Shorten it.",
                {
                    "limit": f"{what}_bytes",
                    "value": size,
                    "max": MAX_HEADING_BYTES,
                    "path": path,
                    "line": line,
                },
            )
        limits = settings.limits
        if self.n > limits.max_sections:
            raise limit_error("max_sections", self.n, limits.max_sections)
        if self.tokens > limits.max_tokens:
            raise limit_error("max_tokens", self.tokens, limits.max_tokens)

    def checked(self) -> Checked:
        """The first duplicate concept id and the first over-long heading or title, found
        once per index (each walks every document)."""
        if self._checked is None:
            self._checked = (self.duplicate(), self.too_long())
        return self._checked

    def duplicate(self) -> tuple[str, str, str] | None:
        """The first concept id used twice, in path order: (id, first path, second path)."""
        seen: dict[str, str] = {}
        clash = False
        for block in self.blocks:
            for cid, i in zip(block.concept, block.doc_input, strict=True):
                if cid in seen:
                    clash = True
                    break
                seen[cid] = block.paths[i]
            if clash:
                break
        if not clash:
            return None
        owners: dict[str, str] = {}
        for path, cid in sorted(
            (b.paths[i], cid)
            for b in self.blocks
            for cid, i in zip(b.concept, b.doc_input, strict=True)
        ):
            if cid in owners:
                return cid, owners[cid], path
            owners[cid] = path
        return None  # pragma: no cover - a clash was seen above

    def too_long(self) -> tuple[str, int, int, str] | None:
        found = [
            (b.paths[b.doc_input[d]], line, size, what)
            for b in self.blocks
            for d, line, size, what in zip(
                b.long_doc, b.long_line, b.long_size, b.long_what, strict=True
            )
        ]
        return min(found) if found else None

    # -- terms ---------------------------------------------------------------------------

    def where(self, term: str) -> tuple[Where, ...]:
        """The posting ranges of `term` in each block that holds it."""
        with self._lock:
            found = self._where.get(term)
            if found is not None:
                self._where.move_to_end(term)
                return found
        places = []
        lexicon = self._lexicon
        if lexicon is None:
            asked: Iterable[tuple[Block, int]] = zip(self.blocks, self.bases, strict=True)
        else:  # (at ten times tldr, 63% of the blocks asked for a word hold none of it)
            at = self._blocks_at  # each block and its first section's number, by key
            if at is None:
                at = {b.key: (b, o) for b, o in zip(self.blocks, self.bases, strict=True)}
                self._blocks_at = at
            asked = sorted((at[key] for key in set(lexicon.holding(term))), key=lambda a: a[1])
        for block, base in asked:
            span = block.find(term)
            if span is not None:
                places.append((block, base, span[0], span[1]))
        found = tuple(places)
        with self._lock:
            self._where[term] = found
            while len(self._where) > _REMEMBERED_TERMS:
                self._where.popitem(last=False)
        return found

    def postings(self, term: str) -> Postings:
        return gather(self.posting_views(), self.where(term))

    def posting_views(self) -> Views:
        return self.derived.get("postings.views", lambda: views(self.blocks))

    def df(self, term: str) -> int:
        return sections_in(self.where(term))

    def expand(self, prefix: str) -> list[str]:
        """Indexed terms that start with `prefix` (itself included), most frequent first.

        At most MAX_EXPANSIONS of them: a one-letter prefix would otherwise stand for
        thousands of terms and make every keystroke rank the whole vocabulary.
        """
        return most_frequent(dict(self.prefixed(prefix)))

    def prefixed(self, prefix: str) -> list[tuple[str, int]]:
        """(term, sections holding it) for each indexed term starting with `prefix`, in no
        particular order."""
        lexicon = self._lexicon
        if lexicon is not None:
            return lexicon.prefixed(prefix)
        found: dict[str, int] = {}
        for block in self.blocks:
            for term, count in block.prefixed(prefix):
                found[term] = found.get(term, 0) + count
        return list(found.items())

    def make_lexicon(self, pause: Callable[[], None] | None = None) -> None:
        """Make what later requests on this index want and one-shot calls do not: its
        lexicon, when it has LEXICON_BLOCKS blocks (about a second at ten times tldr),
        calling `pause` before each block (the engine's Warmer runs it between requests);
        answers are the same before, during and after."""
        if self.lexicon_wanted():
            self._lexicon = Lexicon.of(self.blocks, pause)

    def lexicon_wanted(self) -> bool:
        """Whether make_lexicon has a lexicon to make."""
        return self._lexicon is None and len(self.blocks) >= LEXICON_BLOCKS

    # -- sections ------------------------------------------------------------------------

    def locate(self, g: int) -> tuple[Block, int]:
        b = bisect.bisect_right(self.bases, g) - 1
        return self.blocks[b], g - self.bases[b]

    def concept_and_line(self, g: int) -> tuple[str, int]:
        """The tie-breaking key of §5: concept_id, then line_start."""
        block, s = self.locate(g)
        return block.concept[block.sec_doc[s]], block.sec_first[s]

    def section(self, g: int) -> Section:
        block, s = self.locate(g)
        doc = block.sec_doc[s]
        i = block.doc_input[doc]
        return Section(
            block.paths[i],
            block.shas[i],
            block.concept[doc],
            block.title[doc],
            block.heading[s],
            block.sec_level[s],
            block.sec_first[s],
            block.sec_last[s],
            block.sec_start[s],
            block.sec_end[s],
            block.outline[s],
            _first_h1(block, s, doc) if not block.sec_level[s] else "",
        )

    def listing(self, cap: int) -> list[int]:
        """Sections that have headings, in concept_id/line order (pickers that filter
        themselves), the first `cap` of them. A heading with no text is a heading too (its
        symbol is named "(empty heading)"); the preamble and a body section are not."""
        keys: Iterator[tuple[str, int, int]] = (
            (block.concept[doc], first, base + s)
            for block, base in zip(self.blocks, self.bases, strict=True)
            for s, (doc, first, level) in enumerate(
                zip(block.sec_doc, block.sec_first, block.sec_level, strict=True)
            )
            if level
        )
        return [g for _, _, g in heapq.nsmallest(cap, keys)]


def _first_h1(block: Block, s: int, doc: int) -> str:
    """The first H1 with text among the sections of `doc` after section `s` (a preamble
    comes before all of its file's headings)."""
    for t in range(s + 1, len(block.sec_doc)):
        if block.sec_doc[t] != doc:
            break
        if block.sec_level[t] == 1 and block.heading[t]:
            return block.heading[t]
    return ""


def _derived(previous: Index, blocks: Sequence[Block]) -> Lexicon | None:
    """The lexicon of `blocks` from `previous`'s, when few of its blocks changed."""
    assert previous._lexicon is not None
    keys = {block.key for block in blocks}
    before = {block.key for block in previous.blocks}
    removed = [block for block in previous.blocks if block.key not in keys]
    added = [block for block in blocks if block.key not in before]
    if len(removed) + len(added) > len(blocks) // 4:
        return None  # (most of the index changed: made afresh by make_lexicon)
    return previous._lexicon.derive(removed, added)


__all__ = [
    "K1",
    "MAX_EXPANSIONS",
    "B",
    "Index",
    "Problem",
    "Section",
    "most_frequent",
]
