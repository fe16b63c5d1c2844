"""English stems read at query time from an index of the words as typed (engine/rank/stems.py),
and the words as typed adding their own score under match=any (engine/rank/rank.py)."""

from __future__ import annotations

import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import snowballstemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.engine import Call, Engine, Settings
from citeline.engine.index.index import Index
from citeline.engine.rank.rank import rank
from citeline.engine.rank.scoring import MATCH_ANY
from citeline.engine.rank.stems import Stemmed, stem_of, stem_prefix, stemmed
from citeline.engine.text.options import AnalysisOptions
from citeline.engine.text.terms import QueryTerms, Tokenizer, query_terms
from tests.bundles import write_bundle
from tests.needs import corpus

STEMS = Tokenizer(stemming="english")
PLAIN = Tokenizer()
SNOWBALL = snowballstemmer.stemmer("english")

# Words whose stems differ in every way Snowball has: plain suffixes, a doubled consonant
# undone (stopped), an e restored (hoping → hope), y → i, the exceptions (dying → die).
WORDS = [
    "run",
    "runs",
    "running",
    "ran",
    "stop",
    "stops",
    "stopped",
    "stopping",
    "list",
    "lists",
    "listing",
    "listed",
    "happy",
    "happiness",
    "happily",
    "hope",
    "hoping",
    "hoped",
    "hopes",
    "die",
    "dying",
    "dies",
    "lie",
    "lying",
    "connect",
    "connection",
    "connections",
    "connected",
    "possible",
    "possibility",
    "generous",
    "generously",
    "cat",
    "cats",
]


def index_of(files: dict[str, str], tokenizer: Tokenizer = PLAIN) -> Index:
    """The index of `files` (the property test calls it too often for a fixture's folder:
    each bundle lives only while its index is built; ranking reads only the index)."""
    with tempfile.TemporaryDirectory() as top:
        root = write_bundle(Path(top) / "b", files)
        engine = Engine()
        return engine.index(
            engine.capture(engine.call(root)), AnalysisOptions(tokenizer), bundle=root
        )


def pre_stemmed(text: str) -> str:
    """The text with every word replaced by its English stem (lines unchanged)."""
    return re.sub(r"[a-z]+", lambda m: SNOWBALL.stemWord(m.group()), text.lower())


def ranked(idx: Index, terms: tuple[str, ...], **kw: object) -> list[tuple[str, int, float]]:
    out = []
    for s in rank(idx, terms, **kw).best:  # type: ignore[arg-type]
        sec = idx.section(s.section)
        out.append((sec.path, sec.first, s.score))
    return out


def test_an_index_keeps_the_words_as_typed_whatever_the_stemming() -> None:
    assert AnalysisOptions(STEMS) == AnalysisOptions(PLAIN)
    assert AnalysisOptions(STEMS).tokenizer.stemming == "none"
    split = Tokenizer("bigrams", "english", "split")
    assert AnalysisOptions(split, True).tokenizer == Tokenizer("bigrams", "none", "split")
    idx = index_of({"a.md": "# Running\nthe dogs stopped\n"}, STEMS)
    assert idx.where("running") and idx.where("stopped") and not idx.where("stop")


def test_query_terms_carry_the_words_as_typed_under_stemming() -> None:
    terms = query_terms("Running dogs", STEMS)
    assert terms == ("run", "dog")
    assert terms.typed == ("running", "dogs") and terms.typed.tokenizer == PLAIN
    assert terms.typed.typed is None
    assert query_terms("Running dogs", PLAIN).typed is None
    both = query_terms("负载均衡 InlinePredictions", Tokenizer("bigrams", "english", "split"))
    assert both.typed is not None
    assert "predictions" in both.typed and "predict" in both
    assert both.typed.chains[:3] == (3, 3, 3)  # the CJK chain is kept as typed


def test_a_stem_stands_for_every_indexed_word_that_stems_to_it() -> None:
    idx = index_of({"a.md": "# Notes\n" + " ".join(WORDS) + "\n", "b.md": "runner run\n"})
    view = stemmed(idx)
    assert view is stemmed(idx)  # one view per index: it remembers merged postings
    assert view.words("run") == ["run", "running", "runs"]  # not ran, not runner
    assert view.words("stop") == ["stop", "stopped", "stopping", "stops"]
    assert view.words("hope") == ["hope", "hoped", "hopes", "hoping"]
    assert view.words("die") == ["die", "dies", "dying"]
    assert view.words("happi") == ["happiness", "happy"]  # happily → happili
    assert view.words("absent") == []
    vocab = {w for block in idx.blocks for w in block.vocab}
    for stem in {stem_of(w) for w in vocab}:
        assert view.words(stem) == sorted(w for w in vocab if stem_of(w) == stem)


