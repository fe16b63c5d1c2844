"""The platform seam (SPEC §16, engine/base/platform.py): what it decides from the platform's
facts, with Windows' and macOS's facts emulated on this Linux machine — os attributes
removed or replaced, ntpath for Windows paths, a fake kernel32 for process handles."""

from __future__ import annotations

import ntpath
import os
import posixpath
import stat
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path, PureWindowsPath
from types import SimpleNamespace
from typing import Any

import pytest

from citeline.engine.base import platform
from citeline.engine.base.platform import (
    IO_REPARSE_TAG_CLOUD,
    IO_REPARSE_TAG_MOUNT_POINT,
    IO_REPARSE_TAG_SYMLINK,
    VolumeRules,
    detect,
    is_link,
    is_sharing_violation,
    long_path,
    strip_trailing_separators,
)
from citeline.engine.capture import final_paths

IO_REPARSE_TAG_LX_SYMLINK = 0xA000001D  # a WSL symbolic link: a name surrogate too
IO_REPARSE_TAG_DEDUP = 0x80000013  # a deduplicated file: data, not another path


# -- what is detected -------------------------------------------------------------------------


def test_this_machine_is_linux_with_the_descriptor_backend() -> None:
    here = detect({})
    assert (here.system, here.forced, here.backend) == ("linux", False, "descriptor")
    assert here.dir_fd and here.entry_ids and here.ctime_changes
    assert here.read_flags & os.O_NOFOLLOW and here.read_flags & os.O_NONBLOCK
    assert here.read_flags & os.O_CLOEXEC
    assert here.dir_flags & os.O_DIRECTORY and here.dir_flags & os.O_NOFOLLOW
    assert here.binary == 0 and not here.reparse_points
    assert here.warm_process


def test_the_forced_windows_configuration() -> None:
    forced = detect({"CITELINE_PLATFORM": " Windows "})
    assert (forced.system, forced.forced, forced.backend) == ("windows", True, "path")
    assert forced.nofollow == 0 and not forced.read_flags & os.O_NOFOLLOW  # as on Windows
    assert not forced.entry_ids and not forced.ctime_changes  # Windows' stat fingerprint
    assert forced.read_flags & os.O_NONBLOCK  # this machine kept safe from FIFOs
    assert not forced.warm_process


def test_an_unknown_forced_platform_is_refused() -> None:
    with pytest.raises(ValueError, match="CITELINE_PLATFORM"):
        detect({"CITELINE_PLATFORM": "beos"})
    assert detect({"CITELINE_PLATFORM": "linux"}) == detect({})  # this platform: nothing forced


