"""Concepts (SPEC §3 "concept", §9 concept search)."""

from __future__ import annotations

import hashlib

import pytest

from citeline.engine import Call, CitelineError, Engine, Settings

FILES = {
    "guide/install.md": "---\ntitle: Installing the Gateway\n---\n# Steps\n",
    "ref.markdown": "---\nid: reference-api\ntitle: API Reference\n---\nbody\n",
    "notes.md": "no front matter\n",
    "de.md": "---\ntitle: Die Straße\nid: strasse-de\n---\ntext\n",
    "weird.md": "---\nid: 42\ntitle: [not, a, string]\n---\ntext\n",
    "empty-id.md": "---\nid: ''\ntitle: Empty id\n---\ntext\n",
    "index.md": "---\ntitle: Gateway index\n---\n",  # reserved: not a concept
}


@pytest.fixture
def bundle(make_bundle):
    return make_bundle(FILES)


def concepts(bundle, query: str, **kw):
    return Engine().concepts(Call(bundle, Settings()), {"query": query, **kw})


def test_concept_ids_and_titles(bundle) -> None:
    res = concepts(bundle, "e", limit=100)
    got = {c["concept_id"]: (c["path"], c["title"]) for c in res["concepts"]}
    assert got == {
        "empty-id": ("empty-id.md", "Empty id"),  # empty id: falls back to the path
        "guide/install": ("guide/install.md", "Installing the Gateway"),
        "notes": ("notes.md", ""),
        "reference-api": ("ref.markdown", "API Reference"),
        "strasse-de": ("de.md", "Die Straße"),
        "weird": ("weird.md", ""),  # non-string id and title are ignored
    }
    for c in res["concepts"]:
        data = FILES[c["path"]].encode()
        assert c["content_sha256"] == hashlib.sha256(data).hexdigest()


def test_sorted_by_concept_id(bundle) -> None:
    ids = [c["concept_id"] for c in concepts(bundle, "e", limit=100)["concepts"]]
    assert ids == sorted(ids)
    assert len(ids) == 6


def test_case_folded_substring_over_id_and_title(bundle) -> None:
    assert [c["concept_id"] for c in concepts(bundle, "GATEWAY")["concepts"]] == ["guide/install"]
    assert [c["concept_id"] for c in concepts(bundle, "api")["concepts"]] == ["reference-api"]
    # "STRASSE" folds to "strasse", which is a substring of the folded title and the id
    assert [c["concept_id"] for c in concepts(bundle, "STRAẞE")["concepts"]] == ["strasse-de"]
    assert [c["concept_id"] for c in concepts(bundle, "e/in")["concepts"]] == ["guide/install"]
    assert concepts(bundle, "nomatch")["concepts"] == []


def test_literal_not_tokenised(bundle) -> None:
    # punctuation-only queries are allowed and literal
    assert [c["concept_id"] for c in concepts(bundle, "-")["concepts"]] == [
        "empty-id",
        "reference-api",
        "strasse-de",
    ]
    assert [c["concept_id"] for c in concepts(bundle, "the gateway")["concepts"]] == [
        "guide/install"
    ]


def test_limit_total_truncated(bundle) -> None:
    res = concepts(bundle, "e", limit=2)
    assert (res["total"], res["truncated"], len(res["concepts"])) == (6, True, 2)
    assert [c["concept_id"] for c in res["concepts"]] == ["empty-id", "guide/install"]
    res = concepts(bundle, "e", limit=6)
    assert (res["total"], res["truncated"], len(res["concepts"])) == (6, False, 6)


def test_envelope(bundle) -> None:
    res = concepts(bundle, "Gate")
    assert set(res) == {"query", "snapshot_revision", "total", "truncated", "concepts"}
    assert res["query"] == "Gate"
    assert res["snapshot_revision"] == Engine().capture(Call(bundle, Settings())).revision
    assert set(res["concepts"][0]) == {"concept_id", "path", "title", "content_sha256"}


def test_front_matter_id_is_search_concept_id(bundle) -> None:
    hits = Engine().search(Call(bundle, Settings()), {"query": "body"})["hits"]
    assert [(h["concept_id"], h["path"]) for h in hits] == [("reference-api", "ref.markdown")]


def test_front_matter_title_matches_in_search(bundle) -> None:
    hits = Engine().search(Call(bundle, Settings()), {"query": "gateway"})["hits"]
    assert [(h["concept_id"], h["line_start"]) for h in hits] == [("guide/install", 4)]


@pytest.mark.parametrize(
    "files",
    [
        {"a.md": "x\n", "a.markdown": "y\n"},
        {"a.md": "x\n", "b.md": "---\nid: a\n---\ny\n"},
        {"x.md": "---\nid: same\n---\n", "y/z.md": "---\nid: same\n---\n"},
    ],
    ids=["md_and_markdown", "id_equals_path", "two_ids"],
)
def test_duplicate_concept_ids_are_bundle_invalid(make_bundle, files) -> None:
    bundle = make_bundle(files)
    for call in (
        lambda: Engine().search(Call(bundle, Settings()), {"query": "x"}),
        lambda: Engine().concepts(Call(bundle, Settings()), {"query": "x"}),
    ):
        with pytest.raises(CitelineError) as err:
            call()
        assert err.value.code == "bundle_invalid"
        assert err.value.details["reason"] == "duplicate_concept_id"
        assert sorted(err.value.details["paths"]) == sorted(files)


def test_reserved_file_id_does_not_clash(make_bundle) -> None:
    bundle = make_bundle({"index.md": "x\n", "other.md": "---\nid: index\n---\nx\n"})
    res = Engine().concepts(Call(bundle, Settings()), {"query": "index"})
    assert [(c["concept_id"], c["path"]) for c in res["concepts"]] == [("index", "other.md")]


def test_sub_index_is_a_concept(make_bundle) -> None:
    bundle = make_bundle({"index.md": "x\n", "sub/index.md": "x\n"})
    res = Engine().concepts(Call(bundle, Settings()), {"query": "index"})
    assert [c["concept_id"] for c in res["concepts"]] == ["sub/index"]
