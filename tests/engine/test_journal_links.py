"""A write through a hard link is never missed by the change journal (issue 49, finding 1).

The attack: someone who can write a shared workspace makes a second name for a captured file
under a name the capture never takes (`ln g.md .g`), writes through it (same size), and
removes it — all between two requests, so the file has one link again when the next request
comes. inotify reports the writes under the link's name only (a change of the target's link
count goes to a watch of the file itself, which the journal does not set). A long-lived
engine must still answer with the file's new bytes: real files, real inotify, real engines.

The racy rule is turned off (RACY_NS = 0), as in test_journal_capture.py: with it on, a
file this test just wrote would be read again anyway and the miss would not show.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from other_user import NOBODY, chown_tree, needs_root, run_as_other, shared_folder

from citeline.engine import Call, Engine
from citeline.engine.base.limits import Settings
from citeline.engine.capture import journal as jmod
from citeline.engine.capture import stats

pytestmark = pytest.mark.skipif(
    jmod.unsupported_reason() is not None, reason="no synchronous journal on this platform"
)

OLD = "# Guide\n\nPay every invoice to the old account.\n"
NEW = "# Guide\n\nPay every invoice to the new account.\n"  # the same size
assert len(OLD) == len(NEW)


def files_of(engine: Engine, root: Path, settings: Settings | None = None) -> dict[str, str]:
    snap = engine.capture(engine.call(str(root), settings=settings or Settings()))
    return {f.path: f.sha256 for f in snap.files}


def truth(root: Path, settings: Settings | None = None) -> dict[str, str]:
    return files_of(Engine(reread=True), root, settings)


def make_bundle(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "g.md").write_text(OLD)
    (root / "sub/h.md").write_text("# H\n\nhello\n")
    (root / "other.md").write_text("# Other\n\nother words\n")
    (root / ".gitignore").write_text("ignored.md\nbuild/\n")
    (root / "build").mkdir()
    return root


@pytest.fixture
def no_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "RACY_NS", 0)


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine(journal=True)
    yield e
    e.close()


def write_through(link: Path, text: str) -> None:
    """A same-size write in place through `link` (no rename, no truncation)."""
    with open(link, "r+b") as fh:
        fh.write(text.encode())


# (target, link): the link under every kind of name the capture does not take, and under
# one it does, in the target's folder and in another watched folder.
LINKS = [
    ("g.md", ".g"),
    ("g.md", "g.txt"),
    ("g.md", "ignored.md"),
    ("g.md", "copy.md"),
    ("g.md", "sub/.g"),
    ("sub/h.md", ".h"),
]


@pytest.mark.parametrize(("target", "link"), LINKS)
def test_a_write_through_a_link_made_written_and_removed_between_requests_is_seen(
    tmp_path: Path, no_racy: None, engine: Engine, target: str, link: str
) -> None:
    root = make_bundle(tmp_path / "bundle")
    (root / target).write_text(OLD)
    assert files_of(engine, root) == truth(root)
    assert files_of(engine, root) == truth(root)  # the journal's first vouched request
    os.link(root / target, root / link)
    write_through(root / link, NEW)
    os.unlink(root / link)
    assert os.stat(root / target).st_nlink == 1  # back to one link at the next request
    got = files_of(engine, root)
    assert got == truth(root)
    assert (root / target).read_text() == NEW


def test_a_write_through_a_kept_descriptor_of_a_removed_link_is_seen(
    tmp_path: Path, no_racy: None, engine: Engine
) -> None:
    """The link removed before the request, its descriptor kept and written after it: the
    kernel reports that write under the removed name only, if at all."""
    root = make_bundle(tmp_path / "bundle")
    files_of(engine, root)
    files_of(engine, root)
    os.link(root / "g.md", root / ".g")
    fd = os.open(root / ".g", os.O_WRONLY)
    try:
        os.unlink(root / ".g")
        assert files_of(engine, root) == truth(root)
        os.pwrite(fd, NEW.encode(), 0)
    finally:
        os.close(fd)
    assert files_of(engine, root) == truth(root)
    (root / ".g").write_text("a new file under the old name\n")
    assert files_of(engine, root) == truth(root)


def test_a_link_kept_is_stated_while_it_lasts_and_after(
    tmp_path: Path, no_racy: None, engine: Engine
) -> None:
    """A link made between requests and kept: every later write through it is seen, also
    after it is removed with a descriptor still open."""
    root = make_bundle(tmp_path / "bundle")
    files_of(engine, root)
    files_of(engine, root)
    os.link(root / "g.md", root / ".g")
    assert files_of(engine, root) == truth(root)
    fd = os.open(root / ".g", os.O_WRONLY)
    try:
        for i, text in enumerate([NEW, OLD, NEW]):
            os.pwrite(fd, text.encode(), 0)
            assert files_of(engine, root) == truth(root), i
        os.unlink(root / ".g")
        assert files_of(engine, root) == truth(root)
        (root / ".g").write_text("a new file under the old name\n")  # the name taken again
        assert files_of(engine, root) == truth(root)
        os.pwrite(fd, OLD.encode(), 0)
        assert files_of(engine, root) == truth(root)
    finally:
        os.close(fd)


def test_a_write_through_a_link_of_another_user_in_a_shared_folder_is_seen(
    no_racy: None, engine: Engine
) -> None:
    """The issue's attack as written: another local user, who can write the shared
    workspace, links, writes through the link and removes it between two requests."""
    needs_root()
    with shared_folder(0o755, owner=NOBODY) as share:
        root = make_bundle(share / "team")
        chown_tree(root)
        assert files_of(engine, root) == truth(root)
        assert files_of(engine, root) == truth(root)
        run_as_other(
            """
            import os, sys
            root = sys.argv[1]
            os.link(os.path.join(root, "g.md"), os.path.join(root, ".g"))
            with open(os.path.join(root, ".g"), "r+b") as fh:
                fh.write(sys.argv[2].encode())
            os.unlink(os.path.join(root, ".g"))
            """,
            str(root),
            NEW,
        )
        assert (root / "g.md").read_text() == NEW
        assert files_of(engine, root) == truth(root)


def _call(front: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from mcp import Client

    async def go() -> dict[str, Any]:
        async with Client(front.server) as client:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            data = result.structured_content
            assert isinstance(data, dict)
            return data

    return asyncio.run(go())


@pytest.mark.parametrize("act", ["same process", "other user"])
def test_the_mcp_server_answers_the_new_snippet_and_sha256(
    tmp_path: Path, no_racy: None, act: str
) -> None:
    """Through the MCP server's own engine: the hit's snippet and content_sha256 are the
    file's as it is, not as it was before the write through the link."""
    from citeline.mcp_server.server import CitelineMCP

    def attack(root: Path) -> None:
        if act == "other user":
            run_as_other(
                """
                import os, sys
                os.link(sys.argv[1] + "/g.md", sys.argv[1] + "/.g")
                with open(sys.argv[1] + "/.g", "r+b") as fh:
                    fh.write(sys.argv[2].encode())
                os.unlink(sys.argv[1] + "/.g")
                """,
                str(root),
                NEW,
            )
        else:
            os.link(root / "g.md", root / ".g")
            write_through(root / ".g", NEW)
            os.unlink(root / ".g")

    def run(root: Path) -> None:
        front = CitelineMCP(str(root), cache=False)
        try:
            query = {"query": "pay every invoice"}
            first = _call(front, "search_sections", query)
            assert "old account" in first["hits"][0]["snippet"]
            _call(front, "search_sections", query)
            attack(root)
            hit = _call(front, "search_sections", query)["hits"][0]
            assert hit["content_sha256"] == hashlib.sha256(NEW.encode()).hexdigest()
            assert "new account" in hit["snippet"]
        finally:
            front.engine.close()

    if act == "other user":
        needs_root()
        with shared_folder(0o755, owner=NOBODY) as share:
            root = make_bundle(share / "team")
            chown_tree(root)
            run(root)
    else:
        run(make_bundle(tmp_path / "bundle"))


