"""The index-wide lexicon (engine/index/lexicon.py): made from the blocks (in the background, after
a long-lived engine's answer) or derived from another index's after an edit, it answers every
prefix exactly as asking each block and summing does, and a ranking through it is the
ranking without it."""

from __future__ import annotations

import bisect
import os
import time
from pathlib import Path

import pytest

from citeline.engine import Engine, Settings
from citeline.engine.base.warmer import Warmer
from citeline.engine.capture.flights import Serving
from citeline.engine.index import index as index_module
from citeline.engine.index.blocks import Block
from citeline.engine.index.index import Index
from citeline.engine.index.lexicon import Lexicon
from citeline.engine.text.options import AnalysisOptions
from citeline.engine.text.terms import Tokenizer
from tests.needs import corpus

_TOTALS: dict[tuple[int, ...], tuple[list[str], dict[str, int]]] = {}


def summed(blocks: tuple[Block, ...] | list[Block], prefix: str) -> dict[str, int]:
    """What the blocks say, one at a time, of the words starting with `prefix`."""
    key = tuple(map(id, blocks))
    if key not in _TOTALS:
        totals: dict[str, int] = {}
        for block in blocks:
            for i, word in enumerate(block.vocab):
                totals[word] = totals.get(word, 0) + block.offsets[i + 1] - block.offsets[i]
        _TOTALS[key] = (sorted(totals), totals)
    words, totals = _TOTALS[key]
    out = {}
    for word in words[bisect.bisect_left(words, prefix) :]:
        if not word.startswith(prefix):
            break
        out[word] = totals[word]
    return out


def probes(blocks: tuple[Block, ...] | list[Block]) -> list[str]:
    """Every one-character prefix of the vocabulary, a sample of longer ones and of whole
    words, and prefixes nothing starts with."""
    words = sorted({w for b in blocks for w in b.vocab})
    out = sorted({w[:1] for w in words})
    out += sorted({w[:2] for w in words[::7]}) + words[::97]
    return [*out, "", "\U0010ffff", words[-1] + "z", "zzzzqq"]


def assert_holding(lexicon: Lexicon, blocks: tuple[Block, ...] | list[Block]) -> None:
    """Lexicon.holding names, for each word, blocks among `blocks` only, every one that
    holds it among them (and for a lexicon made from `blocks`, exactly those)."""
    keys = {b.key for b in blocks}
    asked = 0
    for word in [*sorted({w for b in blocks for w in b.vocab})[::5], "zzzzqq", ""]:
        holding = lexicon.holding(word)
        has = {b.key for b in blocks if b.find(word) is not None}
        assert set(holding) <= keys and has <= set(holding), word
        if not lexicon.changes and not lexicon.added:
            assert holding == [b.key for b in blocks if b.key in has], word
        asked += len(has)
    assert asked > len(blocks)  # (words held by several blocks were asked about)


@pytest.fixture(scope="module")
def real_blocks() -> tuple[Block, ...]:
    root = corpus("powershell-docs")
    engine = Engine()
    idx = engine.index(
        engine.capture(engine.call(root)), AnalysisOptions(Tokenizer("bigrams")), bundle=root
    )
    assert len(idx.blocks) >= 3
    return idx.blocks


def test_a_lexicon_answers_every_prefix_as_the_blocks_summed_do(
    real_blocks: tuple[Block, ...],
) -> None:
    lexicon = Lexicon.of(real_blocks)
    asked = probes(real_blocks)
    assert len(asked) > 300
    nonempty = 0
    for prefix in asked:
        got = lexicon.prefixed(prefix)
        assert dict(got) == summed(real_blocks, prefix), prefix
        assert len(got) == len(dict(got))  # each word once
        nonempty += bool(got)
    assert nonempty > 250


