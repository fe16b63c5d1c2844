"""The name words held per block (engine/naming.py) are a cache of a pure function: the
rankings they serve are exactly those of reading each section's heading anew, on real
corpora, and they do spare the ranking work (sections named by no query word are not
rescored)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from needs import corpus

from citeline.engine import Engine, Settings, naming
from citeline.engine import scoring as scoring_module
from citeline.engine.naming import HeldNames, Names
from citeline.engine.rank import rank
from citeline.engine.requests import Relevance
from citeline.engine.terms import query_terms

RECALL = Relevance.from_mapping({"profile": "recall"})
QUERIES = ["docker run", "git commit", "tar", "about remote", "Get-Item", "网关 插件", "路由"]


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    naming.forget()
    yield
    naming.forget()


def _index(name: str, sub: str | None = None) -> Any:
    root = corpus(name)
    return Engine(Settings(skip_invalid=True)).prepare(
        str(root / sub if sub else root), RECALL.analysis
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


def test_rankings_are_the_same_held_or_not(
    indexes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in indexes:
        monkeypatch.setattr(naming, "_BUILD_MIN", 10**9)  # never held: read anew
        naming.forget()
        unheld = _rankings(index)
        monkeypatch.setattr(naming, "_BUILD_MIN", 0)
        monkeypatch.setattr(naming, "_BUILD_SHARE", 10**9)  # held at the first ask
        naming.forget()
        for _ in range(len(index.blocks)):  # a few blocks a ranking: hold them all
            _rankings(index)
        assert all(
            naming._held_for((b.key, naming._tokenization(RECALL.tokenizer))) is not None
            for b in index.blocks
        )
        assert _rankings(index) == unheld
        assert any(best for *_, best in unheld)


def test_sections_no_query_word_names_are_not_rescored(
    indexes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    index = indexes[1]
    monkeypatch.setattr(naming, "_BUILD_MIN", 0)
    monkeypatch.setattr(naming, "_BUILD_SHARE", 10**9)
    terms = query_terms("remote session", RECALL.tokenizer)
    for _ in range(len(index.blocks)):
        rank(index, terms, match_any=True, limit=10)
    calls: list[int] = []
    real = scoring_module.rescore_bounded

    def counting(found: Any, limit: Any, ceiling: Any, rescore: Any, unchanged: Any = None) -> Any:
        def counted(e: Any) -> Any:
            calls.append(e[1])
            return rescore(e)

        return real(found, limit, ceiling, counted, unchanged)

    import citeline.engine.rank as rank_module

    monkeypatch.setattr(rank_module, "rescore_bounded", counting)
    ranked = rank(index, terms, match_any=True, limit=10)
    names = Names(index, RECALL.tokenizer, frozenset(terms))
    # every section rescored is named by a query word; those named by none kept their score
    assert calls and ranked.total > len(calls)
    assert all(not names.unnamed(g) for g in calls)
