"""Edges of the index and of capture that the other engine tests leave open (found by
mutation testing, docs/testing.md): prefix expansion over several blocks, the advice a
parse_error gives, files and folders the system refuses to open, and the disk's revision
after a capture of unsaved editor text."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import backends
import pytest

import citeline.engine.capture.capture as cap
from citeline.engine import Call, CitelineError, Engine, Limits, Settings
from citeline.engine.capture import files
from citeline.engine.capture.capture import capture
from citeline.engine.capture.descriptor_backend import DescriptorBackend
from citeline.engine.index.index import MAX_EXPANSIONS
from citeline.fronts.remedies import COMMAND_LINE, EDITOR, worded

# -- prefix expansion -------------------------------------------------------------------------


def test_expansions_count_a_term_over_every_block(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 64 expansions kept are the most frequent over the whole index: a term spread
    over several blocks counts in all of them."""
    import citeline.engine.index.build as build

    monkeypatch.setattr(build, "TARGET_BYTES", 1)  # one block per file
    files = {f"f{i:02}.md": f"# F\n\npz{i:02}\n" for i in range(MAX_EXPANSIONS + 6)}
    files |= {"g1.md": "# G\n\npzz\n", "g2.md": "# G\n\npzz\n"}
    index = Engine(cache=False).prepare(Call(make_bundle(files), Settings()))
    assert len(index.blocks) > 2
    found = index.expand("pz")
    assert len(found) == MAX_EXPANSIONS
    assert "pzz" in found  # two files: the most frequent, though in no block more than once
    assert found == sorted(found)
    assert found[:3] == ["pz00", "pz01", "pz02"]  # ties: the first terms in code point order


# -- the advice of a parse_error --------------------------------------------------------------


def test_parse_error_says_how_to_skip_the_file(make_bundle: Callable[..., Path]) -> None:
    bundle = make_bundle({"a.md": "# A\nalpha\n", "bad.md": b"# B\n\xff\n"})
    with pytest.raises(CitelineError) as raised:
        Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    cli = worded(raised.value, COMMAND_LINE)  # the front words what to do
    assert cli.code == "parse_error"
    assert cli.message.endswith(". Fix them, or skip unparsable files with --skip-invalid.")
    lsp = worded(raised.value, EDITOR)
    assert lsp.message.endswith(
        ". Fix them, or set the citeline setting skip_invalid to true to leave them out."
    )


# -- what the system refuses to open ----------------------------------------------------------


