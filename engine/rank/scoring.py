"""How `match=any` ranks sections (SPEC §13): BM25 scaled by a coordination factor.

Pure functions of what a compact index keeps (each term's weighted tf in a section, the
section's weighted length, the term's df) and of the query's terms, so any ranker can use
them. The design was chosen by measurement on judged questions (docs/relevance.md has the
tables); every feature can be switched off, which is how its ablation row is measured.

For a section s and query terms t with BM25 parts p_t(s) (SPEC §5's formula, with this
module's k1 and b):

    score(s) = coordination(s) ** exponent × Σ_t multiplier_t × p_t(s)

- `multiplier_t` is 1, except for the CJK bigrams of one word: the n bigrams of a chain
  (`负载均衡` → `负载` `载均` `均衡`) share one word's weight, 1/n each. Without that, a
  long word outweighs the rest of the query by the number of its bigrams.
- `coordination(s)` is the share of the query's weight that the section holds: the sum of
  the weights of the terms it matches over the sum of all the weights, where a term's
  weight is its idf × multiplier and English stop words weigh 0 (`how do I …` then does
  not reward sections that merely say "do" and "I"). When every term is a stop word,
  they all count.

English stop words count fully in the BM25 sum: weighing them less there (`stop_weight`)
was measured and not adopted (docs/relevance.md, "Third round"). But they do not make a
hit (SPEC §13, "Stop words under match=any"): a section that holds only the query's stop
words is left out, and stop words are not among a hit's matched terms, so they are not
highlighted either (`stop_bits`), unless every term of the query is one.

The score is then multiplied by a heading bonus, 1 + heading × (the share of the query's
weight found in the section's heading, outline and document title): a section whose
heading names what was asked is likely about it. The bonus needs the heading's words,
which a compact index does not keep per term; since it is at most 1 + heading, only the
sections whose score times that bound reaches the k-th best score can change places, and
only those are rescored (`rescore_bounded`, exact).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from ..text.terms import cjk_re

# The Snowball project's English stop word list (snowballstem.org, BSD licence), without
# the contractions: the tokenizer splits those at the apostrophe.
_SNOWBALL_ENGLISH = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing would should could ought a an the and but if or because as until while of
    at by for with about against between into through during before after above below to
    from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very
"""
STOP_WORDS: frozenset[str] = frozenset(_SNOWBALL_ENGLISH.split())


@lru_cache(maxsize=1)
def stop_terms() -> frozenset[str]:
    """The stop words and their English stems (a term under `stemming=english` is a stem)."""
    import snowballstemmer

    stem = snowballstemmer.stemmer("english").stemWord
    return STOP_WORDS | {stem(w) for w in STOP_WORDS}


@dataclass(frozen=True, slots=True)
class AnyScoring:
    """The parameters of `match=any` ranking; the defaults are the measured design."""

    k1: float = 1.6
    b: float = 0.3
    chains: bool = True  # a CJK chain's bigrams share one word's weight
    exponent: float = 0.1  # of the coordination factor; 0 switches it off
    idf_weighted: bool = True  # False: each term counts 1 (Lucene's matched ÷ terms)
    stop_words: bool = True  # English stop words stay out of the coordination factor
    heading: float = 0.1  # the heading bonus reaches 1 + heading; 0 switches it off
    stop_weight: float = 1.0  # of an English stop word in the BM25 sum (measured: keep 1)
    # Under stemming: the weight of the words as typed, whose score (the same formula over
    # the query's unstemmed terms) is added to the stems'; 0 switches it off.
    typed: float = 1.0
    # A section holding only the query's stop words is no hit, and stop words are not
    # matched terms (SPEC §13); False: they count as any term does (as they did before).
    stop_filter: bool = True


MATCH_ANY = AnyScoring()
# Lucene's classic coordination (matched ÷ distinct terms) over §5's BM25, for comparison.
LUCENE_CLASSIC = AnyScoring(
    k1=1.2,
    b=0.75,
    chains=False,
    exponent=1.0,
    idf_weighted=False,
    stop_words=False,
    heading=0,
    typed=0,
)


@dataclass(frozen=True, slots=True)
class AsYouType:
    """How as-you-type symbol search (SPEC §11 workspace/symbol) ranks, under either
    `match`: the last term, being typed, matches the indexed terms it is a prefix of.

    - `grouped`: the expansions of the prefix are one term, as Lucene's SynonymQuery makes
      its synonyms one: a section's tf is the weighted sum of theirs and the df is the
      largest of theirs. Scored apart, each rare expansion brought its own high idf
      (`run` → `runsv`, df 6, outweighed `run`, df 2,313) and a section holding several
      expansions summed them.
    - `expansion`: the weight of a longer word in that sum; the word typed itself (when it
      is indexed) weighs 1. Until the user types on, the word as it stands is the likelier
      meaning.
    - `named`: a section whose name (its heading; for text before the first heading, the
      file's title) holds every term of the query (the last one as a prefix) scores
      × (1 + named × the share of the name's words that are query terms): among sections
      that score alike, the one named as asked comes first (`docker run` before `docker
      container run` for the query `docker run`), which is what a symbol picker shows.
    The defaults were chosen by measurement (docs/relevance.md, "As you type")."""

    grouped: bool = True
    expansion: float = 0.25
    named: float = 0.5


