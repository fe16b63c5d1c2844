"""Where an editor's paths are in the language server's workspace: the workspace folders
(in the client's order), the folder a request's `root` names, the folder holding a file, and
a file's path inside it spelt as the disk stores its names (fronts/names.py: compared as the
folder's volume compares them, SPEC §16); the open Markdown documents of a folder by those
paths, and where a document that is not open may be read.

Handed a plain pygls server (its workspace) and the engine's last capture of a folder, as
the job pool and the diagnostics are: it knows nothing of settings or of the engine's work.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from citeline.engine import CitelineError
from citeline.fronts import names

from .rpc import schema

if TYPE_CHECKING:
    from citeline.engine.capture.stats import StatIndex

MARKDOWN_SUFFIXES = (".md", ".markdown")


class Places:
    def __init__(self, ls: LanguageServer, known: Callable[[str], StatIndex | None]) -> None:
        self.ls = ls
        self.known = known  # the last capture's stat index of a folder (an absolute path)
        self.spelling = names.Spelling()  # editor paths -> the names the disk stores

    def folders(self) -> list[tuple[str, str]]:
        """(uri, path) of each workspace folder, in the client's order."""
        out = []
        for folder in self.ls.workspace.folders.values():
            path = to_fs_path(folder.uri)
            if path and os.path.isabs(path):
                out.append((folder.uri, path))
        root = self.ls.workspace.root_path
        if not out and self.ls.workspace.root_uri and root and os.path.isabs(root):
            out.append((self.ls.workspace.root_uri, root))
        # A URI whose path is relative (`file:docs`) names no folder: searched from the
        # server's working directory, it would give symbols whose URIs do not exist
        # (on_initialize logs it).
        return out

    def choose_folder(self, root: object) -> str:
        folders = self.folders()
        if root is None:
            if not folders:
                raise CitelineError(
                    "bundle_not_found",
                    "No workspace folder is open; open a folder or pass a root URI.",
                    {"root": None},
                )
            return folders[0][1]
        if not isinstance(root, str):
            raise schema("root must be a file URI of a workspace folder.", field="root")
        wanted = to_fs_path(root) if "://" in root else root
        for uri, path in folders:
            if root == uri or (
                wanted
                and os.path.isabs(wanted)
                and names.same_folder(wanted, path, names.volume_rules(path))
            ):
                return path
        raise schema(
            f"root {root!r} is not a workspace folder; open folders: "
            + (", ".join(u for u, _ in folders) or "none")
            + ".",
            field="root",
            root=root,
            folders=[u for u, _ in folders],
        )

    def folder_of(self, file_path: str) -> str | None:
        """The deepest workspace folder holding `file_path`, its names compared as the
        folder's volume compares them (SPEC §16: case-insensitive on macOS and Windows)."""
        best, left = None, 0
        for _, path in self.folders():
            inside = names.below(path, file_path, names.volume_rules(path))
            if inside is not None and (best is None or len(inside) < left):
                best, left = path, len(inside)  # fewer names left: a deeper folder
        return best

    def relative(self, folder: str, file_path: str) -> str | None:
        """`file_path` relative to `folder` (with `/`), spelt as the disk stores its names:
        the path the capture records, marks and overlays; None when it is not inside."""
        rules = names.volume_rules(folder)
        inside = names.below(folder, file_path, rules)
        if inside is None:
            return None
        rel = "/".join(inside)
        if rules.exact:
            return rel
        known = self.known(os.path.abspath(folder))
        return self.spelling.on_disk(folder, rel, rules, known.files if known else None)

    def closed_document(self, path: str | None) -> tuple[str, str] | None:
        """(workspace folder, bundle-relative path) of a document that is not open, when it is
        a Markdown file inside a workspace folder; None otherwise. Its outline is then read
        with the capture's rules (engine.capture.read_inside: no link followed at any
        component inside the folder, non-blocking, regular files only, bounded), never with
        a plain open() that would follow a link out of the workspace, wait on a FIFO or read
        /dev/zero until memory runs out (issue 31)."""
        if not path or not path.lower().endswith(MARKDOWN_SUFFIXES):
            return None
        folder = self.folder_of(path)
        rel = None if folder is None else self.relative(folder, path)
        if folder is None or rel is None:
            return None
        return folder, rel  # read_inside refuses "..", "." and empty components

    def open_texts(self, folder: str) -> dict[str, str]:
        """Bundle-relative path (as the disk spells it) -> editor text of the open Markdown
        documents in `folder`."""
        return {rel: text for rel, (_, text) in self.open_documents(folder).items()}

    def open_documents(self, folder: str) -> dict[str, tuple[str, str]]:
        """Bundle-relative path (as the disk spells it) -> (the editor's URI, its text) of
        the open Markdown documents in `folder`."""
        out = {}
        for uri, doc in self.ls.workspace.text_documents.items():
            path = doc.path
            if not path or not path.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            rel = self.relative(folder, path)
            if rel is not None:
                out[rel] = (uri, doc.source)
        return out


__all__ = ["MARKDOWN_SUFFIXES", "Places"]
