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

from citeline.engine import Engine


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
    res = Engine().search(bundle, {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["a.md"]  # the readable line still applies


def test_bundle_path_with_nul_byte_is_bundle_invalid() -> None:
    """A language client can name one (file:///tmp/a%00b); os.lstat raises ValueError."""
    from citeline.engine import CitelineError

    with pytest.raises(CitelineError) as err:
        Engine().search("/tmp/a\0b", {"query": "alpha"})
    assert err.value.code in ("bundle_invalid", "bundle_not_found")


def test_cache_keys_a_bundle_path_that_is_not_utf8(tmp_path) -> None:
    import os

    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(root)
    with open(os.path.join(root, b"a.md"), "wb") as fh:
        fh.write(b"# A\nalpha\n")
    engine = Engine(cache=tmp_path / "cache")
    res = engine.search(os.fsdecode(root), {"query": "alpha"})
    assert res["total"] == 1
