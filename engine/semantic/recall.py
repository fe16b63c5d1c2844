"""recall's side of semantic mode and the hybrid profile: its best K sections for a query
(the candidates) and its evidence about them (unfitted.Evidence), read from the index as
recall reads it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..rank.rank import Scored, idf_of, rank
from ..rank.scoring import navigation_factor, query_stops
from ..rank.stems import stemmed
from ..text.terms import query_terms
from .semantic import DEFAULT_FUSION
from .unfitted import Evidence, evidence

if TYPE_CHECKING:
    from ..index.index import Index

K = DEFAULT_FUSION.k  # recall's candidates for both semantic mode and hybrid


def recall_ranked(index: Index, query: str, tokenizer: Any) -> tuple[Sequence[str], list[Scored]]:
    """The query's terms and recall's best K sections for it (the analysis of the
    request's options)."""
    terms = query_terms(query, tokenizer)
    ranked = rank(index, terms, match_any=True, limit=K, navigation=navigation_factor(query))
    return terms, ranked.best


def recall_evidence(index: Index, terms: Sequence[str], best: Sequence[Scored]) -> Evidence:
    """recall's evidence about the query whose `terms` found `best` (unfitted.evidence):
    the document frequencies recall read, the stems' when the terms are stems."""
    source = stemmed(index) if getattr(terms, "typed", None) is not None else index
    df = [source.df(t) for t in terms]
    return evidence(
        terms,
        [idf_of(index.n, d) for d in df],
        df,
        query_stops(terms),
        [s.matched for s in best],
        [s.score for s in best],
    )


__all__ = ["K", "recall_evidence", "recall_ranked"]
