"""Tokenising documents and queries (SPEC §4, with the §13 `cjk`, `stemming` and
`identifiers` options).

A token is a maximal run of L*/N*/M* code points of the case-folded, NFC-normalised text.
Options only ever refine a token further (CJK bigrams, English stems) or add the parts of
an identifier beside it, so positions in the original text can always be recovered run
by run.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from itertools import pairwise
from typing import TypeVar

from ..base.errors import CitelineError, schema_error
from ..base.limits import MAX_QUERY_CODEPOINTS, MAX_QUERY_TERMS, MAX_TERM_CODEPOINTS
from ..base.relevance import Cjk, Identifiers, Stemming
from .unicode_tables import CJK_RANGES, bmp_part, word_class

T = TypeVar("T")

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")

# The word and CJK classes are large: compiling them costs milliseconds, and the command
# line's start-up is part of every call, so each is compiled when first needed (module
# attributes WORD_RE and CJK_RE, and the getters below).


@cache
def _word_full() -> re.Pattern[str]:
    return re.compile(f"[{word_class()}]+")


@cache
def _word_bmp() -> re.Pattern[str]:
    return re.compile(f"[{bmp_part(word_class())}]+")


@cache
def cjk_re() -> re.Pattern[str]:
    return re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES) + "]+")


# In ASCII the L*, N* and M* code points are the letters and digits: the same runs, from a
# pattern that compiles at once (an English query on a warm cache never pays for the big one).
_WORD_ASCII = re.compile("[A-Za-z0-9]+")


def word_re(text: str) -> re.Pattern[str]:
    """The word pattern to use for `text`: ASCII's when it is ASCII, else the fast BMP-only
    one unless it has astral chars."""
    if text.isascii():
        return _WORD_ASCII
    return _word_full() if _ASTRAL.search(text) else _word_bmp()


def __getattr__(name: str) -> re.Pattern[str]:
    if name == "WORD_RE":
        return _word_full()
    if name == "CJK_RE":
        return cjk_re()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_NFC = unicodedata.normalize
# An ASCII run that needs `identifiers=split`: a case change inside the word, an acronym
# followed by a capitalised word, or a letter-digit join. Runs without one are most runs.
_ASCII_JOIN = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z][0-9]|[0-9][A-Za-z]")
_DECIMAL = re.compile(r"\d")


def normalise(text: str) -> str:
    """Full default case folding, then NFC."""
    return _NFC("NFC", text.casefold())


def english_stem(word: str) -> str:
    stem = _WORDS.stems.get(word)
    if stem is None:
        stem = _remember(_WORDS.stems, word, _english().stemWord(word), _STEMS_SIZE)
    return stem


# A Snowball stemmer holds the word it is stemming in the object itself: one shared by the
# server's request threads mixes their words up (wrong stems, or IndexError). One per thread.
_STEMMERS = threading.local()


def _english():  # type: ignore[no-untyped-def]
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return stemmer


def _char_class(c: str) -> str:
    """d(ecimal digit), u(pper or title case), l(ower case), m(ark) or o(ther)."""
    if c.isdecimal():
        return "d"
    if c.isupper() or c.istitle():
        return "u"
    if c.islower():
        return "l"
    return "m" if unicodedata.category(c)[0] == "M" else "o"


def identifier_parts(run: str) -> list[tuple[int, int]]:
    """The parts of one word run of the original text, as (start, end) offsets, when it is
    an identifier that `identifiers=split` cuts (SPEC §13); [] when it is not one.

    Cuts fall where a lower-case letter meets an upper-case one (`inlinePrediction`),
    before the last capital of an acronym followed by a lower-case letter (`HTTPResponse`
    → `HTTP` `Response`), and where a decimal digit meets anything else (`utf8`, `x86`).
    Case is Unicode's (Python's str.isupper/istitle/islower of the character); a
    combining mark belongs to the character before it.
    """
    if run.isascii():
        if _ASCII_JOIN.search(run) is None:
            return []
    elif _DECIMAL.search(run) is None and ((run + "a").islower() or (run + "A").isupper()):
        return []  # no digit, and no upper case or no lower case: nothing to cut
    classes: list[str] = []
    for c in run:
        k = _char_class(c)
        classes.append(classes[-1] if k == "m" and classes else k)
    cuts = [0]
    n = len(classes)
    for i in range(1, n):
        prev, cur = classes[i - 1], classes[i]
        if (
            (prev == "d") != (cur == "d")
            or (prev == "l" and cur == "u")
            or (prev == cur == "u" and i + 1 < n and classes[i + 1] == "l")
        ):
            cuts.append(i)
    if len(cuts) == 1:
        return []
    cuts.append(n)
    return list(pairwise(cuts))


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """The active tokenisation: `cjk` is "runs" or "bigrams", `stemming` "none" or
    "english", `identifiers` "whole" or "split"."""

    cjk: Cjk = "runs"
    stemming: Stemming = "none"
    identifiers: Identifiers = "whole"

    @property
    def is_plain(self) -> bool:
        return self.cjk == "runs" and self.stemming == "none" and self.identifiers == "whole"

    @property
    def unstemmed(self) -> Tokenizer:
        """This tokenisation without stemming: the words as typed, which is what an index
        keeps (engine/rank/stems.py reads stems from them at query time)."""
        return replace(self, stemming="none") if self.stemming != "none" else self

    @property
    def ascii_words(self) -> bool:
        """In ASCII text, the tokens are exactly the lower-cased word runs (snippets use
        this to find terms with one regex instead of tokenising)."""
        return self.stemming == "none" and self.identifiers == "whole"

    def tokens(self, text: str) -> list[str]:
        """All tokens of `text`, in order (duplicates kept).

        What a word (or, with `identifiers=split`, a run of the original text) yields never
        depends on its neighbours, so it is remembered: a corpus repeats its words far more
        often than it has distinct ones, and refining them (stems, bigrams, identifier
        parts) is most of the cost of analysing a file under `recall`.
        """
        out: list[str] = []
        if self.identifiers == "split":
            memo = _memo(self)
            for run in word_re(text).findall(text):
                found = memo.get(run)
                if found is None:
                    found = _remember(
                        memo, run, tuple(t for t, _, _ in self._located_run_with_parts(run))
                    )
                out.extend(found)
            return out
        norm = normalise(text)
        words = word_re(norm).findall(norm)
        if self.is_plain:
            return words
        memo = _memo(self)
        for word in words:
            found = memo.get(word)
            if found is None:
                found = _remember(memo, word, tuple(p for p, _, _ in self._refine(word)))
            out.extend(found)
        return out

    def _located_run_with_parts(self, run: str) -> Iterator[tuple[str, int, int]]:
        """located() of one run of the original text, at offset 0."""
        yield from self._located_run(run, 0, len(run), False)
        for ps, pe in identifier_parts(run):
            yield from self._located_run(run[ps:pe], ps, pe, False, True)

    def _refine(self, word: str) -> Iterator[tuple[str, int, int]]:
        """Split one normalised word into final tokens with offsets inside the word."""
        if self.cjk == "bigrams" and cjk_re().search(word):
            pos = 0
            for m in cjk_re().finditer(word):
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
        return english_stem(piece) if self.stemming == "english" else piece

    def located(self, text: str) -> Iterator[tuple[str, int, int]]:
        """(token, start, end) with code-point offsets into the *original* text.

        Each original run is normalised on its own; when normalisation changes a run's
        length, every token from it is located at the whole run. With `identifiers=split`
        the parts of an identifier follow its whole token, each located at its part.
        """
        plain = self.is_plain
        split = self.identifiers == "split"
        if plain:
            for m in word_re(text).finditer(text):
                run = m.group()
                rs, re_ = m.span()
                yield from self._located_run(run, rs, re_, plain)
            return
        # A run's tokens and their offsets inside it never depend on its neighbours:
        # remembered per run, as tokens() does (snippets of every hit locate their terms).
        memo = _located_memo(self)
        for m in word_re(text).finditer(text):
            run = m.group()
            found = memo.get(run)
            if found is None:
                pieces = list(self._located_run(run, 0, len(run), False))
                if split:
                    for ps, pe in identifier_parts(run):
                        pieces.extend(self._located_run(run[ps:pe], ps, pe, False, True))
                found = _remember(memo, run, tuple(pieces))  # type: ignore[arg-type, assignment]
            rs = m.start()
            for token, ts, te in found:  # type: ignore[misc, union-attr]
                yield token, rs + ts, rs + te

    def _located_run(
        self, run: str, rs: int, re_: int, plain: bool, part: bool = False
    ) -> Iterator[tuple[str, int, int]]:
        norm = normalise(run)
        if plain and norm == run:
            yield run, rs, re_
            return
        words = [(w.group(), w.start()) for w in word_re(norm).finditer(norm)]
        exact = len(words) == 1 and len(norm) == len(run)
        for word, ws in words:
            if plain:
                yield word, rs, re_
                continue
            for piece, ps, pe in self._refine(word):
                # A part's CJK stretch is already among its whole token's bigrams.
                if part and self.cjk == "bigrams" and cjk_re().match(word, ps):
                    continue
                if exact:
                    yield piece, rs + ws + ps, rs + ws + pe
                else:
                    yield piece, rs, re_


CONTRACT = Tokenizer()


class _Words:
    """What refining a word gave per tokenizer (keyed by its fields as a plain tuple: hashing
    the dataclass runs two generated functions): tokens, located tokens, English stems. A
    word's tokens depend on the word and those fields only, so every engine of the process
    shares them (docs/architecture.md, "Module state"); a full table is emptied."""

    __slots__ = ("located", "stems", "tokens")

    def __init__(self) -> None:
        self.tokens: dict[tuple[str, str, str], dict[str, tuple[str, ...]]] = {}
        self.located: dict[tuple[str, str, str], dict[str, tuple[tuple[str, int, int], ...]]]
        self.located = {}
        self.stems: dict[str, str] = {}


_WORDS = _Words()
_MEMO_SIZE = 65_536  # words (or runs) per tokenizer
_STEMS_SIZE = 200_000


def _memo(tokenizer: Tokenizer) -> dict[str, tuple[str, ...]]:
    key = (tokenizer.cjk, tokenizer.stemming, tokenizer.identifiers)
    memo = _WORDS.tokens.get(key)
    if memo is None:
        memo = _WORDS.tokens[key] = {}
    return memo


def _located_memo(tokenizer: Tokenizer) -> dict[str, tuple[tuple[str, int, int], ...]]:
    key = (tokenizer.cjk, tokenizer.stemming, tokenizer.identifiers)
    memo = _WORDS.located.get(key)
    if memo is None:
        memo = _WORDS.located[key] = {}
    return memo


def _remember(memo: dict[str, T], word: str, value: T, size: int = _MEMO_SIZE) -> T:
    if len(memo) >= size:
        memo.clear()
    memo[word] = value
    return value


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


class QueryTerms(tuple[str, ...]):
    """The distinct query terms: a tuple of str, equal to the plain tuple, that also keeps
    for each term the number of terms in its CJK bigram chain (1 for any other term).

    A chain is the run of overlapping bigrams one typed word's CJK stretch became
    (`负载均衡` → `负载` `载均` `均衡`: 3 each); `match=any` scoring lets a chain weigh as
    one word (engine/rank/scoring.py). Only the query's text tells where typed words end, which
    is why the terms carry it, with the tokenizer that made them (scoring reads a
    section's heading with it).
    """

    chains: tuple[int, ...]
    tokenizer: Tokenizer | None  # the tokenisation that made them, to read headings alike
    # Under stemming=english: the same query's terms without stemming (the words as typed,
    # which match=any also ranks by); None otherwise.
    typed: QueryTerms | None

    def __new__(
        cls,
        terms: Iterable[str],
        chains: Iterable[int] | None = None,
        tokenizer: Tokenizer | None = None,
        typed: QueryTerms | None = None,
    ) -> QueryTerms:
        self = super().__new__(cls, terms)
        self.chains = tuple(chains) if chains is not None else (1,) * len(self)
        self.tokenizer = tokenizer
        self.typed = typed
        return self


def is_bigram(token: str) -> bool:
    return len(token) == 2 and cjk_re().fullmatch(token) is not None


def _chains(query: str, terms: tuple[str, ...], tokenizer: Tokenizer) -> list[int]:
    """Chain sizes for `terms`, each term counted in the chain where it first occurs."""
    chain_of: dict[str, int] = {}
    members: list[int] = []
    for m in word_re(query).finditer(query):
        previous = ""
        current = -1
        for token, _, _ in tokenizer.located(m.group()):
            if is_bigram(token):
                if not (is_bigram(previous) and previous[1] == token[0]):
                    current = len(members)
                    members.append(0)
                if token not in chain_of:
                    chain_of[token] = current
                    members[current] += 1
            previous = token
    return [members[chain_of[t]] if t in chain_of else 1 for t in terms]


def query_terms(query: str, tokenizer: Tokenizer = CONTRACT) -> QueryTerms:
    """Distinct query terms in first-occurrence order, with the §4 limits checked.

    The term-count and term-length limits apply to the words the user typed (the
    contract tokenisation); a `cjk`/`stemming`/`identifiers` option then refines those
    words.
    """
    words = list(dict.fromkeys(CONTRACT.tokens(query)))
    check_term_limits(words)
    if tokenizer.is_plain:
        return QueryTerms(words, None, tokenizer)
    typed = None
    if tokenizer.stemming != "none":
        typed = query_terms(query, tokenizer.unstemmed)
    terms = tuple(dict.fromkeys(tokenizer.tokens(query)))
    if tokenizer.cjk != "bigrams":
        return QueryTerms(terms, None, tokenizer, typed)
    return QueryTerms(terms, _chains(query, terms, tokenizer), tokenizer, typed)


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
