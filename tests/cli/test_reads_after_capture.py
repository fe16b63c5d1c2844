"""Reads after the capture (SPEC §2, issue 31 hole 2): the human output of `search` numbers
the lines of each hit from the bytes the search itself read, and nothing reads a hit's file a
second time unchecked.

A file of a folder another user can write may be swapped, between the search and its output,
for a FIFO (a blocking open hung the call, and through the warm process every later call) or
a huge sparse file (an unbounded read: MemoryError, or the OOM killer). Each test swaps a
real FIFO or a sparse file made with truncate in right after the engine answered, and runs
in a thread with a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import waiting
from bundles import write_bundle
from inprocess import _call

import citeline.engine.capture.capture as cap
from citeline.cli import sections
from citeline.engine import Call, Engine, Settings
from citeline.fronts import hits

T = TypeVar("T")
TIMEOUT = 60.0
SPARSE = 8 << 30  # 8 GiB of holes: reading it whole needs 8 GiB of memory
TEXT = "# Alpha\n\nfirst line\n\nthe alpha words here\n\n## Beta\n\nalpha again\n"


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def sparse(path: Path) -> None:
    path.unlink()
    subprocess.run(["truncate", "-s", str(SPARSE), str(path)], check=True)


SWAPS = {"fifo": fifo, "sparse": sparse}


@pytest.fixture
def bundle(tmp_path: Path) -> Iterator[Path]:
    root = write_bundle(tmp_path / "b", {"a.md": TEXT, "sub/c.md": "# Gamma\n\nalpha too\n"})
    yield root
    release(root)


def release(root: Path) -> None:
    """Wake any reader a regression left blocked on a FIFO of the bundle."""
    for path in root.rglob("*.md"):
        if path.is_fifo():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            os.close(fd)


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_cli_search_output_is_drawn_from_the_bytes_searched(
    bundle: Path, swap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`citeline search` (its own code, in this process) with the hit files swapped for a
    FIFO or an 8 GiB sparse file right after the engine answered: the output is the one
    without the swap, numbered lines and all, and comes at once."""
    argv = ["search", "-q", "alpha", "-C", "1", "--no-cache", "b"]
    before = within(lambda: _call(argv, bundle.parent, {}))
    assert before.returncode == 0, before.stderr
    assert "  5: the alpha words here" in before.stdout  # lines numbered from the file

    real = Engine.search

    def search_then_swap(self: Engine, *args: Any, **kwargs: Any) -> dict[str, Any]:
        result = real(self, *args, **kwargs)
        for path in ("a.md", "sub/c.md"):
            target = bundle / path
            if not target.is_fifo() and target.stat().st_size != SPARSE:
                SWAPS[swap](target)
        return result

    monkeypatch.setattr(Engine, "search", search_then_swap)
    after = within(lambda: _call(argv, bundle.parent, {}))
    assert (bundle / "a.md").is_fifo() or (bundle / "a.md").stat().st_size == SPARSE
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout
    assert "changed since the search" not in after.stdout


def test_the_engine_hands_out_the_text_it_searched(bundle: Path) -> None:
    texts: dict[str, str] = {}
    result = Engine().search(Call(bundle, Settings()), {"query": "alpha"}, texts=texts)
    plain = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert result == plain  # the result itself is untouched
    data = (bundle / "a.md").read_bytes()
    assert texts == {
        hashlib.sha256(data).hexdigest(): TEXT,
        hashlib.sha256(b"# Gamma\n\nalpha too\n").hexdigest(): "# Gamma\n\nalpha too\n",
    }
    assert {h["content_sha256"] for h in result["hits"]} == set(texts)


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_sources_without_the_engine_text_read_with_the_capture_rules(
    bundle: Path, swap: str
) -> None:
    """Sources given only a result (no texts) read the file back: a FIFO or a huge sparse
    file swapped in gives None at once (drawn from the snippet), never a hang or 8 GiB."""
    result = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    SWAPS[swap](bundle / "a.md")
    sources = hits.Sources(str(bundle))
    hit = next(h for h in result["hits"] if h["path"] == "a.md")
    assert within(lambda: sources.lines("a.md", hit["content_sha256"])) is None
    text = within(lambda: sections.render_search(result, False, sources=sources))
    assert "a.md:" in text and "changed since the search" in text


def test_sources_read_back_only_a_regular_file_within_the_limit(tmp_path: Path) -> None:
    data = b"# T\n\nx\n"
    sha = hashlib.sha256(data).hexdigest()
    root = write_bundle(tmp_path / "b", {"a.md": data, "deep/er/b.md": data})
    assert hits.Sources(str(root)).lines("a.md", sha) == ["# T", "", "x", ""]
    assert hits.Sources(str(root), max_bytes=len(data) - 1).lines("a.md", sha) is None
    assert hits.Sources(str(root)).lines("deep/er/b.md", sha) == ["# T", "", "x", ""]
    # a folder of the path swapped for a link: not followed, even to the same bytes
    outside = write_bundle(tmp_path / "outside", {"b.md": data})
    (root / "deep" / "er" / "b.md").unlink()
    (root / "deep" / "er").rmdir()
    (root / "deep" / "er").symlink_to(outside, target_is_directory=True)
    assert hits.Sources(str(root)).lines("deep/er/b.md", sha) is None
    assert hits.Sources(str(root)).lines("../outside/b.md", sha) is None
    # a device (as root: a character device of /dev/zero named like a Markdown file)
    if os.geteuid() == 0:
        os.mknod(root / "zero.md", 0o644 | 0o020000, os.stat("/dev/zero").st_rdev)
        assert within(lambda: hits.Sources(str(root)).lines("zero.md", sha)) is None


def test_read_inside_is_bounded_and_does_not_block(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"a.md": b"abc"})
    assert cap.read_inside(str(root), "a.md", 3) == b"abc"
    assert cap.read_inside(str(root), "a.md", 2) is None  # over the limit: not a prefix
    assert cap.read_inside(str(root), "a.md", 3, hashlib.sha256(b"abc").hexdigest()) == b"abc"
    assert cap.read_inside(str(root), "a.md", 3, "0" * 64) is None
    os.mkfifo(root / "p.md")
    try:
        assert within(lambda: cap.read_inside(str(root), "p.md", 100), timeout=10) is None
    finally:
        release(root)
    for odd in ("", "/a.md", "./a.md", "x/../a.md", "a.md/", "a\x00.md"):
        assert cap.read_inside(str(root), odd, 100) is None, odd
    assert cap.read_inside(str(tmp_path / "gone"), "a.md", 100) is None


def within(fn: Callable[[], T], timeout: float = TIMEOUT) -> T:
    return waiting.within(fn, timeout)
