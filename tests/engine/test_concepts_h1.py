"""The concept title rule: a file's title is its front matter `title`, else (by default, not
under `strict`, which keeps okf's rule) its first level-1 heading."""

from __future__ import annotations

from pathlib import Path

from bundles import write_bundle

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.concepts import search_concepts
from citeline.engine.answer.requests import ConceptsRequest
from citeline.engine.contracts import validate

FILES = {
    "til/rust-borrow.md": "Some intro.\n\n# Rust ownership and borrowing\n\nText.\n",
    "til/front.md": "---\ntitle: Front title\n---\n# Heading one\n\nx\n",
    "til/none.md": "## Only a subheading\n\ny\n",
}


def test_concepts_match_an_h1_title_without_front_matter(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", FILES)
    call = Call(bundle, Settings())
    res = Engine().concepts(call, {"query": "ownership"})
    validate("concepts.result", res)
    assert [(c["concept_id"], c["title"]) for c in res["concepts"]] == [
        ("til/rust-borrow", "Rust ownership and borrowing")
    ]
    # front matter wins over the H1; a file without either has no title
    assert Engine().concepts(call, {"query": "heading one"})["concepts"] == []
    front = Engine().concepts(call, {"query": "front title"})["concepts"]
    assert [c["title"] for c in front] == ["Front title"]
    none = Engine().concepts(call, {"query": "til/none"})["concepts"]
    assert [c["title"] for c in none] == [""]


def test_okf_rule_without_h1_titles(tmp_path: Path) -> None:
    """What `strict` asks for: only front matter titles count (okf's rule)."""
    bundle = write_bundle(tmp_path / "b", FILES)
    engine = Engine(Settings())
    index = engine.index(engine.capture(engine.call(bundle)))
    req = ConceptsRequest.from_json({"query": "ownership"})
    assert search_concepts(index, "0" * 64, req, h1_titles=False)["concepts"] == []
    found = search_concepts(index, "0" * 64, req, h1_titles=True)["concepts"]
    assert [c["path"] for c in found] == ["til/rust-borrow.md"]
