"""A block's term look-ups (engine/index/blocks.py `find`, `prefixed`): through the sampled
vocabulary they answer exactly what a plain binary search of the whole vocabulary does."""

from __future__ import annotations

import bisect
from array import array
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.engine import Engine
from citeline.engine.base.codec import I32, SAMPLE, StringTable
from citeline.engine.index.blocks import Block
from citeline.engine.text.options import AnalysisOptions
from citeline.engine.text.terms import Tokenizer
from tests.needs import corpus


def plain_find(block: Block, term: str) -> tuple[int, int] | None:
    words = list(block.vocab)
    i = bisect.bisect_left(words, term)
    if i < len(words) and words[i] == term:
        return block.offsets[i], block.offsets[i + 1]
    return None


def plain_prefixed(block: Block, prefix: str) -> list[tuple[str, int]]:
    return [
        (w, block.offsets[i + 1] - block.offsets[i])
        for i, w in enumerate(block.vocab)
        if w.startswith(prefix)
    ]


@pytest.fixture(scope="module")
def real_blocks() -> tuple[Block, ...]:
    root = corpus("powershell-docs")
    engine = Engine()
    idx = engine.index(
        engine.capture(engine.call(root)), AnalysisOptions(Tokenizer("bigrams")), bundle=root
    )
    assert len(idx.blocks) > 1
    return idx.blocks


def test_find_and_prefixed_agree_with_a_plain_search_on_real_docs(
    real_blocks: tuple[Block, ...],
) -> None:
    checked = 0
    for block in real_blocks[:3]:
        words = list(block.vocab)
        assert len(words) > 4 * SAMPLE
        # every word, the sampled ones and their neighbours included, and what is not there
        probes = words[:: max(1, len(words) // 400)] + words[SAMPLE - 1 : SAMPLE + 2]
        probes += [w + "\x00" for w in probes[:50]] + [w[:-1] for w in probes[:50]]
        probes += ["", "\U0010ffff", words[0], words[-1], words[-1] + "z"]
        for term in probes:
            assert block.find(term) == plain_find(block, term), term
            checked += 1
        for prefix in ["", "a", "get-", "s", "z", words[-1], "\U0010ffff", words[SAMPLE][:3]]:
            assert list(block.prefixed(prefix)) == plain_prefixed(block, prefix), prefix
    assert checked > 1000


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.text("abz\U0010ffff", min_size=1, max_size=5), max_size=3 * SAMPLE + 5, unique=True
    ),
    st.lists(st.text("abyz\U0010ffff", max_size=6), min_size=1, max_size=30),
)
def test_find_is_a_binary_search_at_every_sample_boundary(
    real_blocks: tuple[Block, ...], words: list[str], probes: list[str]
) -> None:
    # a real block given exactly these words, each held once by its first section (the
    # last code point among them: prefixed steps over the words that continue with it)
    words = sorted(words)
    block = replace(
        real_blocks[0],
        vocab=StringTable.of(words),
        offsets=array(I32, range(len(words) + 1)),
        p_sec=array(I32, [0] * len(words)),
        p_tf=array(I32, [1] * len(words)),
    )
    assert list(block.vocab) == sorted(words)
    for term in probes + words:
        assert block.find(term) == plain_find(block, term)
        assert list(block.prefixed(term)) == plain_prefixed(block, term)
