"""Request objects of SPEC §6/§9 (and the §13 relevance options), validated at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..base.errors import schema_error
from ..base.relevance import (
    OPTIONS,
    RECALL,
    RECALL_LIKE,
    Cjk,
    Context,
    Identifiers,
    Match,
    Profile,
    Stemming,
    Structure,
    profile_first,
)
from ..text.options import AnalysisOptions
from ..text.terms import Tokenizer, check_query, check_text

# The values of each relevance option, the default first (engine/base/relevance.py).
CHOICES: dict[str, tuple[str, ...]] = {o.key: o.values for o in OPTIONS}


@dataclass(frozen=True, slots=True)
class Relevance:
    match: Match = "all"
    context: Context = "section"
    cjk: Cjk = "runs"
    stemming: Stemming = "none"
    identifiers: Identifiers = "whole"
    structure: Structure = "raw"
    profile: Profile = "contract"

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Relevance:
        chosen: dict[str, Any] = {}  # each value one of its Literal's: checked below
        for key in CHOICES:
            if key in values:
                value = values[key]
                if value not in CHOICES[key]:
                    raise schema_error(
                        f"{key} must be one of {', '.join(CHOICES[key])}; got {value!r}.",
                        field=key,
                    )
                chosen[key] = value
        base: dict[str, Any] = dict(RECALL) if chosen.get("profile") in RECALL_LIKE else {}
        base.update({k: v for k, v in chosen.items()})
        return cls(**base)

    @property
    def is_default(self) -> bool:
        return self == Relevance()

    @property
    def hybrid(self) -> bool:
        """Whether recall's ranking is fused with the semantic score (SPEC §15)."""
        return self.profile == "hybrid"

    @property
    def tokenizer(self) -> Tokenizer:
        return Tokenizer(self.cjk, self.stemming, self.identifiers)

    @property
    def analysis(self) -> AnalysisOptions:
        return AnalysisOptions(
            self.tokenizer, self.context == "outline", self.structure == "fields"
        )

    def to_json(self) -> dict[str, str]:
        """The options as a result echoes them: the profile first, then those it sets."""
        return {o.key: getattr(self, o.key) for o in profile_first()}


def check_keys(request: Any, allowed: tuple[str, ...], what: str) -> Mapping[str, Any]:
    if not isinstance(request, Mapping):
        raise schema_error(f"The {what} request must be a JSON object.")
    extra = sorted(set(request) - set(allowed))
    if extra:
        raise schema_error(
            f"Unknown field(s) in the {what} request: {', '.join(map(str, extra))}. "
            f"Allowed: {', '.join(allowed)}.",
            fields=[str(e) for e in extra],
        )
    return request


def int_field(request: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    # null is not "the default": the schemas say integer, and the two must agree.
    if name not in request:
        return default
    value = request[name]
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise schema_error(
            f"{name} must be an integer from {lo} to {hi}; got {value!r}.", field=name
        )
    return value


def bool_field(request: Mapping[str, Any], name: str, default: bool) -> bool:
    if name not in request:
        return default
    value = request[name]
    if not isinstance(value, bool):
        raise schema_error(f"{name} must be true or false; got {value!r}.", field=name)
    return value


# The request field that asks for okf's contract exactly (SPEC §17); fronts default otherwise.
STRICT = "strict"


def check_threshold(value: object) -> float:
    """A request's `threshold`: a number in [0, 1] (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise schema_error("threshold must be a number from 0 to 1.", field="threshold")
    if not 0 <= value <= 1:  # NaN fails too
        raise schema_error(
            f"threshold must be from 0 to 1, got {value}.", field="threshold", value=value
        )
    return float(value)


def strict_of(request: Any) -> bool:
    """Whether a front's request asks for `strict` (False when absent or not a mapping; a
    value that is not a boolean is refused by the request's own parse)."""
    return isinstance(request, Mapping) and request.get(STRICT) is True


def front_request(name: str, request: Any) -> Any:
    """A front's request as the engine reads it, with the fronts' default (SPEC §17): a section
    search without `strict` and without an explicit profile uses profile `recall`; explicit
    options still override what the profile sets. The engine's own default (a request read by
    SearchRequest.from_json as it is) stays okf's contract. Every front calls this, so the
    three cannot disagree."""
    if name != "search" or not isinstance(request, Mapping):
        return request
    if request.get(STRICT, False) is not False or "profile" in request:
        return request  # strict (or a bad value, which the parse refuses), or chosen
    return {**request, "profile": "recall"}


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 20
    relevance: Relevance = Relevance()
    strict: bool = False  # echoed in the result when true (SPEC §17)

    FIELDS = ("query", "limit", *CHOICES, STRICT)

    @classmethod
    def from_json(cls, request: Any) -> SearchRequest:
        req = check_keys(request, cls.FIELDS, "search")
        if "query" not in req:
            raise schema_error("The search request needs a query.", field="query")
        query = check_query(req["query"])
        limit = int_field(req, "limit", 20, 1, 100)
        return cls(query, limit, Relevance.from_mapping(req), bool_field(req, STRICT, False))


@dataclass(frozen=True, slots=True)
class ConceptsRequest:
    query: str
    limit: int = 20
    strict: bool = False

    FIELDS = ("query", "limit", STRICT)

    @classmethod
    def from_json(cls, request: Any) -> ConceptsRequest:
        req = check_keys(request, cls.FIELDS, "concepts")
        if "query" not in req:
            raise schema_error("The concepts request needs a query.", field="query")
        query = check_query(req["query"], need_word=False)
        return cls(query, int_field(req, "limit", 20, 1, 100), bool_field(req, STRICT, False))


@dataclass(frozen=True, slots=True)
class SymbolsRequest:
    """As-you-type section search (SPEC §11, workspace/symbol): the last term also matches
    as a prefix, at most `cap` hits; a query with no word lists the sections that have
    headings (at most `list_cap`). Built by the language server, not read from JSON."""

    query: str
    cap: int = 100
    list_cap: int = 1000
    relevance: Relevance = Relevance()


__all__ = [
    "CHOICES",
    "RECALL",
    "STRICT",
    "ConceptsRequest",
    "Relevance",
    "SearchRequest",
    "SymbolsRequest",
    "bool_field",
    "check_keys",
    "check_text",
    "check_threshold",
    "front_request",
    "int_field",
    "strict_of",
]
