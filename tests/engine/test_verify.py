"""verify (SPEC §18) over real edit sequences: cite with a search, edit the files, verify."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.engine import Call, CitelineError, Engine, Settings

Z = "0" * 64
CONTRACTS = Path(__file__).resolve().parents[2] / "engine" / "contracts"

DOC = (
    "# Guide\n"
    "Intro words.\n"
    "\n"
    "## Install\n"
    "Run the installer with admin rights.\n"
    "Then restart the shell.\n"
    "\n"
    "## Usage\n"
    "Type commands and read the output.\n"
)


def schema(name: str) -> dict:
    return json.loads((CONTRACTS / f"{name}.json").read_text())


def cite(engine: Engine, bundle: Path, query: str) -> dict:
    hits = engine.search(engine.call(bundle), {"query": query})["hits"]
    assert hits, query
    return hits[0]


def verify(engine: Engine, bundle: Path, *citations: dict) -> list[dict]:
    request = {"citations": list(citations)}
    jsonschema.validate(request, schema("verify.request"))
    result = engine.verify(engine.call(bundle), request)
    jsonschema.validate(result, schema("verify.result"))
    assert result["total"] == len(citations)
    return result["results"]


def test_unchanged_is_valid(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "valid"
    assert (r["path"], r["line_start"], r["line_end"]) == ("docs/a.md", 4, 7)
    assert r["section_sha256"] == hit["section_sha256"]
    assert r["citation"] == hit


def test_edit_elsewhere_in_the_file_stays_valid_by_section_hash(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (bundle / "docs/a.md").write_text(DOC.replace("Type commands", "Type many commands"))
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "valid"
    assert r["content_sha256"] != hit["content_sha256"]


def test_lines_inserted_above_is_moved(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (bundle / "docs/a.md").write_text(
        DOC.replace("Intro words.\n", "Intro words.\nMore.\nAnd more.\n")
    )
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "moved"
    assert (r["path"], r["line_start"], r["line_end"]) == ("docs/a.md", 6, 9)
    assert r["locator"] == "docs/a.md#L6-L9"
    assert r["others"] == 0


def test_typo_fixed_inside_is_changed_with_high_similarity(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (bundle / "docs/a.md").write_text(DOC.replace("admin rights", "administrator rights"))
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "changed"
    assert (r["path"], r["heading"], r["line_start"]) == ("docs/a.md", "Install", 4)
    assert 0.8 <= r["similarity"] < 1.0


def test_section_deleted_is_missing(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    start = DOC.index("## Install")
    (bundle / "docs/a.md").write_text(DOC[:start] + DOC[DOC.index("## Usage") :])
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "missing"
    assert r["file_exists"] is True
    assert r["path"] is None and r["line_start"] is None


def test_file_renamed_is_moved_across_files(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC, "docs/z.md": "# Other\nnothing here\n"})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (bundle / "docs/a.md").rename(bundle / "docs/renamed.md")
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "moved"
    assert (r["path"], r["line_start"], r["line_end"]) == ("docs/renamed.md", 4, 7)


def test_missing_file_says_so(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC, "docs/z.md": "# Other\n"})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (bundle / "docs/a.md").unlink()
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "missing" and r["file_exists"] is False


def test_same_text_twice_nearest_wins_and_others_count(make_bundle) -> None:
    twice = "## Note\nSame words here.\n\n"
    text = "# T\n" + "filler\n" * 3 + twice + "# U\n" + twice
    bundle = make_bundle({"docs/b.md": "# B\n" + twice, "docs/a.md": text})
    engine = Engine()
    hits = engine.search(engine.call(bundle), {"query": "same words", "limit": 10})["hits"]
    hit = next(h for h in hits if h["path"] == "docs/a.md" and h["line_start"] == 5)
    # Push everything down by two lines: the copy at line 7 is nearer than the one further on.
    (bundle / "docs/a.md").write_text("x\ny\n" + text)
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "moved"
    assert (r["path"], r["line_start"]) == ("docs/a.md", 7)
    assert r["others"] == 2  # the second copy in a.md and the one in b.md


def test_crlf_file(make_bundle) -> None:
    bundle = make_bundle({"docs/c.md": DOC.replace("\n", "\r\n")})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    (r,) = verify(engine, bundle, hit)
    assert r["status"] == "valid"
    (bundle / "docs/c.md").write_bytes(("top\r\n" + DOC.replace("\n", "\r\n")).encode())
    (r,) = verify(engine, bundle, hit)
    assert (r["status"], r["line_start"], r["line_end"]) == ("moved", 5, 8)


def test_content_sha_only_is_stale_after_a_change(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    only = {k: hit[k] for k in ("path", "line_start", "line_end", "content_sha256")}
    (r,) = verify(engine, bundle, only)
    assert r["status"] == "valid"
    (bundle / "docs/a.md").write_text(DOC + "tail\n")
    (r,) = verify(engine, bundle, only)
    assert r["status"] == "stale"
    assert r["path"] == "docs/a.md" and r["content_sha256"] != hit["content_sha256"]
    # A hit without its section_sha256 (as earlier versions gave) is stale too, heading or not.
    old = {k: v for k, v in hit.items() if k != "section_sha256"}
    (r,) = verify(engine, bundle, old)
    assert r["status"] == "stale"


def test_line_citations_with_clipped_text(make_bundle) -> None:
    long = "word " * 100 + "needle " + "tail " * 100
    bundle = make_bundle({"docs/l.md": "# L\n" + long + "\nshort line\n"})
    engine = Engine()
    matches = engine.lines(engine.call(bundle), {"pattern": "needle"})["matches"]
    (m,) = matches
    assert m["text"].startswith("…") and m["text"].endswith("…")
    short = {"path": "docs/l.md", "line": 3, "text": "short line"}
    rs = verify(engine, bundle, m, short)
    assert [r["status"] for r in rs] == ["valid", "valid"]
    (bundle / "docs/l.md").write_text("# L\nnew\n" + long + "\nshort line\n")
    rs = verify(engine, bundle, m, short)
    assert [(r["status"], r["line"]) for r in rs] == [("moved", 3), ("moved", 4)]
    (bundle / "docs/l.md").write_text("# L\n")
    rs = verify(engine, bundle, m, short)
    assert [r["status"] for r in rs] == ["missing", "missing"]


def test_unsaved_text_is_what_is_verified(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    hit = cite(engine, bundle, "installer")
    edited = "new first line\n" + DOC
    result = engine.verify(
        engine.call(bundle, overlay={"docs/a.md": edited.encode()}), {"citations": [hit]}
    )
    assert result["results"][0]["status"] == "moved"
    assert (
        engine.verify(engine.call(bundle), {"citations": [hit]})["results"][0]["status"] == "valid"
    )


def test_a_strict_search_citation_verifies(make_bundle) -> None:
    bundle = make_bundle({"docs/a.md": DOC})
    engine = Engine()
    result = engine.search(engine.call(bundle), {"query": "installer", "strict": True})
    assert result["strict"] is True
    hit = result["hits"][0]
    assert (
        engine.verify(engine.call(bundle), {"citations": [hit]})["results"][0]["status"] == "valid"
    )
    (bundle / "docs/a.md").write_text("moved down\n\n" + DOC)
    (r,) = engine.verify(engine.call(bundle), {"citations": [hit]})["results"]
    assert (r["status"], r["line_start"]) == ("moved", hit["line_start"] + 2)


def test_a_line_citation_follows_its_file_renamed(make_bundle) -> None:
    bundle = make_bundle({"docs/l.md": "# L\nthe needle line\n", "docs/o.md": "# O\nother\n"})
    engine = Engine()
    (m,) = engine.lines(engine.call(bundle), {"pattern": "needle"})["matches"]
    (bundle / "docs/l.md").rename(bundle / "docs/renamed.md")
    (r,) = verify(engine, bundle, m)
    assert (r["status"], r["path"], r["line"]) == ("moved", "docs/renamed.md", 2)


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"citations": []},
        {"citations": [{"path": "a.md"}] * 101},
        {"citations": [{"path": "a.md", "line_start": 1, "line_end": 2}]},  # no hash
        {
            "citations": [
                {"path": "a.md", "line_start": 3, "line_end": 2, "content_sha256": "0" * 64}
            ]
        },
        {"citations": [{"path": "a.md", "line": 0, "text": "x"}]},
        {"citations": ["a.md#L1-L2"]},
        {"citations": [], "other": 1},
    ],
)
def test_bad_requests_are_schema_validation(make_bundle, request_: dict) -> None:
    bundle = make_bundle({"a.md": DOC})
    with pytest.raises(CitelineError) as err:
        Engine().verify(Call(bundle, Settings()), request_)
    assert err.value.code == "schema_validation"


# -- property: random edits of a real corpus file -------------------------------------------

CORPUS_FILE = Path(
    "/work/shared/corpora/powershell-docs/docs/reference/7.6/CimCmdlets/New-CimSession.md"
)


def _citations(engine: Engine, bundle: Path) -> list[dict]:
    index = engine.prepare(engine.call(bundle))
    text = (bundle / "docs/p.md").read_bytes().decode()
    out = []
    for g in range(index.n):
        sec = index.section(g)
        body = text[sec.start : sec.end]
        out.append(
            {
                "path": sec.path,
                "line_start": sec.first + 1,
                "line_end": sec.last + 1,
                "heading": sec.heading,
                "section_sha256": hashlib.sha256(body.encode()).hexdigest(),
            }
        )
    return out


@given(data=st.data())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_unchanged_sections_are_valid_or_moved_after_random_edits(data, tmp_path_factory) -> None:
    original = CORPUS_FILE.read_text()
    lines = original.split("\n")
    first_heading = next(i for i, x in enumerate(lines) if x.startswith("# "))
    bundle = tmp_path_factory.mktemp("prop")
    (bundle / "docs").mkdir()
    (bundle / "docs/p.md").write_text(original)
    engine = Engine()
    cites = _citations(engine, bundle)
    edits = data.draw(
        st.lists(st.integers(first_heading + 1, len(lines) - 1), min_size=1, max_size=4)
    )
    kind = data.draw(st.sampled_from(["insert", "replace"]))
    touched: set[int] = set()  # original 0-based lines whose section may have changed
    new = list(lines)
    for at in sorted(set(edits), reverse=True):
        nxt = lines[at] if at < len(lines) else ""
        if nxt.strip().startswith(("---", "===", "-", "|")) or lines[at - 1].strip() == "":
            continue  # would make or break a setext heading, a list or a table
        if kind == "insert":
            new.insert(at, "inserted words here")
            touched |= {at - 1, at}
        elif not lines[at].startswith("#") and lines[at].strip():
            new[at] = lines[at] + " edited"
            touched.add(at)
    (bundle / "docs/p.md").write_text("\n".join(new))
    results = engine.verify(engine.call(bundle), {"citations": cites})["results"]
    for c, r in zip(cites, results, strict=True):
        if any(c["line_start"] - 1 <= t <= c["line_end"] - 1 for t in touched):
            continue
        assert r["status"] in ("valid", "moved"), (c, r)


def test_a_clipped_line_and_a_line_without_words_across_files(make_bundle) -> None:
    long = "word " * 100 + "needle " + "tail " * 100
    bundle = make_bundle({"docs/l.md": "# L\n" + long + "\n---\n", "docs/o.md": "# O\nother\n"})
    engine = Engine()
    (m,) = engine.lines(engine.call(bundle), {"pattern": "needle"})["matches"]
    (rule,) = engine.lines(engine.call(bundle), {"pattern": "^---$", "mode": "regex"})["matches"]
    assert m["text"].startswith("…") and m["text"].endswith("…")  # clipped on both sides
    (bundle / "docs/l.md").rename(bundle / "docs/z.md")
    moved, gone = verify(engine, bundle, m, rule)
    assert (moved["status"], moved["path"], moved["line"]) == ("moved", "docs/z.md", 2)
    # "---" holds no word to look it up by: not searched for in other files
    assert (gone["status"], gone["file_exists"]) == ("missing", False)
