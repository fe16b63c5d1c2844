"""Physical lines, BOM, front matter (SPEC §3 "Lines", "Front matter")."""

from __future__ import annotations

import pytest

from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.base.errors import ParseIssue
from citeline.engine.text.layout import Layout, layout


def ok(data: bytes) -> Layout:
    lay = layout(data)
    assert isinstance(lay, Layout), lay
    return lay


def lines_of(data: bytes) -> list[str]:
    lay = ok(data)
    return [lay.line(i) for i in range(lay.line_count)]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a\nb\n", ["a", "b"]),  # a final LF ends the last line
        (b"a\nb", ["a", "b"]),
        (b"a\n\n", ["a", ""]),
        (b"\n", [""]),
        (b"", []),
        (b"a\r\nb\r\n", ["a", "b"]),  # CRLF ends one line; the CR is not content
        (b"a\r\n\r\nb", ["a", "", "b"]),
    ],
)
def test_lf_only_lines(data: bytes, expected: list[str]) -> None:
    assert lines_of(data) == expected


def test_crlf_kept_inside_span_text() -> None:
    lay = ok(b"# T\r\nbody\r\nmore\r\n")
    assert lay.line_count == 3
    assert lay.span_text(0, 2) == "# T\r\nbody\r\nmore"


def test_lone_cr_is_not_a_line_break() -> None:
    assert lines_of(b"a\rb\nc\r") == ["a\rb", "c\r"]


@pytest.mark.parametrize(
    "sep",
    ["\f", "\v", "\x85", "\u2028", "\u2029", "\r"],
    ids=["form_feed", "vertical_tab", "nel", "u2028", "u2029", "lone_cr"],
)
def test_other_breaks_are_not_line_breaks(sep: str) -> None:
    text = f"one{sep}two\nthree\n"
    assert lines_of(text.encode()) == [f"one{sep}two", "three"]


