"""The warm process served from a thread of the test's own process, in folders of the
test's own (tests/cli/test_daemon_units.py, test_daemon_hostile.py)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from citeline.cli import daemon, launch


def socket_path() -> Path:
    return Path(launch.runtime_folder()) / launch.socket_name(launch.cache_key())


@contextlib.contextmanager
def serving() -> Iterator[threading.Thread]:
    """daemon.serve in a thread, from the moment it listens until its socket is removed."""
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(daemon.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not socket_path().exists():
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.01)
    try:
        yield thread
    finally:
        with contextlib.suppress(FileNotFoundError):  # the test may have removed it
            socket_path().unlink()
        thread.join(30)
    assert not thread.is_alive() and done == [0]
