"""Section vectors in the persistent cache (engine/semantic/vectors.py, the `vector` kind;
SPEC §15 "Costs"): checked bytes, never trusted unchecked, under the cache's ownership rules,
the lexical kinds untouched."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from other_user import NOBODY, needs_root

from citeline.engine.semantic.semantic import decode_vector, encode_vector, passage_key
from citeline.engine.semantic.vectors import VECTOR, Vectors
from citeline.engine.store.store import FILE_NAME, Store

DIM = 8
MODEL = "test-model@1/96t"


def _vector(seed: int) -> list[float]:
    return [((seed * 7 + i * 13) % 17 - 8) / 8 for i in range(DIM)]


def _key(text: str) -> str:
    return passage_key(MODEL, text)


def _rows(folder: Path) -> list[tuple[str, str, bytes]]:
    db = sqlite3.connect(folder / FILE_NAME)
    try:
        return [
            (k, key, bytes(b)) for k, key, b in db.execute("SELECT kind, key, blob FROM entries")
        ]
    finally:
        db.close()


def test_vectors_round_trip_through_a_new_store(tmp_path: Path) -> None:
    keys = [_key(f"passage {i}") for i in range(3)]
    first = Store(tmp_path / "cache")
    assert Vectors(first, DIM).put_many([(k, _vector(i)) for i, k in enumerate(keys)])
    first.close()
    # A new store (another process, say) reads what the first wrote.
    again = Vectors(Store(tmp_path / "cache"), DIM)
    got = again.get_many([*keys, _key("never stored")])
    assert sorted(got) == sorted(keys)
    for i, k in enumerate(keys):
        # int8 with a scale: within half a step of the largest component.
        assert got[k] == pytest.approx(_vector(i), abs=0.5 / 127 + 1e-6)
        assert got[k] == decode_vector(encode_vector(_vector(i)), DIM)
    # Kept as the documented bytes under the `vector` kind: no pickle.
    rows = _rows(tmp_path / "cache")
    assert {kind for kind, _, _ in rows} == {VECTOR}
    assert all(blob[:4] == b"CLV1" and len(blob) == DIM + 14 for _, _, blob in rows)


def test_a_damaged_value_is_refused_and_replaced_when_recomputed(tmp_path: Path) -> None:
    store = Store(tmp_path / "cache")
    vectors = Vectors(store, DIM)
    good, bad, short = _key("good"), _key("bad"), _key("short")
    vectors.put_many([(good, _vector(1))])
    blob = encode_vector(_vector(2))
    altered = blob[:20] + bytes([blob[20] ^ 0x01]) + blob[21:]  # one bit: the CRC fails
    store.put([(VECTOR, bad, altered), (VECTOR, short, blob[:-1])])
    assert sorted(vectors.get_many([good, bad, short])) == [good]
    # The caller recomputes what was missing and writes it: the damaged value is replaced.
    vectors.put_many([(bad, _vector(2))])
    assert vectors.get_many([bad])[bad] == decode_vector(blob, DIM)


def test_another_model_s_vector_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "cache")
    key = _key("x")
    store.put([(VECTOR, key, encode_vector([0.5] * (DIM + 1)))])
    assert Vectors(store, DIM).get_many([key]) == {}
    assert list(Vectors(store, DIM + 1).get_many([key])) == [key]


def test_a_vector_of_the_wrong_dimension_is_not_written(tmp_path: Path) -> None:
    vectors = Vectors(Store(tmp_path / "cache"), DIM)
    with pytest.raises(ValueError, match="8 components"):
        vectors.put_many([(_key("x"), [1.0] * (DIM - 1))])
    assert vectors.get_many([_key("x")]) == {}


def test_a_cache_file_of_another_user_is_not_read(tmp_path: Path) -> None:
    needs_root()
    folder = tmp_path / "cache"
    key = _key("theirs")
    first = Store(folder)
    Vectors(first, DIM).put_many([(key, _vector(3))])
    first.close()
    os.chown(folder / FILE_NAME, NOBODY, NOBODY)
    store = Store(folder)
    vectors = Vectors(store, DIM)
    assert vectors.get_many([key]) == {}
    assert not vectors.put_many([(key, _vector(3))])
    assert store.problem is not None and "not yours only" in store.problem


def test_no_cache_remembers_nothing_and_fails_nothing() -> None:
    vectors = Vectors(Store(None), DIM)
    assert not vectors.put_many([(_key("x"), _vector(0))])
    assert vectors.get_many([_key("x")]) == {}


def test_the_lexical_kinds_are_unchanged_beside_vectors(tmp_path: Path) -> None:
    store = Store(tmp_path / "cache")
    lexical = [("block", "k1", b"\x01block"), ("state", "k2", b"state"), ("manifest", "k3", b"m")]
    store.put(lexical)
    key = _key("k1")
    Vectors(store, DIM).put_many([(key, _vector(0))])
    # Same keys under another kind do not collide, and the lexical blobs are byte-identical.
    store.put([(VECTOR, "k1", encode_vector(_vector(5)))])
    for kind, k, blob in lexical:
        assert store.get(kind, k) == blob
    assert store.get_many("block", ["k1"]) == {"k1": b"\x01block"}
    assert Vectors(store, DIM).get_many(["k1"])["k1"] == decode_vector(
        encode_vector(_vector(5)), DIM
    )
