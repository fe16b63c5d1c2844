"""Everything derived from one file's bytes: a pure function, so it can be memoised by SHA-256.

Nothing here knows the file's path; the concept id falls back to the path later.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from sys import intern

from ..base.errors import ParseIssue
from ..base.limits import MAX_HEADING_BYTES
from .fields import ANCHOR, linkish, links
from .layout import Layout, decode, layout, line_index
from .options import AnalysisOptions
from .sections import Blocks, Heading, Structure, cut, find_headings, headings, parse_blocks

# Field weights of SPEC §5 (and §13's outline field).
W_RAW, W_HEADING, W_TITLE, W_OUTLINE = 1, 3, 2, 2


@dataclass(frozen=True, slots=True)
class SectionStats:
    first: int  # 0-based first line (the heading line for a heading section)
    last: int  # 0-based last line, inclusive
    heading: str  # plain heading text, "" for the preamble / body section
    level: int  # 1-6, 0 for the preamble / body section
    outline: str  # headings above it (context=outline), else ""
    length: int  # weighted token count (BM25 len)
    start: int  # code-point offsets of the section's text in the decoded file,
    end: int  # so a hit's text is a slice, with no need to index lines again
    navigation: bool = False  # mostly links (structure=fields only; engine/text/fields.py)


@dataclass(frozen=True, slots=True)
class TooLong:
    line: int  # 1-based
    size: int  # UTF-8 bytes
    what: str  # "heading" or "title"


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    issue: ParseIssue | None
    front_id: str | None
    title: str
    sections: tuple[SectionStats, ...]
    # term -> ((section index, weighted tf), ...), ascending section index; never mutated.
    postings: dict[str, tuple[tuple[int, int], ...]]
    total_length: int  # sum of section lengths
    tokens: int  # indexed tokens (unweighted), for the token limit
    too_long: TooLong | None


def failed(issue: ParseIssue) -> FileAnalysis:
    return FileAnalysis(issue, None, "", (), {}, 0, 0, None)


def analyse(
    data: bytes,
    options: AnalysisOptions = AnalysisOptions(),
    known: Structure | ParseIssue | None = None,
) -> FileAnalysis:
    """The file's sections and term statistics; `known` is its structure, when computed."""
    if known is None:
        return analyse_with_structure(data, options)[0]
    if isinstance(known, ParseIssue):
        return failed(known)
    text = decode(data)
    assert isinstance(text, str)  # a file with a structure decodes
    starts, ends = line_index(text)
    lay = Layout(text, starts, ends, known.front, known.body_line)
    return _analyse(lay, list(known.headings), options)


def analyse_with_structure(
    data: bytes, options: AnalysisOptions = AnalysisOptions()
) -> tuple[FileAnalysis, Structure | ParseIssue]:
    """The analysis and the structure it was built on, from one decode and one parse."""
    return analyse_parsed(data, options)[:2]  # type: ignore[return-value]


def analyse_parsed(
    data: bytes, options: AnalysisOptions = AnalysisOptions()
) -> tuple[FileAnalysis, Structure | ParseIssue, bool]:
    """As analyse_with_structure, and whether finding the structure was worth remembering:
    it needed the block parser or front matter (a simple file's headings are found again
    faster than a remembered structure is read back)."""
    lay = layout(data)
    if isinstance(lay, ParseIssue):
        return failed(lay), lay, True
    # Under structure=fields a file with links is block-parsed once, for both.
    linked = options.fields and linkish(lay)
    blocks = parse_blocks(lay) if linked else None
    heads, parsed = find_headings(lay, blocks)
    found = Structure(lay.front, lay.body_line, tuple(heads))
    return _analyse(lay, heads, options, linked, blocks), found, parsed or lay.body_line > 0


