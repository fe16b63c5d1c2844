"""Waiting in tests without hanging them: a call that blocks (a read of a FIFO, a server that
never answers) fails its test after a bounded time instead of stopping the whole run."""

from __future__ import annotations

import selectors
import threading
from collections.abc import Callable
from typing import IO, Any, TypeVar

T = TypeVar("T")


def within(fn: Callable[[], T], timeout: float = 60.0) -> T:
    """`fn()`, run in a daemon thread, which must finish within `timeout` seconds (a cap,
    not a target); what it raises is raised here."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test's thread
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), f"did not finish within {timeout} s (a blocking read?)"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def readable(source: int | IO[Any], timeout: float) -> bool:
    """Whether `source` (a descriptor or a file) has something to read within `timeout`
    seconds. Through the selectors module (epoll, poll): select() refuses a descriptor past
    1,023 ("filedescriptor out of range in select()"), which a long test session reaches."""
    with selectors.DefaultSelector() as selector:
        selector.register(source, selectors.EVENT_READ)
        return bool(selector.select(timeout))