def windows_os_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `os` looks like on Windows, as far as the seam asks."""
    for name in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_CLOEXEC"):
        monkeypatch.delattr(os, name)
    monkeypatch.setattr(os, "O_BINARY", 0x8000, raising=False)
    monkeypatch.setattr(os, "O_NOINHERIT", 0x80, raising=False)
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.setattr(os, "supports_fd", {os.stat})
    monkeypatch.setattr(platform, "_system", lambda: "windows")


def test_windows_facts_give_the_path_backend_reading_in_binary_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    windows_os_facts(monkeypatch)
    win = detect({})
    assert (win.system, win.forced, win.backend) == ("windows", False, "path")
    assert win.read_flags == os.O_RDONLY | 0x8000 | 0x80  # O_BINARY, O_NOINHERIT, no more
    assert (win.nofollow, win.nonblock, win.directory) == (0, 0, 0)
    assert not win.entry_ids and not win.ctime_changes and win.folds_case


def test_macos_facts_keep_the_descriptor_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "_system", lambda: "darwin")
    mac = detect({})
    assert mac.backend == "descriptor" and mac.ctime_changes and mac.entry_ids
    assert mac.folds_case and mac.folds_normalisation  # APFS's defaults


PRELUDE = textwrap.dedent(
    """
    import os, sys
    # Windows' os facts, patched in before citeline is imported (lsp-and-editors.md)
    for name in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_CLOEXEC"):
        delattr(os, name)
    os.supports_dir_fd = set()
    os.supports_fd = set()
    real_kill = os.kill
    def kill(pid, sig):
        if sig == 0:
            raise AssertionError("os.kill(pid, 0) is Ctrl+C on Windows")
        return real_kill(pid, sig)
    os.kill = kill
    import multiprocessing
    multiprocessing.get_all_start_methods = lambda: ["spawn"]
    from citeline.engine import Engine
    from citeline.engine.index import parallel
    from citeline.engine.capture import files
    from citeline.engine.store.store import Store
    print(files.BACKEND.name, parallel.start_method())
    engine = Engine(cache=sys.argv[2])
    res = engine.search(engine.call(sys.argv[1]), {"query": "alpha"})
    print(res["snapshot_revision"], [h["path"] for h in res["hits"]])
    """
)


def test_citeline_imports_and_searches_with_windows_os_facts(tmp_path: Path) -> None:
    """Nothing reads an os fact the platform lacks at import (issue 26: an AttributeError
    there became a misleading ImportError of Engine), the cache opens without O_CLOEXEC,
    and the capture takes the path backend by capability alone."""
    bundle = tmp_path / "b"
    (bundle / "sub").mkdir(parents=True)
    (bundle / "a.md").write_bytes(b"# A\r\nalpha\r\n")
    (bundle / "sub" / "b.md").write_bytes(b"# B\nalpha beta\n")
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE, str(bundle), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "CITELINE_PLATFORM"},
    )
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == "path spawn"
    from citeline.engine import Call, Engine, Settings

    expected = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert second == f"{expected['snapshot_revision']} {['a.md', 'sub/b.md']}"
    assert (tmp_path / "cache").is_dir()  # the cache was used, not turned off


# -- links and reparse points -------------------------------------------------------------------


def fake_stat(mode: int, tag: int | None = None) -> Any:
    st = SimpleNamespace(st_mode=mode)
    if tag is not None:
        st.st_reparse_tag = tag
    return st


@pytest.mark.parametrize(
    ("st", "link"),
    [
        (fake_stat(stat.S_IFDIR | 0o755, IO_REPARSE_TAG_MOUNT_POINT), True),  # a junction
        (fake_stat(stat.S_IFLNK | 0o777, IO_REPARSE_TAG_SYMLINK), True),
        (fake_stat(stat.S_IFDIR | 0o755, IO_REPARSE_TAG_SYMLINK), True),  # a folder link
        (fake_stat(stat.S_IFREG | 0o644, IO_REPARSE_TAG_LX_SYMLINK), True),
        (fake_stat(stat.S_IFREG | 0o644, IO_REPARSE_TAG_CLOUD), False),  # OneDrive: a file
        (fake_stat(stat.S_IFREG | 0o644, IO_REPARSE_TAG_DEDUP), False),
        (fake_stat(stat.S_IFREG | 0o644, 0), False),
        (fake_stat(stat.S_IFDIR | 0o755), False),  # no tag at all (POSIX)
        (fake_stat(stat.S_IFLNK | 0o777), True),
    ],
    ids=["junction", "symlink", "dir-symlink", "wsl-link", "cloud", "dedup", "plain", "dir", "lnk"],
)
def test_name_surrogates_are_links_cloud_files_are_not(st: Any, link: bool) -> None:
    assert is_link(st) is link


def test_a_sharing_violation_is_told_by_its_winerror() -> None:
    locked = PermissionError(13, "The process cannot access the file")
    locked.winerror = 32  # type: ignore[attr-defined]
    assert is_sharing_violation(locked)
    assert not is_sharing_violation(PermissionError(13, "Permission denied"))


# -- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "bare"),
    [
        ("C:\\", "C:\\"),  # not "C:": the current folder of drive C
        ("C:/", "C:/"),
        ("c:\\notes\\", "c:\\notes"),
        ("C:\\notes//", "C:\\notes"),
        ("\\\\server\\share\\", "\\\\server\\share\\"),
        ("\\\\server\\share\\docs\\\\", "\\\\server\\share\\docs"),
        ("\\\\?\\C:\\notes\\", "\\\\?\\C:\\notes"),
        ("notes\\", "notes"),
    ],
)
def test_trailing_separators_on_windows_paths(path: str, bare: str) -> None:
    assert strip_trailing_separators(path, ntpath) == bare


@pytest.mark.parametrize(("path", "bare"), [("/", "/"), ("//", "/"), ("a//", "a"), ("/a/", "/a")])
def test_trailing_separators_on_posix_paths(path: str, bare: str) -> None:
    assert strip_trailing_separators(path, posixpath) == bare


@pytest.mark.parametrize(
    ("path", "extended"),
    [
        ("C:\\Users\\me\\notes", "\\\\?\\C:\\Users\\me\\notes"),
        ("c:\\Users\\me\\..\\notes\\.", "\\\\?\\c:\\Users\\notes"),  # normalised first
        ("C:/Users/me/notes", "\\\\?\\C:\\Users\\me\\notes"),
        ("\\\\server\\share\\notes", "\\\\?\\UNC\\server\\share\\notes"),
        ("\\\\?\\C:\\already", "\\\\?\\C:\\already"),
        ("\\\\?\\UNC\\server\\share", "\\\\?\\UNC\\server\\share"),
    ],
)
def test_long_paths_on_windows(path: str, extended: str) -> None:
    assert long_path(path, ntpath) == extended
    # the same folder as pathlib's Windows paths name it
    assert PureWindowsPath(plain(extended)) == PureWindowsPath(ntpath.normpath(plain(path)))


def plain(path: str) -> str:
    """A Windows path without its extended-length prefix."""
    if path.startswith("\\\\?\\UNC\\"):
        return "\\\\" + path[len("\\\\?\\UNC\\") :]
    return path.removeprefix("\\\\?\\")


def test_long_paths_elsewhere_are_plain_absolute_paths(tmp_path: Path) -> None:
    assert long_path(str(tmp_path), posixpath) == str(tmp_path)
    assert long_path("/a/b/../c", posixpath) == "/a/c"


def test_drive_letters_compare_as_windows_compares_them() -> None:
    rules = VolumeRules(folds_case=True, folds_normalisation=False)
    pairs = [("C:\\Notes\\A.md", "c:\\notes\\a.md"), ("C:\\x", "C:\\X"), ("C:\\a", "D:\\a")]
    for one, two in pairs:
        assert (rules.key(one) == rules.key(two)) == (PureWindowsPath(one) == PureWindowsPath(two))
    assert rules.key("ß.md") != rules.key("ss.md")  # distinct names on NTFS


def test_nfd_names_compare_equal_on_a_normalising_volume() -> None:
    nfc, nfd = "café.md", unicodedata.normalize("NFD", "café.md")
    assert nfc != nfd
    mac = VolumeRules(folds_case=True, folds_normalisation=True)
    assert mac.key(nfd) == mac.key(nfc) == mac.key("CAFÉ.md")
    linux = VolumeRules(folds_case=False, folds_normalisation=False)
    assert linux.key(nfd) != linux.key(nfc)


def test_volume_rules_tested_on_the_folders_own_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "Notes" / "café"
    folder.mkdir(parents=True)
    here = platform.volume_rules(str(folder))
    assert here == VolumeRules(folds_case=False, folds_normalisation=False)  # ext4, tmpfs
    # A volume that folds case and normalisation (APFS): another spelling is the same entry.
    real = os.lstat

    def folding(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        text = unicodedata.normalize("NFC", os.fsdecode(path))
        for part in ("Notes", "café"):
            text = text.replace(part.swapcase(), part)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(platform.os, "lstat", folding)
    # Tested again, not remembered: the same folder now answers as the folding volume.
    assert platform.volume_rules(str(folder)) == VolumeRules(True, True)


def test_volume_rules_fall_back_on_the_platform_where_names_cannot_tell(tmp_path: Path) -> None:
    folder = tmp_path / "1" / "2"
    folder.mkdir(parents=True)
    # every name of tmp_path's own path is tried, so only a path of uncased names is blind
    assert platform.folds_spelling("/", str.swapcase) is None
    assert platform.volume_rules(str(folder)).folds_normalisation is False


# -- processes ------------------------------------------------------------------------------------


def test_start_method_is_forkserver_here_spawn_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    platform.start_method.cache_clear()
    try:
        assert platform.start_method() == ("spawn" if platform.PLATFORM.forced else "forkserver")
        monkeypatch.setattr(platform, "PLATFORM", detect({"CITELINE_PLATFORM": "windows"}))
        platform.start_method.cache_clear()
        assert platform.start_method() == "spawn"
        monkeypatch.setattr(platform, "_system", lambda: "darwin")  # lists forkserver too
        monkeypatch.setattr(platform, "PLATFORM", detect({}))
        platform.start_method.cache_clear()
        assert platform.start_method() == "spawn"
    finally:
        platform.start_method.cache_clear()


def test_pid_alive_here() -> None:
    assert platform.pid_alive(os.getpid())
    assert not platform.pid_alive(2**22 + 12345)  # above any pid_max
    assert not platform.pid_alive(0) and not platform.pid_alive(-1)  # groups, never "alive"
    assert not platform.pid_alive(2**70)


def test_pid_alive_forced_sends_no_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    def kill(pid: int, sig: int) -> None:
        raise AssertionError("no signal may be sent to test a process")

    monkeypatch.setattr(platform, "PLATFORM", detect({"CITELINE_PLATFORM": "windows"}))
    monkeypatch.setattr(os, "kill", kill)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        assert platform.pid_alive(child.pid)
        assert platform.pid_alive(os.getpid())
    finally:
        child.communicate(b"")
    assert not platform.pid_alive(2**22 + 12345)


class FakeKernel32:
    """kernel32's OpenProcess/WaitForSingleObject/CloseHandle for a few pids."""

    def __init__(self, alive: set[int], exited: set[int], denied: set[int]) -> None:
        self.alive, self.exited, self.denied = alive, exited, denied
        self.error = 0
        self.open: list[int] = []
        self.closed: list[int] = []

    def OpenProcess(self, access: int, inherit: bool, pid: int) -> int:
        assert access & platform.SYNCHRONIZE and not inherit
        if pid in self.denied:
            self.error = 5  # ERROR_ACCESS_DENIED
            return 0
        if pid not in self.alive | self.exited:
            self.error = 87  # ERROR_INVALID_PARAMETER: no such process
            return 0
        self.open.append(pid)
        return 1000 + pid

    def WaitForSingleObject(self, handle: int, ms: int) -> int:
        assert ms == 0
        return platform.WAIT_TIMEOUT if handle - 1000 in self.alive else 0

    def CloseHandle(self, handle: int) -> int:
        self.closed.append(handle - 1000)
        return 1

    def last_error(self) -> int:
        return self.error


