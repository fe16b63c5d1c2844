"""The warm process: answers command-line calls from scripts and agents with engines it keeps.

A new process per call pays the interpreter's start-up and citeline's imports every time,
and loads the index from the cache. One warm process per cache folder, started by the first
call (cli/launch.py), answers the next calls with the engines of the last bundles it
searched: each call still captures its own snapshot (SPEC §2), so an answer is the one a new
process would give, byte for byte (tests/cli/test_daemon.py). After a hybrid or semantic
answer it embeds the rest of that bundle in the background (`citeline status` shows it).

It listens on a socket in a folder only its user may enter (launch.runtime_folder), bound
through the folder's descriptor once checked, and answers only that user (peer credentials).
Each connection has a thread of its own: its request must arrive whole within REQUEST_SECONDS
and its answer be read within WRITE_SECONDS; the calls run one at a time (a call sets the
process's working folder, environment and standard streams), and one that would wait more
than BUSY_SECONDS is answered in its own process. A cache folder no longer the user's only
(checked at every call: engine/store/owned.py) ends it; so do ten idle minutes, a removed
socket or cache folder, and a call from other code (it takes its socket and lock with it).
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # no Unix sockets, no peer credentials: launch.usable()
    raise ImportError("citeline has no warm process on Windows")

import argparse
import contextlib
import fcntl
import io
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from citeline.engine import Engine, Settings

from .launch import (
    COMMANDS,
    ENVIRONMENT,
    GO,
    MAGIC,
    At,
    cache_key,
    code_fingerprint,
    context,
    folder_missing,
    open_private,
    peer_uid,
    runtime_folder,
    socket_name,
)

IDLE_SECONDS = 600.0  # CITELINE_DAEMON_IDLE overrides
TICK = 2.0  # how often an idle process checks that its socket and folder are still there
KEPT = 4  # engines kept: bundles × settings
LOCK_WAIT = 5.0  # how long a new process waits for a leaving one to let go of the lock
MAX_REQUEST = 1 << 24
REQUEST_SECONDS = 5.0  # a request arrives whole within this, or its connection is closed
WRITE_SECONDS = 30.0  # an answer is read within this, or its connection is closed
BUSY_SECONDS = 2.0  # a call waits this long for the one running, then is answered here
MOST_CALLS = 32  # connections served at once; more are told "busy" at once


class KeptEngines:
    """The engines of the last bundles and settings asked for, each as a new process would
    make it except that it outlives the call (its stat index and index stay in memory)."""

    def __init__(self) -> None:
        self._engines: OrderedDict[tuple[str, Settings, bool], Engine] = OrderedDict()

    def open(self, bundle: str, settings: Settings, args: argparse.Namespace) -> Engine:
        from citeline.engine import Engine
        from citeline.engine.reuse import bundle_key

        key = (bundle_key(bundle), settings, bool(args.reread))
        engine = self._engines.pop(key, None)
        if engine is None:
            # The calls' own cache folder (this process has their environment); no bytes
            # held: a call's answer is printed whole, never asked again.
            engine = Engine.long_lived(settings, cache=True, reread=args.reread, hold_bytes=0)
        self._engines[key] = engine
        while len(self._engines) > KEPT:
            _, old = self._engines.popitem(last=False)
            old.close(wait=True)
        return engine

    def kept(self) -> list[tuple[str, Engine]]:
        """(bundle, engine) of each engine kept (for `citeline status`, from another thread)."""
        return [(key[0], engine) for key, engine in list(self._engines.items())]

    def done(self, engine: Engine) -> None:
        # Worker processes are started again by the next cold build; idle, they only hold
        # memory.
        engine.workers.close(wait=True)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close(wait=True)
        self._engines.clear()


def read_request(conn: socket.socket, deadline: float | None = None) -> bytes:
    """The whole request (the caller then shuts its side), by `deadline` (monotonic)."""
    chunks = []
    size = 0
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            conn.settimeout(left)
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    return b"".join(chunks)


def send(conn: socket.socket, data: bytes) -> None:
    """All of `data` within WRITE_SECONDS (the whole write: Python's timeout of sendall)."""
    conn.settimeout(WRITE_SECONDS)
    conn.sendall(data)


def cache_refusal() -> str | None:
    """Why the calls' cache folder is not the user's only any more (None: it is, or absent)."""
    from citeline.engine.store.store import default_folder, refusal

    return refusal(default_folder())


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


def handle(
    conn: socket.socket,
    fingerprint: bytes,
    key: bytes,
    engines: KeptEngines,
    turn: threading.Lock | None = None,
    own_context: bytes | None = None,
) -> bool:
    """Answer one call; False when this process should leave (it runs other code, or its
    cache folder is no longer the user's only). `turn` is held while the call runs (one at a
    time); `own_context`, this process's launch.context()."""
    if peer_uid(conn) != os.geteuid():
        return True  # not this user's: closed without a word
    fields = read_request(conn, time.monotonic() + REQUEST_SECONDS).split(b"\0")
    if len(fields) < 9 or fields[0] != MAGIC or fields[-1] != b"":
        send(conn, b"no protocol\n")
        return True
    if fields[1] != fingerprint:
        send(conn, b"no stale\n")
        return False
    if fields[2] != key:
        send(conn, b"no other\n")  # another cache folder whose socket name is the same
        return True
    if fields[3] != (context() if own_context is None else own_context):
        send(conn, b"no context\n")  # another locale or module path: answered there
        return True
    cwd, encoding, count, *rest = fields[4:-1]
    if not count.isdigit() or int(count) > min(len(rest), len(ENVIRONMENT)):
        send(conn, b"no protocol\n")
        return True
    pairs = (os.fsdecode(f).partition("=") for f in rest[: int(count)])
    env = {name: value for name, _, value in pairs if name in ENVIRONMENT}
    argv = [os.fsdecode(w) for w in rest[int(count) :]]
    if not argv or argv[0] not in (*COMMANDS, "status"):
        send(conn, b"no command\n")  # `lsp` or `mcp` would serve this process's stdio
        return True
    if argv[0] == "status":  # only reads what the engines report: not in the calls' turn
        from .cli import status_reply

        send(conn, GO + status_reply(argv, engines))
        return True
    if cache_refusal() is not None:
        send(conn, b"no cache\n")  # answered there, with the warning; this process leaves
        return False
    turn = turn or threading.Lock()
    if not turn.acquire(timeout=BUSY_SECONDS):
        send(conn, b"no busy\n")
        return True
    try:
        try:
            os.chdir(cwd)
        except OSError:
            send(conn, b"no cwd\n")
            return True
        send(conn, GO)  # fails when the caller has left: nothing is run for it
        reply = run_call(argv, encoding.decode("ascii", "replace"), env, engines)
    finally:
        turn.release()
    with contextlib.suppress(OSError):  # the caller left (Ctrl-C) or does not read: done
        send(conn, reply)
    return True


class Calls:
    """The connections served, each in a thread of its own: when last used, whether to leave."""

    def __init__(self, fingerprint: bytes, key: bytes, engines: KeptEngines) -> None:
        self.fingerprint = fingerprint
        self.key = key
        self.engines = engines
        self.context = context()
        self.turn = threading.Lock()
        self.leave = threading.Event()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._last = time.monotonic()

    def serve(self, conn: socket.socket) -> None:
        with self._lock:
            full = len(self._threads) >= MOST_CALLS
            if not full:
                thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
                self._threads.add(thread)
        if full:
            with conn, contextlib.suppress(OSError):
                conn.setblocking(False)  # never waits: a full buffer means no word
                conn.send(b"no busy\n")
            return
        thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                if not handle(
                    conn, self.fingerprint, self.key, self.engines, self.turn, self.context
                ):
                    self.leave.set()
        except (OSError, ValueError):
            pass  # a caller that left, stalled or sent too much: the others go on
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())
                self._last = time.monotonic()

    def idle(self) -> float:
        """Seconds since the last call ended (0 while one is served)."""
        with self._lock:
            return 0.0 if self._threads else time.monotonic() - self._last

    def finish(self) -> None:
        """Wait (boundedly) for the calls still served, then for the one running."""
        with self._lock:
            threads = list(self._threads)
        deadline = time.monotonic() + REQUEST_SECONDS + WRITE_SECONDS
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0))
        if self.turn.acquire(timeout=max(deadline - time.monotonic(), 0.1)):
            self.turn.release()