AS_YOU_TYPE = AsYouType()


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What scoring needs to know about one query's terms, computed once per query."""

    k1: float
    b: float
    multipliers: tuple[float, ...]  # per query term, applied to its BM25 parts
    weights: tuple[float, ...]  # per query term, its weight in the coordination factor
    total: float  # sum of the weights
    exponent: float
    heading: float


def query_stops(terms: Sequence[str]) -> tuple[bool, ...]:
    """For each query term, whether it stands for English stop words only.

    Under `stemming=english` the terms are stems: a stem is a stop term when the words
    typed that give it are all stop words (`doing` → `do` is one; `owned` → `own`, the
    stem of the stop word `own`, is not: the user did not type a stop word). Stemmed terms
    from terms.query_terms know the words typed; otherwise (no stemming, bare strings) the
    terms are words, and a stop term is a stop word."""
    typed = getattr(terms, "typed", None)
    tokenizer = getattr(terms, "tokenizer", None)
    if typed is None or tokenizer is None:
        return tuple(t in STOP_WORDS for t in terms)
    stop_stems: set[str] = set()
    other: set[str] = set()
    for word in typed:
        (stop_stems if word in STOP_WORDS else other).update(tokenizer.tokens(word))
    return tuple(t in stop_stems and t not in other for t in terms)


def stop_bits(terms: Sequence[str], prefix_last: bool = False) -> int:
    """The mask of the query's stop terms (bit i: term i) that make no hit on their own
    and are no matched term (SPEC §13); 0 when every term is one (they then count as any
    term does). A last term matched as a prefix (as-you-type) is a word being typed, not
    a stop word: `to` may be the start of `token`."""
    mask = 0
    for i, stop in enumerate(query_stops(terms)):
        if stop and not (prefix_last and i == len(terms) - 1):
            mask |= 1 << i
    return 0 if mask == (1 << len(terms)) - 1 else mask


def is_cjk_bigram(term: str) -> bool:
    return len(term) == 2 and cjk_re().fullmatch(term) is not None


def chains(terms: Sequence[str]) -> list[int]:
    """For each term, the size of the CJK bigram chain it belongs to (1 when none).

    Terms from terms.query_terms know their chains (a chain never crosses the space
    between two typed words). For bare strings, a chain is read as a maximal run of
    consecutive CJK bigrams each overlapping the previous one by a character.
    """
    known = getattr(terms, "chains", None)
    if known is not None:
        return list(known)
    size = [1] * len(terms)
    start = 0
    for i in range(1, len(terms) + 1):
        linked = (
            i < len(terms)
            and is_cjk_bigram(terms[i])
            and is_cjk_bigram(terms[i - 1])
            and terms[i - 1][1] == terms[i][0]
        )
        if not linked:
            for j in range(start, i):
                size[j] = i - start
            start = i
    return size


def plan(terms: Sequence[str], idfs: Sequence[float], scoring: AnyScoring = MATCH_ANY) -> QueryPlan:
    """The per-query part of the score: term multipliers and coordination weights."""
    sizes = chains(terms) if scoring.chains else [1] * len(terms)
    multipliers = tuple(1.0 / n for n in sizes)
    stops = stop_terms() if scoring.stop_words else frozenset()
    counted = [t not in stops for t in terms]
    if not any(counted):
        counted = [True] * len(terms)
    elif scoring.stop_weight != 1:
        multipliers = tuple(
            m if keep else m * scoring.stop_weight
            for m, keep in zip(multipliers, counted, strict=True)
        )
    weights = tuple(
        (idf if scoring.idf_weighted else 1.0) * m if keep else 0.0
        for idf, m, keep in zip(idfs, multipliers, counted, strict=True)
    )
    # Summed in term order, as coordination() sums: holding every term gives exactly 1.
    total = 0.0
    for w in weights:
        total += w
    return QueryPlan(
        scoring.k1, scoring.b, multipliers, weights, total, scoring.exponent, scoring.heading
    )


def bm25_part(weight: float, tf: int, length: int, avglen: float, k1: float, b: float) -> float:
    """One term's BM25 contribution, written exactly as SPEC §5 (rank.py inlines it)."""
    return weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avglen))


