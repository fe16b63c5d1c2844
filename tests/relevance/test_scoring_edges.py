"""Edges of engine/rank/scoring.py that the ranking tests leave open (found by mutation testing,
docs/testing.md): bm25_part is SPEC §5's formula exactly as rank.py computes it, and only
CJK bigrams make a chain."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from citeline.engine import Call, Engine, Settings
from citeline.engine.index.index import K1, B
from citeline.engine.rank.rank import idf, rank
from citeline.engine.rank.scoring import MATCH_ANY, bm25_part, chains, is_cjk_bigram, plan

FILES = {
    "a.md": "# Apple\n\napple apple apple pie\n",
    "b.md": "# Notes\n\nan apple among many other words that make this section longer\n",
    "c.md": "# Orchard\n\napple trees, apple juice\n\n## Pears\n\npears only\n",
}


def test_bm25_part_is_the_score_rank_gives_one_term(make_bundle: Callable[..., Path]) -> None:
    """SPEC §5 for a one-term query: every hit's score is bm25_part of its tf and length,
    under the contract's k1 and b (and match=any's own k1 and b, whose coordination factor
    is 1 when the only term matches)."""
    index = Engine().prepare(Call(make_bundle(FILES), Settings()))
    weight = idf(index, "apple")
    tf = {
        base + s: tf
        for block, base, lo, hi in index.where("apple")
        for s, tf in zip(block.p_sec[lo:hi], block.p_tf[lo:hi], strict=True)
    }
    assert len(set(tf.values())) == 3  # the cases differ in tf (headings weigh more) and length
    contract = rank(index, ["apple"])
    recall = rank(index, ["apple"], match_any=True)
    assert contract.total == recall.total == 3
    for ranking, k1, b in ((contract, K1, B), (recall, MATCH_ANY.k1, MATCH_ANY.b)):
        for hit in ranking.best:
            block, s = index.locate(hit.section)
            length = block.sec_length[s]
            expected = bm25_part(weight, tf[hit.section], length, index.avglen, k1, b)
            assert hit.score == expected, (hit, k1, b)
    # and the formula's own parts: more tf scores more, a longer section less
    assert bm25_part(1.0, 2, 10, 10.0, K1, B) > bm25_part(1.0, 1, 10, 10.0, K1, B)
    assert bm25_part(1.0, 1, 20, 10.0, K1, B) < bm25_part(1.0, 1, 10, 10.0, K1, B)
    assert bm25_part(2.0, 1, 10, 10.0, K1, B) == 2 * bm25_part(1.0, 1, 10, 10.0, K1, B)
    # at the average length the length part is k1 whatever b: tf·(k1+1)/(tf+k1)
    assert bm25_part(1.0, 3, 7, 7.0, 1.2, 0.5) == 3 * 2.2 / (3 + 1.2)


def test_only_cjk_bigrams_make_a_chain() -> None:
    """Two-letter Latin terms that overlap (`ab`, `bc`) are two words, not a bigram chain;
    a CJK run longer than two characters (cjk=runs) is one word."""
    assert not is_cjk_bigram("ab") and not is_cjk_bigram("负载均衡") and is_cjk_bigram("负载")
    assert chains(["ab", "bc", "cd"]) == [1, 1, 1]
    assert chains(["负载均衡", "衡量"]) == [1, 1]
    assert plan(["ab", "bc"], [1.0, 1.0]).multipliers == (1.0, 1.0)
