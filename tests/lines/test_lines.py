"""Line search contract (SPEC §8): exact and RE2 modes, columns, windows, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import re2
from bundles import write_bundle as bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.engine import CitelineError, Engine
from citeline.engine.answer.lines import LinesRequest, clip, window
from citeline.engine.base.cancel import CancelToken
from citeline.engine.contracts import validate
from citeline.engine.text.layout import decode, line_index

ENGINE = Engine(reread=True, hold_bytes=0)


def run(root: Path, pattern: str, **request: Any) -> dict[str, Any]:
    req = {"pattern": pattern, **request}
    validate("lines.request", req)
    result = ENGINE.lines(ENGINE.call(root), req)
    validate("lines.result", result)
    return result


def error_of(root: Path, request: Any) -> CitelineError:
    with pytest.raises(CitelineError) as info:
        ENGINE.lines(ENGINE.call(root), request)
    validate("error", info.value.to_json())
    return info.value


def hits(result: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(m["path"], m["line"], m["column"]) for m in result["matches"]]


BOTH = pytest.mark.parametrize("mode", ["exact", "regex"])


# -- envelope -------------------------------------------------------------------------------


def test_envelope_and_match_shape(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "one\ntwo needle\nthree\n"})
    result = run(root, "needle")
    assert result == {
        "pattern": "needle",
        "mode": "exact",
        "snapshot_revision": ENGINE.capture(ENGINE.call(root)).revision,
        "total": 1,
        "truncated": False,
        "matches": [
            {
                "path": "a.md",
                "line": 2,
                "column": 5,
                "text": "two needle",
                "context": {"before": ["one"], "after": ["three"]},
            }
        ],
    }
    assert "score" not in result["matches"][0]


def test_nothing_found_has_empty_matches(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "alpha\n"})
    for mode in ("exact", "regex"):
        result = run(root, "zzz", mode=mode)
        assert (result["total"], result["truncated"], result["matches"]) == (0, False, [])


def test_empty_bundle(tmp_path: Path) -> None:
    root = bundle(tmp_path, {})
    assert run(root, "x")["matches"] == []


# -- columns and lines ----------------------------------------------------------------------


@BOTH
def test_column_counts_code_points_not_bytes(tmp_path: Path, mode: str) -> None:
    root = bundle(tmp_path, {"a.md": "héllo wörld 漢字 🙂 café\n"})
    result = run(root, "café", mode=mode)
    line = "héllo wörld 漢字 🙂 café"
    assert hits(result) == [("a.md", 1, line.index("café") + 1)]
    assert result["matches"][0]["column"] == 18  # 26 bytes precede it in UTF-8


@BOTH
def test_first_match_on_the_line_and_one_match_per_line(tmp_path: Path, mode: str) -> None:
    root = bundle(tmp_path, {"a.md": "ab ab ab\nxx ab\n"})
    result = run(root, "ab", mode=mode)
    assert hits(result) == [("a.md", 1, 1), ("a.md", 2, 4)]
    assert result["total"] == 2


def test_crlf_and_lone_cr(tmp_path: Path) -> None:
    data = b"alpha\r\nbeta\rgamma\r\nend\r\nx\r\r\n"
    root = bundle(tmp_path, {"a.md": data})
    r = run(root, "gamma")
    assert hits(r) == [("a.md", 2, 6)]
    assert r["matches"][0]["text"] == "beta\rgamma"  # lone CR kept, CR of CRLF dropped
    assert r["matches"][0]["context"] == {"before": ["alpha"], "after": ["end", "x\r"]}
    # A CR before LF is not part of the line: `a$` sees "alpha" and "beta\rgamma" end in a.
    assert hits(run(root, "a$", mode="regex")) == [("a.md", 1, 5), ("a.md", 2, 10)]
    # Only lone CRs match \r: line 2 (middle) and line 4 ("x\r" before the CRLF).
    assert hits(run(root, r"\r", mode="regex")) == [("a.md", 2, 5), ("a.md", 4, 2)]
    assert hits(run(root, r"\r$", mode="regex")) == [("a.md", 4, 2)]
    assert hits(run(root, "x\r")) == [("a.md", 4, 1)]
    assert hits(run(root, "a\r")) == [("a.md", 2, 4)]  # beta\r, not alpha's CRLF
    # Lines never hold an LF; a pattern with one matches nothing, in either mode.
    assert run(root, "alpha\r\nbeta")["total"] == 0
    assert run(root, "alpha\nbeta")["total"] == 0
    assert run(root, r"alpha\s+beta", mode="regex")["total"] == 0
    assert run(root, r"a[^z]b", mode="regex")["total"] == 0
    assert run(root, r"(?s)alpha.*beta", mode="regex")["total"] == 0


def test_other_breaks_are_not_line_breaks(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "a\x0bb\x0cc\u0085d\u2028e\u2029f\n"})
    r = run(root, "f")
    assert hits(r) == [("a.md", 1, 11)]


@BOTH
def test_first_and_last_line_context_clipped(tmp_path: Path, mode: str) -> None:
    root = bundle(tmp_path, {"a.md": "hit one\n2\n3\n4\n5\nhit six"})
    r = run(root, "hit", mode=mode, context=3)
    first, last = r["matches"]
    assert (first["line"], first["context"]) == (1, {"before": [], "after": ["2", "3", "4"]})
    assert (last["line"], last["context"]) == (6, {"before": ["3", "4", "5"], "after": []})
    r0 = run(root, "hit", mode=mode, context=0)
    assert [m["line"] for m in r0["matches"]] == [1, 6]
    assert all(m["context"] == {"before": [], "after": []} for m in r0["matches"])
    r10 = run(root, "hit", mode=mode, context=10)
    assert r10["matches"][0]["context"]["after"] == ["2", "3", "4", "5", "hit six"]


def test_default_context_is_two(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "1\n2\n3\nX\n5\n6\n7\n"})
    assert run(root, "X")["matches"][0]["context"] == {"before": ["2", "3"], "after": ["5", "6"]}


def test_bom_is_not_a_column_and_final_lf_ends_the_last_line(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": b"\xef\xbb\xbfabc\n"})
    assert hits(run(root, "a")) == [("a.md", 1, 1)]
    assert run(root, "^", mode="regex")["total"] == 1  # "abc\n" is one line, not two
    assert run(root, "^$", mode="regex")["total"] == 0


def test_empty_width_matches(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "abc\n\nxyz", "b.md": "", "c.md": "\n"})
    assert hits(run(root, "^", mode="regex")) == [
        ("a.md", 1, 1),
        ("a.md", 2, 1),
        ("a.md", 3, 1),
        ("c.md", 1, 1),
    ]
    assert hits(run(root, "$", mode="regex")) == [
        ("a.md", 1, 4),
        ("a.md", 2, 1),
        ("a.md", 3, 4),
        ("c.md", 1, 1),
    ]
    assert hits(run(root, "^$", mode="regex")) == [("a.md", 2, 1), ("c.md", 1, 1)]
    assert run(root, "q*", mode="regex")["total"] == 4
    assert hits(run(root, r"\b", mode="regex")) == [("a.md", 1, 1), ("a.md", 3, 1)]


def test_text_anchors_and_multiline_flags_mean_the_line(tmp_path: Path) -> None:
    # Each line is searched on its own: \A, \z and ^/$ under (?-m) are its ends.
    root = bundle(tmp_path, {"a.md": "start x\nx start\nend\r\nx\n"})
    assert hits(run(root, r"\Astart", mode="regex")) == [("a.md", 1, 1)]
    assert hits(run(root, r"start\z", mode="regex")) == [("a.md", 2, 3)]
    assert hits(run(root, r"(?-m)^x", mode="regex")) == [("a.md", 2, 1), ("a.md", 4, 1)]
    assert hits(run(root, r"(?-m:d$)", mode="regex")) == [("a.md", 3, 3)]
    assert hits(run(root, r"\Qx\E", mode="regex")) == [
        ("a.md", 1, 7),
        ("a.md", 2, 1),
        ("a.md", 4, 1),
    ]


def test_regex_word_boundaries_at_line_ends(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "word\n-word-\nswords\n"})
    assert hits(run(root, r"\bword\b", mode="regex")) == [("a.md", 1, 1), ("a.md", 2, 2)]
    assert hits(run(root, r"\B-", mode="regex")) == [("a.md", 2, 1)]


# -- text windows ---------------------------------------------------------------------------


def long_line(n: int) -> str:
    return "".join("abcdefghij"[i % 10] for i in range(n))


@BOTH
@pytest.mark.parametrize(
    ("at", "expected"),
    [
        # match at the start: the window is pinned to the line start
        (0, lambda s: s[:256] + "…"),
        # in the middle: 128 code points before the match
        (500, lambda s: "…" + s[372:628] + "…"),
        # at the end: moved left to stay inside the line
        (994, lambda s: "…" + s[744:]),
        # less than 128 in: starts at the line start
        (100, lambda s: s[:256] + "…"),
    ],
)
def test_long_line_window(tmp_path: Path, mode: str, at: int, expected: Any) -> None:
    base = list(long_line(1000))
    base[at : at + 6] = "NEEDLE"
    line = "".join(base)
    root = bundle(tmp_path, {"a.md": f"before\n{line}\nafter\n"})
    m = run(root, "NEEDLE", mode=mode)["matches"][0]
    assert m["column"] == at + 1
    assert m["text"] == expected(line)
    assert len(m["text"].strip("…")) == 256


def test_window_exact_boundaries() -> None:
    line256 = "é" * 255 + "X"
    assert window(line256, 255) == line256  # exactly 256: the whole line
    line257 = "X" + "é" * 256
    assert window(line257, 0) == line257[:256] + "…"
    assert window(line257, 256) == "…" + line257[1:]
    near_end = "a" * 384 + "X" + "a" * 100  # 485 code points: the window ends at the end
    assert window(near_end, 384) == "…" + near_end[229:]
    middle = "a" * 300 + "X" + "a" * 300
    assert window(middle, 300) == "…" + middle[172:428] + "…"


def test_long_context_lines(tmp_path: Path) -> None:
    long300 = long_line(300)
    exact256 = "ü" * 256
    root = bundle(tmp_path, {"a.md": f"{long300}\n{exact256}\nhit\n{long_line(257)}\n"})
    m = run(root, "hit")["matches"][0]
    assert m["context"]["before"] == [long300[:255] + "…", exact256]
    assert m["context"]["after"] == [long_line(255) + "…"]
    assert len(m["context"]["before"][0]) == 256
    assert clip("x" * 256) == "x" * 256
    assert clip("x" * 257) == "x" * 255 + "…"


# -- case -----------------------------------------------------------------------------------


@BOTH
def test_case_insensitive_simple_folding(tmp_path: Path, mode: str) -> None:
    root = bundle(
        tmp_path,
        {
            "a.md": "Straße\nSTRASSE\nGROẞE\nİstanbul\nistanbul\nIstanbul\nıi\n\u212a kelvin\n",
        },
    )

    def lines(pattern: str, **kw: Any) -> list[int]:
        return [m["line"] for m in run(root, pattern, mode=mode, **kw)["matches"]]

    # ß folds to ẞ only: simple folding never turns ß into ss.
    assert lines("ß", case_sensitive=False) == [1, 3]
    assert lines("ss", case_sensitive=False) == [2]
    assert lines("strasse", case_sensitive=False) == [2]
    assert lines("STRAßE", case_sensitive=False) == [1]
    # İ (U+0130) has no simple case folding: it matches only itself; i matches i and I.
    assert lines("İ", case_sensitive=False) == [4]
    assert lines("istanbul", case_sensitive=False) == [5, 6]
    assert lines("ı", case_sensitive=False) == [7]
    # K (Kelvin sign) folds to k.
    assert lines("K", case_sensitive=False) == [8]
    # Case-sensitive is the default.
    assert lines("istanbul") == [5]
    assert lines("STRASSE") == [2]


def test_case_insensitive_exact_is_an_escaped_literal(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "A.B(C)*\naxb(c)\n\\A start\n"})
    assert hits(run(root, "a.b(c)*", case_sensitive=False)) == [("a.md", 1, 1)]
    assert hits(run(root, "a.b(c)*")) == []
    assert hits(run(root, r"\a", case_sensitive=False)) == [("a.md", 3, 1)]
    assert hits(run(root, r"\A", case_sensitive=True)) == [("a.md", 3, 1)]


# -- request validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "re2_says"),
    [
        ("(abc", "missing ): (abc"),
        ("a**", "bad repetition operator: **"),
        ("[z-a]", "invalid character class range: z-a"),
        ("x{2,1}", "invalid repetition size: {2,1}"),
        ("(a)\\1", "invalid escape sequence: \\1"),  # backreference
        ("(?=a)", "invalid perl operator: (?="),  # look-ahead
        ("(?<=a)b", "invalid perl operator: (?<="),  # look-behind
        ("a\\Z", "invalid escape sequence: \\Z"),
    ],
)
def test_invalid_regex_is_schema_validation_with_re2_message(
    tmp_path: Path, pattern: str, re2_says: str
) -> None:
    root = bundle(tmp_path, {"a.md": "aa\n"})
    err = error_of(root, {"pattern": pattern, "mode": "regex"})
    assert err.code == "schema_validation"
    assert re2_says in err.message
    assert err.details["re2_error"] == re2_says
    # The same text is a fine literal.
    assert run(root, pattern)["total"] == 0


def test_request_errors_come_before_bundle_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    err = error_of(missing, {"pattern": "(", "mode": "regex"})
    assert err.code == "schema_validation"
    assert error_of(missing, {"pattern": "x"}).code == "bundle_not_found"


def test_semantic_mode_takes_a_query_not_a_pattern(tmp_path: Path) -> None:
    # (semantic mode itself: tests/engine/test_semantic_engine.py)
    root = bundle(tmp_path, {"a.md": "a\n"})
    err = error_of(root, {"pattern": "a", "mode": "semantic"})
    assert err.code == "schema_validation" and err.details["field"] == "pattern"
    assert "takes a query" in err.message


@pytest.mark.parametrize(
    "request_",
    [
        {"pattern": "a", "limit": 1},
        {"pattern": "a", "limit": 1000},
        {"pattern": "a", "context": 0},
        {"pattern": "a", "context": 10},
        {"pattern": "a", "mode": "exact", "case_sensitive": False},
        {"pattern": "a", "mode": "regex", "case_sensitive": True},
        {"pattern": "\U0001f642"},
    ],
)
def test_valid_requests(tmp_path: Path, request_: dict[str, Any]) -> None:
    validate("lines.request", request_)
    root = bundle(tmp_path, {"a.md": "a\n"})
    validate("lines.result", ENGINE.lines(ENGINE.call(root), request_))


@pytest.mark.parametrize(
    "request_",
    [
        {"pattern": "a", "limit": 0},
        {"pattern": "a", "limit": 1001},
        {"pattern": "a", "limit": True},
        {"pattern": "a", "limit": 2.0},
        {"pattern": "a", "limit": "5"},
        {"pattern": "a", "context": -1},
        {"pattern": "a", "context": 11},
        {"pattern": "a", "context": False},
        {"pattern": "a", "case_sensitive": "yes"},
        {"pattern": "a", "mode": "fuzzy"},
        {"pattern": "a", "mode": "Exact"},
        {"pattern": "a", "mode": 1},
        {"pattern": "a", "query": "a"},
        {"pattern": "a", "score": 1},
        {"pattern": ""},
        {"pattern": 5},
        {"pattern": None},
        {"pattern": "\ud800"},
        {"mode": "exact"},
        {},
        ["a"],
        "a",
    ],
)
def test_invalid_requests(tmp_path: Path, request_: Any) -> None:
    root = bundle(tmp_path, {"a.md": "a\n"})
    assert error_of(root, request_).code == "schema_validation"
    with pytest.raises(CitelineError):
        LinesRequest.from_json(request_)


def test_request_object_defaults() -> None:
    req = LinesRequest.from_json({"pattern": "x"})
    assert req == LinesRequest("x", "exact", True, 100, 2)
    for key in ("mode", "limit", "context", "case_sensitive"):
        # null is not the default: the request schema says what each field's type is
        with pytest.raises(CitelineError) as caught:
            LinesRequest.from_json({"pattern": "x", key: None})
        assert caught.value.code == "schema_validation"


# -- limit, total, order --------------------------------------------------------------------


@BOTH
def test_limit_total_truncated_and_order(tmp_path: Path, mode: str) -> None:
    files = {
        "b.md": "hit\nhit\n",
        "a/z.md": "hit\n",
        "a.md": "no\nhit\n",
        "ä.md": "hit\n",
        "B.md": "hit\n",
    }
    root = bundle(tmp_path, files)
    full = run(root, "hit", mode=mode, limit=1000)
    order = [("B.md", 1), ("a.md", 2), ("a/z.md", 1), ("b.md", 1), ("b.md", 2), ("ä.md", 1)]
    assert [(p, ln) for p, ln, _ in hits(full)] == order
    assert (full["total"], full["truncated"]) == (6, False)
    part = run(root, "hit", mode=mode, limit=4)
    assert [(p, ln) for p, ln, _ in hits(part)] == order[:4]
    assert (part["total"], part["truncated"]) == (6, True)
    exact = run(root, "hit", mode=mode, limit=6)
    assert (exact["total"], exact["truncated"], len(exact["matches"])) == (6, False, 6)
    one = run(root, "hit", mode=mode, limit=1)
    assert (one["total"], one["truncated"], len(one["matches"])) == (6, True, 1)


def test_default_limit_is_100(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "x\n" * 150})
    r = run(root, "x")
    assert (r["total"], r["truncated"], len(r["matches"])) == (150, True, 100)
    r = run(root, "x", limit=1000)
    assert (r["total"], r["truncated"], len(r["matches"])) == (150, False, 150)


# -- what is searched -----------------------------------------------------------------------


def test_reserved_files_are_not_searched(tmp_path: Path) -> None:
    files = {"index.md": "hit\n", "log.md": "hit\n", "sub/index.md": "hit\n", "Index.md": "hit\n"}
    root = bundle(tmp_path, files)
    assert [p for p, _, _ in hits(run(root, "hit"))] == ["Index.md", "sub/index.md"]
    # They still count in the snapshot.
    assert run(root, "hit")["snapshot_revision"] == ENGINE.capture(ENGINE.call(root)).revision
    assert len(ENGINE.capture(ENGINE.call(root)).files) == 4


def test_front_matter_lines_are_searched(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "---\ntitle: Needle\nid: x\n---\n# Body\n"})
    r = run(root, "Needle")
    assert hits(r) == [("a.md", 2, 8)]
    assert r["matches"][0]["context"] == {"before": ["---"], "after": ["id: x", "---"]}
    assert hits(run(root, "^---$", mode="regex")) == [("a.md", 1, 1), ("a.md", 4, 1)]


def test_malformed_front_matter_does_not_block_line_search(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "---\ntitle: [unclosed\n---\nneedle\n", "b.md": "---\nx\n"})
    assert hits(run(root, "needle")) == [("a.md", 4, 1)]
    assert hits(run(root, "x")) == [("b.md", 2, 1)]


def test_invalid_utf8_is_parse_error_listing_each_file(tmp_path: Path) -> None:
    root = bundle(
        tmp_path,
        {
            "a.md": "fine hit\n",
            "b.md": b"one\ntwo \xff\n",
            "c/d.md": b"\xc3(\n",
            "index.md": b"\xff reserved files are not decoded\n",
        },
    )
    for mode in ("exact", "regex"):
        err = error_of(root, {"pattern": "hit", "mode": mode})
        assert err.code == "parse_error"
        assert [(e["path"], e["line"]) for e in err.details["errors"]] == [
            ("b.md", 2),
            ("c/d.md", 1),
        ]
        assert all("UTF-8" in e["reason"] for e in err.details["errors"])
        assert "b.md:2" in err.message


def test_cancelled(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"a.md": "x\n"})
    token = CancelToken()
    token.cancel()
    with pytest.raises(CitelineError) as info:
        ENGINE.lines(ENGINE.call(root, cancel=token), {"pattern": "x"})
    assert info.value.code == "cancelled"


# -- linear time ----------------------------------------------------------------------------


def test_catastrophic_patterns_answer(tmp_path: Path) -> None:
    a = "a" * 100_000
    root = bundle(tmp_path, {"a.md": f"{a}b\n{a}\nx{'x' * 99_999}\n"})
    r = run(root, "(a+)+$", mode="regex")
    assert hits(r) == [("a.md", 2, 1)]
    assert r["matches"][0]["text"] == "a" * 256 + "…"
    r = run(root, "(x+x+)+y", mode="regex")
    assert r["total"] == 0
    r = run(root, "(a|aa)+b", mode="regex")
    assert hits(r) == [("a.md", 1, 1)]
    r = run(root, "(.*a){20}$", mode="regex")
    assert hits(r) == [("a.md", 2, 1)]


# -- the whole-file search equals a line-by-line search -------------------------------------


def reference(data: bytes, pattern: str, mode: str, case_sensitive: bool) -> list[tuple[int, int]]:
    """SPEC §8 read literally: each line on its own, first match, 1-based code points."""
    text = decode(data)
    assert isinstance(text, str)
    starts, ends = line_index(text)
    out = []
    opts = re2.Options()
    opts.case_sensitive = case_sensitive
    opts.log_errors = False
    source = re2.escape(pattern) if mode == "exact" else pattern
    rx = re2.compile(source, opts)
    for i, (s, e) in enumerate(zip(starts, ends, strict=True)):
        line = text[s:e]
        if mode == "exact" and case_sensitive:
            col = line.find(pattern)
            if col >= 0:
                out.append((i + 1, col + 1))
            continue
        m = rx.search(line)
        if m is not None:
            out.append((i + 1, m.start() + 1))
    return out


PATTERNS = [
    ("exact", "a"),
    ("exact", "ab"),
    ("exact", "\r"),
    ("exact", "b\r"),
    ("exact", "é"),
    ("exact", "É"),
    ("exact", " "),
    ("regex", "^"),
    ("regex", "$"),
    ("regex", "^$"),
    ("regex", "a$"),
    ("regex", r"\r$"),
    ("regex", r"^\r"),
    ("regex", r"[^a]"),
    ("regex", r"[^a]$"),
    ("regex", r"\s"),
    ("regex", r"\s$"),
    ("regex", r"\S+$"),
    ("regex", r"\W"),
    ("regex", r"\b"),
    ("regex", r"\B"),
    ("regex", r"\bb"),
    ("regex", r"b\b"),
    ("regex", r"(?s).b"),
    ("regex", r"a.*b"),
    ("regex", r"(?U)a.+"),
    ("regex", r"x*"),
    ("regex", r"é|b"),
    ("regex", r"\pL\PL"),
    ("regex", r"\Aa"),
    ("regex", r"a\z"),
    ("regex", r"(?-m)^b"),
    ("regex", r"\C"),
]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(alphabet="ab é\r\n\t-É", max_size=40),
    bom=st.booleans(),
    which=st.sampled_from(PATTERNS),
    case_sensitive=st.booleans(),
)
def test_whole_file_search_equals_line_by_line(
    tmp_path: Path, text: str, bom: bool, which: tuple[str, str], case_sensitive: bool
) -> None:
    mode, pattern = which
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    root = bundle(tmp_path / "prop", {"p.md": data})
    got = run(root, pattern, mode=mode, case_sensitive=case_sensitive, limit=1000)
    expected = reference(data, pattern, mode, case_sensitive)
    assert [(m["line"], m["column"]) for m in got["matches"]] == expected
    assert got["total"] == len(expected)
    text_nobom = decode(data)
    assert isinstance(text_nobom, str)
    starts, ends = line_index(text_nobom)
    for m in got["matches"]:
        assert m["text"] == text_nobom[starts[m["line"] - 1] : ends[m["line"] - 1]]