def test_the_journal_asks_for_every_file_only_when_a_name_may_hide_a_link(
    tmp_path: Path,
) -> None:
    """What costs a stat of every file (Drained.restat) and what does not: an editor's
    saves, in place or by renaming a temporary file over the file, a new file, a removed
    one, a swap file written again cost nothing more; a name with other links, or made
    and gone again before the drain, does."""
    root = make_bundle(tmp_path / "bundle")
    (root / ".g.md.swp").write_text("swap\n")
    j = jmod.open_journal(str(root))
    assert isinstance(j, jmod.Journal)
    j.drain()

    def drained() -> tuple[frozenset[str], bool]:
        d = j.drain()
        assert d.vouched, d
        return d.paths, d.restat

    (root / "g.md").write_text(NEW)  # in place
    assert drained() == ({"g.md"}, False)
    (root / ".g.md.tmp").write_text(OLD)  # a temporary file renamed over it
    os.replace(root / ".g.md.tmp", root / "g.md")
    assert drained() == ({"g.md"}, False)
    (root / "sub/new.md").write_text("# new\n")
    os.unlink(root / "other.md")
    (root / ".g.md.swp").write_text("swap again\n")
    assert drained() == ({"sub/new.md", "other.md"}, False)
    os.link(root / "g.md", root / ".g")  # a second name, there now
    assert drained() == (frozenset(), True)
    os.unlink(root / ".g")  # (the file itself is stat'ed by the capture from now on)
    assert drained() == (frozenset(), False)
    os.link(root / "g.md", root / "sub/.x")  # made and gone before the drain
    os.unlink(root / "sub/.x")
    assert drained() == (frozenset(), True)
    (root / "notes.txt").write_text("any file made and gone again may have been a link\n")
    os.unlink(root / "notes.txt")
    assert drained() == (frozenset(), True)
    os.link(root / "g.md", root / ".y")  # moved within the watched folders, then removed
    os.rename(root / ".y", root / "sub/.y")
    assert drained() == (frozenset(), True)
    os.unlink(root / "sub/.y")
    assert drained() == (frozenset(), False)
    j.close()


def test_the_warm_process_reports_the_new_snapshot_revision(
    tmp_path: Path, no_racy: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the warm CLI process's kept engine (cli/daemon.py): the search after the
    write through the link finds the new words and reports the new snapshot_revision."""
    from citeline.cli import cli, daemon

    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    root = make_bundle(tmp_path / "bundle")
    args = cli.parser().parse_args(["search", str(root), "-q", "invoice"])
    engines = daemon.KeptEngines()
    try:
        engine = engines.open(str(root), cli.settings_from(args), args)
        assert engine.reuse.journals is not None
        before = engine.search(engine.call(str(root)), {"query": "invoice"})
        engine.search(engine.call(str(root)), {"query": "invoice"})
        os.link(root / "g.md", root / ".g")
        write_through(root / ".g", NEW)
        os.unlink(root / ".g")
        after = engine.search(engine.call(str(root)), {"query": "new account"})
        expected = Engine(reread=True).search(Call(str(root), Settings()), {"query": "new account"})
        assert after["snapshot_revision"] == expected["snapshot_revision"]
        assert after["snapshot_revision"] != before["snapshot_revision"]
        assert [h["path"] for h in after["hits"]] == ["g.md"]
    finally:
        engines.close()
