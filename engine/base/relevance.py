"""The relevance options of SPEC §13, each declared once.

One `Option` per option holds every fact about it: the request field (also the editor
setting's key), its values (the default first, from its `Literal` type), its value under
`profile=recall`, the command line's flag and help, and what an agent reads about it in the
MCP server's input schema. The engine's request parsing, the command-line parser, the MCP
parameter descriptions and the settings read it from here, and tests/contracts holds it
against the JSON Schemas of engine/contracts.

Standard library only: the command line builds its parser from it before any other part of
the engine is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Match = Literal["all", "any"]
Context = Literal["section", "outline"]
Cjk = Literal["runs", "bigrams"]
Stemming = Literal["none", "english"]
Identifiers = Literal["whole", "split"]
Structure = Literal["raw", "fields"]
Profile = Literal["contract", "recall", "hybrid"]


@dataclass(frozen=True, slots=True)
class Option:
    key: str  # the request field and the setting
    values: tuple[str, ...]  # the default first
    recall: str | None  # the value under profile=recall (None: the profile itself)
    flag: str  # on the command line (`context` is --scope there: -C/--context means lines)
    help: str  # the command line's --help
    agent: str  # the MCP parameter's description; `{recall}` stands for recall's values

    @property
    def default(self) -> str:
        return self.values[0]


# In the order the request's fields are checked and listed (profile last: it sets the others).
OPTIONS: tuple[Option, ...] = (
    Option(
        "match",
        get_args(Match),
        "any",
        "--match",
        "all (default): a section must hold every word; any: at least one",
        '"all" (default): a section must hold every query word. "any": at least one; '
        'sections holding more of the words rank first. Use it (or profile="recall") when '
        "an all-words query finds nothing.",
    ),
    Option(
        "context",
        get_args(Context),
        "outline",
        "--scope",
        "section (default): a section's own text; outline: the headings above it count too",
        '"section" (default): a section\'s own text and heading. "outline": the headings '
        "above it count too (a '### Cons' under '## CredSSP' matches 'credssp cons'); hits "
        "then carry an outline field.",
    ),
    Option(
        "cjk",
        get_args(Cjk),
        "bigrams",
        "--cjk",
        "runs (default): a run of Chinese/Japanese/Korean characters is one word; bigrams: "
        "matched by overlapping character pairs",
        '"runs" (default): a run of Chinese, Japanese or Korean characters is one word, so '
        '网关 does not match 网关配置. "bigrams": such runs match by overlapping character '
        'pairs. Use bigrams (or profile="recall") for any CJK query.',
    ),
    Option(
        "stemming",
        get_args(Stemming),
        "english",
        "--stemming",
        "none (default); english: 'searching' also matches 'search'",
        '"none" (default): words match as written. "english": Snowball English stems, so '
        "searching matches search and searches; matched_terms then lists stems.",
    ),
    Option(
        "identifiers",
        get_args(Identifiers),
        "split",
        "--identifiers",
        "whole (default); split: CamelCase and letter-digit joins also match by their parts "
        "('inline prediction' finds InlinePrediction)",
        '"whole" (default): an identifier is one word. "split": CamelCase and letter-digit '
        "joins also match by their parts (InlinePrediction: inline, prediction).",
    ),
    Option(
        "structure",
        get_args(Structure),
        "fields",
        "--structure",
        "raw (default): every word of a section's Markdown counts alike; fields: link "
        "destinations weigh nothing and sections made mostly of links rank lower (unless a "
        "list is asked for)",
        '"raw" (default): every word of a section\'s Markdown counts alike. "fields": the '
        "words of link destinations (URLs, paths, anchors) weigh nothing, and a section made "
        "mostly of links ranks lower, unless the question asks for a list of something.",
    ),
    Option(
        "profile",
        get_args(Profile),
        None,
        "--profile",
        "recall (default): any word counts and sections holding more of them rank first, "
        "English stemming, the headings above a section count, CJK text matched by character "
        "pairs, identifiers split into their parts, link destinations weighing nothing. "
        "contract (the default with --strict): "
        "every word, whole words, as typed. hybrid: recall's best 20 reordered by meaning too "
        "(needs pip install 'citeline[semantic]'); explicit options override it",
        '"recall" (the default without strict): {recall}, for questions in plain words, CJK '
        'queries. "contract" (the default with strict: true): the strict options above, '
        'every word as written. "hybrid": recall\'s '
        "best 20 sections reordered by meaning as well (a multilingual embedding model), for "
        "questions whose words are not the docs' words; at most 20 hits, and an error naming "
        "pip install 'citeline[semantic]' where that extra is missing. An option given "
        "explicitly overrides the profile's value.",
    ),
)
BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}
KEYS: tuple[str, ...] = tuple(BY_KEY)
PROFILE = BY_KEY["profile"]
# What profile=recall stands for: every other option's recall value.
RECALL: dict[str, str] = {o.key: o.recall for o in OPTIONS if o.recall is not None}
# The profiles that set the other options to recall's values (hybrid: recall's analysis and
# ranking, then fused with the semantic score; SPEC §15).
RECALL_LIKE: tuple[str, ...] = ("recall", "hybrid")


def profile_first() -> tuple[Option, ...]:
    """The options as people read them: the profile first (it sets the others), then each
    option it sets (the command line's --help, a result's `options`)."""
    return (PROFILE, *(o for o in OPTIONS if o is not PROFILE))


__all__ = [
    "BY_KEY",
    "KEYS",
    "OPTIONS",
    "RECALL",
    "RECALL_LIKE",
    "Cjk",
    "Context",
    "Identifiers",
    "Match",
    "Option",
    "Profile",
    "Stemming",
    "profile_first",
]
