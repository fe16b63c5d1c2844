"""The capture on every platform (SPEC §16): both backends give byte-identical results, and
what this Linux machine cannot produce is emulated — Windows' zero inodes in listings, its
128-bit file ids, reparse tags (junctions, cloud files), sharing violations, a descriptor
left in text mode — and a folder swapped for a link never leaks a byte from outside,
whichever backend reads."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import backends
import pytest
from bundles import write_bundle as write

from citeline.engine import Call, Engine, Settings
from citeline.engine.base.platform import IO_REPARSE_TAG_CLOUD, IO_REPARSE_TAG_MOUNT_POINT, detect
from citeline.engine.capture import files, final_paths, path_backend, stats
from citeline.engine.capture.capture import capture, read_inside
from citeline.engine.capture.descriptor_backend import DescriptorBackend
from citeline.engine.capture.path_backend import PathBackend, PathFolder
from citeline.engine.capture.stats import FileState, StatIndex

OUTSIDE = "outsidesecret"
FORCED = detect({"CITELINE_PLATFORM": "windows"})
BACKENDS: dict[str, Callable[[], files.Backend]] = {
    "descriptor": DescriptorBackend,
    "path": lambda: PathBackend(FORCED),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> files.Backend:
    """Each test runs on both backends, whatever this run's platform."""
    chosen = BACKENDS[request.param]()
    monkeypatch.setattr(files, "BACKEND", chosen)
    return chosen


