"""The name words held per block (engine/rank/naming.py) are a cache of a pure function: the
rankings they serve are exactly those of reading each section's heading anew, on real
corpora, and they do spare the ranking work (sections named by no query word are not
rescored)."""

from __future__ import annotations

import functools
import time
from array import array
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from needs import corpus

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.requests import Relevance
from citeline.engine.base.warmer import Warmer
from citeline.engine.rank import naming
from citeline.engine.rank import scoring as scoring_module
from citeline.engine.rank.naming import HeldNames, Names
from citeline.engine.rank.rank import rank
from citeline.engine.text.terms import query_terms

RECALL = Relevance.from_mapping({"profile": "recall"})
QUERIES = ["docker run", "git commit", "tar", "about remote", "Get-Item", "网关 插件", "路由"]


@pytest.fixture(autouse=True)
def fresh(request: pytest.FixtureRequest) -> Iterator[None]:
    # (only the tests that use the corpora's indexes hold names)
    held = request.getfixturevalue("indexes") if "indexes" in request.fixturenames else []
    for index in held:
        naming.forget(index)
    yield
    for index in held:
        naming.forget(index)


def _index(name: str, sub: str | None = None) -> Any:
    root = corpus(name)
    return Engine(Settings(skip_invalid=True)).prepare(
        Call(str(root / sub if sub else root), Settings(skip_invalid=True)), RECALL.analysis
    )


@pytest.fixture(scope="module")
def indexes() -> list[Any]:
    return [
        _index("apisix-zh"),
        _index("powershell-docs", "reference/7.6/Microsoft.PowerShell.Utility"),
    ]


def _prefixes() -> list[str]:
    return [q[:i] for q in QUERIES for i in range(1, len(q) + 1)]


def _rankings(index: Any) -> list[Any]:
    out = []
    for text in _prefixes():
        terms = query_terms(text, RECALL.tokenizer)
        if not terms:
            continue
        for prefix_last in (True, False):
            ranked = rank(index, terms, match_any=True, prefix_last=prefix_last, limit=20)
            out.append(
                (text, prefix_last, ranked.total, [(s.section, s.score) for s in ranked.best])
            )
    return out


def _from_the_text(block: Any, tokenizer: Any) -> HeldNames:
    """HeldNames as first built: each section's heading path and name tokenised whole."""
    ids: dict[str, int] = {}
    path_at, path_ids, name_at, name_ids = [0], [], [0], []
    for s in range(block.sections):
        title = block.title[block.sec_doc[s]]
        path = f"{title}\n{block.heading[s]}\n{block.outline[s]}"
        name = block.heading[s] if block.sec_level[s] > 0 else title
        for text, at, out in ((path, path_at, path_ids), (name, name_at, name_ids)):
            for word in dict.fromkeys(tokenizer.tokens(text)):
                out.append(ids.setdefault(word, len(ids)))
            at.append(len(out))
    order = sorted(ids)
    rank_of = {ids[w]: r for r, w in enumerate(order)}
    return HeldNames(
        tuple(order),
        array("I", path_at),
        array("I", [rank_of[i] for i in path_ids]),
        array("I", name_at),
        array("I", [rank_of[i] for i in name_ids]),
    )


@pytest.mark.parametrize("stemming", ["english", "none"])
def test_held_words_are_built_as_from_each_section_s_text(
    indexes: list[Any], stemming: str
) -> None:
    """Exactly, ids and their order included: a title, heading and outline tokenised apart
    give the tokens of their joined text, and the stems are the words' stems."""
    tokenizer = replace(RECALL.tokenizer, stemming=stemming)
    stems = 0
    for index in indexes:
        for block in index.blocks:
            built = HeldNames.build(block, tokenizer)
            assert built == _from_the_text(block, tokenizer)
            plain = HeldNames.build(block, tokenizer.unstemmed)
            if stemming == "english":
                assert plain.stemmed() == built
            stems += len(plain.words) - len(built.words)
    assert (stems > 0) == (stemming == "english")  # stemming did merge words


def test_held_words_are_the_words_read_anew(indexes: list[Any]) -> None:
    tokenizer = RECALL.tokenizer
    for index in indexes:
        for block in index.blocks:
            held = HeldNames.build(block, tokenizer)
            for s in range(block.sections):
                title = block.title[block.sec_doc[s]]
                path = tokenizer.tokens(f"{title}\n{block.heading[s]}\n{block.outline[s]}")
                name = tokenizer.tokens(block.heading[s] if block.sec_level[s] else title)
                assert held.path(s) == frozenset(path)
                assert held.name(s) == frozenset(name)
        assert any(HeldNames.build(b, tokenizer).words for b in index.blocks)