def still_ours(path: str, inode: int, key: str, folder_fd: int | None = None) -> bool:
    """Whether the socket is still the one this process made and its cache folder (if one
    was given) is still there (a removed folder ends it); `path` relative to `folder_fd`."""
    try:
        if os.stat(path, dir_fd=folder_fd, follow_symlinks=False).st_ino != inode:
            return False
    except OSError:
        return False
    return not folder_missing(key)


def take_lock(path: str, folder_fd: int | None = None) -> int | None:
    """The socket's lock, held while this process lives (one per cache folder); None when
    another keeps it. A leaving process removes the file, so a lock on a file no longer at
    `path` is taken again on the new one (else two could each hold "the" lock). `path` is
    relative to the folder `folder_fd` when one is given."""
    deadline = time.monotonic() + LOCK_WAIT
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        fd = os.open(path, flags, 0o600, dir_fd=folder_fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
            continue
        try:
            if os.stat(path, dir_fd=folder_fd).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # removed by the process that left: take the new file's


def idle_seconds() -> float:
    try:
        return max(0.1, float(os.environ.get("CITELINE_DAEMON_IDLE", IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def make_private(folder: str) -> int | None:
    """The sockets' folder, made if need be, as a descriptor once checked; None when not
    this user's only (someone else's, open to others, a link)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    fd, _ = open_private(folder)
    return fd


def serve() -> int:
    """Answer calls until idle, replaced or told of other code; the cache folder and the
    socket's folder come from the environment, as the calls' own do."""
    fingerprint = code_fingerprint()  # before the code it names is imported
    key = cache_key()
    if folder_missing(key):
        return 0
    if cache_refusal() is not None:
        return 1  # the calls answer themselves, without a cache: nothing to keep warm
    try:
        folder_fd = make_private(runtime_folder())
    except OSError:
        return 1
    if folder_fd is None:
        return 1  # someone else's folder, or open to others: never used
    try:
        return _serve(folder_fd, fingerprint, key)
    finally:
        os.close(folder_fd)


def _serve(folder_fd: int, fingerprint: bytes, key: str) -> int:
    name = socket_name(key)
    lock_name = name[: -len(".sock")] + ".lock"
    try:
        lock = take_lock(lock_name, folder_fd)
    except OSError:
        return 1
    if lock is None:
        return 0  # another warm process answers for this cache
    # What every call runs, imported before the first one holds the turn (calls that
    # arrive meanwhile would wait for it).
    import citeline.cli.cli
    import citeline.engine.core  # noqa: F401

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    engines = KeptEngines()
    calls = Calls(fingerprint, os.fsencode(key), engines)
    inode = -1
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder_fd)  # left by a process that was killed: ours
        old_mask = os.umask(0o177)
        try:
            with At(folder_fd, runtime_folder(), name) as address:
                listener.bind(address)
        finally:
            os.umask(old_mask)
        inode = os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_ino
        listener.listen(16)
        listener.settimeout(TICK)
        idle = idle_seconds()
        while not calls.leave.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if calls.idle() > idle or not still_ours(name, inode, key, folder_fd):
                    return 0
                continue
            calls.serve(conn)
        return 0
    finally:
        listener.close()
        if still_ours(name, inode, "default:", folder_fd):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder_fd)
        calls.finish()
        engines.close()
        with contextlib.suppress(OSError):
            os.unlink(lock_name, dir_fd=folder_fd)  # still held: whoever opened it takes it again
        os.close(lock)


def main() -> int:
    return serve()


if __name__ == "__main__":
    sys.exit(main())
