"""Blocks: the compact, immutable index of a run of searchable files.

A workspace's index is a list of blocks (index.py). Each block is a pure function of its
input files (path, SHA-256 and bytes) and the analysis options, so it is addressed by a key
derived from exactly those, can be built in another process, stored in the cache and
shared by every later snapshot that holds the same files. When files change, only the
blocks holding them are rebuilt — from their own arrays, without parsing again — and the
new versions of the files go into a new block.

Everything is held in flat arrays (one int per value, not one object) and string lists, so
a 40,000-file workspace costs a few bytes per posting instead of a Python tuple each.
"""

from __future__ import annotations

import bisect
import hashlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..base.codec import (
    I32,
    I64,
    Corrupt,
    Reader,
    StringTable,
    Writer,
    expect,
    first_at_least,
    prefix_range,
    sample_of,
)
from ..text.options import AnalysisOptions

if TYPE_CHECKING:
    from ..text.analysis import FileAnalysis

# Bumped whenever what a block holds for the same bytes changes (tokenizer, sections, …):
# cached blocks of another version are never used.
# .5: blocks a server built while two threads stemmed at once may hold wrong stems
# .6: front-matter fences may end in spaces or tabs (a file opening with "--- " now has
#     front matter), so a structure or block of the same bytes differs
# .7: sections carry a navigation flag (structure=fields, issue 52)
ANALYSIS_VERSION = "2026-12-07.7"  # .2: heading line breaks and CRs, front-matter errors


@dataclass(frozen=True, slots=True)
class Input:
    """One searchable file given to a block."""

    path: str
    sha256: str
    size: int


def options_key(options: AnalysisOptions) -> str:
    """A stable text naming everything in the options that changes analysis."""
    tok = options.tokenizer
    parts = [f"{name}={getattr(tok, name)}" for name in tok.__dataclass_fields__]
    return ";".join([*parts, f"outline={options.outline}", f"fields={options.fields}"])


