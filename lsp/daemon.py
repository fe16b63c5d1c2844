"""The warm process: answers command-line calls from scripts and agents with engines it keeps.

A new process per call pays the interpreter's start-up and citeline's imports every time
(on a small folder most of a call), and loads the index from the cache. One warm process
per cache folder, started by the first call (lsp/launch.py), answers the next calls with
the engines of the last bundles it searched: each call still captures its own snapshot
(SPEC §2: it stats every file and reads what it cannot prove unchanged), so an answer is
the one a new process would give, byte for byte (tests/cli/test_daemon.py).

It listens on a socket in a folder only its user may enter (launch.runtime_folder), answers
only that user, one call at a time, and leaves after ten idle minutes, when its socket or
its cache folder is removed, or when a call comes from other code (an upgraded or edited
citeline), taking its socket and lock with it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import os
import socket
import struct
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from .launch import (
    COMMANDS,
    ENVIRONMENT,
    MAGIC,
    address,
    cache_key,
    code_fingerprint,
    folder_missing,
    private,
    runtime_folder,
    socket_name,
)

IDLE_SECONDS = 600.0  # CITELINE_DAEMON_IDLE overrides
TICK = 2.0  # how often an idle process checks that its socket and folder are still there
KEPT = 4  # engines kept: bundles × settings
LOCK_WAIT = 5.0  # how long a new process waits for a leaving one to let go of the lock
MAX_REQUEST = 1 << 24


class KeptEngines:
    """The engines of the last bundles and settings asked for, each as a new process would
    make it except that it outlives the call (its stat index and index stay in memory)."""

    def __init__(self) -> None:
        self._engines: OrderedDict[tuple[str, Any, bool], Any] = OrderedDict()

    def open(self, bundle: str, settings: Any, args: argparse.Namespace) -> Any:
        from citeline.engine import Engine
        from citeline.engine.parallel import default_workers
        from citeline.engine.reuse import bundle_key

        key = (bundle_key(bundle), settings, bool(args.reread))
        engine = self._engines.pop(key, None)
        if engine is None:
            engine = Engine(
                settings,
                workers=default_workers(),
                cache=True,  # the calls' own folder: this process has their environment
                reread=args.reread,
                hold_bytes=0,
            )
        self._engines[key] = engine
        while len(self._engines) > KEPT:
            _, old = self._engines.popitem(last=False)
            old.close(wait=True)
        return engine

    def done(self, engine: Any) -> None:
        # Worker processes are started again by the next cold build; idle, they only hold
        # memory.
        engine.workers.close(wait=True)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close(wait=True)
        self._engines.clear()


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def read_request(conn: socket.socket) -> bytes:
    chunks = []
    size = 0
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    return b"".join(chunks)


def exit_code(leave: SystemExit) -> int:
    """The status a process leaving with `leave` has: its code, 0 for None, else 1."""
    return leave.code if isinstance(leave.code, int) else (0 if leave.code is None else 1)


@contextlib.contextmanager
def environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    """These variables set (None: unset) for the length of a call, then put back."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        _put(changes)
        yield
    finally:
        _put(saved)


