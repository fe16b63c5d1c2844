"""The §6 search result envelope and a fresh snapshot per request."""

from __future__ import annotations

import hashlib

from citeline.engine import Call, Engine, SearchRequest, Settings

HIT_KEYS = {
    "concept_id",
    "path",
    "heading",
    "locator",
    "line_start",
    "line_end",
    "content_sha256",
    "section_sha256",
    "snippet",
    "score",
    "matched_terms",
    "match_spans",
}


def test_envelope_and_hit_fields(make_bundle) -> None:
    data = "intro\n# Setup Guide\nInstall the *tool*.\n\n## Other\nnothing\n"
    bundle = make_bundle({"docs/setup.md": data})
    res = Engine().search(Call(bundle, Settings()), {"query": "  INSTALL, tool!! install "})
    assert set(res) == {"query", "terms", "snapshot_revision", "total", "truncated", "hits"}
    assert res["query"] == "  INSTALL, tool!! install "  # as given
    assert res["terms"] == ["install", "tool"]
    assert (res["total"], res["truncated"]) == (1, False)
    (hit,) = res["hits"]
    assert set(hit) == HIT_KEYS
    assert hit["concept_id"] == "docs/setup"
    assert hit["path"] == "docs/setup.md"
    assert hit["heading"] == "Setup Guide"
    assert (hit["line_start"], hit["line_end"]) == (2, 4)
    assert hit["locator"] == "docs/setup.md#L2-L4"
    assert hit["content_sha256"] == hashlib.sha256(data.encode()).hexdigest()
    # The section's text: its lines as in the file, without the final line ending.
    text = "# Setup Guide\nInstall the *tool*.\n"
    assert hit["section_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert hit["snippet"] == "# Setup Guide\nInstall the *tool*.\n"
    assert isinstance(hit["score"], float) and hit["score"] > 0
    assert hit["matched_terms"] == ["install", "tool"]
    assert hit["match_spans"] == [{"start": 14, "end": 21}, {"start": 27, "end": 31}]


def test_arrays_present_when_nothing_matches(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "zzz"})
    assert res["hits"] == [] and res["terms"] == ["zzz"]
    assert (res["total"], res["truncated"]) == (0, False)
    assert "options" not in res and "skipped" not in res


def test_empty_bundle(make_bundle) -> None:
    res = Engine().search(Call(make_bundle({}), Settings()), {"query": "alpha"})
    assert res["hits"] == [] and res["total"] == 0


def test_truncated_and_limit(make_bundle) -> None:
    bundle = make_bundle({f"f{i}.md": "alpha\n" for i in range(5)})
    res = Engine().search(Call(bundle, Settings()), {"query": "alpha", "limit": 3})
    assert (res["total"], res["truncated"], len(res["hits"])) == (5, True, 3)
    assert [h["concept_id"] for h in res["hits"]] == ["f0", "f1", "f2"]


def test_request_object_accepted(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n"})
    res = Engine().search(Call(bundle, Settings()), SearchRequest("alpha", 5))
    assert res["total"] == 1


def test_fresh_snapshot_every_request(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n"})
    e = Engine()
    first = e.search(e.call(bundle), {"query": "alpha"})
    assert first["total"] == 1
    (bundle / "a.md").write_text("beta\n")
    (bundle / "b.md").write_text("alpha again\n")
    second = e.search(e.call(bundle), {"query": "alpha"})
    assert [h["path"] for h in second["hits"]] == ["b.md"]
    assert second["snapshot_revision"] != first["snapshot_revision"]
    # memoised analyses do not leak between files with other bytes
    assert e.search(e.call(bundle), {"query": "beta"})["hits"][0]["path"] == "a.md"


def test_same_bytes_same_result_across_engines(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# A\nalpha beta\n", "b.md": "alpha\n"})
    one = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    two = Engine(reread=True, hold_bytes=0).search(Call(bundle, Settings()), {"query": "alpha"})
    assert one == two


def test_section_sha256_keeps_crlf_inside_and_drops_the_final_line_ending(make_bundle) -> None:
    data = "# A\r\nalpha\r\n\r\n## B\r\nbeta gamma\r\n"
    bundle = make_bundle({"docs/crlf.md": data})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "gamma"})["hits"]
    assert (hit["line_start"], hit["line_end"]) == (4, 5)
    want = hashlib.sha256(b"## B\r\nbeta gamma").hexdigest()
    assert hit["section_sha256"] == want
