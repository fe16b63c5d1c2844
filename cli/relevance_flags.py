"""The command line's relevance flags (SPEC §13): a table of data, apart from the parser
that reads it (cli/cli.py)."""

from __future__ import annotations

# The relevance options of a search: (request key, flag, choices, help). The request key is
# the contract's; `context` is spelled --scope on the command line because -C/--context
# means lines of context, as in grep. Written out rather than read from engine/base/relevance.py
# so that the command line imports nothing of the engine; tests/cli/test_cli_semantic.py holds
# it equal to the declarations there.
RELEVANCE: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "profile",
        "--profile",
        ("contract", "recall", "hybrid"),
        "recall (default): any word counts and sections holding more of them rank first, "
        "English stemming, the headings above a section count, CJK text matched by character "
        "pairs, identifiers split into their parts, link destinations weighing nothing. "
        "contract (the default with --strict): "
        "every word, whole words, as typed. hybrid: recall's best 20 reordered by meaning too "
        "(needs pip install 'citeline[semantic]'); explicit options override it",
    ),
    (
        "match",
        "--match",
        ("all", "any"),
        "all (default): a section must hold every word; any: at least one",
    ),
    (
        "context",
        "--scope",
        ("section", "outline"),
        "section (default): a section's own text; outline: the headings above it count too",
    ),
    (
        "cjk",
        "--cjk",
        ("runs", "bigrams"),
        "runs (default): a run of Chinese/Japanese/Korean characters is one word; bigrams: "
        "matched by overlapping character pairs",
    ),
    (
        "stemming",
        "--stemming",
        ("none", "english"),
        "none (default); english: 'searching' also matches 'search'",
    ),
    (
        "identifiers",
        "--identifiers",
        ("whole", "split"),
        "whole (default); split: CamelCase and letter-digit joins also match by their parts "
        "('inline prediction' finds InlinePrediction)",
    ),
    (
        "structure",
        "--structure",
        ("raw", "fields"),
        "raw (default): every word of a section's Markdown counts alike; fields: link "
        "destinations weigh nothing and sections made mostly of links rank lower (unless a "
        "list is asked for)",
    ),
)