def _analyse(
    lay: Layout,
    heads: list[Heading],
    options: AnalysisOptions,
    linked: bool | None = None,
    blocks: Blocks | None = None,
) -> FileAnalysis:
    """`linked`: whether the file is fields.linkish, when known; `blocks`: its block parse,
    when made."""
    front_id = lay.front.get("id")
    if not isinstance(front_id, str) or not front_id:
        front_id = None
    title = lay.front.get("title")
    title = title if isinstance(title, str) else ""
    too_long = _too_long(title, heads)
    spans = cut(lay, heads)
    outlines = _outlines(heads) if options.outline else {}
    tok = options.tokenizer.tokens
    if linked is None:
        linked = options.fields and linkish(lay)
    found = links(lay, spans, tok, blocks) if linked else None
    # Under structure=fields a heading's {#anchor} is no word of its heading or outline.
    words_of = _unanchored if options.fields else _same

    title_counts = Counter(tok(title)) if title else Counter()
    title_n = sum(title_counts.values())
    postings: dict[str, list[tuple[int, int]]] = {}
    sections = []
    total_length = 0
    tokens = 0
    for idx, span in enumerate(spans):
        head = span.heading
        start, end = lay.starts[span.first], lay.ends[span.last]
        raw = tok(lay.text[start:end])
        counts = Counter(raw)
        length = len(raw)
        n = len(raw) + title_n
        navigation = False
        if found is not None:
            length -= _take_out(counts, found[idx].dropped)
            navigation = found[idx].navigation
        heading_text = head.text if head else ""
        if heading_text:
            htoks = tok(words_of(heading_text))
            for t in htoks:
                counts[t] += W_HEADING
            length += W_HEADING * len(htoks)
            n += len(htoks)
        for t, c in title_counts.items():
            counts[t] += W_TITLE * c
        length += W_TITLE * title_n
        outline = outlines.get(span.first, "")
        if outline:
            otoks = tok(words_of(outline))
            for t in otoks:
                counts[t] += W_OUTLINE
            length += W_OUTLINE * len(otoks)
            n += len(otoks)
        for t, c in counts.items():
            postings.setdefault(intern(t), []).append((idx, c))
        sections.append(
            SectionStats(
                span.first,
                span.last,
                heading_text,
                head.level if head else 0,
                outline,
                length,
                start,
                end,
                navigation,
            )
        )
        total_length += length
        tokens += n
    return FileAnalysis(
        None,
        front_id,
        title,
        tuple(sections),
        # Tuples, not lists: the collector stops tracking tuples of ints, so a large memo
        # does not make every garbage collection walk millions of posting lists.
        {t: tuple(p) for t, p in postings.items()},
        total_length,
        tokens,
        too_long,
    )


def _take_out(counts: Counter[str], dropped: Counter[str]) -> int:
    """Takes the `dropped` occurrences out of `counts` (never below 0); how many it took."""
    taken = 0
    for term, c in dropped.items():
        have = counts.get(term, 0)
        take = min(have, c)
        if take == have:
            counts.pop(term, None)
        else:
            counts[term] = have - take
        taken += take
    return taken


def _unanchored(text: str) -> str:
    return ANCHOR.sub(" ", text) if "{" in text else text


def _same(text: str) -> str:
    return text


def _too_long(title: str, heads: list[Heading]) -> TooLong | None:
    size = len(title.encode("utf-8"))
    if size > MAX_HEADING_BYTES:
        return TooLong(1, size, "title")
    for head in heads:
        size = len(head.text.encode("utf-8"))
        if size > MAX_HEADING_BYTES:
            return TooLong(head.line + 1, size, "heading")
    return None


def _outlines(heads: list[Heading]) -> dict[int, str]:
    """For each heading line, the texts of the nearest preceding heading of each lower level."""
    current: dict[int, str] = {}
    out: dict[int, str] = {}
    for head in heads:
        above = [current[lv] for lv in sorted(current) if lv < head.level]
        out[head.line] = " › ".join(above)
        current = {lv: t for lv, t in current.items() if lv < head.level}
        current[head.level] = head.text
    return out


def outline_tree(data: bytes) -> tuple[Layout, list[Heading]] | ParseIssue:
    """The layout and headings of one document (for an editor's outline view)."""
    lay = layout(data)
    if isinstance(lay, ParseIssue):
        return lay
    return lay, headings(lay)


# -- the structure's codec (cache and worker processes) ---------------------------------


def encode_structure(found: Structure | ParseIssue) -> bytes:
    """A structure (or parse issue) as a blob; only the front-matter fields used are kept."""
    from ..base.codec import Writer

    w = Writer()
    if isinstance(found, ParseIssue):
        return w.ints([found.line]).text(found.reason).finish(b"P")
    front_id = found.front.get("id")
    title = found.front.get("title")
    w.ints([found.body_line, int(isinstance(front_id, str)), int(isinstance(title, str))])
    w.strs([front_id if isinstance(front_id, str) else "", title if isinstance(title, str) else ""])
    heads = found.headings
    w.ints([h.line for h in heads]).ints([h.level for h in heads])
    w.ints([h.end_line for h in heads]).strs([h.text for h in heads])
    return w.finish(b"S")


def decode_structure(blob: bytes) -> Structure | ParseIssue:
    from ..base.codec import Corrupt, Reader, expect

    if blob[3:4] == b"P":
        r = Reader(blob, b"P")
        (line,) = r.ints()
        issue = ParseIssue(line, r.text())
        r.end()
        return issue
    r = Reader(blob, b"S")
    head = r.ints()
    expect(len(head) == 3, "structure header")
    body_line, has_id, has_title = head
    front_id, title = r.strs()
    lines, levels, ends, texts = r.ints(), r.ints(), r.ints(), r.strs()
    r.end()
    expect(len(lines) == len(levels) == len(ends) == len(texts), "headings")
    if not all(1 <= lv <= 6 for lv in levels):
        raise Corrupt("heading level")
    front: dict = {}
    if has_id:
        front["id"] = front_id
    if has_title:
        front["title"] = title
    heads = tuple(
        Heading(a, b, t, e) for a, b, e, t in zip(lines, levels, ends, texts, strict=True)
    )
    return Structure(front, body_line, heads)