@pytest.fixture
def aged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by a test are old enough for the stat index at once."""
    monkeypatch.setattr(stats, "RACY_NS", 0)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return write(tmp_path / "outside", {"b.md": f"# Secret\n{OUTSIDE}\n", "x.md": OUTSIDE})


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "bundle", {"a.md": "# A\nalpha\n", "sub/b.md": "# B\nalpha beta\n"})


def no_outside_bytes(bundle: Path) -> list[str]:
    """The paths a fresh search finds, checking nothing from outside reached any hit."""
    snap = capture(bundle, Settings())
    for f in snap.files:
        assert f.data is not None and OUTSIDE.encode() not in f.data
    res = Engine().search(Call(bundle, Settings()), {"query": "alpha secret"})
    assert OUTSIDE not in json.dumps(res)
    return [f.path for f in snap.files]


# -- the same answers on both backends ------------------------------------------------------------

HOSTILE: dict[str, str | bytes] = {
    "index.md": "# Index\nnavigation alpha\n",
    "a.md": "# Alpha\nalpha beta\n",
    "crlf.md": b"# CRLF\r\nalpha\r\ngamma\r\n",
    "ctrlz.md": b"# Z\nalpha\x1a after the Ctrl-Z byte\n",
    "caf\u00e9/\u30c6\u30b9\u30c8.md": "# \u00c9t\u00e9\nalpha \u00e9t\u00e9\n",
    "deep/er/still/c.MD": "# C\nalpha delta\n",
    "notes.markdown": "---\nid: n1\ntitle: Notes\n---\n# Notes\nalpha\n",
    "ignored/x.md": "# X\nalpha\n",
    ".gitignore": "ignored/\n*.tmp.md\n",
    "skip.tmp.md": "# T\nalpha\n",
    ".hidden.md": "# H\nalpha\n",
    "spaces and  tabs.md": "# S\nalpha\n",
    "trailing dot./y.md": "# Y\nalpha\n",
}


def answers(bundle: Path) -> str:
    """Every answer a front could give for `bundle`, as the bytes it would send."""
    engine = Engine()
    snap = engine.capture(engine.call(bundle))
    out = {
        "records": [(f.path, f.size, f.sha256, f.reserved) for f in snap.files],
        "revision": snap.revision,
        "search": engine.search(engine.call(bundle), {"query": "alpha", "limit": 50}),
        "lines": engine.lines(engine.call(bundle), {"pattern": "alpha", "mode": "exact"}),
        "concepts": engine.concepts(engine.call(bundle), {"query": "notes"}),
    }
    return json.dumps(out, sort_keys=True, ensure_ascii=False)


def test_both_backends_give_byte_identical_answers(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write(tmp_path / "hostile", HOSTILE)
    os.symlink(outside, bundle / "dir-link")
    os.symlink(outside / "b.md", bundle / "file-link.md")
    os.mkfifo(bundle / "fifo.md")
    seen = {}
    for name, make in BACKENDS.items():
        monkeypatch.setattr(files, "BACKEND", make())
        seen[name] = answers(bundle)
    assert seen["descriptor"] == seen["path"]
    assert OUTSIDE not in seen["path"]
    records = json.loads(seen["path"])["records"]
    assert [r[0] for r in records] == [
        "a.md",
        "caf\u00e9/\u30c6\u30b9\u30c8.md",
        "crlf.md",
        "ctrlz.md",
        "deep/er/still/c.MD",
        "index.md",
        "notes.markdown",
        "spaces and  tabs.md",
        "trailing dot./y.md",
    ]
    # binary reads: CRLF and the Ctrl-Z byte are the file's bytes, as on disk
    crlf = next(r for r in records if r[0] == "crlf.md")
    assert crlf[1:3] == [22, hashlib.sha256(b"# CRLF\r\nalpha\r\ngamma\r\n").hexdigest()]


def test_both_backends_reuse_the_same_files(
    tmp_path: Path, backend: files.Backend, aged: None
) -> None:
    bundle = write(tmp_path / "b", {"a.md": "# A\nalpha\n", "s/b.md": "# B\nbeta\n"})
    first = capture(bundle, Settings())
    again = capture(bundle, Settings(), known=first.known)
    assert (again.read, again.revision) == (0, first.revision)
    (bundle / "s" / "b.md").write_text("# B\nbeta, edited\n")
    third = capture(bundle, Settings(), known=again.known)
    assert third.read == 1 and third.revision != first.revision


# -- a folder swapped for a link to outside (a junction, on Windows) -------------------------------


def test_a_folder_swapped_after_its_parent_was_listed(
    bundle: Path, outside: Path, backend: files.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = backend.entries
    root_ino = os.stat(bundle).st_ino

    def listing_then_swap(handle: Any) -> Iterator[tuple[str, bool, Any]]:
        entries = list(real(handle))
        ino = handle.ident[1] if isinstance(handle, PathFolder) else os.fstat(handle).st_ino
        if ino == root_ino and (bundle / "sub").is_dir() and not (bundle / "sub").is_symlink():
            shutil.rmtree(bundle / "sub")
            os.symlink(outside, bundle / "sub")
        return iter(entries)

    monkeypatch.setattr(backend, "entries", listing_then_swap)
    assert no_outside_bytes(bundle) == ["a.md"]


def test_a_folder_swapped_while_its_files_are_read(
    bundle: Path, outside: Path, backend: files.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right before a file of the folder is opened: the descriptor backend holds the folder
    open; the path backend opens by path, so the open goes through the link — and the
    folder's identity, checked after its files were read, drops what came from it."""
    real_open = files.os.open
    swapped: list[str] = []

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith("b.md") and not swapped:
                swapped.append(os.fsdecode(path))
                shutil.rmtree(bundle / "sub")
                os.symlink(outside, bundle / "sub")
            return real_open(path, flags, *args, **kwargs)

    backends.swap_os(monkeypatch, Os())
    snap = capture(bundle, Settings())
    assert swapped
    assert [f.path for f in snap.files] == ["a.md"]
    assert all(OUTSIDE.encode() not in (f.data or b"") for f in snap.files)
    monkeypatch.undo()
    assert no_outside_bytes(bundle) == ["a.md"]