def coordination(mask: int, p: QueryPlan) -> float:
    """The share of the query's weight held by a section matching the terms in `mask`
    (bit i set: term i matched)."""
    if p.total <= 0:
        return 1.0
    held = 0.0
    for i, w in enumerate(p.weights):
        if mask >> i & 1:
            held += w
    return held / p.total


def factor(mask: int, p: QueryPlan) -> float:
    """The coordination factor raised to the plan's exponent: what a section's BM25 sum is
    multiplied by. At most 1, and a function of the mask alone, so a ranker can compute it
    once per distinct mask."""
    if p.exponent == 0:
        return 1.0
    return coordination(mask, p) ** p.exponent


def final_score(total: float, mask: int, p: QueryPlan) -> float:
    """The reported score and sort key: the weighted BM25 sum scaled by the coordination
    factor. Never above `total`, which lets a ranker skip sections whose BM25 sum alone
    cannot reach the k-th best score."""
    return total * factor(mask, p)


def heading_bonus(held: int, p: QueryPlan) -> float:
    """1 + heading × the share of the query's weight held by the terms in `held` (those
    found in the section's heading, outline or title): between 1 and 1 + heading."""
    if p.heading == 0:
        return 1.0
    return 1 + p.heading * coordination(held, p)


# A navigation section (engine/text/fields.py: mostly links) scores × (1 − NAVIGATION),
# or × (1 + NAVIGATION) when the question asks for a list; measured in docs/relevance.md
# ("Third round: what a section says"): demoting alone lost the question whose answer
# is a link list.
NAVIGATION = 0.3
_ASKS_FOR_LIST = re.compile(r"(?i)\b(list|lists|index|overview) of\b|\bwhat\b.*\bare there\b")


def navigation_factor(query: str) -> float:
    """What a navigation section's score is multiplied by for this question."""
    return 1 + NAVIGATION if _ASKS_FOR_LIST.search(query) else 1 - NAVIGATION


Entry = TypeVar("Entry", bound=tuple[Any, ...])


def rescore_bounded(
    found: list[Entry],
    limit: int | None,
    ceiling: float,
    rescore: Callable[[Entry], Entry],
) -> list[Entry]:
    """The entries (score, ...) that can end among the best `limit` once rescored, each
    rescored; `rescore` may only multiply a score by a factor from 1 to `ceiling`.

    Let T be the limit-th largest score before rescoring. The `limit` entries holding the
    largest scores end at T or above, so the limit-th best final score is at least T; an
    entry with score × ceiling < T ends strictly below it and cannot be among the best
    `limit`, whatever the tie-break. The rest are rescored best first, and the bar rises
    as they are: once `limit` of them are rescored, an entry whose score × ceiling is
    below the limit-th best final score so far cannot make the best `limit` either, nor
    can any after it (their scores are no larger). Floating point keeps this: multiplying
    by a factor no greater than `ceiling` never gives more than multiplying by `ceiling`,
    and multiplying a smaller score by `ceiling` never gives more. The caller sorts what is
    returned (all entries, rescored, when `limit` is None)."""
    if limit is None or len(found) <= limit:
        return [rescore(e) for e in found]
    if limit <= 0:
        return []
    lowest = heapq.nlargest(limit, (e[0] for e in found))[-1]
    pool = sorted((e for e in found if e[0] * ceiling >= lowest), key=_first, reverse=True)
    return rescore_sorted(pool, limit, ceiling, rescore)


def rescore_sorted(
    pool: Iterable[Entry], limit: int, ceiling: float, rescore: Callable[[Entry], Entry]
) -> list[Entry]:
    """rescore_bounded's rescoring, given the entries it keeps in its order: by score,
    largest first, equal scores in their first order (a stable sort's)."""
    best: list[float] = []  # the largest `limit` final scores so far (a min-heap)
    out: list[Entry] = []
    for e in pool:
        if len(best) == limit and e[0] * ceiling < best[0]:
            break
        done = rescore(e)
        out.append(done)
        if len(best) < limit:
            heapq.heappush(best, done[0])
        elif done[0] > best[0]:
            heapq.heapreplace(best, done[0])
    return out


def _first(e: tuple[Any, ...]) -> Any:
    return e[0]


__all__ = [
    "AS_YOU_TYPE",
    "LUCENE_CLASSIC",
    "MATCH_ANY",
    "NAVIGATION",
    "STOP_WORDS",
    "AnyScoring",
    "AsYouType",
    "QueryPlan",
    "bm25_part",
    "chains",
    "coordination",
    "factor",
    "final_score",
    "heading_bonus",
    "navigation_factor",
    "plan",
    "query_stops",
    "rescore_bounded",
    "rescore_sorted",
    "stop_bits",
    "stop_terms",
]
