"""The language server's transport: reading framed messages from stdin until the end of
input, `exit` or the client's death, and watching the client process (LSP: initialize's
processId) so that the server never outlives it.

pygls' run_async is not used: it only accepts a header line that is exactly
`Content-Length: N`, never resynchronises after a wrong length, and turns invalid JSON into
a window/showMessage instead of an answer (lsp/stdio.FrameReader, lsp/rpc.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from citeline.engine.base.platform import pid_alive

from .stdio import FrameReader

log = logging.getLogger("citeline.lsp")

PARENT_POLL_INTERVAL = 1.0  # seconds between checks of the client process (without pidfd)


class Handler(Protocol):
    def handle_body(self, body: bytes) -> None: ...


class Watcher(Protocol):
    """What watching the client needs of the server: a background task, and what to do once
    the client is gone."""

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...

    def parent_gone(self, pid: int) -> None: ...


def process_alive(pid: int) -> bool:
    # the platform seam: never os.kill(pid, 0) on Windows, where signal 0 is CTRL_C_EVENT
    return pid_alive(pid)


async def serve(protocol: Handler, frames: FrameReader, closing: asyncio.Event) -> None:
    """Read and dispatch messages until end of input, `exit`, or `closing` is set."""
    loop = asyncio.get_running_loop()
    closed = asyncio.ensure_future(closing.wait())
    # A thread of its own: it stays blocked in read() at exit, which server.main() tolerates.
    reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="citeline-stdin")
    try:
        while True:
            frame = loop.run_in_executor(reader, frames.read_frame)
            waiting: list[asyncio.Future[Any]] = [frame, closed]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not frame.done():
                break  # closing: the read cannot be interrupted, and need not be
            try:
                body = frame.result()
            except OSError as exc:
                log.error("reading stdin failed: %s", exc)
                break
            if body is None:
                break  # end of input
            protocol.handle_body(body)
    finally:
        closed.cancel()
        reader.shutdown(wait=False)


def watch_parent(watcher: Watcher, pid: int | None) -> None:
    """Tell `watcher` when the client process dies."""
    if pid is None or pid <= 0 or pid == os.getpid():
        return  # null: not started by a process; os.kill reads <= 0 as process groups
    if not process_alive(pid):
        # The client sent initialize, so it is alive: a pid that does not exist here
        # belongs to another PID namespace (a client outside our container).
        log.warning("processId %d is not a process visible here: not watching it", pid)
        return
    loop = asyncio.get_running_loop()
    # A pidfd becomes readable when the process ends, even as an unreaped zombie, and
    # cannot be fooled by the pid being reused. Elsewhere (macOS, Windows, Linux before
    # 5.3) the process is asked after every PARENT_POLL_INTERVAL.
    pidfd_open = getattr(os, "pidfd_open", None)
    try:
        if pidfd_open is None:
            raise OSError("no pidfd")
        fd = pidfd_open(pid)
    except OSError:  # (or it is gone already)
        watcher.spawn(poll_parent(watcher, pid))
        return

    def ended() -> None:
        loop.remove_reader(fd)
        os.close(fd)
        watcher.parent_gone(pid)

    loop.add_reader(fd, ended)


async def poll_parent(watcher: Watcher, pid: int) -> None:
    while process_alive(pid):
        await asyncio.sleep(PARENT_POLL_INTERVAL)
    watcher.parent_gone(pid)


__all__ = ["PARENT_POLL_INTERVAL", "process_alive", "serve", "watch_parent"]