def test_a_file_swapped_for_a_link_right_before_its_open(
    bundle: Path, outside: Path, backend: files.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the lstat that saw a regular file and the open: O_NOFOLLOW refuses the link
    (descriptor backend); the file id fstat gives is not the one lstat saw (path backend,
    where Windows' open follows it)."""
    swapped: list[str] = []

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith("b.md") and not swapped:
                swapped.append(os.fsdecode(path))
                (bundle / "sub" / "b.md").unlink()
                os.symlink(outside / "b.md", bundle / "sub" / "b.md")
            return os.open(path, flags, *args, **kwargs)

    backends.swap_os(monkeypatch, Os())
    snap = capture(bundle, Settings())
    assert swapped
    assert [f.path for f in snap.files] == ["a.md"]
    assert all(OUTSIDE.encode() not in (f.data or b"") for f in snap.files)


def test_a_folder_swapped_under_a_later_read(
    bundle: Path, outside: Path, backend: files.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_inside (the language server's outline of a closed file): the folder swapped
    right before the file's open. The path backend's open goes through the link, and the
    folder's identity, checked after the read, refuses what it gave."""
    swapped: list[str] = []

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith("b.md") and not swapped:
                swapped.append(os.fsdecode(path))
                shutil.rmtree(bundle / "sub")
                os.symlink(outside, bundle / "sub")
            return os.open(path, flags, *args, **kwargs)

    backends.swap_os(monkeypatch, Os())
    assert read_inside(str(bundle), "sub/b.md", 1000) is None
    assert swapped


def test_a_folder_swapped_before_the_reads_after_the_walk(
    bundle: Path, outside: Path, backend: files.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files the walk left for the path-order pass, and files a later stage reads again
    (read_inside, the Fetcher): a swapped folder is not followed there either."""
    disk = capture(bundle, Settings())
    shutil.rmtree(bundle / "sub")
    os.symlink(outside, bundle / "sub")
    assert read_inside(str(bundle), "sub/b.md", 1000) is None
    assert read_inside(str(bundle), "a.md", 1000) == b"# A\nalpha\n"
    late = next(f for f in disk.files if f.path == "sub/b.md")
    bare = replace(late, data=None)
    with files.Fetcher(disk) as fetch, pytest.raises(files.Changed):
        fetch(bare)
    from citeline.engine.capture import walk

    real = walk.list_markdown

    def no_prefetch(*args: Any) -> Any:
        return real(*args[:3], None, *args[4:])  # every file read in path order

    import citeline.engine.capture.capture as cap

    monkeypatch.setattr(cap, "list_markdown", no_prefetch)
    snap = capture(bundle, Settings())
    assert [f.path for f in snap.files] == ["a.md"]


# -- reparse points, as Windows' listings report them ------------------------------------------


class Tagged:
    """A DirEntry as Windows' scandir gives it: stat(follow_symlinks=False) from the listing,
    carrying st_reparse_tag, and st_ino/st_dev 0."""

    def __init__(self, entry: os.DirEntry[str], tag: int) -> None:
        self._entry = entry
        self.name = entry.name
        self.path = entry.path
        self.tag = tag

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_file(follow_symlinks=follow_symlinks)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return with_fields(self._entry.stat(follow_symlinks=follow_symlinks), self.tag, 0, 0)


def with_fields(st: os.stat_result, tag: int | None, ino: int | None, dev: int | None) -> Any:
    """`st` with st_reparse_tag `tag` and other st_ino/st_dev (an os.stat_result cannot
    carry a reparse tag here, so a stand-in with the same fields)."""

    class Stat:
        pass

    out = Stat()
    for name in dir(st):
        if name.startswith("st_"):
            setattr(out, name, getattr(st, name))
    out.st_reparse_tag = tag or 0  # type: ignore[attr-defined]
    if ino is not None:
        out.st_ino = ino  # type: ignore[attr-defined]
    if dev is not None:
        out.st_dev = dev  # type: ignore[attr-defined]
    return out


class Listing:
    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries

    def __iter__(self) -> Iterator[Any]:
        return iter(self.entries)

    def __enter__(self) -> Listing:
        return self

    def __exit__(self, *_: object) -> None:
        pass


def windows_listings(monkeypatch: pytest.MonkeyPatch, tags: dict[str, int]) -> PathBackend:
    """The path backend with reparse points on, listings and lstat as Windows gives them:
    every entry with st_ino 0, the names in `tags` with those reparse tags."""
    backend = PathBackend(FORCED._replace(reparse_points=True))
    monkeypatch.setattr(files, "BACKEND", backend)

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def scandir(self, path: Any) -> Listing:
            with os.scandir(path) as it:
                return Listing([Tagged(e, tags.get(e.name, 0)) for e in it])

        def lstat(self, path: Any, *args: Any, **kwargs: Any) -> Any:
            st = os.lstat(path, *args, **kwargs)
            return with_fields(st, tags.get(os.path.basename(os.fsdecode(path)), 0), None, None)

    backends.swap_os(monkeypatch, Os())
    return backend


def test_junctions_are_skipped_cloud_files_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 3.11 a junction is a folder to lstat and is_dir(follow_symlinks=False); its
    reparse tag (a name surrogate) makes it a link. A OneDrive placeholder's tag is not one."""
    bundle = write(
        tmp_path / "b",
        {
            "a.md": "# A\nalpha\n",
            "junction/x.md": f"{OUTSIDE}\n",  # stands for a junction to elsewhere
            "cloud.md": "# Cloud\nalpha in the cloud\n",
            "sub/b.md": "# B\nalpha\n",
        },
    )
    windows_listings(
        monkeypatch, {"junction": IO_REPARSE_TAG_MOUNT_POINT, "cloud.md": IO_REPARSE_TAG_CLOUD}
    )
    snap = capture(bundle, Settings())
    assert [f.path for f in snap.files] == ["a.md", "cloud.md", "sub/b.md"]
    backend = files.BACKEND
    listed = sorted(name for name, _, _ in backend.entries(backend.root(str(bundle))))
    assert listed == ["a.md", "cloud.md", "sub"]  # the listing itself leaves the junction out
    # ... also when a later read names it: the junction is a link there too
    assert read_inside(str(bundle), "junction/x.md", 100) is None
    assert read_inside(str(bundle), "cloud.md", 100) == b"# Cloud\nalpha in the cloud\n"


def test_a_bundle_that_is_a_junction_is_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write(tmp_path / "notes", {"a.md": "# A\n"})
    windows_listings(monkeypatch, {"notes": IO_REPARSE_TAG_MOUNT_POINT})
    with pytest.raises(Exception) as err:
        capture(bundle, Settings())
    assert getattr(err.value, "details", {}).get("reason") == "symlink"


def test_zero_inodes_in_listings_still_reuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, aged: None
) -> None:
    """Windows' listings report st_ino and st_dev 0 (fstat the real ones): the fingerprint
    the walk compares comes from lstat, so unchanged files are not read again."""
    bundle = write(tmp_path / "b", {"a.md": "# A\nalpha\n", "s/b.md": "# B\nbeta\n"})
    windows_listings(monkeypatch, {})
    first = capture(bundle, Settings())
    assert all(s.stat[1] != 0 for s in first.known.files.values())  # type: ignore[union-attr]
    again = capture(bundle, Settings(), known=first.known)
    assert (again.read, again.revision) == (0, first.revision)
    # a file replaced by another of the same size and times is another file id
    st = os.stat(bundle / "a.md")
    os.replace(bundle / "s" / "b.md", bundle / "a.md.new")
    (bundle / "s" / "b.md").write_text("# B\nbeta\n")
    os.replace(bundle / "a.md.new", bundle / "a.md")
    os.utime(bundle / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    third = capture(bundle, Settings(), known=again.known)
    assert third.read == 2


# -- the stat index holds any inode (ReFS, Dev Drive: 128-bit file ids) -----------------------


@pytest.mark.parametrize(
    "ino",
    [0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**100, 2**127 + 12345, 2**128 - 1],
)
def test_the_stat_index_keeps_every_inode(ino: int) -> None:
    fp = (2**64 - 3, ino, 10, 1_700_000_000_000_000_000, -5)
    state = FileState(fp, "a" * 64, 1_800_000_000_000_000_000, fp)
    back = StatIndex.decode(StatIndex({"x.md": state}, "b" * 64).encode())
    assert back.files["x.md"] == state


def test_an_inode_past_128_bits_is_never_vouched_for() -> None:
    fp = (1, 2**130, 10, 0, 0)
    state = FileState(fp, "a" * 64, 1, fp)
    back = StatIndex.decode(StatIndex({"x.md": state}, "b" * 64).encode()).files["x.md"]
    assert back.stat[1] != 2**130 and back.reuse_if != fp  # read again, never wrongly reused


def test_a_stat_index_of_the_64_bit_layout_is_ignored() -> None:
    from citeline.engine.base.codec import I64, Corrupt, Writer

    old = Writer().strs([]).strs([]).ints([], I64).ints((-1, -1), I64).ints((-1, -1), I64)
    with pytest.raises(Corrupt):
        StatIndex.decode(old.text("b" * 64).finish(b"K"))


def test_a_128_bit_file_id_survives_a_new_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, aged: None
) -> None:
    """The fingerprint goes through the persistent cache's stat index (array('q') held
    only 64 bits: an OverflowError there failed every cached request)."""
    bundle = write(tmp_path / "b", {"a.md": "# A\nalpha\n", "s/b.md": "# B\nbeta\n"})
    big = 2**100

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def lstat(self, path: Any, *args: Any, **kwargs: Any) -> Any:
            st = os.lstat(path, *args, **kwargs)
            return with_fields(st, None, st.st_ino + big, None)

        def fstat(self, fd: int) -> Any:
            st = os.fstat(fd)
            return with_fields(st, None, st.st_ino + big, None)

    monkeypatch.setattr(files, "BACKEND", PathBackend(FORCED))
    backends.swap_os(monkeypatch, Os())
    monkeypatch.setattr(final_paths, "os", Os())  # (the bundle's final path: the same ids)
    cache = tmp_path / "cache"
    first = Engine(cache=cache).search(Call(bundle, Settings()), {"query": "alpha"})
    states = Engine(cache=cache).reuse.known(os.path.abspath(bundle))
    assert states is not None
    assert all(s.stat[1] > big for s in states.files.values())
    fresh = Engine(cache=cache)  # a new process: the stat index from the cache alone
    snap = fresh.capture(fresh.call(bundle))
    assert (snap.read, snap.revision) == (0, first["snapshot_revision"])


def test_the_racy_rule_reads_mtime_alone_where_ctime_is_a_creation_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = time.time_ns()
    old, recent = now - 10 * stats.RACY_NS, now - stats.RACY_NS // 2
    fp = (1, 2, 3, old, recent)  # old mtime, recent ctime
    monkeypatch.setattr(stats, "CTIME_CHANGES", True)
    assert not FileState.read(fp, "a" * 64, now).trusted()  # POSIX: the ctime says changed
    monkeypatch.setattr(stats, "CTIME_CHANGES", False)
    assert FileState.read(fp, "a" * 64, now).trusted()  # Windows: a creation time says nothing
    assert not FileState.read((1, 2, 3, recent, old), "a" * 64, now).trusted()


# -- what Windows' reads can do ---------------------------------------------------------------


def sharing_violation() -> PermissionError:
    exc = PermissionError(errno.EACCES, "The process cannot access the file")
    exc.winerror = 32  # type: ignore[attr-defined]
    return exc


def locking(monkeypatch: pytest.MonkeyPatch, name: str, times: int) -> list[str]:
    """os.open of `name` refused `times` times with a sharing violation (Windows)."""
    tries: list[str] = []

    class Os:
        def __getattr__(self, attr: str) -> Any:
            return getattr(os, attr)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith(name):
                tries.append(name)
                if len(tries) <= times:
                    raise sharing_violation()
            return os.open(path, flags, *args, **kwargs)

    monkeypatch.setattr(path_backend, "SHARING_WAITS", (0.0, 0.0, 0.0))
    monkeypatch.setattr(files, "BACKEND", PathBackend(FORCED))
    backends.swap_os(monkeypatch, Os())
    return tries


def test_a_file_locked_for_a_moment_is_read_after_a_retry(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries = locking(monkeypatch, "b.md", 2)
    snap = capture(bundle, Settings())
    assert [f.path for f in snap.files] == ["a.md", "sub/b.md"]
    assert len(tries) == 3


def test_a_file_that_stays_locked_is_an_error_naming_it(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never a snapshot without it (no partial result), never 'fix its permissions'."""
    tries = locking(monkeypatch, "b.md", 100)
    with pytest.raises(Exception) as err:
        capture(bundle, Settings())
    assert (err.value.code, err.value.details) == (  # type: ignore[attr-defined]
        "bundle_invalid",
        {"path": "sub/b.md", "reason": "locked"},
    )
    assert "permission" not in str(err.value) and "another program" in str(err.value)
    assert len(tries) == len(path_backend.SHARING_WAITS) + 1


def text_mode(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Descriptors of `name` read as an os.open without O_BINARY reads on Windows: CRLF
    becomes LF and a Ctrl-Z byte ends the file."""
    opened: set[int] = set()

    class Os:
        def __getattr__(self, attr: str) -> Any:
            return getattr(os, attr)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            fd = os.open(path, flags, *args, **kwargs)
            if os.fsdecode(path).endswith(name):
                opened.add(fd)
            return fd

        def read(self, fd: int, n: int) -> bytes:
            data = os.read(fd, n)
            if fd in opened:
                data = data.split(b"\x1a")[0].replace(b"\r\n", b"\n")
            return data

    monkeypatch.setattr(files, "BACKEND", PathBackend(FORCED))
    backends.swap_os(monkeypatch, Os())


@pytest.mark.parametrize("content", [b"# W\r\nalpha\r\n", b"# W\nalpha\x1a and more\n"])
def test_a_text_mode_read_is_refused_not_cited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    """The read gives fewer bytes than the file's size while its stat stays the same: read
    again, then refused — its SHA-256 would describe bytes that are not on disk."""
    bundle = write(tmp_path / "b", {"a.md": "# A\nalpha\n", "w.md": content})
    text_mode(monkeypatch, "w.md")
    with pytest.raises(Exception) as err:
        capture(bundle, Settings())
    assert (err.value.code, err.value.details) == (  # type: ignore[attr-defined]
        "bundle_invalid",
        {"path": "w.md", "reason": "short_read"},
    )


def test_a_file_that_shrank_while_read_is_what_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short read of a file whose stat changed meanwhile is no text mode: the bytes read
    are the file's at that moment (as the descriptor backend reads them)."""
    bundle = write(tmp_path / "b", {"s.md": "# S\nalpha " + "x" * 100 + "\n"})
    target = bundle / "s.md"
    real_fstat = os.fstat
    calls: list[int] = []

    class Os:
        def __getattr__(self, attr: str) -> Any:
            return getattr(os, attr)

        def fstat(self, fd: int) -> os.stat_result:
            st = real_fstat(fd)
            calls.append(fd)
            if len(calls) == 1:
                target.write_bytes(b"# S\nalpha\n")  # truncated right after the first fstat
            return st

    monkeypatch.setattr(files, "BACKEND", PathBackend(FORCED))
    backends.swap_os(monkeypatch, Os())
    snap = capture(bundle, Settings())
    assert [(f.path, f.data) for f in snap.files] == [("s.md", b"# S\nalpha\n")]


def test_a_socket_refused_as_macos_refuses_it_is_not_in_the_snapshot(
    bundle: Path, backend: files.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS's open() of a socket says EOPNOTSUPP (Linux ENXIO): a socket swapped in during
    the walk is absent, as a file that vanished is, not a failed capture."""

    class Os:
        def __getattr__(self, attr: str) -> Any:
            return getattr(os, attr)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith("b.md"):
                raise OSError(errno.EOPNOTSUPP, "Operation not supported on socket")
            return os.open(path, flags, *args, **kwargs)

    backends.swap_os(monkeypatch, Os())
    assert [f.path for f in capture(bundle, Settings()).files] == ["a.md"]


def test_the_path_backend_opens_in_binary_mode_where_the_platform_has_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "O_BINARY", 0x8000, raising=False)
    win = PathBackend(detect({"CITELINE_PLATFORM": "windows"}))
    assert win.flags & 0x8000
    assert not win.flags & getattr(os, "O_NOFOLLOW", 0)


def test_a_file_replaced_between_its_lstat_and_its_open_is_read_as_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's save replaces the file (a new file id): the path backend looks again,
    so the file is read, not dropped (the descriptor backend reads the new file too)."""
    bundle = write(tmp_path / "b", {"a.md": "# A\nold\n"})
    replaced: list[bool] = []

    class Os:
        def __getattr__(self, attr: str) -> Any:
            return getattr(os, attr)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith("a.md") and not replaced:
                replaced.append(True)
                (bundle / "a.tmp").write_bytes(b"# A\nnew\n")
                os.replace(bundle / "a.tmp", bundle / "a.md")
            return os.open(path, flags, *args, **kwargs)

    monkeypatch.setattr(files, "BACKEND", PathBackend(FORCED))
    backends.swap_os(monkeypatch, Os())
    snap = capture(bundle, Settings())
    assert replaced and [(f.path, f.data) for f in snap.files] == [("a.md", b"# A\nnew\n")]


def test_a_file_replaced_at_every_look_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write(tmp_path / "b", {"a.md": "# A\n", "z.md": "# Z\n"})

    class Os:
        def __getattr__(self, attr: str) -> Any:
            return getattr(os, attr)

        def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fsdecode(path).endswith("a.md"):
                (bundle / "a.tmp").write_bytes(b"# A\n")
                os.replace(bundle / "a.tmp", bundle / "a.md")
            return os.open(path, flags, *args, **kwargs)

    monkeypatch.setattr(files, "BACKEND", PathBackend(FORCED))
    backends.swap_os(monkeypatch, Os())
    assert [f.path for f in capture(bundle, Settings()).files] == ["z.md"]


def test_regular_files_only_by_identity_and_mode(tmp_path: Path) -> None:
    """The path backend reads regular files only: a FIFO is left out before it is opened."""
    bundle = write(tmp_path / "b", {"a.md": "# A\n"})
    os.mkfifo(bundle / "f.md")
    folder = PathBackend(FORCED).root(str(bundle))
    assert PathBackend(FORCED).read(folder, "f.md", "f.md", 100) is None
    got = PathBackend(FORCED).read(folder, "a.md", "a.md", 100)
    assert got is not None and got[0] == b"# A\n"
    assert stat.S_ISFIFO(os.lstat(bundle / "f.md").st_mode)
