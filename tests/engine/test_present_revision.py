"""Locators (SPEC §6) and snapshot_revision (SPEC §2), checked against independent encoders."""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import escape_path, locator
from citeline.engine.capture.revision import records_json, snapshot_revision


def go_escaped_path(path: str) -> str:
    """Go's url.URL.EscapedPath for a URL holding only Path, via urllib (uppercase hex)."""
    return urllib.parse.quote(path, safe="/$&+,:;=@")  # quote always keeps A-Za-z0-9-._~


def go_json_string(s: str) -> str:
    """Go's encoding/json string literal as SPEC §2 describes it, written char by char."""
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif cp < 0x20 or ch in "<>&\u2028\u2029":
            out.append("\\u" + format(cp, "04x"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_revision(files: dict[str, bytes]) -> str:
    """SHA-256 of Go's json.Marshal of the records, sorted by path in code point order."""
    parts = []
    for path in sorted(files):
        data = files[path]
        parts.append(
            "{"
            + f'"path":{go_json_string(path)},"size":{len(data)},'
            + f'"sha256":"{hashlib.sha256(data).hexdigest()}"'
            + "}"
        )
    return hashlib.sha256(("[" + ",".join(parts) + "]").encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    ("path", "escaped"),
    [
        ("a.md", "a.md"),
        ("dir with space/a b.md", "dir%20with%20space/a%20b.md"),
        ("c#sharp.md", "c%23sharp.md"),
        ("100%.md", "100%25.md"),
        ("über/ß.md", "%C3%BCber/%C3%9F.md"),
        ("数据.md", "%E6%95%B0%E6%8D%AE.md"),
        ("keep-._~$&+,:;=@/x.md", "keep-._~$&+,:;=@/x.md"),
        ("esc!'()*?[]<>\"{}|\\^`.md", "esc%21%27%28%29%2A%3F%5B%5D%3C%3E%22%7B%7D%7C%5C%5E%60.md"),
        ("tab\tnl\n.md", "tab%09nl%0A.md"),
    ],
)
def test_escape_path_like_go(path: str, escaped: str) -> None:
    assert escape_path(path) == escaped
    assert go_escaped_path(path) == escaped


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_escape_path_matches_independent_encoder(path: str) -> None:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return
    assert escape_path(path) == go_escaped_path(path)


def test_locator_one_line_and_range() -> None:
    assert locator("a b.md", 3, 3) == "a%20b.md#L3-L3"
    assert locator("x/y.md", 1, 10) == "x/y.md#L1-L10"


def test_locator_in_hits_for_odd_paths(make_bundle) -> None:
    files = {
        "dir with space/a#b%c ü.md": "# One\nalpha\n",
        "q?.md": "alpha\n",
        "plain.md": "intro\n# Two\nalpha\n",
    }
    bundle = make_bundle(files)
    hits = Engine().search(Call(bundle, Settings()), {"query": "alpha"})["hits"]
    got = {h["path"]: h["locator"] for h in hits}
    assert got == {
        "dir with space/a#b%c ü.md": "dir%20with%20space/a%23b%25c%20%C3%BC.md#L1-L2",
        "q?.md": "q%3F.md#L1-L1",
        "plain.md": "plain.md#L2-L3",
    }


def test_go_json_known_bytes() -> None:
    class R:
        path = 'a<b>&c\u2028\u2029\x01\x1f\x7f\t"\\é.md'
        size = 3
        sha256 = "ab"

    assert records_json([R()]) == (
        '[{"path":"a\\u003cb\\u003e\\u0026c\\u2028\\u2029\\u0001\\u001f\x7f\\t\\"\\\\é.md",'
        '"size":3,"sha256":"ab"}]'
    )


def test_empty_bundle_revision(make_bundle) -> None:
    snap = Engine().capture(Call(make_bundle({}), Settings()))
    assert snap.files == ()
    assert snap.revision == hashlib.sha256(b"[]").hexdigest()


ODD_NAMES = [
    "a<b>&c.md",
    "line\u2028sep.md",
    "para\u2029sep.md",
    "ctl\x01\x1b.md",
    "tab\tname.md",
    "nl\nname.md",
    "cr\rname.md",
    'quote"back\\slash.md',
    "é-accent.md",
    "数据/文件.md",
    "B.md",
    "a.b.md",
    "a/b.md",
    "index.md",  # reserved: still in the revision
    "del\x7f.md",
]


def test_revision_matches_go_encoding_for_odd_paths(make_bundle) -> None:
    files = {name: f"# {i}\nbody {i}\n".encode() for i, name in enumerate(ODD_NAMES)}
    bundle = make_bundle(files)
    extra = {".hidden.md": b"x", "notes.txt": b"y"}  # not captured, not in the revision
    for name, data in extra.items():
        (bundle / name).write_bytes(data)
    snap = Engine().capture(Call(bundle, Settings()))
    assert [f.path for f in snap.files] == sorted(files)
    assert snap.revision == go_revision(files)
    assert snapshot_revision(snap.files) == snap.revision
    res = Engine().search(Call(bundle, Settings()), {"query": "body"})
    assert res["snapshot_revision"] == go_revision(files)
    assert len(res["hits"]) == len(files) - 1  # index.md is never searched


def test_records_sorted_by_code_point_order(make_bundle) -> None:
    names = ["a/b.md", "a.b.md", "B.md", "a-b.md", "é.md", "z.md"]
    snap = Engine().capture(Call(make_bundle(dict.fromkeys(names, b"x")), Settings()))
    assert [f.path for f in snap.files] == ["B.md", "a-b.md", "a.b.md", "a/b.md", "z.md", "é.md"]
    for f in snap.files:
        assert f.size == 1 and f.sha256 == hashlib.sha256(b"x").hexdigest()


def test_revision_same_when_bundle_copied_or_moved(make_bundle, tmp_path: Path) -> None:
    files = {name: f"text {i}\n".encode() for i, name in enumerate(ODD_NAMES)}
    bundle = make_bundle(files)
    e = Engine()
    first = e.search(e.call(bundle), {"query": "text"})["snapshot_revision"]
    assert first == go_revision(files)
    copy = tmp_path / "elsewhere" / "deeper" / "copy"
    shutil.copytree(bundle, copy)
    assert e.search(e.call(copy), {"query": "text"})["snapshot_revision"] == first
    moved = tmp_path / "moved"
    os.rename(bundle, moved)
    assert e.search(e.call(moved), {"query": "text"})["snapshot_revision"] == first
    # one byte changed: another revision
    (moved / "B.md").write_bytes(b"text 99\n")
    assert e.search(e.call(moved), {"query": "text"})["snapshot_revision"] != first


def test_revision_through_relative_path(make_bundle, monkeypatch) -> None:
    bundle = make_bundle({"a.md": "x\n"})
    absolute = Engine().capture(Call(bundle, Settings())).revision
    monkeypatch.chdir(bundle.parent)
    assert Engine().capture(Call(bundle.name, Settings())).revision == absolute
    assert Engine().capture(Call(bundle.name + "/", Settings())).revision == absolute
