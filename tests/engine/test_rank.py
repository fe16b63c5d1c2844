"""BM25 over sections (SPEC §5): scores computed independently, weights, tie-breaking."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from citeline.engine import Call, Engine, Settings
from citeline.engine.text.analysis import analyse

K1, B = 1.2, 0.75

# A small bundle, and its sections' tokens written out by hand (not by the engine's
# tokenizer): raw = every token of the section's lines, heading line included.
BUNDLE = {
    "a.md": "# Alpha beta\nbeta gamma gamma\n\n## Delta\ngamma\n",
    "b.md": "---\ntitle: Beta Guide\n---\nintro beta\n",
    "c.md": "nothing here\n",
}
SECTIONS = {
    ("a", 1): {
        "raw": ["alpha", "beta", "beta", "gamma", "gamma"],
        "heading": ["alpha", "beta"],
        "title": [],
    },
    ("a", 4): {"raw": ["delta", "gamma"], "heading": ["delta"], "title": []},
    ("b", 4): {"raw": ["intro", "beta"], "heading": [], "title": ["beta", "guide"]},
    ("c", 1): {"raw": ["nothing", "here"], "heading": [], "title": []},
}


def weighted(fields: dict[str, list[str]]) -> Counter:
    c: Counter = Counter()
    for weight, name in ((1, "raw"), (3, "heading"), (2, "title")):
        for t in fields[name]:
            c[t] += weight
    return c


def bm25(sections: dict, terms: list[str]) -> dict:
    """The §5 formula, straight from the text."""
    tfs = {key: weighted(f) for key, f in sections.items()}
    lens = {key: sum(c.values()) for key, c in tfs.items()}
    n = len(sections)
    avglen = sum(lens.values()) / n or 1
    out = {}
    for key, tf in tfs.items():
        if not all(tf[t] for t in terms):
            continue
        score = 0.0
        for t in terms:
            df = sum(1 for c in tfs.values() if c[t])
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * lens[key] / avglen))
        out[key] = score
    return out


def test_hand_lengths_match_engine() -> None:
    a = analyse(BUNDLE["a.md"].encode())
    assert [s.length for s in a.sections] == [5 + 3 * 2, 2 + 3 * 1]
    b = analyse(BUNDLE["b.md"].encode())
    assert [s.length for s in b.sections] == [2 + 2 * 2]


@pytest.mark.parametrize("query", ["beta", "gamma", "beta gamma", "delta gamma", "guide"])
def test_bm25_scores_match_independent_computation(make_bundle, query: str) -> None:
    bundle = make_bundle(BUNDLE)
    res = Engine().search(Call(bundle, Settings()), {"query": query})
    expected = bm25(SECTIONS, query.split())
    assert expected  # every query above matches something
    got = {(h["concept_id"], h["line_start"]): h["score"] for h in res["hits"]}
    assert got.keys() == expected.keys()
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, rel=1e-12)
    assert res["total"] == len(expected)
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_known_value_for_single_term(make_bundle) -> None:
    """The engine's scores for "beta" equal the formula worked out by hand (and the
    helper above agrees, so the parametrised comparison checks against the right thing)."""
    # "beta": N=4, df=2 (a:1 and b:4), avglen=(11+5+6+2)/4=6
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
    s_a = idf * 5 * 2.2 / (5 + 1.2 * (0.25 + 0.75 * 11 / 6))  # tf 2 raw + 3 heading
    s_b = idf * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 6 / 6))  # tf 1 raw + 2 title
    res = Engine().search(Call(make_bundle(BUNDLE), Settings()), {"query": "beta"})
    got = [(h["concept_id"], h["line_start"], h["score"]) for h in res["hits"]]
    assert got == [("a", 1, pytest.approx(s_a, rel=1e-12)), ("b", 4, pytest.approx(s_b, rel=1e-12))]
    assert s_a > s_b
    helper = bm25(SECTIONS, ["beta"])
    assert helper == {("a", 1): pytest.approx(s_a), ("b", 4): pytest.approx(s_b)}


def test_heading_weight_three_and_title_weight_two() -> None:
    a = analyse(b"---\ntitle: foo baz\n---\n# Foo\nfoo bar\n")
    (sec,) = a.sections
    # raw: foo foo bar (heading line included) = 2 foo; heading foo x3; title foo x2
    assert dict(a.postings["foo"]) == {0: 2 + 3 + 2}
    assert dict(a.postings["bar"]) == {0: 1}
    assert dict(a.postings["baz"]) == {0: 2}
    assert sec.length == 3 + 3 * 1 + 2 * 2
    assert a.tokens == 3 + 1 + 2  # unweighted, for the token limit


def test_title_counts_for_every_section_of_its_file() -> None:
    a = analyse(b"---\ntitle: Shared\n---\npre\n# One\nx\n# Two\ny\n")
    assert [si for si, _ in a.postings["shared"]] == [0, 1, 2]
    assert all(tf == 2 for _, tf in a.postings["shared"])


def test_heading_weight_changes_the_ranking(make_bundle) -> None:
    # Same raw token counts and lengths would tie; the heading occurrence wins.
    bundle = make_bundle(
        {
            "a.md": "# Cache\nother words here\n",
            "b.md": "# Other\ncache words here\n",
        }
    )
    hits = Engine().search(Call(bundle, Settings()), {"query": "cache"})["hits"]
    assert [h["path"] for h in hits] == ["a.md", "b.md"]
    assert hits[0]["score"] > hits[1]["score"]


def test_title_only_match(make_bundle) -> None:
    bundle = make_bundle({"a.md": "---\ntitle: Kubernetes\n---\n# Setup\ntext\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "kubernetes setup"})["hits"]
    assert hit["matched_terms"] == ["kubernetes", "setup"]
    assert hit["snippet"] == "# Setup\ntext"


def test_all_terms_required(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# One\nalpha\n# Two\nalpha beta\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "alpha beta"})
    assert [(h["line_start"], h["heading"]) for h in res["hits"]] == [(3, "Two")]


def test_ties_broken_by_concept_id_then_line_start(make_bundle) -> None:
    body = "# Same\nword\n# Same\nword\n"
    fm = "---\nid: {}\n---\n"
    bundle = make_bundle(
        {
            "a.md": fm.format("alpha") + body,
            "m.md": fm.format("Zeta") + body,  # "Z" < "a" in code point order
            "z.md": fm.format("éclair") + body,  # "é" > "a"
        }
    )
    hits = Engine().search(Call(bundle, Settings()), {"query": "word"})["hits"]
    assert len({h["score"] for h in hits}) == 1  # all tied
    assert [(h["concept_id"], h["line_start"]) for h in hits] == [
        ("Zeta", 4),
        ("Zeta", 6),
        ("alpha", 4),
        ("alpha", 6),
        ("éclair", 4),
        ("éclair", 6),
    ]


def test_reserved_files_do_not_count_in_statistics(make_bundle) -> None:
    base = {"a.md": "alpha beta\n", "b.md": "gamma\n"}
    plain = Engine().search(Call(make_bundle(base), Settings()), {"query": "alpha"})
    more = Engine().search(
        Call(
            make_bundle({**base, "index.md": "alpha alpha alpha\n", "log.md": "x y z w\n"}),
            Settings(),
        ),
        {"query": "alpha"},
    )
    assert [h["path"] for h in more["hits"]] == ["a.md"]
    assert more["hits"][0]["score"] == plain["hits"][0]["score"]


def test_terms_remembered_per_index_are_bounded_and_change_nothing(
    make_bundle, monkeypatch
) -> None:
    """The index remembers where each looked-up term's postings are; the memory is bounded
    (least recently used dropped past _REMEMBERED_TERMS) and answers are the same with or
    without it."""
    from citeline.engine.index import index as index_mod

    bundle = make_bundle(BUNDLE)
    engine = Engine()
    queries = ["beta", "gamma delta", "beta guide", "alpha gamma", "nothing"]
    first = [engine.search(engine.call(bundle), {"query": q}) for q in queries]
    idx = engine.index(engine.capture(engine.call(bundle)))
    assert set(idx._where) >= {"beta", "gamma", "delta", "guide", "alpha", "nothing"}
    (block,) = idx.blocks
    lo, hi = block.find("beta")
    assert idx.where("beta") == ((block, 0, lo, hi),)
    # beta is in a.md's first section (tf 2 + 3 heading) and b.md's body (1 + 2 title)
    assert sorted(block.p_tf[lo:hi]) == [3, 5]
    assert idx.where("absent") == ()
    monkeypatch.setattr(index_mod, "_REMEMBERED_TERMS", 3)
    fresh = engine.search(engine.call(bundle), {"query": "intro here"})  # new terms: past the bound
    assert [h["path"] for h in fresh["hits"]] == []  # no section holds both
    assert len(idx._where) <= 3
    assert list(idx._where)[-2:] == ["intro", "here"]  # the most recent ones stay
    again = [engine.search(engine.call(bundle), {"query": q}) for q in queries]
    assert again == first
    assert len(idx._where) <= 3


@pytest.mark.parametrize("match_any", [False, True])
def test_best_k_equals_the_first_k_of_the_full_order(make_bundle, match_any: bool) -> None:
    """rank(limit=k) sorts only the sections that can be among the best k: with many equal
    scores (identical files under different names) and equal distinct-term counts, its
    answer must still be exactly the first k of the full order."""
    from citeline.engine.rank.rank import rank

    files = {}
    for i in range(12):
        files[f"same{i:02}.md"] = "# Alpha\nalpha beta\n\n# Beta\nbeta\n"
        files[f"mixed{i:02}.md"] = "alpha " * (i % 4 + 1) + "\n\n# Gamma\ngamma beta alpha\n"
    bundle = make_bundle(files)
    engine = Engine()
    index = engine.index(engine.capture(engine.call(bundle)))
    for terms in (["alpha"], ["beta"], ["alpha", "beta"], ["gamma", "alpha", "beta"]):
        full = rank(index, terms, match_any=match_any)
        assert full.total == len(full.best) >= 12
        scores = [s.score for s in full.best]
        assert len(set(scores)) < len(scores)  # ties, which the cut must keep together
        for k in (0, 1, 2, 5, 11, 12, 13, 24, full.total - 1, full.total, full.total + 3):
            part = rank(index, terms, match_any=match_any, limit=k)
            assert part.total == full.total
            assert part.best == full.best[:k]
