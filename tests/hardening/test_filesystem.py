"""Hostile workspaces (SPEC §2): links, special files, races, unreadable and binary files, limits.

Every capture that could hang on a regression runs in a worker thread with a timeout, so the
test fails instead of blocking the suite.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import backends
import pytest
import waiting
from bundles import section_text
from bundles import write_bundle as write

import citeline.engine.capture.capture as cap
from citeline.engine import Call, CitelineError, Engine, Limits, Settings, Snapshot
from citeline.engine.contracts import validate

T = TypeVar("T")
# Generous: these guard against hangs (a FIFO opened for reading), not against slowness.
TIMEOUT = 120.0
OUTSIDE = "outsidesecret"


def snap(bundle: Path, **settings: Any) -> Snapshot:
    return within(lambda: Engine().capture(Call(bundle, Settings(**settings))))


def paths(bundle: Path, **settings: Any) -> list[str]:
    return [f.path for f in snap(bundle, **settings).files]


def fails(fn: Callable[[], Any], timeout: float = TIMEOUT) -> CitelineError:
    with pytest.raises(CitelineError) as err:
        within(fn, timeout)
    return err.value


def assert_consistent(s: Snapshot) -> None:
    """Records match the bytes that were read."""
    for f in s.files:
        assert f.size == len(f.data)
        assert f.sha256 == hashlib.sha256(f.data).hexdigest()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the bundle holding Markdown that must never be captured."""
    return write(
        tmp_path / "outside",
        {"secret.md": f"# Secret\n{OUTSIDE}\n", "deeper/more.md": f"{OUTSIDE}\n"},
    )


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "bundle", {"a.md": "# A\nalpha\n", "sub/b.md": "# B\nalpha beta\n"})


# -- symbolic links ---------------------------------------------------------------------------


def test_links_of_every_kind_are_never_followed(bundle: Path, outside: Path) -> None:
    os.symlink(outside / "secret.md", bundle / "file-link.md")
    os.symlink(outside, bundle / "dir-link")
    os.symlink("loop-b", bundle / "loop-a")  # a -> b -> a
    os.symlink("loop-a", bundle / "loop-b")
    os.symlink("..", bundle / "sub" / "parent")  # a folder linking to its parent
    os.symlink(bundle, bundle / "sub" / "self")
    os.symlink("/", bundle / "root")
    os.symlink("missing.md", bundle / "dangling.md")
    os.symlink("b.md", bundle / "sub" / "relative.md")  # inside the bundle: still skipped
    s = snap(bundle)
    assert [f.path for f in s.files] == ["a.md", "sub/b.md"]
    assert all(OUTSIDE.encode() not in f.data for f in s.files)
    res = within(lambda: Engine().search(Call(bundle, Settings()), {"query": OUTSIDE}))
    assert res["total"] == 0


def swap_after_listing(monkeypatch: pytest.MonkeyPatch, folder: Path, swap: Any) -> None:
    """Run `swap` once, right after the walk has listed `folder` and before it opens anything
    listed there: the window in which a file or folder can be replaced by something else."""
    folder_id = os.stat(folder).st_ino

    def wrap(real: Any) -> Any:
        def listing_then_swap(handle: Any) -> list[tuple[str, bool, Any]]:
            entries = list(real(handle))  # the whole listing, then the swap, then the walk
            if backends.folder_inode(handle) == folder_id:
                swap([(name, is_folder) for name, is_folder, _ in entries])
            return entries

        return listing_then_swap

    backends.hook(monkeypatch, "entries", wrap)