def test_merged_postings_sum_the_words_tf_per_section() -> None:
    idx = index_of({"a.md": "# Stop\nstopped stops\n\n## Other\nstop\n", "b.md": "cats\n"})
    view = stemmed(idx)
    # one section holds stop (heading ×3 + raw 1), stopped and stops: tf 6; the other 1
    stop = view.postings("stop")
    postings = {
        idx.section(g).heading: tf
        for g, tf in zip(stop.secs.tolist(), stop.tfs.tolist(), strict=True)
    }
    assert postings == {"Stop": 6, "Other": 1}
    assert view.df("stop") == 2
    # a stem with one word is that word's own postings
    cat, cats = view.postings("cat"), idx.postings("cats")
    assert cat.secs.tolist() == cats.secs.tolist() == [2] and cat.tfs.tolist() == cats.tfs.tolist()
    assert view.df("cat") == 1 and view.df("dog") == 0


def test_expand_gives_stems_by_prefix() -> None:
    idx = index_of({"a.md": "# A\n" + " ".join(WORDS) + "\n"})
    view = stemmed(idx)
    assert view.expand("stop") == ["stop"]
    assert view.expand("happ") == ["happi", "happili"]
    assert set(view.expand("c")) == {"cat", "connect"}
    assert view.expand("zz") == []


def test_a_stem_starts_like_every_word_it_comes_from() -> None:
    for word in [*WORDS, "ugly", "early", "gently", "skies", "news", "sky", "a", "i", "7"]:
        assert word.startswith(stem_prefix(stem_of(word))), word
    # the tokenizer never stems a CJK bigram; Snowball leaves any two characters alone
    for short in ["负载", "网关", "すし", "이다", "ab", "xs", "is", "a"]:
        assert stem_of(short) == short


@pytest.mark.parametrize("name", ["powershell-docs", "apisix-zh"])
def test_the_prefix_rule_holds_for_every_word_of_real_docs(name: str) -> None:
    root = corpus(name)
    engine = Engine()
    idx = engine.index(
        engine.capture(engine.call(root)), AnalysisOptions(Tokenizer("bigrams")), bundle=root
    )
    vocab = {w for block in idx.blocks for w in block.vocab}
    assert len(vocab) > 10_000
    broken = [w for w in vocab if not w.startswith(stem_prefix(stem_of(w)))]
    assert broken == []


@pytest.mark.parametrize("name", ["powershell-docs", "apisix-zh"])
def test_typing_on_finds_the_words_a_fresh_view_finds(name: str) -> None:
    # a prefix typed on filters the last prefixes' words, and a stem's words come from
    # them: the same expansions and the same words as a view that remembers nothing
    root = corpus(name)
    engine = Engine()
    idx = engine.index(
        engine.capture(engine.call(root)), AnalysisOptions(Tokenizer("bigrams")), bundle=root
    )
    typing = stemmed(idx)
    checked = 0
    for query in ["configuration", "remoting", "session", "插件", "get-childitem", "happily"]:
        for i in range(1, len(query) + 1):
            prefix = query[:i]
            found = typing.expand(prefix)
            assert found == Stemmed(idx).expand(prefix), prefix
            for stem in found:
                assert typing.words(stem) == Stemmed(idx).words(stem), (prefix, stem)
                checked += 1
    assert checked > 100


sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(sentence, sentence), min_size=1, max_size=5),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.booleans(),
)
def test_ranking_through_stems_is_ranking_an_index_of_stems(
    sections: list[tuple[str, str]], query: list[str], any_: bool
) -> None:
    """The view gives exactly the scores an index of stems gave (the index built, here, from
    the same files with every word replaced by its stem): tf, df and lengths all agree."""
    text = "".join(f"# {head}\n{body}\n\n" for head, body in sections)
    files = {"a.md": text, "b.md": "list of cats\n"}
    typed_off = replace(MATCH_ANY, typed=0.0)
    terms = query_terms(" ".join(query), STEMS)
    got = ranked(index_of(files), terms, match_any=any_, scoring=typed_off)
    oracle = index_of({p: pre_stemmed(t) for p, t in files.items()})
    # the same stems, reading the oracle's (stemmed) headings alike for the heading bonus
    plain_terms = QueryTerms(list(terms), terms.chains, STEMS)
    want = ranked(oracle, plain_terms, match_any=any_, scoring=typed_off)
    assert got == want


def test_a_word_found_as_typed_outranks_its_variants() -> None:
    files = {"a.md": "# Containers\nlist the stopped containers\n", "b.md": "# Stop\nstop it\n"}
    idx = index_of(files)
    terms = query_terms("stopped", STEMS)
    best = ranked(idx, terms, match_any=True)
    assert [p for p, _, _ in best] == ["a.md", "b.md"]
    # without the words as typed, the heading's `stop` wins
    off = ranked(idx, terms, match_any=True, scoring=replace(MATCH_ANY, typed=0.0))
    assert [p for p, _, _ in off] == ["b.md", "a.md"]
    # the score adds the typed words' own score, heading bonus included
    assert best[0][2] > off[1][2]
    # without the heading bonus the score is exactly the two parts' sum
    flat = replace(MATCH_ANY, heading=0.0)
    stems_part = ranked(idx, terms, match_any=True, scoring=replace(flat, typed=0.0))
    typed_part = ranked(idx, terms.typed, match_any=True, scoring=flat)  # type: ignore[arg-type]
    both = ranked(idx, terms, match_any=True, scoring=flat)
    assert both[0][2] == stems_part[1][2] + typed_part[0][2]  # a.md: "stopped" as typed
    assert [p for p, _, _ in typed_part] == ["a.md"]
    assert [s for _, _, s in both] == sorted((s for _, _, s in both), reverse=True)
    # match=all (the contract's way) never adds it: stems only, as an index of stems
    assert ranked(idx, terms) == ranked(idx, terms, scoring=replace(MATCH_ANY, typed=0.0))