def test_u2028_inside_a_line_through_search(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# Head\nalpha\u2028beta\ngamma\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "beta"})
    (hit,) = res["hits"]
    assert (hit["line_start"], hit["line_end"]) == (1, 3)
    assert "alpha\u2028beta" in hit["snippet"]


def test_bom_is_ignored() -> None:
    lay = ok(b"\xef\xbb\xbf# Title\nbody\n")
    assert lay.line(0) == "# Title"
    assert not lay.text.startswith("\ufeff")


def test_bom_before_front_matter() -> None:
    lay = ok("\ufeff---\ntitle: T\n---\nbody\n".encode())
    assert lay.front == {"title": "T"}
    assert lay.body_line == 3


def test_bom_bundle_heading_at_line_one(make_bundle) -> None:
    bundle = make_bundle({"a.md": b"\xef\xbb\xbf# Bommed\ntext\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "bommed"})["hits"]
    assert hit["heading"] == "Bommed"
    assert hit["line_start"] == 1
    assert hit["snippet"] == "# Bommed\ntext"


def test_front_matter_closed_by_dashes() -> None:
    lay = ok(b"---\ntitle: Hello\nid: x1\n---\nbody\n")
    assert lay.front == {"title": "Hello", "id": "x1"}
    assert lay.body_line == 4


def test_front_matter_closed_by_dots() -> None:
    lay = ok(b"---\ntitle: Dots\n...\nbody\n")
    assert lay.front == {"title": "Dots"}
    assert lay.body_line == 3


def test_front_matter_with_crlf() -> None:
    lay = ok(b"---\r\ntitle: T\r\n---\r\nbody\r\n")
    assert lay.front == {"title": "T"}
    assert lay.body_line == 3


def test_empty_front_matter_is_empty_mapping() -> None:
    lay = ok(b"---\n---\nbody\n")
    assert lay.front == {}
    assert lay.body_line == 2


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("--- ", "---"),
        ("---\t", "---"),
        ("---", "--- "),
        ("---", "---\t"),
        ("---", "... "),
        ("---", "...\t"),
        ("--- \t \t", "---\t \t "),
    ],
    ids=repr,
)
def test_fences_may_end_in_spaces_or_tabs(opening: str, closing: str) -> None:
    """SPEC §3: each fence line may end in spaces or tabs (as Jekyll and Hugo read it)."""
    for eol in ("\n", "\r\n"):
        lay = ok(eol.join([opening, "title: T", closing, "body", ""]).encode())
        assert lay.front == {"title": "T"}
        assert lay.body_line == 3
        assert lay.line(3) == "body"


@pytest.mark.parametrize(
    "opening",
    ["----", " ---", "\t---", "--- x", "---\u00a0", "---\f", "---\v", "-- -", "---\r "],
    ids=repr,
)
def test_an_opening_line_that_is_not_a_fence(opening: str) -> None:
    """Only spaces and tabs may follow the dashes, and nothing may precede them: these
    first lines open no front matter (the file is all body)."""
    lay = ok(f"{opening}\ntitle: T\n---\nbody\n".encode())
    assert lay.front == {}
    assert lay.body_line == 0


@pytest.mark.parametrize(
    "closing", ["----", " ---", "\t...", "... x", "....", "---\u00a0", "---\f", ". .."], ids=repr
)
def test_a_closing_line_that_is_not_a_fence(closing: str) -> None:
    """The block runs on past such a line: closed by none, it is a parse error."""
    lay = layout(f"---\ntitle: T\n{closing}\nbody\n".encode())
    assert isinstance(lay, ParseIssue)
    assert lay.line == 1
    assert "never closed" in lay.reason


def test_a_non_fence_inside_the_block_is_yaml() -> None:
    """A line "----" does not close the block: the next fence does; the line is YAML."""
    lay = layout(b"---\ntitle: T\n----\n---\nbody\n")
    assert isinstance(lay, ParseIssue)  # "----" is not valid YAML after a mapping entry
    assert lay.line == 3
    lay = ok(b"---\ntitle: T\n---  \n----\nbody\n")
    assert lay.front == {"title": "T"} and lay.body_line == 3 and lay.line(3) == "----"


# A concept page in the style of the Kubernetes website (Hugo): its front matter closes with
# "--- " (a trailing space), as some of its real pages do; Hugo and Jekyll accept it.
KUBERNETES_PAGE = (
    "---\n"
    "title: Pod Lifecycle\n"
    "content_type: concept\n"
    "weight: 30\n"
    "--- \n"
    "\n"
    "<!-- overview -->\n"
    "\n"
    "This page describes the lifecycle of a Pod. Pods follow a defined lifecycle, starting\n"
    "in the `Pending` phase.\n"
    "\n"
    "<!-- body -->\n"
    "\n"
    "## Pod lifetime\n"
    "\n"
    "Like individual application containers, Pods are considered to be relatively\n"
    "ephemeral (rather than durable) entities.\n"
)


def test_a_kubernetes_page_closed_by_dashes_and_a_space(make_bundle) -> None:
    lay = ok(KUBERNETES_PAGE.encode())
    assert lay.front == {"title": "Pod Lifecycle"}  # (only title and id are kept)
    assert lay.body_line == 5
    bundle = make_bundle({"concepts/pod-lifecycle.md": KUBERNETES_PAGE})
    res = Engine().search(Call(bundle, Settings()), {"query": "pod lifetime"})
    (hit,) = [h for h in res["hits"] if h["heading"] == "Pod lifetime"]
    assert (hit["line_start"], hit["line_end"]) == (14, 17)
    # the title counts for every section of the page; the front matter is in none
    preamble = Engine().search(Call(bundle, Settings()), {"query": "lifecycle pending"})["hits"]
    assert [(h["heading"], h["line_start"]) for h in preamble] == [("", 6)]
    assert "content_type" not in preamble[0]["snippet"]
    concepts = Engine().concepts(Call(bundle, Settings()), {"query": "pod"})
    assert [c["title"] for c in concepts["concepts"]] == ["Pod Lifecycle"]


def test_unclosed_front_matter_is_parse_error() -> None:
    lay = layout(b"---\ntitle: T\nbody\n")
    assert isinstance(lay, ParseIssue)
    assert lay.line == 1


def test_invalid_yaml_is_parse_error_with_line() -> None:
    lay = layout(b"---\ntitle: ok\nbad: [unclosed\n---\n# H\n")
    assert isinstance(lay, ParseIssue)
    assert "invalid YAML" in lay.reason
    assert 2 <= lay.line <= 4


@pytest.mark.parametrize(
    "yaml_text", ["- a\n- b", "just a string", "42"], ids=["list", "string", "int"]
)
def test_yaml_not_a_mapping_is_parse_error(yaml_text: str) -> None:
    lay = layout(f"---\n{yaml_text}\n---\nbody\n".encode())
    assert isinstance(lay, ParseIssue)
    assert "not a mapping" in lay.reason


def test_invalid_utf8_reports_its_line() -> None:
    lay = layout(b"ok\nstill ok\nbad \xff byte\n")
    assert isinstance(lay, ParseIssue)
    assert lay.line == 3
    assert "UTF-8" in lay.reason


@pytest.mark.parametrize(
    ("name", "data", "line"),
    [
        ("unclosed", b"---\ntitle: x\n", 1),
        ("not_mapping", b"---\n- 1\n---\n", 1),
        ("bad_utf8", b"# A\n\xc3\x28\n", 2),
    ],
)
def test_parse_errors_block_search(make_bundle, name: str, data: bytes, line: int) -> None:
    bundle = make_bundle({"good.md": "# A\nalpha\n", f"{name}.md": data})
    with pytest.raises(CitelineError) as err:
        Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert err.value.code == "parse_error"
    assert err.value.details["errors"] == [
        {"path": f"{name}.md", "line": line, "reason": err.value.details["errors"][0]["reason"]}
    ]
    assert f"{name}.md" in err.value.message


def test_front_matter_lines_belong_to_no_section(make_bundle) -> None:
    # "# not a heading" is a YAML comment inside the front matter.
    bundle = make_bundle({"a.md": "---\n# not a heading\ntitle: T\n---\nbody words\n"})
    (hit,) = Engine().search(Call(bundle, Settings()), {"query": "words"})["hits"]
    assert (hit["line_start"], hit["line_end"]) == (5, 5)
    assert hit["heading"] == ""
    assert hit["snippet"] == "body words"
    # front-matter text is not indexed: "heading" occurs only in the YAML comment
    assert Engine().search(Call(bundle, Settings()), {"query": "heading"})["hits"] == []


def test_front_matter_only_file_has_no_sections(make_bundle) -> None:
    bundle = make_bundle({"a.md": "---\ntitle: Lonely\n---\n", "b.md": "lonely text\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "lonely"})
    assert [h["path"] for h in res["hits"]] == ["b.md"]


def test_skip_invalid_setting_passes_through_layout(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# A\nalpha\n", "b.md": b"---\nx: [\n---\nalpha\n"})
    res = Engine().search(Call(bundle, Settings(skip_invalid=True)), {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["a.md"]
    assert [s["path"] for s in res["skipped"]] == ["b.md"]
