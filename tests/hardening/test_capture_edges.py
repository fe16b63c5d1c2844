"""Bugs found for issue 14 in capture and the cache's store, fixed with the issue-13 rewrite.

.gitignore lines pathspec cannot compile: git skips a pattern it cannot
read, so must capture; today GitIgnoreSpec.from_lines raises (GitIgnorePatternError,
re.error, UnicodeEncodeError for a byte that is not UTF-8), which reaches the fronts as an
internal error (now: the line is skipped, as git does).

Also a bundle path holding a NUL byte (os.lstat raises ValueError, not OSError), and a
bundle path that is not valid UTF-8 with the persistent cache on: the store keys it as
text, which SQLite cannot encode (was UnicodeEncodeError: a bug, exit 70; now keyed by its
bytes, and any store error means "not cached").

"""

from __future__ import annotations

import pytest

from citeline.engine import Call, CitelineError, Engine, Settings


@pytest.mark.parametrize(
    "bad",
    [b"!", b"\\", b"a\\", b"[z-a]", b"[[:alpha:]]", b"\xff.md"],
    ids=["lone_bang", "lone_backslash", "trailing_backslash", "bad_range", "posix_class", "latin1"],
)
def test_unreadable_gitignore_line_is_skipped_like_git(make_bundle, bad: bytes) -> None:
    bundle = make_bundle(
        {
            ".gitignore": b"ignored.md\n" + bad + b"\n",
            "a.md": "# A\nalpha\n",
            "ignored.md": "# Ignored\nalpha\n",
        }
    )
    res = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["a.md"]  # the readable line still applies


def test_bundle_path_with_nul_byte_is_bundle_invalid() -> None:
    """A language client can name one (file:///tmp/a%00b); os.lstat raises ValueError."""
    from citeline.engine import CitelineError

    with pytest.raises(CitelineError) as err:
        Engine().search(Call("/tmp/a\0b", Settings()), {"query": "alpha"})
    assert err.value.code in ("bundle_invalid", "bundle_not_found")


def test_cache_keys_a_bundle_path_that_is_not_utf8(tmp_path) -> None:
    import os

    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(root)
    with open(os.path.join(root, b"a.md"), "wb") as fh:
        fh.write(b"# A\nalpha\n")
    engine = Engine(cache=tmp_path / "cache")
    res = engine.search(engine.call(os.fsdecode(root)), {"query": "alpha"})
    assert res["total"] == 1


def test_a_file_name_not_utf8_names_its_folder(tmp_path) -> None:
    """The error names the folder as it is (its name may end in any character)."""
    import os

    folder = tmp_path / "docs" / "INBOX"
    folder.mkdir(parents=True)
    (folder.parent / "a.md").write_text("# A\nalpha\n")
    fd = os.open(bytes(folder) + b"/caf\xe9.md", os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    with pytest.raises(CitelineError) as caught:
        Engine().search(Call(tmp_path / "docs", Settings()), {"query": "alpha"})
    err = caught.value
    assert err.code == "bundle_invalid"
    assert err.details == {"path": "INBOX", "reason": "path_not_utf8"}
    assert "in folder 'INBOX' has a path that is not valid UTF-8" in err.message


def test_files_read_after_the_byte_budget_come_from_their_own_folders(tmp_path) -> None:
    """Capture reads files while it walks until max_total_bytes were read, the rest after,
    in path order, one folder after another, until the limit is reported. Walk order is
    not path order (the root's files before its folders; "z.md" after "c/w.md" in path
    order), so files of several folders can be read late: each from its own folder, or the
    total reported would miss them."""
    from citeline.engine import Limits

    files = {"z.md": 900, "a/x.md": 200, "b/y.md": 200, "c/w.md": 200}
    for rel, size in files.items():
        path = tmp_path / "docs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"# T\n" + b"a" * (size - 4))
    with pytest.raises(CitelineError) as caught:
        Engine().search(
            Call(tmp_path / "docs", Settings(limits=Limits(max_total_bytes=1000))),
            {"query": "alpha"},
        )
    # In path order: a/x.md, b/y.md, c/w.md (200 each: 600), then z.md: 1,500 > 1,000.
    assert caught.value.details["limit"] == "max_total_bytes"
    assert caught.value.details["value"] == 1500
