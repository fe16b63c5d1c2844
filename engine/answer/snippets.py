"""The snippet window and its match_spans (SPEC §6, §7)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from ..text.terms import Tokenizer

LEAD = 80  # code points shown before the first matching token
WIDTH = 512  # code points at most
MAX_SPANS = 100


@dataclass(frozen=True, slots=True)
class Snippet:
    text: str
    spans: tuple[tuple[int, int], ...]  # UTF-8 byte offsets into text, sorted, disjoint


def _ascii_finder(terms: frozenset[str]) -> re.Pattern[str] | None:
    """The query terms as whole ASCII tokens, or None when no term is ASCII.

    In ASCII text a token is a run of [A-Za-z0-9] and its normal form is its lower case,
    so this finds exactly the tokens the tokenizer would yield equal to a term (with no
    stemming), without tokenising the text.
    """
    words = sorted((t for t in terms if t.isascii()), key=lambda t: (-len(t), t))
    if not words:
        return None
    alternatives = "|".join(map(re.escape, words))
    return re.compile(f"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", re.IGNORECASE)


def _fast(text: str, tokenizer: Tokenizer) -> bool:
    return tokenizer.ascii_words and text.isascii()


# The finders of one request's hits, by their set of matched terms (the caller's: a memo
# that lives as long as the request, where one shared by every request would be module state).
Finders = dict[frozenset[str], "re.Pattern[str] | None"]


def _occurrences(
    text: str, terms: Collection[str], tokenizer: Tokenizer, finders: Finders | None
) -> Iterator[tuple[str, int, int]]:
    """(token, start, end) of each token of `text` equal to a term, in text order."""
    if _fast(text, tokenizer):
        key = frozenset(terms)
        if finders is None:
            finders = {}
        finder = finders[key] if key in finders else finders.setdefault(key, _ascii_finder(key))
        for found in finder.finditer(text) if finder is not None else ():
            yield found.group().lower(), found.start(), found.end()
        return
    for token, start, end in tokenizer.located(text):
        if token in terms:
            yield token, start, end


def window(
    text: str, terms: Collection[str], tokenizer: Tokenizer, finders: Finders | None = None
) -> str:
    """512 code points from 80 before the first token equal to a query term."""
    for _token, start, _end in _occurrences(text, terms, tokenizer, finders):
        begin = start - LEAD if start >= LEAD else 0
        return text[begin : begin + WIDTH]
    return text[:WIDTH]


def match_spans(
    snippet: str, terms: Sequence[str], tokenizer: Tokenizer, finders: Finders | None = None
) -> tuple[tuple[int, int], ...]:
    """Occurrences of the terms in the snippet, at most max(1, 100 // k) per term, folded."""
    if not terms:
        return ()
    budget = max(1, MAX_SPANS // len(terms))
    left = dict.fromkeys(terms, budget)
    ranges: list[tuple[int, int]] = []
    for token, start, end in _occurrences(snippet, left, tokenizer, finders):
        if left[token] > 0:
            left[token] -= 1
            ranges.append((start, end))
    return tuple(_to_bytes(snippet, fold(ranges)))


def fold(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort; overlapping ranges become their union, touching ones stay apart."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start < out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _to_bytes(text: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if text.isascii():
        return ranges
    out = []
    pos = 0
    offset = 0
    for start, end in ranges:
        offset += len(text[pos:start].encode("utf-8"))
        b_start = offset
        offset += len(text[start:end].encode("utf-8"))
        out.append((b_start, offset))
        pos = end
    return out


def snippet(
    text: str, terms: Sequence[str], tokenizer: Tokenizer, finders: Finders | None = None
) -> Snippet:
    """`finders`: a memo the caller keeps for one request (see Finders)."""
    finders = {} if finders is None else finders  # window's and the spans' finder: one
    shown = window(text, frozenset(terms), tokenizer, finders)
    return Snippet(shown, match_spans(shown, terms, tokenizer, finders))
