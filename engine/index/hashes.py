"""Section hashes (SPEC §6's `section_sha256`) and the look-up by hash that `verify` needs.

A section's text is its lines as they are in the file (CRLF kept inside) without the final
line ending: in the decoded file, exactly `text[start:end]` of the index's Section. Its hash
is the SHA-256 of that text's UTF-8 bytes.

`SectionHashes` finds the sections whose text has a given hash without a full-text search.
It is held by an Index and dies with it (never a module global); the tables are made per
block, on the first look-up that needs them, and carried over to the next index for every
block it keeps (blocks are immutable, so a kept block's table stays right). Each table holds
the first 8 bytes of each section's digest (a signed 64-bit integer) sorted, with the
section's number in its block: 12 bytes a section, found by bisection. A prefix match is a
candidate only; the caller compares the full digest before it trusts one.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .blocks import Block


def section_sha256(text: str, start: int, end: int) -> str:
    """The section's `section_sha256`, from its decoded file and code-point offsets."""
    return hashlib.sha256(text[start:end].encode("utf-8")).hexdigest()


def prefix(hexdigest: str) -> int:
    """The digest's first 8 bytes as a signed 64-bit integer (the tables' key)."""
    return int.from_bytes(bytes.fromhex(hexdigest[:16]), "big", signed=True)


class BlockHashes:
    """One block's table: sorted prefixes and, in the same order, the section numbers."""

    __slots__ = ("keys", "sections")

    def __init__(self, pairs: Iterable[tuple[int, int]]) -> None:
        ordered = sorted(pairs)
        self.keys = array("q", (k for k, _ in ordered))
        self.sections = array("i", (s for _, s in ordered))

    def find(self, key: int) -> list[int]:
        lo = bisect.bisect_left(self.keys, key)
        hi = bisect.bisect_right(self.keys, key, lo)
        return [self.sections[i] for i in range(lo, hi)]

    def nbytes(self) -> int:
        return self.keys.itemsize * len(self.keys) + self.sections.itemsize * len(self.sections)


# The decoded text of a block's input `i` (its path and file SHA-256 name it).
TextOf = Callable[[str, str], str | None]


def block_hashes(block: Block, text_of: TextOf) -> BlockHashes:
    pairs = []
    texts: dict[int, str | None] = {}
    for s in range(block.sections):
        i = block.doc_input[block.sec_doc[s]]
        if i not in texts:
            texts[i] = text_of(block.paths[i], block.shas[i])
        text = texts[i]
        if text is None:  # pragma: no cover - the snapshot holds every indexed file
            continue
        pairs.append((prefix(section_sha256(text, block.sec_start[s], block.sec_end[s])), s))
    return BlockHashes(pairs)


class SectionHashes:
    """The tables of an index's blocks, by block key (made lazily, kept across indexes)."""

    def __init__(self, previous: SectionHashes | None = None) -> None:
        self._tables: dict[str, BlockHashes] = {}
        self._lock = threading.Lock()
        if previous is not None:
            with previous._lock:
                self._tables = dict(previous._tables)

    def keep(self, blocks: Sequence[Block]) -> None:
        """Forget the tables of blocks the index no longer has."""
        keys = {b.key for b in blocks}
        with self._lock:
            self._tables = {k: t for k, t in self._tables.items() if k in keys}

    def find(
        self, blocks: Sequence[Block], bases: Sequence[int], digest: str, text_of: TextOf
    ) -> list[int]:
        """The global numbers of the sections whose digest starts as `digest` does."""
        key = prefix(digest)
        found: list[int] = []
        for block, base in zip(blocks, bases, strict=True):
            with self._lock:
                table = self._tables.get(block.key)
            if table is None:
                table = block_hashes(block, text_of)
                with self._lock:
                    self._tables[block.key] = table
            found.extend(base + s for s in table.find(key))
        return found

    def nbytes(self) -> int:
        """The tables' payload (the arrays' items; a few hundred bytes of objects aside)."""
        with self._lock:
            return sum(t.nbytes() for t in self._tables.values())


__all__ = ["BlockHashes", "SectionHashes", "block_hashes", "prefix", "section_sha256"]
