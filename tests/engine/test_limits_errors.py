"""Every limit of SPEC §2/§3/§4 at and one over, every error code (§10), the order of checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.engine import CODES, Call, CancelToken, CitelineError, Engine, Limits, Settings
from citeline.engine.answer.present import encode
from citeline.engine.base.errors import LimitHit
from citeline.fronts.remedies import COMMAND_LINE, worded


def run(bundle, request=None, concepts=False, **limits):
    settings = Settings(limits=Limits(**limits))
    req = request or {"query": "alpha"}
    e = Engine()
    if concepts:
        return e.concepts(e.call(bundle, settings=settings), req)
    return e.search(e.call(bundle, settings=settings), req)


def fails(bundle, request=None, *, settings: Settings | None = None, **limits) -> CitelineError:
    settings = settings or Settings(limits=Limits(**limits))
    with pytest.raises(CitelineError) as err:
        Engine().search(Call(bundle, settings), request or {"query": "alpha"})
    return err.value


def assert_limit(err: CitelineError, name: str, value: int, maximum: int) -> None:
    assert err.code == "resource_limit"
    assert err.details["limit"] == name
    assert err.details["value"] == value
    assert err.details["max"] == maximum
    assert err.details["setting"] == name
    assert err.remedy == LimitHit(name, value, maximum)  # which limit, for the front to word
    shown = worded(err, COMMAND_LINE)  # as a front shows it: what to raise, and how
    assert name in shown.message
    assert str(maximum) in shown.message


# -- capture limits ---------------------------------------------------------------------


def test_max_files(make_bundle) -> None:
    bundle = make_bundle(
        {
            "a.md": "alpha\n",
            "b.md": "alpha\n",
            "index.md": "reserved, still counted\n",
            ".hidden.md": "not counted",
            "ignored.md": "not counted",
            ".gitignore": "ignored.md\n",
            "notes.txt": "not counted",
        }
    )
    assert run(bundle, max_files=3)["total"] == 2
    assert_limit(fails(bundle, max_files=2), "max_files", 3, 2)


def test_max_total_bytes(make_bundle) -> None:
    files = {"a.md": "alpha " * 5, "b.md": "alpha\n", "log.md": "0123456789"}
    total = sum(len(v.encode()) for v in files.values())
    bundle = make_bundle(files)
    assert run(bundle, max_total_bytes=total)["total"] == 2
    assert_limit(fails(bundle, max_total_bytes=total - 1), "max_total_bytes", total, total - 1)


def test_max_total_bytes_counts_in_path_order_not_walk_order(make_bundle, file_reads) -> None:
    """The walk reads a/b.md before a-c.md (it goes into folder "a" first), but bytes are
    counted in path order ("-" sorts before "/"), so the limit is hit at the same file and
    with the same total whatever order the walk read the files in."""
    reads = file_reads
    # a/b.md alone is over the limit: the walk stops reading there and a-c.md is read in
    # the path-order pass, once.
    bundle = make_bundle({"a-c.md": "x" * 10, "a/b.md": "y" * 30})
    assert_limit(fails(bundle, max_total_bytes=25), "max_total_bytes", 40, 25)
    assert sorted(reads) == ["a-c.md", "a/b.md"]
    # a-c.md alone is over: path order stops at it (30), walk order would have said 40.
    bundle = make_bundle({"a-c.md": "x" * 30, "a/b.md": "y" * 10})
    assert_limit(fails(bundle, max_total_bytes=25), "max_total_bytes", 30, 25)
    # Far over the limit: reading stops once the limit is passed, not after every file.
    reads.clear()
    bundle = make_bundle({f"f{i:02}.md": "z" * 10 for i in range(40)})
    assert_limit(fails(bundle, max_total_bytes=25), "max_total_bytes", 30, 25)
    assert reads == ["f00.md", "f01.md", "f02.md"]


def test_unreadable_file_is_reported_after_path_limits(make_bundle, monkeypatch) -> None:
    """Files are read during the walk, but a read error waits for its turn (SPEC §2 order)."""
    import errno

    from citeline.engine.capture import files, reads

    def denied(folder, name, rel, max_bytes):
        raise reads.unreadable("File", rel, PermissionError(errno.EACCES, "Permission denied"))

    monkeypatch.setattr(files.BACKEND, "read", denied)
    bundle = make_bundle({"a.md": "alpha\n", "deep/er/c.md": "alpha\n"})
    assert fails(bundle, max_path_components=2).details["limit"] == "max_path_components"
    assert fails(bundle, max_files=1).details["limit"] == "max_files"
    err = fails(bundle)
    assert (err.code, err.details["path"]) == ("bundle_invalid", "a.md")


def test_max_file_bytes(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n", "big.md": "alpha " * 10})
    assert run(bundle, max_file_bytes=60)["total"] == 2
    err = fails(bundle, max_file_bytes=59)
    assert err.code == "resource_limit"
    assert err.details["limit"] == "max_file_bytes"
    assert err.details["max"] == 59
    assert err.details["value"] > 59
    assert err.details["path"] == "big.md"


def test_max_path_components(make_bundle) -> None:
    bundle = make_bundle({"a/b/c.md": "alpha\n", "d.md": "alpha\n"})
    assert run(bundle, max_path_components=3)["total"] == 2
    err = fails(bundle, max_path_components=2)
    assert_limit(err, "max_path_components", 3, 2)
    assert err.details["path"] == "a/b/c.md"


def test_max_path_bytes(make_bundle) -> None:
    bundle = make_bundle({"dir/é.md": "alpha\n"})  # 4 + 2 + 3 = 9 bytes
    assert run(bundle, max_path_bytes=9)["total"] == 1
    err = fails(bundle, max_path_bytes=8)
    assert_limit(err, "max_path_bytes", 9, 8)
    assert err.details["path"] == "dir/é.md"


# -- index limits ---------------------------------------------------------------------------

SECTIONS_BUNDLE = {
    "a.md": "pre alpha\n# A\nx\n# B\ny\n",  # 3 sections
    "b.md": "alpha\n",  # 1
    "c.md": "\n  \n",  # whitespace only: 0
    "index.md": "# R1\n# R2\n# R3\n",  # reserved: not counted
}


def test_max_sections(make_bundle) -> None:
    bundle = make_bundle(SECTIONS_BUNDLE)
    assert run(bundle, max_sections=4)["total"] == 2
    assert_limit(fails(bundle, max_sections=3), "max_sections", 4, 3)


def test_max_sections_applies_to_concepts(make_bundle) -> None:
    bundle = make_bundle(SECTIONS_BUNDLE)
    assert run(bundle, {"query": "a"}, concepts=True, max_sections=4)["total"] == 1
    with pytest.raises(CitelineError) as err:
        run(bundle, {"query": "a"}, concepts=True, max_sections=3)
    assert_limit(err.value, "max_sections", 4, 3)


TOKENS_BUNDLE = {
    # raw: one two three (3) + heading: one two (2) = 5
    "a.md": "# One two\nthree\n",
    # raw: four alpha (2) + title: t (1) = 3
    "b.md": "---\ntitle: T\n---\nfour alpha\n",
    "index.md": "many many many words in a reserved file\n",
}


def test_max_tokens(make_bundle) -> None:
    bundle = make_bundle(TOKENS_BUNDLE)
    assert run(bundle, max_tokens=8)["total"] == 1
    assert_limit(fails(bundle, max_tokens=7), "max_tokens", 8, 7)


def test_max_tokens_applies_to_concepts(make_bundle) -> None:
    bundle = make_bundle(TOKENS_BUNDLE)
    with pytest.raises(CitelineError) as err:
        run(bundle, {"query": "a"}, concepts=True, max_tokens=7)
    assert_limit(err.value, "max_tokens", 8, 7)


def test_max_response_bytes(make_bundle) -> None:
    bundle = make_bundle({f"f{i}.md": f"# Alpha {i}\nalpha text é\n" for i in range(5)})
    full = run(bundle)
    size = len(encode(full).encode("utf-8"))
    assert run(bundle, max_response_bytes=size) == full
    assert_limit(fails(bundle, max_response_bytes=size - 1), "max_response_bytes", size, size - 1)


def test_max_response_bytes_for_concepts(make_bundle) -> None:
    bundle = make_bundle({"a.md": "x\n", "b.md": "y\n"})
    full = run(bundle, {"query": "a"}, concepts=True)
    size = len(encode(full).encode("utf-8"))
    assert run(bundle, {"query": "a"}, concepts=True, max_response_bytes=size) == full
    with pytest.raises(CitelineError) as err:
        run(bundle, {"query": "a"}, concepts=True, max_response_bytes=size - 1)
    assert_limit(err.value, "max_response_bytes", size, size - 1)


def test_heading_1024_bytes(make_bundle) -> None:
    ok = make_bundle({"a.md": "# " + "é" * 512 + "\nalpha\n"})
    assert run(ok)["hits"][0]["heading"] == "é" * 512
    # markup does not count: the plain text is 1024 bytes
    assert run(make_bundle({"a.md": "# **" + "a" * 1024 + "**\nalpha\n"}))["total"] == 1
    err = fails(make_bundle({"a.md": "intro\n\n# " + "é" * 512 + "a\nalpha\n"}))
    assert err.code == "resource_limit"
    assert err.details["limit"] == "heading_bytes"
    assert (err.details["value"], err.details["max"]) == (1025, 1024)
    assert (err.details["path"], err.details["line"]) == ("a.md", 3)


def test_title_1024_bytes(make_bundle) -> None:
    ok = make_bundle({"a.md": "---\ntitle: " + "b" * 1024 + "\n---\nalpha\n"})
    assert run(ok)["total"] == 1
    err = fails(make_bundle({"a.md": "---\ntitle: " + "b" * 1025 + "\n---\nalpha\n"}))
    assert err.code == "resource_limit"
    assert err.details["limit"] == "title_bytes"
    assert (err.details["value"], err.details["max"]) == (1025, 1024)
    assert err.details["path"] == "a.md"


def test_long_heading_in_reserved_file_does_not_block(make_bundle) -> None:
    bundle = make_bundle({"index.md": "# " + "x" * 2000 + "\n", "a.md": "alpha\n"})
    assert run(bundle)["total"] == 1


# -- request limits -------------------------------------------------------------------------


@pytest.fixture
def small(make_bundle) -> Path:
    return make_bundle({"a.md": "# Alpha\nalpha beta\n", "b.md": "alpha\n"})


def schema(bundle, request) -> CitelineError:
    err = fails(bundle, request)
    assert err.code == "schema_validation"
    return err


def test_query_512_code_points(small) -> None:
    assert run(small, {"query": "a" * 512})["total"] == 0
    assert run(small, {"query": "𝒳" * 512})["terms"] == ["𝒳" * 512]  # code points, not units
    err = schema(small, {"query": "a" * 513})
    assert err.details["length"] == 513


def test_query_32_terms(small) -> None:
    words = " ".join(f"w{i}" for i in range(32))
    assert len(run(small, {"query": words})["terms"]) == 32
    err = fails(small, {"query": words + " extra"})
    assert err.code == "resource_limit"
    assert err.details["limit"] == "query_terms"
    assert err.details["value"] == 33


@pytest.mark.parametrize("limit", [1, 100])
def test_limit_bounds_pass(small, limit: int) -> None:
    res = run(small, {"query": "alpha", "limit": limit})
    assert res["total"] == 2
    assert len(res["hits"]) == min(limit, 2)
    assert res["truncated"] is (limit < 2)


@pytest.mark.parametrize("limit", [0, 101, -1, True, 1.5, "5"])
def test_limit_out_of_range(small, limit) -> None:
    err = schema(small, {"query": "alpha", "limit": limit})
    assert err.details["field"] == "limit"


def test_default_limit_is_20(make_bundle) -> None:
    bundle = make_bundle({f"f{i:02}.md": "alpha\n" for i in range(25)})
    res = run(bundle)
    assert (res["total"], len(res["hits"]), res["truncated"]) == (25, 20, True)


@pytest.mark.parametrize(
    "request_",
    [
        {"query": ""},
        {"query": "!!! ---"},
        {"query": 42},
        {"query": None},
        {"query": "a\ud800b"},
        {"limit": 3},
        {"query": "alpha", "bogus": 1},
        {"query": "alpha", "match": "some"},
        ["alpha"],
        "alpha",
    ],
    ids=[
        "empty",
        "no_letter",
        "not_string",
        "null",
        "lone_surrogate",
        "missing_query",
        "unknown_field",
        "bad_option",
        "list",
        "string",
    ],
)
def test_schema_validation(small, request_) -> None:
    schema(small, request_)


def test_concepts_request_validation(small) -> None:
    for req in ({"query": ""}, {"query": "a" * 513}, {"query": "a", "limit": 0}, {"x": 1}):
        with pytest.raises(CitelineError) as err:
            Engine().concepts(Call(small, Settings()), req)
        assert err.value.code == "schema_validation"
    assert Engine().concepts(Call(small, Settings()), {"query": "a" * 512})["total"] == 0
    assert Engine().concepts(Call(small, Settings()), {"query": "-", "limit": 100})["total"] == 0


# -- errors --------------------------------------------------------------------------------


def test_error_envelope_shape() -> None:
    err = CitelineError("parse_error", "bad", {"errors": []})
    assert err.to_json() == {
        "error": {"code": "parse_error", "message": "bad", "details": {"errors": []}}
    }
    assert CitelineError("cancelled", "stop").to_json()["error"]["details"] == {}
    assert set(CODES) == {
        "schema_validation",
        "resource_limit",
        "bundle_not_found",
        "bundle_invalid",
        "parse_error",
        "cancelled",
    }
    with pytest.raises(ValueError):
        CitelineError("nope", "x")


def test_every_code_reachable_with_envelope(make_bundle, tmp_path: Path) -> None:
    good = make_bundle({"a.md": "alpha\n"})
    cancelled = CancelToken()
    cancelled.cancel()
    cases = {
        "schema_validation": lambda: Engine().search(Call(good, Settings()), {"query": ""}),
        "resource_limit": lambda: run(make_bundle({"x.md": "one two\n"}), max_tokens=1),
        "bundle_not_found": lambda: Engine().search(
            Call(tmp_path / "missing", Settings()), {"query": "a"}
        ),
        "bundle_invalid": lambda: Engine().search(Call(good / "a.md", Settings()), {"query": "a"}),
        "parse_error": lambda: Engine().search(
            Call(make_bundle({"bad.md": b"\xff"}), Settings()), {"query": "alpha"}
        ),
        "cancelled": lambda: Engine().search(
            Call(good, Settings(), cancel=cancelled), {"query": "alpha"}
        ),
    }
    for code, call in cases.items():
        with pytest.raises(CitelineError) as err:
            call()
        env = err.value.to_json()
        assert env["error"]["code"] == code
        assert set(env["error"]) == {"code", "message", "details"}
        assert isinstance(env["error"]["message"], str) and env["error"]["message"]
        assert isinstance(env["error"]["details"], dict)


def test_pre_cancelled_token(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n"})
    token = CancelToken()
    assert Engine().search(Call(bundle, Settings(), cancel=token), {"query": "alpha"})["total"] == 1
    token.cancel()
    for call in (
        lambda: Engine().search(Call(bundle, Settings(), cancel=token), {"query": "alpha"}),
        lambda: Engine().concepts(Call(bundle, Settings(), cancel=token), {"query": "a"}),
    ):
        with pytest.raises(CitelineError) as err:
            call()
        assert err.value.code == "cancelled"


def test_parse_error_lists_every_file(make_bundle) -> None:
    bundle = make_bundle(
        {"a.md": "alpha\n", "b.md": "---\nx: [\n---\n", "c.md": b"ok\n\xfe\n", "d.md": "---\n"}
    )
    err = fails(bundle)
    assert err.code == "parse_error"
    got = [(e["path"], e["line"]) for e in err.details["errors"]]
    assert [p for p, _ in got] == ["b.md", "c.md", "d.md"]
    assert got[1] == ("c.md", 2)
    assert got[2] == ("d.md", 1)
    assert all(e["reason"] for e in err.details["errors"])


def test_skip_invalid(make_bundle) -> None:
    files = {
        "a.md": "# A\nalpha\n",
        "b.md": "---\ntitle: [\n---\nalpha\n",
        "c.md": b"alpha\n\xff\n",
        "d.md": "---\n- list\n---\nalpha\n",
    }
    bundle = make_bundle(files)
    res = Engine().search(Call(bundle, Settings(skip_invalid=True)), {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["a.md"]
    skipped = res["skipped"]
    assert [(s["path"], s["line"]) for s in skipped][1:] == [("c.md", 2), ("d.md", 1)]
    assert skipped[0]["path"] == "b.md"
    assert all(set(s) == {"path", "line", "reason"} and s["reason"] for s in skipped)
    # the revision still covers the skipped files
    assert res["snapshot_revision"] == Engine().capture(Call(bundle, Settings())).revision
    (bundle / "c.md").write_bytes(b"alpha\n\xff\xff\n")
    again = Engine().search(Call(bundle, Settings(skip_invalid=True)), {"query": "alpha"})
    assert again["snapshot_revision"] != res["snapshot_revision"]
    assert again["hits"] == res["hits"]


def test_skipped_present_only_when_asked(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n"})
    assert "skipped" not in Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    res = Engine().search(Call(bundle, Settings(skip_invalid=True)), {"query": "alpha"})
    assert res["skipped"] == []
    con = Engine().concepts(Call(bundle, Settings(skip_invalid=True)), {"query": "a"})
    assert con["skipped"] == []


def test_skip_invalid_in_concepts(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n", "b.md": b"\xff"})
    res = Engine().concepts(Call(bundle, Settings(skip_invalid=True)), {"query": "b"})
    assert res["concepts"] == []
    assert [s["path"] for s in res["skipped"]] == ["b.md"]


# -- order of checks (SPEC §2) ----------------------------------------------------------------


def test_order_request_before_bundle(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert fails(missing, {"query": "alpha", "limit": 0}).code == "schema_validation"
    many = " ".join(f"w{i}" for i in range(33))
    err = fails(missing, {"query": many})
    assert (err.code, err.details["limit"]) == ("resource_limit", "query_terms")
    assert fails(missing).code == "bundle_not_found"


def test_order_request_before_invalid_bundle(make_bundle) -> None:
    file = make_bundle({"a.md": "x"}) / "a.md"
    assert fails(file, {"query": ""}).code == "schema_validation"
    token = CancelToken()
    token.cancel()
    with pytest.raises(CitelineError) as err:
        Engine().search(Call(file, Settings(), cancel=token), {"query": "?"})
    assert err.value.code == "schema_validation"


def test_order_bundle_before_capture_limits(tmp_path: Path) -> None:
    assert fails(tmp_path / "missing", max_files=1).code == "bundle_not_found"


def test_order_files_before_path_limits(make_bundle) -> None:
    bundle = make_bundle({"a/b/long-name.md": "alpha\n", "b.md": "alpha\n"})
    err = fails(bundle, max_files=1, max_path_bytes=5, max_path_components=1)
    assert err.details["limit"] == "max_files"


def test_order_path_length_before_components(make_bundle) -> None:
    bundle = make_bundle({"a/b.md": "alpha\n"})
    err = fails(bundle, max_path_bytes=3, max_path_components=1)
    assert err.details["limit"] == "max_path_bytes"


def test_order_path_limits_before_bytes(make_bundle) -> None:
    bundle = make_bundle({"a/b.md": "alpha " * 100})
    err = fails(bundle, max_path_components=1, max_total_bytes=10, max_file_bytes=10)
    assert err.details["limit"] == "max_path_components"


def test_order_capture_bytes_before_parse_errors(make_bundle) -> None:
    bundle = make_bundle({"bad.md": b"\xff" * 50, "good.md": "alpha\n"})
    assert fails(bundle, max_total_bytes=40).details["limit"] == "max_total_bytes"
    assert fails(bundle, max_file_bytes=40).details["limit"] == "max_file_bytes"
    assert fails(bundle).code == "parse_error"


def test_order_parse_errors_before_duplicate_ids(make_bundle) -> None:
    bundle = make_bundle({"a.md": "alpha\n", "a.markdown": "alpha\n", "z.md": b"\xff"})
    assert fails(bundle).code == "parse_error"
    err = fails(bundle, settings=Settings(skip_invalid=True))
    assert (err.code, err.details["concept_id"]) == ("bundle_invalid", "a")


def test_order_duplicate_ids_before_heading_length(make_bundle) -> None:
    bundle = make_bundle(
        {"a.md": "alpha\n", "a.markdown": "alpha\n", "b.md": "# " + "x" * 1025 + "\n"}
    )
    err = fails(bundle)
    assert (err.code, err.details["reason"]) == ("bundle_invalid", "duplicate_concept_id")


def test_order_parse_errors_before_heading_and_index_limits(make_bundle) -> None:
    bundle = make_bundle(
        {"a.md": "# " + "x" * 1025 + "\nalpha\n# B\n# C\n", "b.md": "---\nunclosed\n"}
    )
    assert fails(bundle, max_sections=1, max_tokens=1).code == "parse_error"


def test_order_heading_length_before_sections_and_tokens(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# " + "x" * 1025 + "\nalpha\n# B\n# C\n"})
    err = fails(bundle, max_sections=1, max_tokens=1)
    assert err.details["limit"] == "heading_bytes"


def test_order_sections_before_tokens(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# A\nalpha\n# B\nmore words\n"})
    assert fails(bundle, max_sections=1, max_tokens=1).details["limit"] == "max_sections"


def test_order_tokens_before_response_size(make_bundle) -> None:
    bundle = make_bundle({"a.md": "# A\nalpha\n"})
    err = fails(bundle, max_tokens=1, max_response_bytes=10)
    assert err.details["limit"] == "max_tokens"
    assert fails(bundle, max_response_bytes=10).details["limit"] == "max_response_bytes"


def test_skip_invalid_file_does_not_count_toward_index_limits(make_bundle) -> None:
    bundle = make_bundle(
        {
            "a.md": "alpha\n",
            "b.md": b"---\nunclosed\n# " + b"y" * 2000 + b"\n" + b"w " * 100,
        }
    )
    settings = Settings(limits=Limits(max_sections=1, max_tokens=1), skip_invalid=True)
    res = Engine().search(Call(bundle, settings), {"query": "alpha"})
    assert res["total"] == 1
    assert [s["path"] for s in res["skipped"]] == ["b.md"]