class _Os:
    """The os module as capture sees it, refusing one name as a system does: open() of it
    (relative to its folder, or by path); for the path backend also the listing of a folder
    by that name and anything by a path through it."""

    def __init__(self, name: str, error: OSError) -> None:
        self.name = os.fsencode(name)
        self.error = error

    def __getattr__(self, attr: str) -> Any:
        return getattr(os, attr)

    def _through(self, path: Any) -> bool:
        return isinstance(path, str | bytes) and self.name in os.fsencode(path).split(b"/")[:-1]

    def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsencode(path).split(b"/")[-1] == self.name or self._through(path):
            raise self.error
        return os.open(path, flags, *args, **kwargs)

    def scandir(self, path: Any) -> Any:
        if isinstance(path, str | bytes) and os.fsencode(path).split(b"/")[-1] == self.name:
            raise self.error
        return os.scandir(path)

    def lstat(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if self._through(path):
            raise self.error
        return os.lstat(path, *args, **kwargs)


def refuse(monkeypatch: pytest.MonkeyPatch, name: str, error: OSError) -> None:
    backends.swap_os(monkeypatch, _Os(name, error))


def assert_folder_refused(err: CitelineError, shown: str) -> None:
    assert (err.code, err.message, err.details) == (
        "bundle_invalid",
        f"Folder '{shown}' in the bundle cannot be read (permission denied). Fix its "
        "permissions, or add it to .gitignore.",
        {"path": shown, "reason": "permission_denied"},
    )


def capture_fails(bundle: Path, settings: Settings | None = None, **kwargs: Any) -> CitelineError:
    """The error a capture of `bundle` raises (the test fails if it raises none)."""
    with pytest.raises(CitelineError) as err:
        capture(bundle, settings or Settings(), **kwargs)
    return err.value


FILES = {"a.md": "# A\nalpha\n", "sub/x.md": "# X\nalpha\n"}


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_a_file_that_cannot_be_opened_for_permissions(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    bundle = make_bundle(FILES)
    refuse(monkeypatch, "x.md", PermissionError(code, os.strerror(code)))
    err = capture_fails(bundle)
    assert err.code == "bundle_invalid"
    assert err.message == (
        "File 'sub/x.md' in the bundle cannot be read (permission denied). Fix its "
        "permissions, or add it to .gitignore."
    )
    assert err.details == {"path": "sub/x.md", "reason": "permission_denied"}


@pytest.mark.parametrize(("folder", "shown"), [("sub", "sub"), (None, ".")])  # None: the bundle
def test_a_folder_that_cannot_be_opened_for_permissions(
    make_bundle: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
    folder: str | None,
    shown: str,
) -> None:
    bundle = make_bundle(FILES)
    refuse(monkeypatch, folder or bundle.name, PermissionError(errno.EACCES, "Permission denied"))
    assert_folder_refused(capture_fails(bundle), shown)


def test_a_file_that_cannot_be_read_for_another_reason(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = make_bundle(FILES)
    refuse(monkeypatch, "x.md", OSError(errno.EIO, "Input/output error"))
    err = capture_fails(bundle)
    assert err.code == "bundle_invalid"
    assert err.message == "File 'sub/x.md' in the bundle cannot be read: Input/output error."
    assert err.details == {"path": "sub/x.md"}


class _FewDescriptors(_Os):
    """The os module as capture sees it, out of file descriptors from the n-th nested
    folder named `name` on (the walk holds a descriptor for each folder of its path)."""

    def __init__(self, name: str, n: int) -> None:
        super().__init__(name, OSError(errno.EMFILE, "Too many open files"))
        self.n = n
        self.opened = 0

    def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsencode(path).split(b"/")[-1] == self.name:
            self.opened += 1
            if self.opened >= self.n:
                raise self.error
        return os.open(path, flags, *args, **kwargs)


@pytest.mark.parametrize("advice", ["cli", "editor"])
def test_out_of_descriptors_past_the_depth_limit_is_that_limit(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, advice: str
) -> None:
    """Every file below the folder that could not be opened is deeper than
    max_path_components allows, so that limit is the answer, as with descriptors to spare."""
    bundle = make_bundle({"a.md": "# A\nalpha\n", "/".join(["d"] * 70 + ["deep.md"]): "alpha\n"})
    # (the descriptor backend: the path backend holds no descriptor per folder)
    monkeypatch.setattr(files, "BACKEND", DescriptorBackend())
    backends.swap_os(monkeypatch, _FewDescriptors("d", 64))
    err = worded(capture_fails(bundle), COMMAND_LINE if advice == "cli" else EDITOR)
    folder = "/".join(["d"] * 64)
    assert err.code == "resource_limit"
    assert err.details == {
        "limit": "max_path_components",
        "value": 65,
        "max": 64,
        "setting": "max_path_components",
        "flag": "--max-path-components",
        "path": folder,
    }
    assert ("--max-path-components" in err.message) == (advice == "cli")


def test_out_of_descriptors_within_the_depth_limit_names_the_folder(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = make_bundle({"/".join(["dX"] * 70 + ["deep.md"]): "alpha\n"})
    monkeypatch.setattr(files, "BACKEND", DescriptorBackend())  # (as above)
    backends.swap_os(monkeypatch, _FewDescriptors("dX", 63))  # one short of the limit
    err = capture_fails(bundle)
    folder = "/".join(["dX"] * 63)
    assert err.code == "bundle_invalid"
    assert err.message == f"Folder '{folder}' in the bundle cannot be read: Too many open files."
    assert err.details == {"path": folder}


class _FailingReads(_Os):
    """The os module as capture sees it, with reads of one file failing after its open."""

    def __init__(self, name: str, error: OSError) -> None:
        super().__init__(name, error)
        self.fds: set[int] = set()

    def open(self, path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = os.open(path, flags, *args, **kwargs)
        if os.fsencode(path).split(b"/")[-1] == self.name:
            self.fds.add(fd)
        return fd

    def read(self, fd: int, n: int) -> bytes:
        if fd in self.fds:
            raise self.error
        return os.read(fd, n)


@pytest.mark.parametrize(
    ("error", "message", "details"),
    [
        (
            OSError(errno.EIO, "Input/output error"),
            "File 'sub/x.md' in the bundle cannot be read: Input/output error.",
            {"path": "sub/x.md"},
        ),
        (
            PermissionError(errno.EACCES, "Permission denied"),  # a FUSE or NFS file can
            "File 'sub/x.md' in the bundle cannot be read (permission denied). Fix its "
            "permissions, or add it to .gitignore.",
            {"path": "sub/x.md", "reason": "permission_denied"},
        ),
    ],
)
def test_a_file_that_opens_but_fails_while_read(
    make_bundle: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
    error: OSError,
    message: str,
    details: dict[str, str],
) -> None:
    bundle = make_bundle(FILES)
    failing = _FailingReads("x.md", error)
    backends.swap_os(monkeypatch, failing)
    err = capture_fails(bundle)
    assert failing.fds, "x.md was never opened"
    assert (err.code, err.message, err.details) == (
        "bundle_invalid",
        message,
        details,
    )


def test_only_the_first_16_mib_of_a_gitignore_apply(
    make_bundle: Callable[..., Path],
) -> None:
    """A .gitignore is read up to 16 MiB (docs/decisions.md): lines past it are not read."""
    cap_bytes = 16 * 1024 * 1024
    comment = b"#" * (cap_bytes - len(b"early.md\n") - 1) + b"\n"
    bundle = make_bundle(
        {
            ".gitignore": b"early.md\n" + comment + b"late.md\n",
            "a.md": "# A\nalpha\n",
            "early.md": "# Early\nalpha\n",
            "late.md": "# Late\nalpha\n",
        }
    )
    assert len(b"early.md\n" + comment) == cap_bytes
    assert [f.path for f in capture(bundle, Settings()).files] == ["a.md", "late.md"]


# -- unsaved editor text and the disk's revision ------------------------------------------------


def test_after_unsaved_text_the_disk_keeps_its_own_revision(
    make_bundle: Callable[..., Path],
) -> None:
    """A capture with the editor's unsaved text describes that text; the stat index it
    leaves describes the disk (what a later capture of the unchanged disk reuses)."""
    bundle = make_bundle({"a.md": "# A\nalpha\n", "b.md": "# B\nbeta\n"})
    disk = capture(bundle, Settings())
    edited = capture(bundle, Settings(), known=disk.known, overlay={"a.md": b"# A\nalpha!!\n"})
    assert edited.revision != disk.revision
    assert [f.unsaved for f in edited.files] == [True, False]
    assert edited.known is not None and edited.known.revision == disk.revision
    assert capture(bundle, Settings(), known=edited.known).revision == disk.revision


def test_gitignore_lines_after_an_unreadable_one_still_apply(
    make_bundle: Callable[..., Path],
) -> None:
    """git skips a pattern it cannot read and goes on with the next lines."""
    bundle = make_bundle(
        {
            ".gitignore": b"[z-a]\nignored.md\n\xff.md\ndrafts/\n",
            "a.md": "# A\nalpha\n",
            "ignored.md": "# Ignored\nalpha\n",
            "drafts/d.md": "# Draft\nalpha\n",
        }
    )
    assert [f.path for f in capture(bundle, Settings()).files] == ["a.md"]


# -- files read again after the capture (a warm cache, a late read) ------------------------------

NESTED = {
    "v/d.md": "# D\nalpha\n",
    "w.md": "# W\nalpha\n",
    "x/y/a.md": "# A\nalpha\n",
    "x/y/b.md": "# B\nalpha\n",
    "x/z/c.md": "# C\nalpha\n",
    "x/z/q/e.md": "# E\nalpha\n",
    "zz.md": "# Z\nalpha\n",
}


@pytest.fixture
def aged(monkeypatch: pytest.MonkeyPatch, make_bundle: Callable[..., Path]) -> Path:
    """NESTED, old enough for its stat fingerprints to be trusted (a short racy window)."""
    import time

    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)
    root = make_bundle(NESTED)
    time.sleep(0.06)
    return root


def test_a_warm_cache_reads_each_hit_once_whatever_its_folder(
    aged: Path, tmp_path: Path, file_reads: list[str]
) -> None:
    """A new engine on a warm cache reads only the files it cites, each once, folder after
    folder in path order (docs/cli.md "Repeated calls are fast")."""
    cache = tmp_path / "cache"
    first = Engine(cache=cache).search(Call(aged, Settings()), {"query": "alpha"})
    assert first["total"] == len(NESTED)
    file_reads.clear()
    later = Engine(cache=cache, hold_bytes=0).search(Call(aged, Settings()), {"query": "alpha"})
    assert later == first
    assert sorted(file_reads) == sorted(NESTED)  # each once: no read failed and came again


def test_a_folder_refused_after_the_capture_names_the_file(
    aged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = capture(aged, Settings())
    again = capture(aged, Settings(), known=disk.known)
    (late,) = [f for f in again.files if f.path == "x/z/c.md"]
    assert late.data is None  # its bytes were not read: a stage must read them
    refuse(monkeypatch, "z", PermissionError(errno.EACCES, "Permission denied"))
    with cap.Fetcher(again) as fetch, pytest.raises(CitelineError) as err:
        fetch(late)
    assert err.value.code == "bundle_invalid"
    assert err.value.message == (
        "File 'x/z/c.md' in the bundle cannot be read (permission denied). Fix its "
        "permissions, or add it to .gitignore."
    )
    assert err.value.details == {"path": "x/z/c.md", "reason": "permission_denied"}


def test_a_bundle_gone_after_the_capture_is_named(aged: Path) -> None:
    import shutil

    disk = capture(aged, Settings())
    again = capture(aged, Settings(), known=disk.known)
    shutil.rmtree(aged)
    with cap.Fetcher(again) as fetch, pytest.raises(CitelineError) as err:
        fetch(again.files[0])
    # the error a capture would give now (SPEC §2), as the walk's own opening of the root
    assert err.value.code == "bundle_not_found"
    assert err.value.message == (
        f"Bundle {str(aged)!r} does not exist. Give the path of a folder of Markdown files."
    )
    assert err.value.details == {"bundle": str(aged)}


def test_a_late_read_of_a_file_gone_resized_or_rewritten_names_it(aged: Path) -> None:
    """A stage that reads a file after the capture gets the recorded bytes or Changed
    naming the file (the request then captures again, reading that file)."""
    disk = capture(aged, Settings())
    again = capture(aged, Settings(), known=disk.known)
    files = {f.path: f for f in again.files}
    assert all(f.data is None for f in files.values())
    (aged / "w.md").unlink()  # gone
    (aged / "zz.md").write_text("# Z\nalpha beta\n", encoding="utf-8")  # another size
    (aged / "x/y/a.md").write_text("# A\nomega\n", encoding="utf-8")  # same size
    with cap.Fetcher(again) as fetch:
        assert fetch(files["v/d.md"]) == NESTED["v/d.md"].encode()
        for path in ("w.md", "x/y/a.md", "zz.md"):
            with pytest.raises(cap.Changed) as err:
                fetch(files[path])
            assert err.value.path == path
        assert fetch(files["x/y/b.md"]) == NESTED["x/y/b.md"].encode()


@pytest.mark.parametrize("name", ["docs ", "NOTES X"])
def test_a_late_read_opens_a_bundle_whose_name_ends_oddly(
    monkeypatch: pytest.MonkeyPatch, make_bundle: Callable[..., Path], name: str
) -> None:
    """The bundle's own name, trailing space or letter included, is where files are read."""
    import time

    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)
    root = make_bundle(NESTED, name=name)
    assert str(root).endswith(name)
    time.sleep(0.06)
    again = capture(root, Settings(), known=capture(root, Settings()).known)
    late = again.files[-1]
    assert late.data is None
    with cap.Fetcher(again) as fetch:
        assert fetch(late) == (root / late.path).read_bytes()


def test_the_walk_tells_on_read_of_each_file_it_reads(aged: Path) -> None:
    """capture's on_read hears of every file the walk reads, with the bytes and SHA-256 its
    record gets (the analysis starts on them before the walk ends), and of no file reused."""
    heard: list[tuple[str, str, bytes]] = []

    def on_read(path: str, sha256: str, data: bytes) -> None:
        heard.append((path, sha256, data))

    disk = capture(aged, Settings(), on_read=on_read)
    assert sorted(heard) == sorted((f.path, f.sha256, f.data) for f in disk.files)
    assert disk.read == len(NESTED)
    assert len(heard) == len(NESTED)
    heard.clear()
    (aged / "w.md").write_text("# W\nalpha beta\n", encoding="utf-8")
    again = capture(aged, Settings(), known=disk.known, on_read=on_read)
    (changed,) = [f for f in again.files if f.path == "w.md"]
    assert heard == [("w.md", changed.sha256, b"# W\nalpha beta\n")]


class _Vanished:
    """A directory entry whose file is gone by the time it is stat'ed."""

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self.name = entry.name

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.name)


def test_a_file_gone_between_listing_and_stat_is_left_out_alone(
    aged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the vanished file is missing: the walk goes on with the rest of its folder."""
    known = capture(aged, Settings()).known

    def wrap(real: Any) -> Any:
        def listing(handle: Any) -> Any:
            for name, is_folder, entry in sorted(real(handle), key=lambda e: e[0]):
                yield name, is_folder, (_Vanished(entry) if name == "a.md" else entry)

        return listing

    backends.hook(monkeypatch, "entries", wrap)
    again = capture(aged, Settings(), known=known)
    assert [f.path for f in again.files] == sorted(set(NESTED) - {"x/y/a.md"})


@pytest.mark.parametrize(("folder", "shown"), [("x/z", "x/z"), ("NOTES X", "NOTES X"), ("", ".")])
def test_a_folder_that_opens_but_cannot_be_listed(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, folder: str, shown: str
) -> None:
    bundle = make_bundle({"a.md": "# A\n", "x/z/c.md": "# C\n", "NOTES X/n.md": "# N\n"})
    refused = os.path.realpath(bundle / folder)

    def wrap(real: Any) -> Any:
        def listing(handle: Any) -> Any:
            if backends.folder_path(handle) == refused:
                raise PermissionError(errno.EACCES, "Permission denied")
            return real(handle)

        return listing

    backends.hook(monkeypatch, "entries", wrap)
    assert_folder_refused(capture_fails(bundle), shown)


def test_a_gitignore_applies_below_its_folder_only(make_bundle: Callable[..., Path]) -> None:
    """The walk leaves a folder's .gitignore behind with the folder: siblings walked after
    it, and the folders above, are not ignored by it."""
    bundle = make_bundle(
        {
            "a/.gitignore": "x.md\n",
            "a/x.md": "# ignored\n",
            "a/deeper/x.md": "# ignored too\n",
            "b/x.md": "# kept\n",
            "b/c/x.md": "# kept\n",
            "x.md": "# kept\n",
        }
    )
    assert [f.path for f in capture(bundle, Settings()).files] == ["b/c/x.md", "b/x.md", "x.md"]


def test_unsaved_text_counts_when_the_disk_is_unchanged(aged: Path) -> None:
    """The capture that reuses its last snapshot (nothing changed on disk) still uses the
    editor's unsaved text."""
    disk = capture(aged, Settings())
    again = capture(aged, Settings(), known=disk.known)
    # Nothing read, and the stat index handed back as it was (not rebuilt).
    assert (again.read, again.revision, again.known) == (0, disk.revision, disk.known)
    assert again.known is disk.known
    edited = capture(aged, Settings(), known=disk.known, overlay={"w.md": b"# W\nomega\n"})
    (w,) = [f for f in edited.files if f.path == "w.md"]
    assert (w.data, w.unsaved) == (b"# W\nomega\n", True)
    assert edited.revision != disk.revision
    # The disk is as it was: its stat index and revision are handed on, not rebuilt.
    assert edited.known is not None and edited.known.files is disk.known.files
    assert edited.known.revision == disk.revision
    # The next capture of the disk alone (nothing read) describes the disk again.
    later = capture(aged, Settings(), known=edited.known)
    assert (later.read, later.revision) == (0, disk.revision)
    assert [f.unsaved for f in later.files] == [False] * len(NESTED)


class _CancelAfter:
    """A cancel token that is cancelled from its n-th check on."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.checks = 0

    def check(self) -> None:
        self.checks += 1
        if self.checks >= self.n:
            raise CitelineError("cancelled", "Request cancelled.")


def test_a_cancel_during_the_walk_stops_it(aged: Path, file_reads: list[str]) -> None:
    token = _CancelAfter(3)
    err = capture_fails(aged, cancel=token)  # type: ignore[arg-type]
    assert err.code == "cancelled"
    assert token.checks == 3
    assert len(file_reads) < len(NESTED)  # the walk stopped before reading everything


def test_unsaved_text_counts_under_new_settings(aged: Path) -> None:
    """Under settings other than the stat index's, the records are rebuilt from it without
    reading; the editor's unsaved text still counts."""
    disk = capture(aged, Settings())
    settings = Settings(limits=Limits(max_files=100))
    again = capture(aged, settings, known=disk.known)
    assert (again.read, again.revision) == (0, disk.revision)
    assert again.known is not disk.known and again.known is not None
    assert again.known.files is disk.known.files  # the same states, not a copy
    assert (again.known.paths_max, again.known.sizes) == (disk.known.paths_max, disk.known.sizes)
    assert isinstance(again.files, cap.Records)  # records made when asked for, not all at once
    # ... and the next capture under these settings hands that stat index back as it is.
    assert capture(aged, settings, known=again.known).known is again.known
    edited = capture(aged, settings, known=disk.known, overlay={"w.md": b"# W\nomega\n"})
    (w,) = [f for f in edited.files if f.path == "w.md"]
    assert (w.data, w.unsaved) == (b"# W\nomega\n", True)


def test_a_gitignore_line_is_one_pattern_spaces_and_all(make_bundle: Callable[..., Path]) -> None:
    bundle = make_bundle(
        {
            ".gitignore": "my notes.md\n",
            "my notes.md": "# ignored\n",
            "notes.md": "# kept\n",
            "my": "not markdown\n",
        }
    )
    assert [f.path for f in capture(bundle, Settings()).files] == ["notes.md"]


def test_links_to_markdown_files_do_not_count_as_files(
    make_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    """A link is not captured, so it does not count against max_files either."""
    bundle = make_bundle({"a.md": "# A\n", "b.md": "# B\n"})
    os.symlink(bundle / "a.md", bundle / "link.md")
    os.symlink(bundle / "b.md", bundle / "z-link.md")
    snap = capture(bundle, Settings(limits=Limits(max_files=2)))
    assert [f.path for f in snap.files] == ["a.md", "b.md"]


class _Entry:
    """A directory entry whose type can no longer be read (the file went meanwhile)."""

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self.name = entry.name

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.name)

    is_file = is_dir


class _Listing:
    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries

    def __enter__(self) -> list[Any]:
        return self.entries

    def __exit__(self, *_: object) -> None:
        pass


def test_an_entry_gone_while_its_folder_is_listed_leaves_the_rest(
    make_bundle: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = make_bundle({"a.md": "# A\n", "b.md": "# B\n", "c.md": "# C\n"})

    class Os(_Os):
        def scandir(self, fd: Any) -> _Listing:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            return _Listing([_Entry(e) if e.name == "a.md" else e for e in entries])

    backends.swap_os(monkeypatch, Os("none", OSError()))
    assert [f.path for f in capture(bundle, Settings()).files] == ["b.md", "c.md"]


def test_capture_progress_every_256_files_and_at_the_end(
    make_bundle: Callable[..., Path],
) -> None:
    bundle = make_bundle({f"f{i:03}.md": "# F\n" for i in range(600)})
    told: list[tuple[str, int, int]] = []
    capture(bundle, Settings(), progress=lambda *args: told.append(args))
    assert told == [("capture", 256, 600), ("capture", 512, 600), ("capture", 600, 600)]


@pytest.mark.parametrize("name", ["docs ", "NOTES X"])
def test_files_read_in_path_order_after_the_walk_come_from_the_bundle(
    make_bundle: Callable[..., Path], name: str
) -> None:
    """Past max_total_bytes the walk stops reading; files before the limit in path order are
    then read from the bundle, whose own name may end in a space or a letter."""
    bundle = make_bundle(
        {"a.md": "# A\nalpha\n", "b/c.md": "# C", "c.md": "# C\nalpha\n"}, name=name
    )
    assert str(bundle).endswith(name)
    # The walk reads a.md and c.md (the bundle's own folder first), then stops: b/c.md is
    # read in path order, between them, before c.md takes the total over.
    err = capture_fails(bundle, Settings(limits=Limits(max_total_bytes=15)))
    assert err.details["limit"] == "max_total_bytes"
    assert err.details["value"] == 10 + 3 + 10


def test_unsaved_text_over_max_file_bytes_reports_its_own_size(aged: Path) -> None:
    """The value is the unsaved text's size, not the (bigger) file's on disk."""
    (aged / "w.md").write_bytes(b"# W\n" + b"alpha " * 20)  # 124 bytes on disk
    unsaved = b"# W\n" + b"alpha " * 5  # 34 bytes in the editor
    err = capture_fails(aged, Settings(limits=Limits(max_file_bytes=30)), overlay={"w.md": unsaved})
    details = err.details
    assert (details["limit"], details["path"], details["value"]) == ("max_file_bytes", "w.md", 34)


def test_a_bundle_path_holding_nul_cannot_exist() -> None:
    with pytest.raises(CitelineError) as err:
        cap.check_bundle("docs\x00/notes")
    assert (err.value.code, err.value.message, err.value.details) == (
        "bundle_not_found",
        "Bundle 'docs\\x00/notes' cannot exist: it holds a NUL character.",
        {"bundle": "docs\x00/notes"},  # as given (JSON writes it \u0000)
    )


def test_the_disk_after_unsaved_text_is_checked_against_its_own_sizes(aged: Path) -> None:
    """Unsaved text smaller than its file on disk: the next capture of the disk alone still
    finds the file over max_file_bytes (the maxima kept are the disk's, not the editor's)."""
    import time

    (aged / "w.md").write_bytes(b"# W\n" + b"alpha " * 20)  # 124 bytes on disk
    time.sleep(0.06)  # past the (shortened) racy window: its stat can vouch for it
    disk = capture(aged, Settings())
    edited = capture(aged, Settings(), known=disk.known, overlay={"w.md": b"# W\nalpha\n"})
    err = capture_fails(aged, Settings(limits=Limits(max_file_bytes=100)), known=edited.known)
    details = err.details
    assert (details["limit"], details["path"], details["value"]) == ("max_file_bytes", "w.md", 124)


def test_a_bundle_path_that_cannot_be_examined(tmp_path: Path) -> None:
    """lstat fails for another reason than absence: a file used as a folder, a name longer
    than the file system allows."""
    (tmp_path / "notes.md").write_text("# N\n", encoding="utf-8")
    under_a_file = str(tmp_path / "notes.md" / "docs")
    too_long = str(tmp_path / ("d" * 300))
    for path, why in ((under_a_file, "Not a directory"), (too_long, "File name too long")):
        with pytest.raises(CitelineError) as err:
            cap.check_bundle(path)
        assert (err.value.code, err.value.message, err.value.details) == (
            "bundle_invalid",
            f"Bundle {path!r} cannot be examined: {why}.",
            {"bundle": path},
        )


def test_a_bundle_that_is_a_link_or_a_file_is_named_in_details(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "notes.md").write_text("# N\n", encoding="utf-8")
    os.symlink(tmp_path / "real", tmp_path / "link")
    for name, reason in (
        ("link", "symlink"),
        ("link/", "symlink"),
        ("notes.md", "not_a_directory"),
    ):
        path = str(tmp_path / name) + ("/" if name.endswith("/") else "")
        with pytest.raises(CitelineError) as err:
            cap.check_bundle(path)
        assert (err.value.code, err.value.details) == (
            "bundle_invalid",
            {"bundle": path, "reason": reason},
        )
