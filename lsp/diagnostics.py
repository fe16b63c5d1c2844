"""The language server's diagnostics bookkeeping: which URIs of each folder hold published
diagnostics (so that a file whose problem is gone is sent an empty list), the last
situation each folder's user was told of (so that a warning is shown once per change, not
once per check), and the debounced re-check after edits.

Handed a plain pygls server (to publish and to show messages); what the problems are is the
features' to find (lsp/features.py problems_of), and the engine's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from citeline.engine import Problem

from . import symbols as conv

DIAGNOSTIC_DELAY = 0.3  # seconds of quiet before re-checking after edits
# The failures that are the workspace's own (not the request's): the user is told of them.
WORKSPACE_FAILURES = ("resource_limit", "parse_error", "bundle_invalid")


def skipped_message(folder: str, problems: Sequence[Problem]) -> tuple[str, str]:
    """What the user is told when unparsable files are left out of search, and the key of
    that situation (the files' paths: told again only when they change)."""
    n = len(problems)
    message = (
        f"citeline: {n} file{'s' if n != 1 else ''} in {folder} cannot be parsed and "
        f"{'are' if n != 1 else 'is'} left out of search (see the diagnostics). Whether "
        "such files block search is the setting skip_invalid (VS Code: citeline.skipInvalid; "
        "Neovim: settings.skip_invalid; Emacs: :skip_invalid in citeline-settings)."
    )
    return message, "skipped:" + "\n".join(p.path for p in problems)


def by_uri(
    folder: str, problems: Sequence[Problem], editor_uris: Mapping[str, str]
) -> dict[str, list[Problem]]:
    """The problems per document URI: an open document's under the URI the editor named it
    by (on a volume that folds names it may spell them otherwise than the disk)."""
    out: dict[str, list[Problem]] = {}
    for p in problems:
        uri = editor_uris.get(p.path) or conv.file_uri(folder, p.path)
        out.setdefault(uri, []).append(p)
    return out


class Diagnostics:
    def __init__(self, ls: LanguageServer) -> None:
        self.ls = ls
        self.published: dict[str, set[str]] = {}  # folder path -> URIs with diagnostics
        self.told: dict[str, str] = {}  # folder -> the last situation the user was told of
        self.pending: dict[str, asyncio.TimerHandle] = {}  # folder -> its debounced re-check

    def publish(self, folder: str, found: Mapping[str, Sequence[Problem]]) -> None:
        """Publish the folder's problems per URI, and an empty list to each URI that had
        some and has none now."""
        for uri in self.published.get(folder, set()) - set(found):
            self.ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )
        for uri, problems in found.items():
            self.ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=conv.diagnostics(problems))
            )
        self.published[folder] = set(found)

    def tell(self, folder: str, message: str | None, key: str | None = None) -> None:
        """Show `message` once per change of the folder's situation (None: all is well)."""
        situation = key or message or ""
        if self.told.get(folder, "") == situation:
            return
        self.told[folder] = situation
        if message:
            self.ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )

    @staticmethod
    def failure_message(exc: JsonRpcException) -> str | None:
        """What to tell of a request that failed on the workspace itself (a limit, a parse
        error), or None when the failure was the request's."""
        data = exc.data if isinstance(exc.data, dict) else {}
        return f"citeline: {exc.message}" if data.get("code") in WORKSPACE_FAILURES else None

    def schedule(self, folder: str, delay: float, check: Callable[[], None]) -> None:
        """Run `check` after `delay` seconds unless the folder is scheduled again before."""
        old = self.pending.pop(folder, None)
        if old is not None:
            old.cancel()
        self.pending[folder] = asyncio.get_running_loop().call_later(delay, check)


__all__ = ["DIAGNOSTIC_DELAY", "Diagnostics", "by_uri", "skipped_message"]
