"""What one engine call carries besides its request: built once by the front, passed whole.

A `Call` names the bundle and the settings, and holds the per-call values every stage may
need — the cancel token, the progress callback, the editor's unsaved text, and the moment
the request arrived (`fresh_after`, which lets it share a capture: engine/capture/flights.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base.cancel import CancelToken
from .base.limits import Settings
from .capture.capture import Fetcher, Progress
from .capture.snapshot import Snapshot
from .index.index import Index

Bundle = str | os.PathLike[str]
Result = dict[str, Any]  # a contract result (SPEC §6, §8, §9), JSON-ready


@dataclass(frozen=True, slots=True)
class Call:
    bundle: Bundle
    settings: Settings
    cancel: CancelToken | None = None
    progress: Progress | None = None
    # Bundle-relative path -> bytes searched instead of the disk's (SPEC §11 "Unsaved text").
    overlay: Mapping[str, bytes] | None = None
    # A time.monotonic() reading, when the request arrived: a capture of the same bundle
    # and settings that started at or after it is as fresh as one of its own.
    fresh_after: float | None = None

    def check(self) -> None:
        """Raise `cancelled` if the call was cancelled."""
        if self.cancel is not None:
            self.cancel.check()


@dataclass(frozen=True, slots=True)
class IndexedSnapshot:
    """What a call is answered from: its snapshot, the snapshot's index (checked against
    the limits) and a Fetcher of the bytes of its files."""

    snapshot: Snapshot
    index: Index
    fetch: Fetcher


__all__ = ["Bundle", "Call", "IndexedSnapshot", "Progress", "Result"]