def _put(values: Mapping[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def run_call(
    argv: list[str], err_encoding: str, env: dict[str, str], engines: KeptEngines
) -> bytes:
    """The call's reply: its exit code and the bytes it wrote to stdout and stderr."""
    from .cli import answer

    out, err = io.BytesIO(), io.BytesIO()
    try:
        "".encode(err_encoding)
    except LookupError:
        err_encoding = "utf-8"
    stdout = io.TextIOWrapper(out, "utf-8", "backslashreplace", write_through=True)
    stderr = io.TextIOWrapper(err, err_encoding, "backslashreplace", write_through=True)
    caller = {name: env.get(name) for name in ENVIRONMENT}  # the caller's, set or not
    with (
        environment(caller),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        try:
            code = answer(argv, engines)
        except SystemExit as leave:  # --help and --version leave through argparse
            code = exit_code(leave)
    stdout.flush()
    stderr.flush()
    return b"run %d %d %d\n" % (code, out.tell(), err.tell()) + out.getvalue() + err.getvalue()


def handle(conn: socket.socket, fingerprint: bytes, key: bytes, engines: KeptEngines) -> bool:
    """Answer one call; False when this process should leave (it runs other code)."""
    if peer_uid(conn) != os.getuid():
        return True  # not this user's: closed without a word
    fields = read_request(conn).split(b"\0")
    if len(fields) < 8 or fields[0] != MAGIC or fields[-1] != b"":
        conn.sendall(b"no protocol\n")
        return True
    if fields[1] != fingerprint:
        conn.sendall(b"no stale\n")
        return False
    if fields[2] != key:
        conn.sendall(b"no other\n")  # another cache folder whose socket name is the same
        return True
    cwd, encoding, count, *rest = fields[3:-1]
    if not count.isdigit() or int(count) > min(len(rest), len(ENVIRONMENT)):
        conn.sendall(b"no protocol\n")
        return True
    pairs = (os.fsdecode(f).partition("=") for f in rest[: int(count)])
    env = {name: value for name, _, value in pairs if name in ENVIRONMENT}
    argv = [os.fsdecode(w) for w in rest[int(count) :]]
    if not argv or argv[0] not in COMMANDS:
        conn.sendall(b"no command\n")  # `lsp` or `mcp` would serve this process's stdio
        return True
    try:
        os.chdir(cwd)
    except OSError:
        conn.sendall(b"no cwd\n")
        return True
    reply = run_call(argv, encoding.decode("ascii", "replace"), env, engines)
    with contextlib.suppress(OSError):  # the caller left (Ctrl-C): nothing to tell
        conn.sendall(reply)
    return True


def still_ours(path: str, inode: int, key: str) -> bool:
    """Whether the socket is still the one this process made, and its cache folder (when
    one was given) is still there: a removed folder (a test's, a benchmark's) ends it."""
    try:
        if os.stat(path).st_ino != inode:
            return False
    except OSError:
        return False
    return not folder_missing(key)


def take_lock(path: str) -> int | None:
    """The socket's lock, held while this process lives (so one process per cache folder);
    None when another process keeps it. The process removes the file when it leaves, so a
    lock taken on a file that is no longer the one at `path` is taken again on the new one
    (otherwise two processes could each hold "the" lock)."""
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
            continue
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # removed by the process that left: take the new file's


def idle_seconds() -> float:
    try:
        return max(0.1, float(os.environ.get("CITELINE_DAEMON_IDLE", IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def make_private(folder: str) -> bool:
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    return private(folder)


def serve() -> int:
    """Answer calls until idle, replaced or told of other code; the cache folder and the
    socket's folder come from the environment, as the calls' own do."""
    fingerprint = code_fingerprint()  # before the code it names is imported
    key = cache_key()
    if folder_missing(key):
        return 0
    folder = runtime_folder()
    try:
        if not make_private(folder):
            return 1  # someone else's folder, or open to others: never used
        name = socket_name(key)
        lock_path = os.path.join(folder, name[: -len(".sock")] + ".lock")
        lock = take_lock(lock_path)
    except OSError:
        return 1
    if lock is None:
        return 0  # another warm process answers for this cache
    path, fd = address(folder, name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    engines = KeptEngines()
    inode = -1
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # left by a process that was killed: the lock is ours
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_mask)
        inode = os.stat(path).st_ino
        listener.listen(16)
        listener.settimeout(TICK)
        idle = idle_seconds()
        last = time.monotonic()
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last > idle or not still_ours(path, inode, key):
                    return 0
                continue
            with conn:
                conn.settimeout(None)
                try:
                    if not handle(conn, fingerprint, os.fsencode(key), engines):
                        return 0
                except (OSError, ValueError):
                    pass  # a caller that left mid-request, or sent too much: the next one
            last = time.monotonic()
    finally:
        listener.close()
        if still_ours(path, inode, "default:"):
            with contextlib.suppress(OSError):
                os.unlink(path)
        if fd is not None:
            os.close(fd)
        engines.close()
        with contextlib.suppress(OSError):
            os.unlink(lock_path)  # still held: whoever opened it takes it again
        os.close(lock)


def main() -> int:
    return serve()


if __name__ == "__main__":
    sys.exit(main())
