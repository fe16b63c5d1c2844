"""Co-operative cancellation: a flag the engine checks between files and stages."""

from __future__ import annotations

import threading

from .errors import cancelled


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def is_cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise cancelled()