def test_windows_pid_alive_by_process_handle() -> None:
    k = FakeKernel32(alive={10}, exited={11}, denied={12})
    assert platform._windows_pid_alive(10, k)
    assert not platform._windows_pid_alive(11, k)  # exited, handle still open somewhere
    assert platform._windows_pid_alive(12, k)  # another user's: it exists
    assert not platform._windows_pid_alive(13, k)
    assert not platform._windows_pid_alive(2**40, k)  # no Windows pid is that large
    assert k.open == k.closed == [10, 11]  # every handle opened is closed


def test_peer_credentials_here() -> None:
    assert platform.peer_credentials() == "SO_PEERCRED"


# -- an open file's final path (the path backend's proof, engine/capture/path_backend.py)
# ------------------


def test_an_open_file_tells_the_path_it_has_now(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    (base / "real").mkdir()
    (base / "real" / "a.md").write_text("a")
    (base / "link").symlink_to(base / "real")
    fd = os.open(base / "link" / "a.md", os.O_RDONLY)  # through a link to a folder
    try:
        assert final_paths.final_path(fd) == str(base / "real" / "a.md")  # the link resolved
        os.rename(base / "real", base / "moved")
        assert final_paths.final_path(fd) == str(base / "moved" / "a.md")  # as renamed since
    finally:
        os.close(fd)
    r, w = os.pipe()
    try:
        assert final_paths.final_path(r) is None  # "pipe:[…]": no path
    finally:
        os.close(r)
        os.close(w)
    assert detect({}).final_paths and detect({"CITELINE_PLATFORM": "windows"}).final_paths


def test_a_folders_final_path_and_identity(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    (base / "real").mkdir()
    (base / "link").symlink_to(base / "real")
    st = os.lstat(base / "real")
    here = (str(base / "real"), (st.st_dev, st.st_ino))
    assert final_paths.final_folder(str(base / "real")) == here
    for refused in (base / "link", base / "gone"):  # a link at the end is not followed
        with pytest.raises(OSError):
            final_paths.final_folder(str(refused))
    # Windows' way (by name) follows a junction at the end: the identity it gives is the
    # target's, which the caller compares with its lstat of the link (another identity)
    assert final_paths.final_folder_by_name(str(base / "real")) == here
    assert final_paths.final_folder_by_name(str(base / "link")) == here
    assert (os.lstat(base / "link").st_dev, os.lstat(base / "link").st_ino) != here[1]
    assert final_paths.final_folder_by_name(str(base / "gone")) is None


class FakeFinalPaths:
    """kernel32's GetFinalPathNameByHandleW for a few handles."""

    def __init__(self, paths: dict[int, str]) -> None:
        self.paths = paths

    def GetFinalPathNameByHandleW(self, handle: int, buffer: Any, size: int, flags: int) -> int:
        assert flags == 0  # FILE_NAME_NORMALIZED | VOLUME_NAME_DOS, as os.path.realpath asks
        path = self.paths.get(handle)
        if path is None:
            return 0  # failed (a volume that cannot tell, a handle that is no file)
        if len(path) >= size:
            return len(path) + 1  # the buffer it would need
        buffer.value = path
        return len(path)


def test_windows_final_path_by_handle() -> None:
    k = FakeFinalPaths({7: "\\\\?\\C:\\b\\a.md", 8: "\\\\?\\C:\\" + "x" * 40000})
    assert final_paths._windows_final_path(7, k) == "\\\\?\\C:\\b\\a.md"
    assert final_paths._windows_final_path(8, k) is None  # longer than any extended path
    assert final_paths._windows_final_path(9, k) is None


def test_windows_facts_tell_final_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    windows_os_facts(monkeypatch)
    monkeypatch.setattr(os.path, "isdir", lambda _: False)  # no /proc there
    assert detect({}).final_paths


def test_without_proc_linux_cannot_tell_final_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "isdir", lambda _: False)
    assert not detect({}).final_paths
