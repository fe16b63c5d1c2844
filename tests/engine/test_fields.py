"""SPEC §13 `structure: fields` (issue 52): link destinations, anchors and reference
definitions weigh nothing, and navigation sections rank lower unless a list is asked for."""

from __future__ import annotations

from typing import Any

import pytest

from citeline.engine import Call, Engine, Settings
from citeline.engine.base.relevance import RECALL
from citeline.engine.index.index import Index
from citeline.engine.rank.rank import rank
from citeline.engine.rank.scoring import navigation_factor
from citeline.engine.text.analysis import FileAnalysis, analyse
from citeline.engine.text.fields import linkish, links
from citeline.engine.text.layout import layout
from citeline.engine.text.options import AnalysisOptions
from citeline.engine.text.sections import cut, headings
from citeline.engine.text.terms import Tokenizer, query_terms

RAW = AnalysisOptions(Tokenizer(), outline=True)
FIELDS = AnalysisOptions(Tokenizer(), outline=True, fields=True)

DOC = b"""# Guide {#setup-guide}

Read [the install page](../install/docker.md "Docker title") first, then carry on with
the rest of this long paragraph about what a guide says in words of its own.

## See also

- [Kubernetes](https://kubernetes.io/docs/setup)
- [Helm charts][helm]
- [Compose](https://example.org/compose)

```
[not a link](http://fenced.example/inside)
```

[helm]: https://helm.sh/charts
"""


def tf(a: FileAnalysis, term: str, section: int) -> int:
    return dict(a.postings.get(term, ())).get(section, 0)


def test_destinations_titles_anchors_and_definitions_weigh_nothing() -> None:
    raw, fields = analyse(DOC, RAW), analyse(DOC, FIELDS)
    # Words only a destination, a title, an anchor or a definition holds are gone...
    for term, section in [("docker", 0), ("md", 0), ("title", 0), ("io", 1), ("sh", 1)]:
        assert tf(raw, term, section) > 0, term
        assert tf(fields, term, section) == 0, term
    # ...the anchor from the heading's words too (raw: 1 in the text + 3 as heading)...
    assert tf(raw, "setup", 0) == 4 and tf(fields, "setup", 0) == 0
    # ...and from the outline of the section below it (raw: the anchor, the URL, 2 outline)
    assert tf(raw, "setup", 1) == 3 and tf(fields, "setup", 1) == 0
    # while labels, prose and code keep every word they have.
    assert tf(fields, "kubernetes", 1) == tf(raw, "kubernetes", 1) - 1 == 1  # (URL's gone)
    assert tf(fields, "page", 0) == tf(raw, "page", 0) == 1
    assert tf(fields, "fenced", 1) == tf(raw, "fenced", 1) == 1  # a fence holds no link
    # `[Helm charts][helm]` and `[helm]: https://helm.sh/charts`: only the label stays.
    assert tf(raw, "helm", 1) == 4 and tf(fields, "helm", 1) == 1
    # A section's length loses exactly the words taken out.
    for s, (a, b) in enumerate(zip(raw.sections, fields.sections, strict=True)):
        lost = sum(tf(raw, t, s) - tf(fields, t, s) for t in raw.postings)
        assert a.length - b.length == lost > 0


def test_navigation_sections_are_those_mostly_links() -> None:
    fields = analyse(DOC, FIELDS)
    assert [s.navigation for s in fields.sections] == [False, True]
    assert not any(s.navigation for s in analyse(DOC, RAW).sections)
    prose = b"# One\n\nA paragraph of words with [a link](x.md) in it and many more words.\n"
    assert [s.navigation for s in analyse(prose, FIELDS).sections] == [False]


def test_a_file_without_link_syntax_is_read_as_it_always_was() -> None:
    doc = b"# Title\n\nPlain words, an autolink <https://example.org/page> and `code`.\n"
    lay = layout(doc)
    assert not isinstance(lay, Exception)
    assert not linkish(lay)  # type: ignore[arg-type]
    linked = layout(b"# Title\n\nSee [the guide](guide.md).\n")
    assert linkish(linked) and links(linked, cut(linked, headings(linked)), Tokenizer().tokens)  # type: ignore[arg-type]
    assert analyse(doc, FIELDS).postings == analyse(doc, RAW).postings


@pytest.mark.parametrize(
    ("query", "factor"),
    [
        ("docker setup", 0.7),
        ("the list of cloud providers", 1.3),
        ("an overview of the guides", 1.3),
        ("what plugins are there", 1.3),
        ("Index of pages", 1.3),
        ("list the containers", 0.7),
    ],
)
def test_the_navigation_factor_lifts_only_questions_asking_for_a_list(
    query: str, factor: float
) -> None:
    assert navigation_factor(query) == pytest.approx(factor)


FILES = {
    "guide.md": "# Docker setup\n\nInstall docker with the package manager, then start the "
    "docker service and check that the setup works.\n",
    "links.md": "# Docker setup links\n\n- [Docker setup](https://docs.docker.com/setup)\n"
    "- [Docker install](https://docs.docker.com/install)\n",
}


def search(bundle: Any, query: str, **options: str) -> dict[str, Any]:
    return Engine().search(Call(bundle, Settings()), {"query": query, **options})


def test_recall_ranks_the_page_above_the_link_list_and_raw_does_not(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    fields = search(bundle, "docker setup", profile="recall")
    raw = search(bundle, "docker setup", profile="recall", structure="raw")
    assert fields["options"]["structure"] == "fields"
    assert [h["path"] for h in fields["hits"]] == ["guide.md", "links.md"]
    assert [h["path"] for h in raw["hits"]] == ["links.md", "guide.md"]


def test_the_navigation_prior_multiplies_a_navigation_sections_score(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    engine = Engine()
    index: Index = engine.index(engine.capture(engine.call(bundle)), FIELDS_RECALL)
    terms = query_terms("docker setup", FIELDS_RECALL.tokenizer)
    plain = {s.section: s.score for s in rank(index, terms, match_any=True).best}
    for factor in (0.7, 1.3):
        ranked = rank(index, terms, match_any=True, navigation=factor)
        got = {s.section: s.score for s in ranked.best}
        nav = [g for g in got if index.section(g).path == "links.md"]
        other = [g for g in got if g not in nav]
        assert nav and other
        for g in nav:
            assert got[g] == pytest.approx(plain[g] * factor, rel=1e-12)
        for g in other:
            assert got[g] == plain[g]


def test_strict_and_contract_never_read_structure(make_bundle: Any) -> None:
    bundle = make_bundle(FILES)
    strict = search(bundle, "docker setup", strict=True)  # type: ignore[arg-type]
    assert "options" not in strict
    contract = search(bundle, "docker", profile="contract", match="any")
    assert contract["options"]["structure"] == "raw"


FIELDS_RECALL = AnalysisOptions(Tokenizer("bigrams", "english", "split"), True, True)
assert RECALL["structure"] == "fields"


def test_one_block_parse_or_two_give_the_same_analysis() -> None:
    """analyse_parsed hands its block parse to the links; an analysis from a known
    structure (a cached one, a worker's) parses for them itself: the same result."""
    from citeline.engine.text.analysis import analyse_with_structure

    parsed, found = analyse_with_structure(DOC, FIELDS)
    assert not isinstance(found, Exception)
    assert analyse(DOC, FIELDS, found) == parsed
    assert [s.navigation for s in parsed.sections] == [False, True]