def test_a_derived_lexicon_is_the_one_made_from_its_blocks(
    real_blocks: tuple[Block, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole block added or removed (an edit changes far fewer words: the changes are
    allowed to hold every word here)."""
    from citeline.engine.index import lexicon

    most = lexicon._CHANGES_SHARE
    monkeypatch.setattr(lexicon, "_CHANGES_SHARE", 1)
    first, rest = real_blocks[0], list(real_blocks[1:])
    base = Lexicon.of(rest)
    only_first = sorted({w for w in first.vocab} - {w for b in rest for w in b.vocab})
    assert only_first  # the block brings words the others do not hold
    with_first = base.derive([], [first])
    assert with_first is not None and with_first.new
    # the other way round: a block removed, its words gone or their counts lowered
    without = Lexicon.of(real_blocks).derive([first], [])
    assert without is not None and without.changes
    for prefix in [*probes(real_blocks), *only_first[:20]]:
        assert dict(with_first.prefixed(prefix)) == summed(real_blocks, prefix), prefix
        assert dict(without.prefixed(prefix)) == summed(rest, prefix), prefix
    for word in only_first[:20]:
        assert word not in dict(without.prefixed(word))
        assert word in dict(with_first.prefixed(word))
    for lex, blocks in ((with_first, real_blocks), (without, rest), (base, rest)):
        assert_holding(lex, blocks)
    # derived from a derived one, back to where it started: no changes are left
    back = with_first.derive([first], [])
    assert back is not None and not back.changes and not back.new
    monkeypatch.setattr(lexicon, "_CHANGES_SHARE", most)
    assert base.derive(rest, []) is None  # most of the blocks changed: made afresh instead
    assert base.derive([], [first]) is None  # a block's words: more than an edit changes


def test_an_index_made_ready_answers_from_its_lexicon_alike(
    real_blocks: tuple[Block, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    unmade = Index(real_blocks)
    monkeypatch.setattr(index_module, "LEXICON_BLOCKS", 2)
    made = Index(real_blocks)
    assert dict(made.prefixed("get")) == summed(real_blocks, "get")
    assert made._lexicon is None  # asked of each block until prepared
    made.make_lexicon()
    assert made._lexicon is not None
    lexicon = made._lexicon
    made.make_lexicon()
    assert made._lexicon is lexicon  # made once, however often asked
    for prefix in ["g", "ge", "get-", "c", "ab", "zzz", "\u4e00", "set"]:
        assert made.expand(prefix) == unmade.expand(prefix)
        assert dict(made.prefixed(prefix)) == summed(real_blocks, prefix)
    for word in probes(real_blocks):  # a word's postings, from the blocks holding it
        assert made.where(word) == unmade.where(word), word
    monkeypatch.setattr(index_module, "LEXICON_BLOCKS", len(real_blocks) + 1)
    few = Index(real_blocks)  # fewer blocks than that: never made
    few.make_lexicon()
    assert few._lexicon is None


def test_a_background_make_waits_while_a_request_is_served(
    real_blocks: tuple[Block, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lexicon is made between requests, never beside one (it would slow the answer
    the user waits for: the first answer at ten times tldr)."""
    monkeypatch.setattr(index_module, "LEXICON_BLOCKS", 2)
    serving = Serving()
    warmer = Warmer(serving.wait_idle)  # the engine's background thread
    idx = Index(real_blocks)
    with serving.request():
        warmer.add(idx, idx.make_lexicon)
        warmer.add(idx, idx.make_lexicon)  # (queued once)
        assert not warmer.idle(0.5) and idx._lexicon is None  # waiting, not making
    assert warmer.idle(60) and idx._lexicon is not None
    assert dict(idx.prefixed("get")) == summed(real_blocks, "get")
    # Closed while a request is served: the job waiting to run is dropped.
    other = Index(real_blocks)
    with serving.request():
        warmer.add(other, other.make_lexicon)
        warmer.close()
    assert warmer.idle(60) and other._lexicon is None


SETTINGS = Settings(skip_invalid=True)
TEXTS = ["g", "ge", "get", "get-c", "se", "comm", "comman", "par", "x", "zyzz"]


def _hits(engine: Engine, bundle: Path) -> list[list[tuple[str, int, float]]]:
    out = []
    for text in TEXTS:
        for profile in ("recall", "contract"):
            hits = engine.symbols(
                engine.call(bundle, settings=SETTINGS), text, relevance={"profile": profile}
            )
            out.append([(h.path, h.line_start, h.score) for h in hits])
    return out


def _live_indexes(engine: Engine) -> list[Index]:
    return [live.index for live in engine.reuse._live.values()]


def test_an_edit_derives_the_lexicon_and_rankings_never_depend_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace of many small blocks: after an edit the new index's lexicon is derived
    from the last one's and equals the one made from its blocks, and every as-you-type
    ranking is the one an engine without lexicons gives."""
    from citeline.engine.index import build

    monkeypatch.setattr(build, "TARGET_BYTES", 4_000)
    source = corpus("powershell-docs")
    bundle = tmp_path / "docs"
    bundle.mkdir()
    pages = sorted(source.rglob("*.md"))[:60]
    for page in pages:
        (bundle / page.name).write_bytes(page.read_bytes())
    past = time.time_ns() - 3_600 * 10**9  # not racy: the next capture reuses them
    for f in bundle.iterdir():
        os.utime(f, ns=(past, past))

    def without_lexicons() -> list[list[tuple[str, int, float]]]:
        monkeypatch.setattr(index_module, "LEXICON_BLOCKS", 10**9)
        try:
            return _hits(Engine(SETTINGS, reread=True, prepare_in_background=True), bundle)
        finally:
            monkeypatch.setattr(index_module, "LEXICON_BLOCKS", 4)

    monkeypatch.setattr(index_module, "LEXICON_BLOCKS", 4)
    engine = Engine(SETTINGS, prepare_in_background=True)
    first = _hits(engine, bundle)
    assert engine.warmer.idle(60)  # made after the first answer, in the background
    assert first == without_lexicons() and any(first)
    before = _live_indexes(engine)
    assert before and all(len(i.blocks) >= 8 and i._lexicon is not None for i in before)

    edited = bundle / pages[3].name
    edited.write_text(edited.read_text() + "\n\nA new paragraph about zyzzyva parsers.\n")
    os.utime(edited, ns=(past + 10**9, past + 10**9))
    second = _hits(engine, bundle)
    assert second == without_lexicons() and second != first  # zyzz now finds the page
    after = _live_indexes(engine)
    assert len(after) == len(before) and not set(map(id, after)) & set(map(id, before))
    for idx in after:
        assert idx._lexicon is not None and idx._lexicon.changes  # derived, not made anew
        fresh = Lexicon.of(idx.blocks)
        for prefix in [*probes(idx.blocks)[:200], "zyzzyva", "zyz"]:
            assert dict(idx._lexicon.prefixed(prefix)) == dict(fresh.prefixed(prefix)), prefix
        assert dict(idx.prefixed("zyzz")) == {"zyzzyva": 1}
        assert_holding(idx._lexicon, idx.blocks)
        plain = Index(idx.blocks)  # no lexicon: every block is asked
        for word in [*probes(idx.blocks)[::3], "zyzzyva"]:
            assert idx.where(word) == plain.where(word), word
        assert idx.where("zyzzyva") and len(idx.where("the")) > 1