def block_key(inputs: Sequence[Input], options: AnalysisOptions) -> str:
    """The content address of the block over `inputs` (sorted by path)."""
    digest = hashlib.sha256(f"{ANALYSIS_VERSION}\n{options_key(options)}\n".encode())
    for item in inputs:
        digest.update(item.path.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00" + item.sha256.encode("ascii") + b"\n")
    return digest.hexdigest()


def concept_id_of(path: str, front_id: str | None) -> str:
    if front_id is not None:
        return front_id
    base, dot, _ext = path.rpartition(".")
    return base if dot else path


@dataclass(frozen=True, slots=True)
class Block:
    key: str
    # Inputs, sorted by path: every searchable file given to the block.
    paths: StringTable
    shas: StringTable
    sizes: array  # I64
    # Inputs that cannot be parsed (SPEC §3): their index, 1-based line and reason.
    prob_input: array
    prob_line: array
    prob_reason: StringTable
    # Documents: the inputs that parsed, in path order.
    doc_input: array
    concept: StringTable
    title: StringTable
    doc_tokens: array  # I64, indexed tokens (for the token limit)
    doc_sec: array  # first section of each document, plus one past the last
    # A heading or title over the length limit (at most one per document).
    long_doc: array
    long_line: array
    long_size: array
    long_what: StringTable
    # Sections, in document order.
    sec_doc: array
    sec_first: array  # 0-based first line
    sec_last: array  # 0-based last line (inclusive)
    sec_level: array
    sec_length: array  # weighted length (BM25 len)
    sec_start: array  # I64 code-point offsets of the section's text in the decoded file
    sec_end: array
    heading: StringTable
    outline: StringTable
    sec_nav: array  # 1: a navigation section (structure=fields; engine/text/fields.py)
    # Postings: term i's sections are p_sec[offsets[i]:offsets[i+1]], with weighted tf.
    vocab: StringTable  # sorted
    offsets: array
    p_sec: array
    p_tf: array
    _sample: list[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sample", sample_of(self.vocab))

    # -- looking things up -------------------------------------------------------------

    @property
    def sections(self) -> int:
        return len(self.sec_first)

    @property
    def total_length(self) -> int:
        return sum(self.sec_length)

    @property
    def tokens(self) -> int:
        return sum(self.doc_tokens)

    def find(self, term: str) -> tuple[int, int] | None:
        """The range of `term`'s postings, or None when no section holds it."""
        vocab = self.vocab
        i = first_at_least(vocab, self._sample, term)
        if i < len(vocab) and vocab[i] == term:
            return self.offsets[i], self.offsets[i + 1]
        return None

    def prefixed(self, prefix: str) -> list[tuple[str, int]]:
        """(term, number of sections holding it) for each term starting with `prefix`."""
        vocab, offsets = self.vocab, self.offsets
        i, j = prefix_range(vocab, self._sample, prefix)
        return [(w, offsets[k + 1] - offsets[k]) for k, w in enumerate(vocab.between(i, j), i)]

    # -- the codec ---------------------------------------------------------------------

    def encode(self) -> bytes:
        w = Writer().text(self.key)
        w.table(self.paths).table(self.shas).ints(self.sizes, I64)
        w.ints(self.prob_input).ints(self.prob_line).table(self.prob_reason)
        w.ints(self.doc_input).table(self.concept).table(self.title)
        w.ints(self.doc_tokens, I64).ints(self.doc_sec)
        w.ints(self.long_doc).ints(self.long_line).ints(self.long_size).table(self.long_what)
        w.ints(self.sec_doc).ints(self.sec_first).ints(self.sec_last).ints(self.sec_level)
        w.ints(self.sec_length).ints(self.sec_start, I64).ints(self.sec_end, I64)
        w.table(self.heading).table(self.outline).ints(self.sec_nav)
        w.table(self.vocab).ints(self.offsets).ints(self.p_sec).ints(self.p_tf)
        return w.finish(b"B")

    @classmethod
    def decode(cls, blob: bytes, key: str | None = None) -> Block:
        """A block from its blob, every length and reference checked (Corrupt otherwise)."""
        r = Reader(blob, b"B")
        block = cls(
            r.text(),
            r.table(),
            r.table(),
            r.ints(I64),
            r.ints(),
            r.ints(),
            r.table(),
            r.ints(),
            r.table(),
            r.table(),
            r.ints(I64),
            r.ints(),
            r.ints(),
            r.ints(),
            r.ints(),
            r.table(),
            r.ints(),
            r.ints(),
            r.ints(),
            r.ints(),
            r.ints(),
            r.ints(I64),
            r.ints(I64),
            r.table(),
            r.table(),
            r.ints(),
            r.table(),
            r.ints(),
            r.ints(),
            r.ints(),
        )
        r.end()
        if key is not None:
            expect(block.key == key, "block stored under another key")
        block._check()
        return block

    def _check(self) -> None:
        n_in = len(self.paths)
        expect(len(self.shas) == n_in and len(self.sizes) == n_in, "inputs")
        expect(len(self.prob_line) == len(self.prob_input) == len(self.prob_reason), "problems")
        n_doc = len(self.doc_input)
        expect(len(self.concept) == n_doc and len(self.title) == n_doc, "documents")
        expect(len(self.doc_tokens) == n_doc and len(self.doc_sec) == n_doc + 1, "documents")
        n_long = len(self.long_doc)
        expect(len(self.long_line) == len(self.long_size) == len(self.long_what) == n_long, "long")
        n_sec = len(self.sec_first)
        for column in (self.sec_doc, self.sec_last, self.sec_level, self.sec_length, self.sec_nav):
            expect(len(column) == n_sec, "sections")
        for texts in (self.sec_start, self.sec_end, self.heading, self.outline):
            expect(len(texts) == n_sec, "sections")
        expect(self.doc_sec[0] == 0 and self.doc_sec[-1] == n_sec, "section ranges")
        n_terms = len(self.vocab)
        expect(len(self.offsets) == n_terms + 1 and self.offsets[0] == 0, "offsets")
        expect(self.offsets[-1] == len(self.p_sec) == len(self.p_tf), "postings")
        # Per-value checks stay O(documents + sections): the CRC already proves the blob is
        # the one this version wrote, and postings are the bulk of a workspace.
        if n_doc:
            expect(min(self.doc_input) >= 0 and max(self.doc_input) < n_in, "document inputs")
        if self.prob_input:
            expect(min(self.prob_input) >= 0 and max(self.prob_input) < n_in, "problems")
        if n_sec:
            expect(min(self.sec_doc) >= 0 and max(self.sec_doc) < n_doc, "section documents")
            expect(min(self.doc_sec) >= 0 and max(self.doc_sec) <= n_sec, "section ranges")


# -- building --------------------------------------------------------------------------


class _Builder:
    """Collects documents (from analyses, or kept from other blocks) in path order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, tuple]] = []  # (path, source)

    def add_analysis(self, item: Input, analysis: FileAnalysis) -> None:
        self.items.append((item.path, ("new", item, analysis)))

    def keep(self, block: Block, index: int) -> None:
        self.items.append((block.paths[index], ("old", block, index)))


def build(
    added: Sequence[tuple[Input, FileAnalysis]],
    options: AnalysisOptions,
    kept: Sequence[tuple[Block, Sequence[int]]] = (),
) -> Block:
    """A block over the analysed files `added` and the inputs `kept` from other blocks.

    Kept inputs bring their documents, sections and postings along (renumbered), so a
    block is rebuilt without parsing anything again.
    """
    builder = _Builder()
    for item, analysis in added:
        builder.add_analysis(item, analysis)
    for block, indexes in kept:
        for i in indexes:
            builder.keep(block, i)
    builder.items.sort(key=lambda pair: pair[0])

    paths: list[str] = []
    shas: list[str] = []
    sizes = array(I64)
    prob_input, prob_line, prob_reason = array(I32), array(I32), []
    doc_input, concept, title = array(I32), [], []
    doc_tokens, doc_sec = array(I64), array(I32, [0])
    long_doc, long_line, long_size, long_what = array(I32), array(I32), array(I32), []
    sec_doc, sec_first, sec_last, sec_level = array(I32), array(I32), array(I32), array(I32)
    sec_length, sec_start, sec_end = array(I32), array(I64), array(I64)
    heading: list[str] = []
    outline: list[str] = []
    sec_nav = array(I32)
    acc: dict[str, list[int]] = {}  # term -> [section, tf, section, tf, ...]
    unsorted: set[str] = set()  # terms whose sections arrived out of order
    # For kept inputs: old section id -> new one, per source block.
    remap: dict[int, dict[int, int]] = {}
    sources: dict[int, Block] = {}

    for path, source in builder.items:
        input_index = len(paths)
        paths.append(path)
        if source[0] == "new":
            _, item, a = source
            shas.append(item.sha256)
            sizes.append(item.size)
            if a.issue is not None:
                prob_input.append(input_index)
                prob_line.append(a.issue.line)
                prob_reason.append(a.issue.reason)
                continue
            doc = len(doc_input)
            doc_input.append(input_index)
            concept.append(concept_id_of(path, a.front_id))
            title.append(a.title)
            doc_tokens.append(a.tokens)
            if a.too_long is not None:
                long_doc.append(doc)
                long_line.append(a.too_long.line)
                long_size.append(a.too_long.size)
                long_what.append(a.too_long.what)
            base = len(sec_first)
            for s in a.sections:
                sec_doc.append(doc)
                sec_first.append(s.first)
                sec_last.append(s.last)
                sec_level.append(s.level)
                sec_length.append(s.length)
                sec_start.append(s.start)
                sec_end.append(s.end)
                heading.append(s.heading)
                outline.append(s.outline)
                sec_nav.append(s.navigation)
            doc_sec.append(len(sec_first))
            for term, plist in a.postings.items():
                found = acc.get(term)
                if found is None:
                    found = acc[term] = []
                elif found[-2] > base + plist[0][0]:
                    unsorted.add(term)
                for si, tf in plist:
                    found.append(base + si)
                    found.append(tf)
            continue
        _, block, i = source
        shas.append(block.shas[i])
        sizes.append(block.sizes[i])
        bid = id(block)
        sources[bid] = block
        mapping = remap.setdefault(bid, {})
        pos = _position(block.prob_input, i)
        if pos is not None:
            prob_input.append(input_index)
            prob_line.append(block.prob_line[pos])
            prob_reason.append(block.prob_reason[pos])
            continue
        old_doc = _position(block.doc_input, i)
        if old_doc is None:  # pragma: no cover - every input is a document or a problem
            raise Corrupt("input neither document nor problem")
        doc = len(doc_input)
        doc_input.append(input_index)
        concept.append(block.concept[old_doc])
        title.append(block.title[old_doc])
        doc_tokens.append(block.doc_tokens[old_doc])
        long_pos = _position(block.long_doc, old_doc)
        if long_pos is not None:
            long_doc.append(doc)
            long_line.append(block.long_line[long_pos])
            long_size.append(block.long_size[long_pos])
            long_what.append(block.long_what[long_pos])
        for s in range(block.doc_sec[old_doc], block.doc_sec[old_doc + 1]):
            mapping[s] = len(sec_first)
            sec_doc.append(doc)
            sec_first.append(block.sec_first[s])
            sec_last.append(block.sec_last[s])
            sec_level.append(block.sec_level[s])
            sec_length.append(block.sec_length[s])
            sec_start.append(block.sec_start[s])
            sec_end.append(block.sec_end[s])
            heading.append(block.heading[s])
            outline.append(block.outline[s])
            sec_nav.append(block.sec_nav[s])
        doc_sec.append(len(sec_first))

    # Postings of kept sections, renumbered; one pass over each source block.
    for bid, mapping in remap.items():
        if not mapping:
            continue
        block = sources[bid]
        offsets, p_sec, p_tf = block.offsets, block.p_sec, block.p_tf
        get = mapping.get
        for t, term in enumerate(block.vocab):
            found = None
            for p in range(offsets[t], offsets[t + 1]):
                new = get(p_sec[p])
                if new is None:
                    continue
                if found is None:
                    found = acc.get(term)
                    if found is None:
                        found = acc[term] = []
                if found and found[-2] > new:
                    unsorted.add(term)
                found.append(new)
                found.append(p_tf[p])

    vocab = sorted(acc)
    offsets = array(I32, [0])
    p_sec, p_tf = array(I32), array(I32)
    for term in vocab:
        flat = acc[term]
        if term in unsorted:
            pairs = sorted(zip(flat[::2], flat[1::2], strict=True))
            flat = [v for pair in pairs for v in pair]
        p_sec.extend(flat[::2])
        p_tf.extend(flat[1::2])
        offsets.append(len(p_sec))
    inputs = [Input(p, s, z) for p, s, z in zip(paths, shas, sizes, strict=True)]
    table = StringTable.of
    return Block(
        block_key(inputs, options),
        table(paths),
        table(shas),
        sizes,
        prob_input,
        prob_line,
        table(prob_reason),
        doc_input,
        table(concept),
        table(title),
        doc_tokens,
        doc_sec,
        long_doc,
        long_line,
        long_size,
        table(long_what),
        sec_doc,
        sec_first,
        sec_last,
        sec_level,
        sec_length,
        sec_start,
        sec_end,
        table(heading),
        table(outline),
        sec_nav,
        table(vocab),
        offsets,
        p_sec,
        p_tf,
    )


def _position(column: array, value: int) -> int | None:
    """Where `value` is in a sorted column, if it is there."""
    i = bisect.bisect_left(column, value)
    return i if i < len(column) and column[i] == value else None


__all__ = ["ANALYSIS_VERSION", "Block", "Input", "block_key", "build", "options_key"]