def test_what_the_bonuses_read_is_the_same_held_or_not(
    indexes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tokenizer = RECALL.tokenizer
    index = indexes[1]
    # groups as the rankings make them: single terms, and a prefix's expansions
    asked = [["remot", "remote"], ["session", "sessions", "pssession"]]
    for groups in (asked, [*asked, ["zzz"]]):
        read: list[Any] = []
        for held in (False, True):
            monkeypatch.setattr(naming, "_BUILD_MIN", 0 if held else 10**9)
            monkeypatch.setattr(naming, "_BUILD_SHARE", 10**9 if held else 1)
            naming.forget(index)
            names = Names(index, tokenizer, groups)
            if held:  # hold every block (a ranking's budget is a few thousand sections)
                names._budget = 10**9
            read.append([names.read(g) for g in range(index.n)])
            if held:
                assert all(names._blocks[id(b)] is not None for b in index.blocks)
        assert read[0] == read[1]
        assert {path for path, _, _ in read[0]} >= {1, 2, 3}
        assert {name for _, name, _ in read[0]} >= {1, 2, 3}
        if len(groups) == 2:
            assert 0 < max(share for *_, share in read[0]) <= 1
        else:  # "zzz" names nothing: no bit 4, and no name holds every group
            assert all(path < 4 and name < 4 and share == 0 for path, name, share in read[0])


def test_rankings_are_the_same_held_or_not(
    indexes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in indexes:
        monkeypatch.setattr(naming, "_BUILD_MIN", 10**9)  # never held: read anew
        naming.forget(index)
        unheld = _rankings(index)
        monkeypatch.setattr(naming, "_BUILD_MIN", 0)
        monkeypatch.setattr(naming, "_BUILD_SHARE", 10**9)  # held at the first ask
        naming.forget(index)
        for _ in range(len(index.blocks)):  # a few blocks a ranking: hold them all
            _rankings(index)
        assert all(
            naming.held_of(index).held_for((b.key, naming._tokenization(RECALL.tokenizer)))
            is not None
            for b in index.blocks
        )
        assert _rankings(index) == unheld
        assert any(best for *_, best in unheld)


def _kept_and_changed(index: Any, terms: Any) -> tuple[list[int], list[int]]:
    """The sections a ranking's rescoring gave back as they came, and the others."""
    import citeline.engine.rank.rank as rank_module

    kept: list[int] = []
    changed: list[int] = []

    def watching(real: Any) -> Any:
        def watch(found: Any, limit: Any, ceiling: Any, rescore: Any) -> Any:
            def watched(e: Any) -> Any:
                done = rescore(e)
                (kept if done is e else changed).append(e[1])
                return done

            return real(found, limit, ceiling, watched)

        return watch

    with pytest.MonkeyPatch.context() as patch:
        for name in ("rescore_bounded", "rescore_sorted"):
            patch.setattr(rank_module, name, watching(getattr(scoring_module, name)))
        rank(index, terms, match_any=True, limit=10)
    return kept, changed


def test_sections_no_query_word_names_keep_their_score(
    indexes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    index = indexes[1]
    terms = query_terms("remote session", RECALL.tokenizer)
    for held in (False, True):
        monkeypatch.setattr(naming, "_BUILD_MIN", 0 if held else 10**9)
        monkeypatch.setattr(naming, "_BUILD_SHARE", 10**9 if held else 1)
        naming.forget(index)
        for _ in range(len(index.blocks) if held else 1):
            rank(index, terms, match_any=True, limit=10)
        kept, changed = _kept_and_changed(index, terms)
        names = Names(index, RECALL.tokenizer, [[t] for t in terms])
        # given back as they came: exactly the sections whose names hold no query word
        assert kept and changed
        assert all(names.read(g)[:2] == (0, 0) for g in kept)
        assert all(names.read(g)[:2] != (0, 0) for g in changed)


def test_a_span_finds_the_same_ids_as_a_bisection_per_word(indexes: list[Any]) -> None:
    """HeldNames.ids_of scans the block's words between a group's least and greatest when
    the group is large (a prefix's expansions): the same ids as looking each word up."""
    tokenizer = RECALL.tokenizer
    scanned = 0
    for index in indexes:
        for block in index.blocks[:4]:
            held = HeldNames.build(block, tokenizer)
            words = held.words
            for prefix in sorted({w[:1] for w in words} | {w[:2] for w in words[::7]}):
                group = frozenset(
                    [w for w in words if w.startswith(prefix)] + [prefix + "\uffff", "zzzz"]
                )
                span = (min(group), max(group))
                assert held.ids_of(group, span) == held.ids_of(group)
                assert held.ids_of(group) == frozenset(
                    i for i, w in enumerate(words) if w.startswith(prefix)
                )
                scanned += len(group)
    assert scanned > 1000


def _held_keys(index: Any, tokenizer: Any) -> list[bool]:
    name = naming._tokenization(tokenizer)
    return [naming.held_of(index).held_for((b.key, name)) is not None for b in index.blocks]


def test_prepare_holds_every_block_between_requests_and_rankings_stay(
    indexes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """naming.hold_all builds, in the engine's Warmer, which waits while a request is served, every
    block's names under each tokenisation a ranking read them under, the words as typed
    before their stems; until then rankings read the pending blocks section by section
    rather than build them; and rankings are the same before, during and after."""
    from citeline.engine.capture.flights import Serving

    monkeypatch.setattr(naming, "_BUILD_MIN", 0)  # a ranking would build at once...
    monkeypatch.setattr(naming, "_BUILD_SHARE", 10**9)
    monkeypatch.setattr(naming, "_BUILD_PER_RANKING", 1)  # one block each
    index = indexes[0]
    assert len(index.blocks) >= 3
    Names(index, RECALL.tokenizer, [["x"]])
    naming.hold_all(index)  # (an index of few blocks is left to the rankings)
    assert not any(_held_keys(index, RECALL.tokenizer))
    monkeypatch.setattr(naming, "_PREPARE_BLOCKS", 3)
    unheld = _rankings(index)
    naming.forget(index)
    built: list[str] = []
    real_build = HeldNames.build.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, block: Any, tokenizer: Any, pause: Any = None) -> Any:
        names = real_build(cls, block, tokenizer, pause)
        built.append(tokenizer.stemming)
        return names

    monkeypatch.setattr(HeldNames, "build", classmethod(counting))
    serving = Serving()
    warmer = Warmer(serving.wait_idle)
    stems = RECALL.tokenizer
    Names(index, stems.unstemmed, [["x"]])  # rankings read both tokenisations
    with serving.request():
        rank(index, query_terms("docker run", stems), match_any=True, limit=20)
        first = len(built)
        assert first == 2  # one block for each tokenisation (its budget)
        warmer.add(index, functools.partial(naming.hold_all, index))
        deadline = time.monotonic() + 60
        while not naming.held_of(index).pending and time.monotonic() < deadline:
            time.sleep(0.01)  # (planned in the warmer's thread, before its first pause)
        assert not warmer.idle(0.5) and len(built) == first  # waiting while serving
        # ...but the blocks prepare will hold are read section by section meanwhile
        assert _rankings(index) == unheld and len(built) == first
    assert warmer.idle(120)
    assert all(_held_keys(index, stems)) and all(_held_keys(index, stems.unstemmed))
    # the words as typed were built, and the stems not built by the first ranking were
    # derived from them
    assert built.count("none") == len(index.blocks) and built.count("english") == 1
    assert _rankings(index) == unheld
    done = len(built)
    naming.hold_all(index, serving.wait_idle)
    assert len(built) == done  # once per index


def test_state_lives_with_the_index_and_its_lineage(tmp_path: Any) -> None:
    """What is derived from an index is held by it (Index.derived), and the held names by
    its lineage: an edit's index keeps them, another bundle has its own, and Engine.close
    drops them (no module-wide cache shared by every engine of a process)."""
    from citeline.engine.rank.stems import stemmed

    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        (folder / "one.md").write_text("# Remote sessions\n\nOpen a remote session.\n")
    engine = Engine(Settings(skip_invalid=True))
    first = engine.prepare(engine.call(str(a)), RECALL.analysis)
    other = engine.prepare(engine.call(str(b)), RECALL.analysis)
    assert stemmed(first) is stemmed(first) and stemmed(first) is not stemmed(other)
    assert naming.held_of(first) is not naming.held_of(other)

    names = Names(first, RECALL.tokenizer, [["remot"]])
    names._budget = 10**9
    key = (first.blocks[0].key, naming._tokenization(RECALL.tokenizer))
    naming.held_of(first).hold(key, HeldNames.build(first.blocks[0], RECALL.tokenizer), 1)
    assert naming.held_of(other).held_for(key) is None  # the same block elsewhere: not shared

    (a / "two.md").write_text("# Other\n\nNothing here.\n")
    engine.changed(str(a))
    edited = engine.prepare(engine.call(str(a)), RECALL.analysis)
    assert edited is not first and edited.lineage is first.lineage
    assert naming.held_of(edited).held_for(key) is not None  # the unchanged block's names
    assert stemmed(edited) is not stemmed(first)  # derived state is the index's own

    engine.close()
    assert naming.held_of(edited).closed and naming.held_of(edited).held_for(key) is None


def test_an_answer_hands_the_warmer_a_job_only_when_one_is_left(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived engine asks warming.wanted after each answer: names a ranking read under
    a new tokenisation are held once, and later answers start no job (a job per answer
    started a thread per answer)."""
    from citeline.engine.rank import warming

    monkeypatch.setattr(naming, "_PREPARE_BLOCKS", 1)
    for i in range(3):
        (tmp_path / f"{i}.md").write_text(f"# Remote {i}\n\nOpen a remote session {i}.\n")
    engine = Engine.long_lived(Settings(skip_invalid=True), cache=None)
    added: list[Any] = []
    real_add = engine.warmer.add
    monkeypatch.setattr(
        engine.warmer, "add", lambda key, job: (added.append(key), real_add(key, job))
    )
    try:
        call = engine.call(str(tmp_path))
        engine.symbols(call, "remote", relevance=RECALL)
        assert len(added) == 1  # the names the ranking read under recall's tokenisation
        assert engine.warmer.idle(60)
        index = added[0]
        assert not warming.wanted(index) and all(_held_keys(index, RECALL.tokenizer))
        engine.symbols(call, "remote sess", relevance=RECALL)
        engine.symbols(call, "open", relevance=RECALL)
        assert len(added) == 1  # nothing left to make: no job
    finally:
        engine.close()