def test_search_reports_stems_and_spans_the_words(make_bundle: Any) -> None:
    root = make_bundle({"a.md": "# Stopping\nwe stopped them\n", "b.md": "nothing\n"})
    res = Engine().search(Call(root, Settings()), {"query": "stops", "profile": "recall"})
    assert res["terms"] == ["stop"]
    (hit,) = res["hits"]
    assert hit["matched_terms"] == ["stop"] and hit["path"] == "a.md"
    assert len(hit["match_spans"]) == 2  # Stopping and stopped


def test_stem_postings_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import citeline.engine.rank.stems as stems

    files = {f"{i}.md": "run runs stop stops hope hoped\n" for i in range(6)}
    view = stemmed(index_of(files))
    monkeypatch.setattr(stems, "_REMEMBERED_SHARE", 0.0)
    monkeypatch.setattr(stems, "_REMEMBERED_POSTINGS", 8)
    first = view.postings("run")  # 6 merged postings
    assert view.postings("run") is first  # remembered
    view.postings("stop")  # 6 more: over 8, the oldest goes
    assert view._held == 6 and list(view._where) == ["stop"]
    again = view.postings("run")
    assert again is not first and again.secs.tolist() == first.secs.tolist()  # merged again
    monkeypatch.setattr(stems, "_REMEMBERED_POSTINGS", 1)
    view.postings("hope")  # alone over the bound: the newest is still kept
    assert list(view._where) == ["hope"] and view._held == 6
    # exactly at the bound, nothing goes; the count follows what is dropped
    monkeypatch.setattr(stems, "_REMEMBERED_POSTINGS", 12)
    view.postings("stop")
    assert list(view._where) == ["hope", "stop"] and view._held == 12
    view.postings("run")
    assert list(view._where) == ["stop", "run"] and view._held == 12


def test_stem_postings_kept_grow_with_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is a share of the index's postings when that is more: a large index's
    stems merge more, and a fixed bound would merge each of them again every keystroke."""
    import citeline.engine.rank.stems as stems

    files = {f"{i}.md": "run runs stop stops hope hoped walk walked\n" for i in range(6)}
    view = stemmed(index_of(files))  # 48 postings: three quarters are 36
    monkeypatch.setattr(stems, "_REMEMBERED_POSTINGS", 1)
    kept = [view.postings(stem) for stem in ("run", "stop", "hope")]  # 6 merged postings each
    assert list(view._where) == ["run", "stop", "hope"] and view._held == 18
    assert all(view.postings(s) is k for s, k in zip(("run", "stop", "hope"), kept, strict=True))
    monkeypatch.setattr(stems, "_REMEMBERED_SHARE", 1 / 4)  # 12: the oldest two go
    view.postings("walk")
    assert list(view._where) == ["hope", "walk"] and view._held == 12


def test_stems_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large bundle is indexed in blocks; a stem gathers its words from every block,
    including blocks that come after one without them."""
    import citeline.engine.index.build as build

    monkeypatch.setattr(build, "TARGET_BYTES", 16)  # about a file per block
    # blocks: a (none of its words), b + c (one of them), d + e (three)
    files = {"a.md": "nothing here at all\n", "b.md": "stops\n", "c.md": "none\n"}
    files |= {"d.md": "stop\n", "e.md": "stopped and stops\n"}
    idx = index_of(files)
    assert len(idx.blocks) == 3
    view = stemmed(idx)
    stop = view.postings("stop")
    held = {
        idx.section(g).path: tf for g, tf in zip(stop.secs.tolist(), stop.tfs.tolist(), strict=True)
    }
    assert held == {"b.md": 1, "d.md": 1, "e.md": 2}


def test_expand_keeps_the_most_frequent_stems() -> None:
    """Over MAX_EXPANSIONS stems share the prefix: the most frequent stay, counted over
    all of a stem's words."""
    fillers = [f"zq{a}{b}" for a in "abcdefghij" for b in "klmnopq"][:66]  # 66 stems
    files = {f"f{i}.md": f"{w}\n" for i, w in enumerate(fillers)}
    files |= {f"g{i}.md": f"{w}\n" for i, w in enumerate(fillers)}  # each in two sections
    # zqzzat: in one section as itself and in two as zqzzats, three in all
    files |= {"t1.md": "zqzzat\n", "t2.md": "zqzzats\n", "t3.md": "zqzzats\n"}
    view = stemmed(index_of(files))
    expanded = view.expand("zq")
    assert len(expanded) == 64
    assert "zqzzat" in expanded  # three sections beat the fillers' two
    assert expanded == sorted(expanded)
