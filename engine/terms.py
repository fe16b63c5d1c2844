"""Tokenising documents and queries (SPEC §4, with the §13 `cjk` and `stemming` options).

A token is a maximal run of L*/N*/M* code points of the case-folded, NFC-normalised text.
Options only ever refine a token further (CJK bigrams, English stems), so positions in
the original text can always be recovered run by run.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .errors import CitelineError, schema_error
from .limits import MAX_QUERY_CODEPOINTS, MAX_QUERY_TERMS, MAX_TERM_CODEPOINTS
from .unicode_tables import CJK_RANGES, bmp_part, word_class

_WORD_CLASS = word_class()
WORD_RE = re.compile(f"[{_WORD_CLASS}]+")
_WORD_BMP_RE = re.compile(f"[{bmp_part(_WORD_CLASS)}]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def word_re(text: str) -> re.Pattern[str]:
    """The word pattern to use for `text`: the fast BMP-only one unless it has astral chars."""
    return WORD_RE if _ASTRAL.search(text) else _WORD_BMP_RE


_CJK_CLASS = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES)
CJK_RE = re.compile(f"[{_CJK_CLASS}]+")
_NFC = unicodedata.normalize


def normalise(text: str) -> str:
    """Full default case folding, then NFC."""
    return _NFC("NFC", text.casefold())


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _english().stemWord(word)


@lru_cache(maxsize=1)
def _english():  # type: ignore[no-untyped-def]
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """The active tokenisation: `cjk` is "runs" or "bigrams", `stemming` "none" or "english"."""

    cjk: str = "runs"
    stemming: str = "none"

    @property
    def is_plain(self) -> bool:
        return self.cjk == "runs" and self.stemming == "none"

    def tokens(self, text: str) -> list[str]:
        """All tokens of `text`, in order (duplicates kept)."""
        norm = normalise(text)
        words = word_re(norm).findall(norm)
        if self.is_plain:
            return words
        out: list[str] = []
        for word in words:
            out.extend(piece for piece, _, _ in self._refine(word))
        return out

    def _refine(self, word: str) -> Iterator[tuple[str, int, int]]:
        """Split one normalised word into final tokens with offsets inside the word."""
        if self.cjk == "bigrams" and CJK_RE.search(word):
            pos = 0
            for m in CJK_RE.finditer(word):
                if m.start() > pos:
                    yield self._finish(word[pos : m.start()]), pos, m.start()
                s, e = m.span()
                if e - s == 1:
                    yield self._finish(word[s:e]), s, e
                else:
                    for i in range(s, e - 1):
                        yield word[i : i + 2], i, i + 2
                pos = e
            if pos < len(word):
                yield self._finish(word[pos:]), pos, len(word)
        else:
            yield self._finish(word), 0, len(word)

    def _finish(self, piece: str) -> str:
        return _stem(piece) if self.stemming == "english" else piece

    def located(self, text: str) -> Iterator[tuple[str, int, int]]:
        """(token, start, end) with code-point offsets into the *original* text.

        Each original run is normalised on its own; when normalisation changes a run's
        length, every token from it is located at the whole run.
        """
        plain = self.is_plain
        for m in word_re(text).finditer(text):
            run = m.group()
            rs, re_ = m.span()
            norm = normalise(run)
            if plain and norm == run:
                yield run, rs, re_
                continue
            parts = [(w.group(), w.start()) for w in word_re(norm).finditer(norm)]
            exact = len(parts) == 1 and len(norm) == len(run)
            for word, ws in parts:
                if plain:
                    yield word, rs, re_
                    continue
                for piece, ps, pe in self._refine(word):
                    if exact:
                        yield piece, rs + ws + ps, rs + ws + pe
                    else:
                        yield piece, rs, re_


CONTRACT = Tokenizer()


def check_text(value: object, what: str) -> str:
    """A request string: must be a str of valid Unicode (no lone surrogates)."""
    if not isinstance(value, str):
        raise schema_error(f"{what} must be a string.", field=what)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise schema_error(
            f"{what} is not valid Unicode text (lone surrogate at {exc.start}).", field=what
        ) from None
    return value


def check_query(query: object, *, need_word: bool = True) -> str:
    text = check_text(query, "query")
    n = len(text)
    if n < 1 or n > MAX_QUERY_CODEPOINTS:
        raise schema_error(
            f"query must be 1 to {MAX_QUERY_CODEPOINTS} code points long, got {n}.",
            field="query",
            length=n,
        )
    if need_word and not any(unicodedata.category(c)[0] in "LN" for c in text):
        raise schema_error("query must contain at least one letter or number.", field="query")
    return text


def query_terms(query: str, tokenizer: Tokenizer = CONTRACT) -> tuple[str, ...]:
    """Distinct query terms in first-occurrence order, with the §4 limits checked.

    The term-count and term-length limits apply to the words the user typed (the
    contract tokenisation); a `cjk`/`stemming` option then refines those words.
    """
    words = list(dict.fromkeys(CONTRACT.tokens(query)))
    check_term_limits(words)
    if tokenizer.is_plain:
        return tuple(words)
    return tuple(dict.fromkeys(tokenizer.tokens(query)))


def check_term_limits(words: list[str]) -> None:
    if len(words) > MAX_QUERY_TERMS:
        raise CitelineError(
            "resource_limit",
            f"The query has {len(words)} distinct terms; at most {MAX_QUERY_TERMS} are allowed. "
            "Shorten the query.",
            {"limit": "query_terms", "value": len(words), "max": MAX_QUERY_TERMS},
        )
    for word in words:
        if len(word) > MAX_TERM_CODEPOINTS:
            raise CitelineError(
                "resource_limit",
                f"A query term is {len(word)} code points long; at most "
                f"{MAX_TERM_CODEPOINTS} are allowed.",
                {"limit": "term_length", "value": len(word), "max": MAX_TERM_CODEPOINTS},
            )
