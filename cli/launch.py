"""The `citeline` command: hand a script's call to the warm process, else answer it here.

A call from a script or an agent (its output to a pipe or a file) is sent to the warm
process of its cache folder (cli/daemon.py), which keeps the engine of the last bundles it
searched in memory and answers with the same bytes and exit code this process would have
given. Without one (or when it runs other code, or cannot answer) the call is answered here
by cli/cli.py, and a warm process is started for the next call. docs/cli.md, "The warm
process", says when it is used and how to turn it off (CITELINE_DAEMON=0).

Whom it talks to: the sockets' folder must be this user's and closed to everyone else; it
is opened once, checked through its descriptor and connected through it, so that what is
checked is what is connected to whatever happens to the folder's path meanwhile; and the
process that answers must run as this user (its peer credentials), checked before a byte of
the request is sent. Anything else turns the warm process off for the call (with
CITELINE_LOG=debug, a line on stderr says why). How long it waits: a bounded time for the
warm process to take the call up ("go"), then here (docs/security.md).

This module is imported by every call, so it imports os and sys only (and time, built in):
the socket module costs more than the whole round trip (`_socket` is its C core).
"""

from __future__ import annotations

import os
import sys
import time

COMMANDS = ("search", "concepts", "lines", "verify")
OFF = ("0", "off", "no", "false")
MAGIC = b"citeline-daemon-1"
GIVEN = "dir:"  # a cache key's prefix when CITELINE_CACHE_DIR names the folder
READY = b"run"  # first word of a reply that carries an answer
GO = b"go\n"  # what the warm process says when it takes the call up
START_WAIT = 5.0  # seconds for the warm process to take a call up; then it is answered here
# What a call's output depends on beyond its arguments, working folder and stderr's encoding:
# the width argparse wraps help and usage to, and whether a bug's traceback is shown. Sent
# with each call and set for its length.
ENVIRONMENT = ("COLUMNS", "CITELINE_LOG")
# What the warm process is started with, from its first call's environment; nothing else of
# that environment is kept. The cache folder's and the sockets' folder's variables make the
# call's key and socket, so a later call with other values has a warm process of its own;
# the variables of the interpreter (its path, its locale: the encoding of file names) are
# compared with each call's (`context`), which is answered here when they differ.
KEPT = (
    "CITELINE_CACHE_DIR",
    "HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "TMPDIR",
    "CITELINE_DAEMON_IDLE",
    "PYTHONPATH",
    "PYTHONHOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)
# folders beside this one
PACKAGES = (
    "engine",
    "engine/answer",
    "engine/base",
    "engine/capture",
    "engine/contracts",
    "engine/index",
    "engine/rank",
    "engine/semantic",
    "engine/store",
    "engine/text",
    "lsp",
    "cli",
    "mcp_server",
    "fronts",
)
# "windows": Windows' portable paths (engine/base/platform.py)
FORCED_PLATFORM = "CITELINE_PLATFORM"
PROC_FD = "/proc/self/fd"
# The sockets' folder: this user's, not a link, never inherited (used only where usable()
# holds; getattr lets Windows import this module).
FOLDER_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
# macOS and the BSDs (<sys/un.h>, <sys/ucred.h>): Python names LOCAL_PEERCRED, not its level.
SOL_LOCAL = 0
XUCRED_VERSION = 0
XUCRED_SIZE = 76  # u_int cr_version, uid_t cr_uid, short cr_ngroups, gid_t cr_groups[16]


def cache_key() -> str:
    """What decides the cache folder of a call (engine/store/store.default_folder):
    CITELINE_CACHE_DIR made absolute, else the variables platformdirs reads for it."""
    folder = os.environ.get("CITELINE_CACHE_DIR")
    if folder:
        return GIVEN + os.path.abspath(folder)
    # Length-prefixed: the key travels in a NUL-separated request, and no two pairs of
    # values give the same key.
    home, xdg = (os.environ.get(k, "") for k in ("HOME", "XDG_CACHE_HOME"))
    return f"default:{len(home)}:{home}{xdg}"


def given_folder(key: str) -> str | None:
    """The cache folder a key names (CITELINE_CACHE_DIR, absolute); None for the default."""
    return key[len(GIVEN) :] if key.startswith(GIVEN) else None


def folder_missing(key: str) -> bool:
    """Whether the key names a cache folder that is not there (a call could not make it, or
    it was removed: a warm process for it would leave at once)."""
    folder = given_folder(key)
    return folder is not None and not os.path.isdir(folder)


def runtime_folder() -> str:
    """The user's folder for warm processes' sockets: XDG_RUNTIME_DIR (made for them), else
    TMPDIR, else /tmp (the first that is a folder: a session's stale XDG_RUNTIME_DIR must
    not leave every call without one), in a `citeline-UID` folder (as tmux does)."""
    if sys.platform == "win32":
        raise OSError("no warm process on Windows")  # (never asked: see usable())
    bases = (os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR"))
    base = next((b for b in bases if b and os.path.isdir(b)), "/tmp")
    return os.path.join(base, f"citeline-{os.getuid()}")


def open_private(folder: str) -> tuple[int | None, str]:
    """A descriptor of `folder` when it is a folder of this user (not a link) that no one else
    may enter, and ""; else None and why: "absent", or what is wrong with it (a folder that
    anybody else made or can enter is never used). Checked through the descriptor: a folder
    put in its place after the check is not the one held."""
    if sys.platform == "win32":
        return None, "no warm process on Windows"
    try:
        fd = os.open(folder, FOLDER_FLAGS)
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:  # a link (ELOOP), not a folder, not ours to enter
        return None, f"{folder} is not a folder of yours ({exc.strerror})"
    st = os.fstat(fd)
    why = ""
    if st.st_uid != os.geteuid():
        why = f"{folder} belongs to user {st.st_uid}"
    elif st.st_mode & 0o077:
        why = f"{folder} is open to others (mode {st.st_mode & 0o7777:o})"
    if why:
        os.close(fd)
        return None, why
    return fd, ""


def through(fd: int, folder: str, name: str) -> str:
    """The address of `name` in the folder held open as `fd`: through the descriptor
    (/proc/self/fd/N/name) where the system has one, so that the folder connected to (or
    bound in) is the one checked whatever its path leads to by then, and any folder's path
    fits AF_UNIX's 108 bytes; else the path. Binds and connects use `At`."""
    proc = f"{PROC_FD}/{fd}"
    if os.path.isdir(proc):
        return f"{proc}/{name}"
    return os.path.join(folder, name)


class At:
    """`with At(fd, folder, name) as address:` the address to bind or connect `name` in the
    folder held open as `fd`, inside the `with`.

    Linux: /proc/self/fd/N/name (see `through`). Without /proc (macOS, the BSDs): the bare
    name, this process's working folder being the held folder for the length of the `with`
    (fchdir, put back after), which keeps both promises of /proc: the folder reached is the
    one checked, and the address is short whatever the folder's path (macOS's sun_path holds
    104 bytes; its TMPDIR alone takes about 50). Where the working folder cannot be put back
    (it cannot be opened), the path, which the peer's credentials still guard."""

    def __init__(self, fd: int, folder: str, name: str) -> None:
        self.fd, self.folder, self.name = fd, folder, name
        self.back: int | None = None

    def __enter__(self) -> str:
        address = through(self.fd, self.folder, self.name)
        if address.startswith(PROC_FD + "/") or sys.platform == "win32":
            return address
        try:
            self.back = os.open(".", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return address
        os.fchdir(self.fd)
        return self.name

    def __exit__(self, *_: object) -> None:
        back, self.back = self.back, None
        if back is not None and sys.platform != "win32":
            try:
                os.fchdir(back)
            finally:
                os.close(back)


def xucred_uid(creds: bytes) -> int | None:
    """The user id in a `struct xucred` (macOS, the BSDs: u_int cr_version; uid_t cr_uid;
    ...); None unless it is of the version read here."""
    if len(creds) < 8 or int.from_bytes(creds[:4], sys.byteorder) != XUCRED_VERSION:
        return None
    return int.from_bytes(creds[4:8], sys.byteorder)


def peer_uid(sock: object) -> int | None:
    """The user id of the process at the other end of a connected Unix socket; None where
    the platform gives no means to ask (and then nothing it says is trusted). Linux:
    SO_PEERCRED (struct ucred: pid, uid, gid); macOS and the BSDs: LOCAL_PEERCRED at level
    SOL_LOCAL (struct xucred, what their getpeereid reads)."""
    import _socket

    if hasattr(_socket, "SO_PEERCRED"):
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # type: ignore[attr-defined]
        return int.from_bytes(creds[4:8], sys.byteorder)
    local = getattr(_socket, "LOCAL_PEERCRED", None)
    if local is not None:
        return xucred_uid(sock.getsockopt(SOL_LOCAL, local, XUCRED_SIZE))  # type: ignore[attr-defined]
    return None


def debug(line: str) -> None:
    """A line on stderr when CITELINE_LOG=debug."""
    if os.environ.get("CITELINE_LOG", "").strip().lower() == "debug":
        sys.stderr.write(f"citeline: {line}\n")
        sys.stderr.flush()


def socket_name(key: str) -> str:
    """One socket per cache folder and interpreter (two installations sharing a cache each
    have their own): a 64-bit FNV-1a hash of both (a clash only means the two share a
    process that answers one of them; the request carries the whole key)."""
    h = 0xCBF29CE484222325
    for byte in os.fsencode(f"{key}\0{sys.executable}"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}.sock"


def code_fingerprint() -> bytes:
    """What identifies the code that answers: the interpreter and the size and mtime of every
    file of citeline's packages. A warm process answers only a call whose fingerprint is its
    own, so an upgraded or edited citeline is never answered by the old one."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [sys.executable, sys.version]
    for package in PACKAGES:
        folder = os.path.join(top, package)
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.endswith((".py", ".json")) and entry.is_file():
                    st = entry.stat()
                    parts.append(f"{package}/{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    return os.fsencode("\n".join(parts))


def usable() -> bool:
    """Whether this platform gives what the warm process needs, tested on the capabilities
    themselves: Unix sockets and a way to ask who is at the other end (SO_PEERCRED on Linux,
    LOCAL_PEERCRED on macOS and the BSDs), and folders opened without following links.
    Windows has neither (Python has no AF_UNIX there), and so no warm process: every call is
    answered in its own process (docs/install.md says what that costs). Nor is there one
    under CITELINE_PLATFORM=windows, the tests' Windows configuration (engine/base/platform.py)."""
    if os.environ.get(FORCED_PLATFORM, "").strip().lower() == "windows":
        return False
    if sys.platform == "win32" or not all(hasattr(os, f) for f in ("O_NOFOLLOW", "O_DIRECTORY")):
        return False
    import _socket

    return hasattr(_socket, "AF_UNIX") and (
        hasattr(_socket, "SO_PEERCRED") or hasattr(_socket, "LOCAL_PEERCRED")
    )


def context() -> bytes:
    """What the interpreter was started with that a call's answer depends on and a call
    cannot change in a running process: the encoding of file names and arguments (the
    locale's, or UTF-8 mode's) and the module path. A call whose context is not the warm
    process's is answered in its own process."""
    parts = (
        sys.getfilesystemencoding(),
        sys.getfilesystemencodeerrors(),
        os.environ.get("PYTHONPATH", ""),
        os.environ.get("PYTHONHOME", ""),
    )
    return os.fsencode("\n".join(parts))


def request_bytes(key: str, argv: list[str]) -> bytes:
    """The call as NUL-separated fields (no field can hold a NUL): the protocol's name, the
    code's fingerprint, the cache key, the interpreter's context, the working folder,
    stderr's encoding, how many NAME=VALUE fields follow (the variables of ENVIRONMENT that
    are set) and those, then the arguments."""
    env = [os.fsencode(f"{k}={os.environ[k]}") for k in ENVIRONMENT if k in os.environ]
    fields = [
        MAGIC,
        code_fingerprint(),
        os.fsencode(key),
        context(),
        os.fsencode(os.getcwd()),
        (getattr(sys.stderr, "encoding", None) or "utf-8").encode("ascii", "replace"),
        b"%d" % len(env),
        *env,
        *(os.fsencode(word) for word in argv),
    ]
    return b"\0".join(fields) + b"\0"


def ask(key: str, argv: list[str]) -> tuple[int, bytes, bytes] | str:
    """The warm process's answer (exit code, stdout, stderr), or why there is none:
    "absent" (nothing listens), "stale" (it runs other code and is leaving), "unsafe" (the
    sockets' folder is not this user's only, or another user answers), "busy" (it answers
    other calls), "silent" (it did not take the call up within START_WAIT), or another word
    when it cannot answer."""
    folder = runtime_folder()
    fd, why = open_private(folder)
    if fd is None:
        if why == "absent":
            return why
        debug(f"the warm process is off: {why}")
        return "unsafe"
    try:
        return _ask(fd, folder, key, argv)
    finally:
        os.close(fd)


def _ask(fd: int, folder: str, key: str, argv: list[str]) -> tuple[int, bytes, bytes] | str:
    if sys.platform == "win32":
        return "absent"  # (never asked: see usable())
    import _socket

    try:
        request = request_bytes(key, argv)
    except OSError:
        return "unknown"  # no working folder, or citeline's files cannot be listed
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        deadline = time.monotonic() + START_WAIT
        sock.settimeout(START_WAIT)
        try:
            with At(fd, folder, socket_name(key)) as address:
                sock.connect(address)
        except TimeoutError:
            return "silent"  # its queue of calls is full
        except OSError:
            return "absent"
        uid = peer_uid(sock)
        if uid != os.geteuid():
            who = "an unknown user" if uid is None else f"user {uid}"
            debug(f"the warm process is off: its socket in {folder} is answered by {who}")
            return "unsafe"  # before a byte of the request is sent
        got = bytearray()
        try:
            sock.sendall(request)
            sock.shutdown(_socket.SHUT_WR)
        except TimeoutError:
            return "silent"
        except OSError:
            pass  # it closed first: what it said before (a refusal) is still to be read
        try:
            taken = False  # it said GO: the call runs, for as long as it would here
            while True:
                sock.settimeout(None if taken else max(deadline - time.monotonic(), 0.001))
                chunk = sock.recv(1 << 20)
                if not chunk:
                    break
                got += chunk
                taken = got.startswith(GO)
        except TimeoutError:
            return "silent"
        except OSError:
            if not got:
                return "broken"
            # Reset after what it sent: a refusal sent at once (its request unread) counts;
            # a cut answer does not (reply_of).
        return reply_of(bytes(got))
    finally:
        sock.close()


def reply_of(reply: bytes) -> tuple[int, bytes, bytes] | str:
    """`go` and a newline (the call was taken up), then `run CODE OUT ERR` and a newline,
    then the bytes; or `no REASON` and a newline. Anything else is "broken"."""
    if reply.startswith(GO):
        reply = reply[len(GO) :]
    head, _, body = reply.partition(b"\n")
    words = head.split()
    if len(words) == 2 and words[0] == b"no":
        return words[1].decode("ascii", "replace")
    if len(words) != 4 or words[0] != READY or not all(w.isdigit() for w in words[1:]):
        return "broken"
    code, out_len, err_len = (int(w) for w in words[1:])
    if len(body) != out_len + err_len:
        return "broken"  # it ended mid-answer
    return code, body[:out_len], body[out_len:]


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def start(key: str) -> None:
    """Start the warm process for this cache in the background (it leaves at once if one is
    already there, and after ten idle minutes)."""
    import contextlib
    import subprocess

    env = {name: os.environ[name] for name in KEPT if name in os.environ}
    folder = given_folder(key)
    if folder is not None:
        env["CITELINE_CACHE_DIR"] = folder  # absolute: the process works from /
    # Failing, the next call is answered in its own process, as this one was.
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "citeline.cli.daemon"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=env,
            start_new_session=True,
        )


def cache_refused(key: str) -> bool:
    """Whether the call just answered here found its cache folder not the user's only: a
    warm process would refuse it too (and leave at once), so none is started. (The store
    module is loaded when the call opened a cache; nothing is imported for this.)"""
    store = sys.modules.get("citeline.engine.store.store")
    if store is None or not store.refused:
        return False
    return (given_folder(key) or store.default_folder()) in store.refused