def test_file_swapped_for_link_after_listing_is_not_read(
    bundle: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap(entries: list[tuple[str, bool]]) -> None:
        assert sorted(entries) == [("a.md", False), ("sub", True)]  # in the folder's order
        (bundle / "a.md").unlink()
        os.symlink(outside / "secret.md", bundle / "a.md")

    swap_after_listing(monkeypatch, bundle, swap)
    s = snap(bundle)
    assert [f.path for f in s.files] == ["sub/b.md"]
    assert all(OUTSIDE.encode() not in f.data for f in s.files)
    assert_consistent(s)


def test_folder_swapped_for_link_after_listing_is_not_followed(
    bundle: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders are opened relative to their parent without following links, so a folder
    replaced by a link after its parent was listed cannot lead outside either."""
    write(outside, {"b.md": f"{OUTSIDE}\n"})

    def swap(entries: list[tuple[str, bool]]) -> None:
        assert ("sub", True) in entries
        shutil.rmtree(bundle / "sub")
        os.symlink(outside, bundle / "sub")

    swap_after_listing(monkeypatch, bundle, swap)
    s = snap(bundle)
    assert [f.path for f in s.files] == ["a.md"]
    assert all(OUTSIDE.encode() not in f.data for f in s.files)


def test_file_swapped_for_fifo_after_listing_is_not_read(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap(entries: list[tuple[str, bool]]) -> None:
        assert ("a.md", False) in entries
        (bundle / "a.md").unlink()
        os.mkfifo(bundle / "a.md")

    swap_after_listing(monkeypatch, bundle, swap)
    assert paths(bundle) == ["sub/b.md"]


def test_files_left_for_the_path_order_pass_are_opened_without_links(
    bundle: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past max_total_bytes the walk stops reading and the path-order pass opens the rest
    component by component: a folder swapped for a link is not followed there either."""
    write(outside, {"b.md": f"{OUTSIDE}\n"})
    real = cap.list_markdown

    def listing_then_swap(*args: Any) -> list[tuple[str, object]]:
        found = real(*args[:3])  # no prefetch: every file is read in path order
        shutil.rmtree(bundle / "sub")
        os.symlink(outside, bundle / "sub")
        return found

    monkeypatch.setattr(cap, "list_markdown", listing_then_swap)
    s = snap(bundle)
    assert [f.path for f in s.files] == ["a.md"]
    assert all(OUTSIDE.encode() not in f.data for f in s.files)


def _swap_removed(bundle: Path, outside: Path) -> None:
    shutil.rmtree(bundle)


def _swap_link(bundle: Path, outside: Path) -> None:
    shutil.rmtree(bundle)
    os.symlink(outside, bundle)


def _swap_file(bundle: Path, outside: Path) -> None:
    shutil.rmtree(bundle)
    bundle.write_text("# not a folder\n")


@pytest.mark.parametrize(
    ("swap", "code", "reason"),
    [
        (_swap_removed, "bundle_not_found", None),
        (_swap_link, "bundle_invalid", "symlink"),
        (_swap_file, "bundle_invalid", "not_a_directory"),
    ],
    ids=["removed", "link", "file"],
)
def test_a_bundle_swapped_right_after_its_check_is_an_error(
    bundle: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    swap: Callable[[Path, Path], None],
    code: str,
    reason: str | None,
) -> None:
    """The bundle check and the walk's opening of the root agree (issue 31): a bundle removed,
    or swapped for a link or a file, between them is the error the check would have given
    then, never an empty successful result (the revision of no files at all)."""
    real = cap.check_bundle

    def check_then_swap(path: Any) -> str:
        checked = real(path)
        swap(bundle, outside)
        return checked

    monkeypatch.setattr(cap, "check_bundle", check_then_swap)
    with pytest.raises(CitelineError) as err:
        within(lambda: Engine().search(Call(bundle, Settings()), {"query": "secret"}))
    assert err.value.code == code
    assert (err.value.details or {}).get("reason") == reason
    assert OUTSIDE not in err.value.message


# -- special files ----------------------------------------------------------------------------


@pytest.fixture
def specials(bundle: Path) -> Iterator[list[str]]:
    """A FIFO, a listening Unix socket and (as root) a character device, all named *.md."""
    made = ["fifo.md", "sub/pipe.markdown"]
    os.mkfifo(bundle / "fifo.md")
    os.mkfifo(bundle / "sub" / "pipe.markdown")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.getcwd()
    os.chdir(bundle)  # AF_UNIX paths are limited to ~108 bytes: bind by a relative name
    try:
        sock.bind("sock.md")
    finally:
        os.chdir(old)
    sock.listen(1)
    made.append("sock.md")
    if os.geteuid() == 0:
        null = os.stat("/dev/null").st_rdev
        os.mknod(bundle / "dev.md", 0o666 | stat.S_IFCHR, null)
        made.append("dev.md")
    try:
        yield made
    finally:
        sock.close()


def test_fifo_socket_and_device_are_never_opened(bundle: Path, specials: list[str]) -> None:
    assert len(specials) >= 3
    assert paths(bundle) == ["a.md", "sub/b.md"]
    res = within(lambda: Engine().search(Call(bundle, Settings()), {"query": "alpha"}))
    assert res["total"] == 2
    lines = within(
        lambda: Engine().lines(Call(bundle, Settings()), {"pattern": "alpha", "mode": "exact"})
    )
    assert {m["path"] for m in lines["matches"]} == {"a.md", "sub/b.md"}


def test_fifo_opened_by_read_file_does_not_block(bundle: Path) -> None:
    """Even when handed a FIFO directly, reading does not wait for a writer."""
    os.mkfifo(bundle / "direct.md")
    fd = os.open(bundle, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert within(lambda: cap.read_file(fd, "direct.md", "direct.md", 100), timeout=5) is None
    finally:
        os.close(fd)


# -- unreadable files and folders ---------------------------------------------------------------

NOBODY = 65534
PROBE = textwrap.dedent(
    """
    import json, os, sys
    from citeline.engine import CitelineError, Engine
    # every lazy import before dropping privileges (the parser, PyYAML, pathspec, …)
    import citeline.engine.index.build, citeline.engine.core, citeline.engine.answer.lines
    import pathspec, numpy
    import citeline.engine.text.frontmatter
    os.setgid({uid}); os.setuid({uid})
    try:
        engine = Engine()
        engine.search(engine.call(sys.argv[1]), {{"query": "alpha"}})
        print(json.dumps({{"ok": True}}))
    except CitelineError as err:
        print(json.dumps(err.to_json()))
    """
)


@pytest.fixture
def shared_bundle() -> Iterator[Path]:
    """A bundle another user can reach (pytest's tmp_path is private to root)."""
    top = Path(tempfile.mkdtemp(prefix="citeline-perm-"))
    top.chmod(0o755)
    root = write(top / "b", {"ok.md": "# Ok\nalpha\n", "sub/x.md": "alpha\n"})
    for p in (root, root / "sub"):
        p.chmod(0o755)
    for p in (root / "ok.md", root / "sub" / "x.md"):
        p.chmod(0o644)
    try:
        yield root
    finally:
        for p in [top, *top.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(top)


def search_as_unprivileged(bundle: Path) -> dict[str, Any]:
    """Search as a user that permissions apply to: `nobody` when we are root, else ourselves."""
    if os.geteuid() != 0:
        try:
            Engine().search(Call(bundle, Settings()), {"query": "alpha"})
            return {"ok": True}
        except CitelineError as err:
            return err.to_json()
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(uid=NOBODY), str(bundle)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_shared_bundle_is_readable_unprivileged(shared_bundle: Path) -> None:
    assert search_as_unprivileged(shared_bundle) == {"ok": True}


def test_unreadable_file_is_bundle_invalid_naming_it(shared_bundle: Path) -> None:
    (shared_bundle / "sub" / "x.md").chmod(0o000)
    err = search_as_unprivileged(shared_bundle)["error"]
    assert err["code"] == "bundle_invalid"
    assert err["details"]["path"] == "sub/x.md"
    assert err["details"]["reason"] == "permission_denied"
    assert "sub/x.md" in err["message"]


@pytest.mark.parametrize("mode", [0o000, 0o311, 0o644], ids=["none", "no-read", "no-search"])
def test_unreadable_folder_is_bundle_invalid_naming_it(shared_bundle: Path, mode: int) -> None:
    (shared_bundle / "sub").chmod(mode)
    err = search_as_unprivileged(shared_bundle)["error"]
    assert err["code"] == "bundle_invalid"
    assert err["details"]["reason"] == "permission_denied"
    assert err["details"]["path"] in ("sub", "sub/x.md")
    assert "sub" in err["message"]


def test_unreadable_bundle_root_is_bundle_invalid(shared_bundle: Path) -> None:
    shared_bundle.chmod(0o000)
    err = search_as_unprivileged(shared_bundle)["error"]
    assert err["code"] == "bundle_invalid"
    assert err["details"]["reason"] == "permission_denied"


# -- files changing during capture ----------------------------------------------------------------


def hook_reads(monkeypatch: pytest.MonkeyPatch, before: Callable[[str], None]) -> None:
    """Call `before(rel)` right before each file is read (after its folder was listed)."""

    def wrap(real: Any) -> Any:
        def hooked(folder: Any, name: str, rel: str, max_bytes: int) -> Any:
            before(rel)
            return real(folder, name, rel, max_bytes)

        return hooked

    backends.hook(monkeypatch, "read", wrap)


def test_file_vanishing_after_listing_is_simply_absent(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(bundle, {"z.md": "alpha zeta\n"})

    first: list[str] = []

    def delete_later_files(rel: str) -> None:
        # The root was listed; at the first read (whichever file the folder's order gives),
        # every other file and the subfolder go away.
        if first:
            return
        first.append(rel)
        for other in ("a.md", "z.md"):
            if other != rel:
                (bundle / other).unlink()
        shutil.rmtree(bundle / "sub")

    hook_reads(monkeypatch, delete_later_files)
    res = within(lambda: Engine().search(Call(bundle, Settings()), {"query": "alpha"}))
    assert first and first[0] in ("a.md", "z.md")
    assert [h["path"] for h in res["hits"]] == first
    s = snap(bundle)  # the hook deletes nothing more now
    assert [f.path for f in s.files] == first
    assert res["snapshot_revision"] == s.revision
    assert_consistent(s)


def test_file_growing_past_max_file_bytes_is_resource_limit(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 64
    assert (bundle / "sub" / "b.md").stat().st_size <= limit

    def grow(rel: str) -> None:
        if rel == "sub/b.md":
            with open(bundle / "sub" / "b.md", "ab") as fh:
                fh.write(b"alpha " * 100)

    hook_reads(monkeypatch, grow)
    err = fails(
        lambda: Engine().search(
            Call(bundle, Settings(limits=Limits(max_file_bytes=limit))), {"query": "alpha"}
        )
    )
    assert err.code == "resource_limit"
    assert err.details["limit"] == "max_file_bytes"
    assert err.details["path"] == "sub/b.md"
    # The value reached is the file's size from its stat (what a reused file reports too)...
    assert err.details["value"] == (bundle / "sub" / "b.md").stat().st_size > limit + 1


def test_a_read_stops_one_byte_past_max_file_bytes(tmp_path: Path) -> None:
    """... while the read itself never takes more than one byte past the limit."""
    from citeline.engine.capture.capture import read_file

    (tmp_path / "big.md").write_bytes(b"alpha " * 1000)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        got = read_file(fd, "big.md", "big.md", 64)
    finally:
        os.close(fd)
    assert got is not None
    data, stat = got
    assert data == b"alpha " * 10 + b"alpha"  # 65 bytes: enough to know the file is over
    assert stat[2] == 6000


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(100_000, b"# Grown\n" + b"alpha " * 500), (100, (b"# Grown\n" + b"alpha " * 500)[:101])],
)
def test_a_file_growing_after_its_stat_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, expected: bytes
) -> None:
    """The read asks for the size the file had at fstat (plus one byte); a file that grew
    after it is read on to its real end, or to one byte past max_file_bytes."""
    from citeline.engine.capture.capture import read_file

    target = tmp_path / "grows.md"
    target.write_bytes(b"# Grown\n")
    real = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        info = real(fd)
        with open(target, "ab") as fh:
            fh.write(b"alpha " * 500)
        return info

    monkeypatch.setattr(os, "fstat", fstat_then_grow)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        got = read_file(fd, "grows.md", "grows.md", limit)
    finally:
        os.close(fd)
    assert got is not None
    assert got[0] == expected
    assert got[1][2] == 8  # the fingerprint is the stat the read began with


def test_file_changing_mid_capture_is_cited_as_read(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = b"# Rewritten\nalpha gamma while capturing\n"

    def rewrite(rel: str) -> None:
        if rel == "a.md":
            (bundle / "sub" / "b.md").write_bytes(new)

    hook_reads(monkeypatch, rewrite)
    res = within(lambda: Engine().search(Call(bundle, Settings()), {"query": "alpha"}))
    hit = next(h for h in res["hits"] if h["path"] == "sub/b.md")
    assert hit["content_sha256"] == hashlib.sha256(new).hexdigest()
    assert hit["snippet"].encode() in new
    assert hit["heading"] == "Rewritten"


def test_concurrent_writer_never_breaks_capture(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer rewriting and replacing files while searches run: every answer is
    self-consistent — each hit cites bytes that were really read, whose SHA-256 is its
    content_sha256, with the snippet inside its line range — or a clean CitelineError."""
    read: dict[str, bytes] = {}  # SHA-256 -> bytes, of every file read during the test

    def wrap(real: Any) -> Any:
        def recording(folder: Any, name: str, rel: str, max_bytes: int) -> Any:
            got = real(folder, name, rel, max_bytes)
            if got is not None:
                data = got[0]  # (bytes, fingerprint)
                read[hashlib.sha256(data).hexdigest()] = data
            return got

        return recording

    backends.hook(monkeypatch, "read", wrap)
    stop = threading.Event()
    rng = random.Random(7)

    def writer() -> None:
        while not stop.is_set():
            n = rng.randint(0, 3000)
            target = bundle / "sub" / "b.md"
            tmp = bundle / "sub" / ".b.tmp"
            tmp.write_bytes(b"# B\n" + b"alpha beta\n" * n)
            os.replace(tmp, target)
            with open(bundle / "a.md", "wb") as fh:  # truncate and grow in place
                fh.write(b"# A\n")
                fh.flush()
                fh.write(b"alpha " * n + b"\n")
            if n % 5 == 0:
                (bundle / "a.md").unlink()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    outcomes = {"ok": 0, "error": 0, "hits": 0, "revisions checked": 0}
    versions: set[str] = set()
    try:
        for _ in range(60):
            try:
                s = snap(bundle)
                assert_consistent(s)
                res = within(lambda: Engine().search(Call(bundle, Settings()), {"query": "alpha"}))
            except CitelineError as err:
                assert err.code in ("parse_error", "resource_limit")
                outcomes["error"] += 1
                continue
            outcomes["ok"] += 1
            validate("search.result", res)
            records = []
            for hit in res["hits"]:
                data = read.get(hit["content_sha256"])
                assert data is not None, f"{hit['path']}: cites bytes that were never read"
                assert section_text(data, hit["line_start"], hit["line_end"]).startswith(
                    hit["snippet"]
                )
                snippet = hit["snippet"].encode()
                assert hit["match_spans"], hit
                for span in hit["match_spans"]:
                    assert snippet[span["start"] : span["end"]].lower() == b"alpha"
                records.append(
                    {"path": hit["path"], "size": len(data), "sha256": hit["content_sha256"]}
                )
                versions.add(hit["content_sha256"])
            outcomes["hits"] += len(res["hits"])
            assert res["total"] == len(res["hits"])
            if {r["path"] for r in records} == {"a.md", "sub/b.md"}:
                # Every captured file is a hit: the revision can be computed from the hits.
                records.sort(key=lambda r: r["path"])
                canonical = json.dumps(records, separators=(",", ":")).encode()
                assert res["snapshot_revision"] == hashlib.sha256(canonical).hexdigest()
                outcomes["revisions checked"] += 1
    finally:
        stop.set()
        thread.join(5)
    print(f"concurrent writer: {outcomes}, {len(versions)} distinct file versions cited")
    assert outcomes["ok"] >= 30
    assert outcomes["hits"] >= outcomes["ok"]  # b.md matches whenever n > 0
    assert outcomes["revisions checked"] >= 10
    assert len(versions) >= 10  # the race was really run against changing files


# -- binary files ----------------------------------------------------------------------------

BINARIES: dict[str, bytes] = {
    "png.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
    "random.md": bytes(random.Random(1).randrange(256) for _ in range(4096)) + b"\xff",
    "late.md": b"# Fine\nalpha\nstill fine\n\xc3\x28 broken\n",
    "truncated.md": "ok é".encode()[:-1],
}


@pytest.mark.parametrize("name", sorted(BINARIES))
def test_binary_markdown_is_parse_error_naming_file_and_line(bundle: Path, name: str) -> None:
    data = BINARIES[name]
    write(bundle, {name: data})
    err = fails(lambda: Engine().search(Call(bundle, Settings()), {"query": "alpha"}))
    assert err.code == "parse_error"
    [problem] = err.details["errors"]
    assert problem["path"] == name
    bad = len(data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.start
    assert problem["line"] == data[:bad].count(b"\n") + 1
    assert name in err.message
    res = within(
        lambda: Engine().search(Call(bundle, Settings(skip_invalid=True)), {"query": "alpha"})
    )
    assert res["skipped"] == [problem]
    assert {h["path"] for h in res["hits"]} == {"a.md", "sub/b.md"}
    lines_err = fails(
        lambda: Engine().lines(Call(bundle, Settings()), {"pattern": "alpha", "mode": "exact"})
    )
    assert lines_err.code == "parse_error"


def test_nul_bytes_are_text_not_a_crash(bundle: Path) -> None:
    write(bundle, {"nul.md": b"# N\x00ul\nalpha\x00omega\n\x00\x00\x00\n"})
    res = within(lambda: Engine().search(Call(bundle, Settings()), {"query": "omega"}))
    assert [h["path"] for h in res["hits"]] == ["nul.md"]
    assert "\x00" in res["hits"][0]["snippet"]


# -- limits at and just over ----------------------------------------------------------------


def nested(root: Path, components: list[str], content: bytes = b"alpha\n") -> str:
    """Create root/c1/.../cn (the last is the file) without ever passing a long path to the OS."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in components[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
        out = os.open(components[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
        os.write(out, content)
        os.close(out)
    finally:
        os.close(fd)
    return "/".join(components)


def test_depth_64_components_is_captured_65_is_resource_limit(tmp_path: Path) -> None:
    ok = write(tmp_path / "ok", {})
    rel = nested(ok, ["d"] * 63 + ["deep.md"])
    assert paths(ok) == [rel]
    over = write(tmp_path / "over", {})
    rel = nested(over, ["d"] * 64 + ["deep.md"])
    err = fails(lambda: Engine().search(Call(over, Settings()), {"query": "alpha"}))
    assert err.code == "resource_limit"
    assert err.details["limit"] == "max_path_components"
    assert err.details["value"] == 65
    assert err.details["path"] == rel


def remove_nested(root: Path, depth: int) -> None:
    """Delete a tree made by nested() bottom-up, without shutil.rmtree's recursion (which
    fails on 1,500 levels, also in pytest's own clean-up of old temporary folders)."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):
            fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        for name in os.listdir(fds[-1]):
            os.unlink(name, dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


def test_very_deep_tree_is_resource_limit_not_a_crash(tmp_path: Path) -> None:
    """Deeper than Python's recursion limit: the walk is iterative."""
    root = write(tmp_path / "b", {"top.md": "alpha\n"})
    nested(root, ["d"] * 1500 + ["deep.md"])
    try:
        err = fails(lambda: Engine().search(Call(root, Settings()), {"query": "alpha"}))
        assert err.code == "resource_limit"
        assert err.details["limit"] == "max_path_components"
    finally:
        remove_nested(root, 1500)


def test_very_deep_tree_without_markdown_is_fine(tmp_path: Path) -> None:
    root = write(tmp_path / "b", {"top.md": "alpha\n"})
    nested(root, ["d"] * 1500 + ["notes.txt"])
    try:
        assert paths(root) == ["top.md"]
    finally:
        remove_nested(root, 1500)


def long_components(total: int) -> list[str]:
    """Components (each ≤ 255 bytes, NAME_MAX) whose "/"-joined length is `total` bytes,
    ending in a .md file name."""
    parts: list[str] = []
    left = total
    while left > 255:
        size = min(200, left - 255 - 1)  # leave room for the file name
        size = max(size, 1)
        parts.append("p" * size)
        left -= size + 1
    parts.append("f" * (left - 3) + ".md")
    assert len("/".join(parts).encode()) == total
    assert all(len(p) <= 255 for p in parts)
    return parts


def test_path_of_exactly_4096_bytes_is_captured_4097_is_not(tmp_path: Path) -> None:
    """Longer than PATH_MAX once the bundle's own path is added: opened relative to folders.

    The path backend opens by path: on Windows its extended-length paths (up to 32,767
    characters) hold it, but under the forced configuration on Linux PATH_MAX binds it, and
    the answer is the error naming the file, never a snapshot without it."""
    ok = write(tmp_path / "ok", {})
    rel = nested(ok, long_components(4096))
    assert len(str(ok / rel).encode()) > 4096
    if backends.forced():
        err = fails(lambda: Engine().search(Call(ok, Settings()), {"query": "alpha"}))
        assert (err.code, err.details) == (
            "bundle_invalid",
            {"path": rel, "reason": "path_too_long"},
        )
    else:
        s = snap(ok)
        assert [f.path for f in s.files] == [rel]
        assert s.files[0].data == b"alpha\n"
        res = within(lambda: Engine().search(Call(ok, Settings()), {"query": "alpha"}))
        assert res["hits"][0]["path"] == rel
    over = write(tmp_path / "over", {})
    rel = nested(over, long_components(4097))
    err = fails(lambda: Engine().search(Call(over, Settings()), {"query": "alpha"}))
    assert err.code == "resource_limit"
    assert err.details["limit"] == "max_path_bytes"
    assert err.details["value"] == 4097


def test_path_far_beyond_path_max_is_resource_limit_not_oserror(tmp_path: Path) -> None:
    root = write(tmp_path / "b", {})
    nested(root, ["x" * 250] * 40 + ["y.md"])
    err = fails(lambda: Engine().search(Call(root, Settings()), {"query": "alpha"}))
    assert err.code == "resource_limit"
    assert err.details["limit"] == "max_path_bytes"


def test_exactly_max_files_at_the_default(tmp_path: Path) -> None:
    default = Limits().max_files
    root = tmp_path / "b"
    for i in range(default // 100):
        folder = root / f"d{i:03}"
        folder.mkdir(parents=True)
        for j in range(100):
            (folder / f"f{j:02}.md").write_bytes(b"alpha\n" if j == 0 else b"x\n")
    s = snap(root)
    assert len(s.files) == default
    (root / "one-more.md").write_bytes(b"x\n")
    err = fails(lambda: Engine().search(Call(root, Settings()), {"query": "alpha"}))
    assert err.code == "resource_limit"
    assert err.details["limit"] == "max_files"
    assert err.details["value"] == default + 1


def test_default_sections_and_tokens_at_and_over(tmp_path: Path) -> None:
    """The default section and token limits hold with real volumes, not just small settings."""
    limits = Limits()
    sections = write(tmp_path / "s", {"s.md": b"# h\n" * limits.max_sections})
    res = within(
        lambda: Engine().search(Call(sections, Settings()), {"query": "h", "limit": 1}), timeout=600
    )
    assert res["total"] == limits.max_sections
    write(sections, {"t.md": b"# h\n"})
    err = fails(lambda: Engine().search(Call(sections, Settings()), {"query": "h"}), timeout=600)
    assert err.details["limit"] == "max_sections"
    assert err.details["value"] == limits.max_sections + 1

    tokens = write(tmp_path / "t", {"t.md": b"a " * limits.max_tokens})  # 1 body section
    res = within(lambda: Engine().search(Call(tokens, Settings()), {"query": "a"}), timeout=600)
    assert res["total"] == 1
    write(tokens, {"u.md": b"b\n"})
    err = fails(lambda: Engine().search(Call(tokens, Settings()), {"query": "a"}), timeout=600)
    assert err.details["limit"] == "max_tokens"
    assert err.details["value"] == limits.max_tokens + 1


def within(fn: Callable[[], T], timeout: float = TIMEOUT) -> T:
    return waiting.within(fn, timeout)
