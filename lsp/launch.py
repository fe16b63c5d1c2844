"""The `citeline` command: hand a script's call to the warm process, else answer it here.

A call from a script or an agent (its output to a pipe or a file) is sent to the warm
process of its cache folder (lsp/daemon.py), which keeps the engine of the last bundles it
searched in memory and answers with the same bytes and exit code this process would have
given. Without one (or when it runs other code, or cannot answer) the call is answered here
by lsp/cli.py, and a warm process is started for the next call. docs/cli.md, "The warm
process", says when it is used and how to turn it off (CITELINE_DAEMON=0).

This module is imported by every call, so it imports os and sys only: the socket module
costs more than the whole round trip (`_socket` is its C core).
"""

from __future__ import annotations

import os
import sys

COMMANDS = ("search", "concepts", "lines")
OFF = ("0", "off", "no", "false")
MAGIC = b"citeline-daemon-1"
GIVEN = "dir:"  # a cache key's prefix when CITELINE_CACHE_DIR names the folder
READY = b"run"  # first word of a reply that carries an answer
# What a call's output depends on beyond its arguments, working folder and stderr's encoding:
# the width argparse wraps help and usage to, and whether a bug's traceback is shown.
ENVIRONMENT = ("COLUMNS", "CITELINE_LOG")
# AF_UNIX paths hold 108 bytes; longer ones are reached through /proc/self/fd.
LONGEST_PATH = 100
PACKAGES = ("lsp", "engine", "engine/reuse", "engine/contracts")  # folders beside this one


def cache_key() -> str:
    """What decides the cache folder of a call (engine/reuse/store.default_folder):
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
    bases = (os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR"))
    base = next((b for b in bases if b and os.path.isdir(b)), "/tmp")
    return os.path.join(base, f"citeline-{os.getuid()}")


def private(folder: str) -> bool:
    """Whether `folder` is a folder (not a link) of this user that no one else may enter:
    one that anybody else made or can write to is never used."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    is_dir = st.st_mode & 0o170000 == 0o040000
    return is_dir and st.st_uid == os.getuid() and not st.st_mode & 0o077


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


def eligible(argv: list[str]) -> bool:
    """Whether this call may go to the warm process: a search, concepts or lines call on
    Linux with the cache on, whose output goes to pipes or files (at a terminal the output
    depends on the terminal: colour, progress, a summary line)."""
    return (
        sys.platform == "linux"
        and os.environ.get("CITELINE_DAEMON", "1").strip().lower() not in OFF
        and bool(argv)
        and argv[0] in COMMANDS
        and "--no-cache" not in argv
        and not os.isatty(1)
        and not os.isatty(2)
    )


def address(folder: str, name: str) -> tuple[str, int | None]:
    """A path to `name` in `folder` short enough for AF_UNIX, and the descriptor it goes
    through when the folder's own path is too long (to close after use)."""
    path = os.path.join(folder, name)
    if len(os.fsencode(path)) <= LONGEST_PATH:
        return path, None
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return f"/proc/self/fd/{fd}/{name}", fd


def request_bytes(key: str, argv: list[str]) -> bytes:
    """The call as NUL-separated fields (no field can hold a NUL): the protocol's name, the
    code's fingerprint, the cache key, the working folder, stderr's encoding, how many
    NAME=VALUE fields follow (the variables of ENVIRONMENT that are set) and those, then
    the arguments."""
    env = [os.fsencode(f"{k}={os.environ[k]}") for k in ENVIRONMENT if k in os.environ]
    fields = [
        MAGIC,
        code_fingerprint(),
        os.fsencode(key),
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
    sockets' folder is not this user's only), or another word when it cannot answer."""
    import _socket

    folder = runtime_folder()
    if not private(folder):
        return "absent" if not os.path.lexists(folder) else "unsafe"
    try:
        request = request_bytes(key, argv)
        path, fd = address(folder, socket_name(key))
    except OSError:
        return "unknown"  # no working folder, or citeline's files cannot be listed
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.connect(path)
        except OSError:
            return "absent"
        finally:
            if fd is not None:
                os.close(fd)
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 20):
            chunks.append(chunk)
    except OSError:
        return "broken"
    finally:
        sock.close()
    return reply_of(b"".join(chunks))


def reply_of(reply: bytes) -> tuple[int, bytes, bytes] | str:
    """`run CODE OUT ERR` and a newline, then the bytes; or `no REASON` and a newline.
    Anything else is "broken"."""
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

    env = dict(os.environ)
    folder = given_folder(key)
    if folder is not None:
        env["CITELINE_CACHE_DIR"] = folder  # absolute: the process works from /
    # Failing, the next call is answered in its own process, as this one was.
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "citeline.lsp.daemon"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=env,
            start_new_session=True,
        )


def here(argv: list[str]) -> int:
    from .cli import main as run

    return run(argv)


def main() -> int:
    from . import interrupt

    interrupt.begin_call()
    argv = sys.argv[1:]
    if not eligible(argv):
        return here(argv)
    key = cache_key()
    try:
        got = ask(key, argv)
    except KeyboardInterrupt:
        from .cli import interrupted, wants_json

        return interrupted(wants_json(argv))
    if isinstance(got, str):
        code = here(argv)
        if got in ("absent", "stale") and not folder_missing(key):
            start(key)
        return code
    code, out, err = got
    if os.environ.get("CITELINE_LOG", "").strip().lower() == "debug":
        err += b"citeline: answered by the warm process (CITELINE_DAEMON=0 turns it off)\n"
    try:
        with interrupt.held():  # a Ctrl-C stops the answer at a line's end
            for fd, data in ((1, out), (2, err)):
                for line in interrupt.lines(data):
                    if interrupt.pressed():
                        from .cli import interrupted, wants_json

                        return interrupted(wants_json(argv))
                    write_all(fd, line)
                    if fd == 1:
                        interrupt.note_written()
    except BrokenPipeError:
        return 0  # output piped into `head`: stop quietly, as the CLI does
    return code


def console() -> None:
    """The `citeline` command: one call as this whole process, Ctrl-C handled at every
    moment (lsp/interrupt.py). A server (`citeline lsp`, `citeline mcp`) ends itself."""
    from . import interrupt

    def cancelled() -> object:
        from .cli import interrupted, wants_json

        return interrupted(wants_json(sys.argv[1:]))

    # Whether the call asked for --json, read as cli.wants_json reads it, but without
    # importing the command line's module before the handler is in place.
    words = sys.argv[1:]
    words = words[: words.index("--")] if "--" in words else words
    interrupt.run(main, cancelled, "--json" in words)


if __name__ == "__main__":
    console()
