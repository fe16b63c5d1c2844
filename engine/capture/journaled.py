"""The walk's answer without the walk (SPEC §2 "Reuse without reading again"): from the
stat index and a change journal's drain, every file as the last walk found it, except the
few that may have changed, each stat'ed again through descriptors and read if it differs
(engine/capture/journal.py says which; capture.py decides when this stands in for the walk).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from ..base.cancel import CancelToken
from ..base.limits import Settings, limit_error
from ..base.platform import GONE_ERRNOS
from . import files, reads, stats
from .files import Backend
from .globs import globs_of
from .ignore import Above, Ignores, name_fold, read_gitignore, repository_rules
from .reads import unreadable
from .snapshot import Walked
from .stats import FileState, fingerprint
from .walk import UNREAD, Listing, Prefetch, above_signature, check_utf8, read_listed


def rules_above(root: str, settings: Settings, backend: Backend | None = None) -> tuple[Above, ...]:
    """The rules above the bundle a walk applies (read afresh: they are outside it)."""
    return repository_rules(root, backend or files.BACKEND) if settings.use_ignore else ()


def list_changed(
    root: str,
    settings: Settings,
    cancel: CancelToken | None,
    prefetch: Prefetch,
    known: Mapping[str, FileState],
    check: Collection[str],
    marked: frozenset[str],
    before: Walked,
    backend: Backend | None = None,
    named: frozenset[str] | None = None,
) -> Listing | None:
    """What list_markdown would find, from the stat index and a change journal: the files
    of `known` as they are, except those in `check` (named by the journal, marked by an
    editor, racy, or with other links), each stat'ed again — and read when its fingerprint
    differs or it is new. None when this cannot stand in for the walk (the rules above the
    bundle changed, or the backend does not open relative to folders): walk then.

    `named`, when every file is in `check` because the journal saw a name that may be a
    second name of a captured file (journal.Drained.restat): the paths events or editor
    marks named. A file that changed although nothing named it was written through another
    name. It joins the files stat'ed on every request (`Walked.linked`), as does a file
    seen with more than one link; neither leaves it while it is there (a descriptor opened
    through a link may outlive the link), until a full walk lists the files with other
    links afresh.

    Whether a new path is one the walk takes is decided as the walk decides it: no dot
    name, no link on the way, each folder and the file itself not ignored by the rules in
    force where the walk would meet them.
    """
    bk = backend or files.BACKEND
    if getattr(bk, "name", "") != "descriptor":
        return None
    above = rules_above(root, settings, bk)
    signature = above_signature(above)
    if signature != before.above:
        return None
    limits = settings.limits
    max_files = limits.max_files
    found = Listing((rel, state) for rel, state in known.items() if rel not in check)
    linked = set(before.linked)
    budget = prefetch.budget
    fold = name_fold(settings.ignore_case, settings.ignore_nfc)
    globs = globs_of(settings.globs)
    rules: dict[str, Ignores] = {}  # folder "a/b/" → the rules in force inside it
    coarse = stats.COARSE_NS
    with files.Folders(root, bk) as folders:

        def ignores_in(dirs: list[str]) -> Ignores | None:
            """The rules in force inside the folder `dirs`, None when the walk would not
            enter it (a dot name, ignored, or not a folder one can open)."""
            ignores = Ignores(above, fold=fold)
            rel_dir = ""
            for depth in range(len(dirs) + 1):
                if depth:
                    name = dirs[depth - 1]
                    if name.startswith("."):
                        return None
                    rel_dir += name + "/"
                    if ignores.active and ignores.ignored(rel_dir):
                        return None
                    if globs is not None and globs.prunes(rel_dir):
                        return None
                if settings.use_ignore:
                    got = rules.get(rel_dir)
                    if got is None:
                        try:
                            handle = folders.folder(dirs[:depth])
                        except OSError:
                            return None
                        got = rules[rel_dir] = Ignores(ignores.above, fold=fold)
                        got.stack.extend(ignores.stack)
                        own = read_gitignore(handle, backend=bk)
                        if own is not None:
                            got.stack.append((rel_dir, own))
                    ignores = got
            return ignores

        for rel in sorted(check):
            if cancel is not None:
                cancel.check()
            *dirs, name = rel.split("/")
            state = known.get(rel)
            if state is None:
                if name.startswith(".") or not reads.is_markdown(name):
                    continue
                ignores = ignores_in(dirs)
                if ignores is None or (ignores.active and ignores.ignored(rel)):
                    continue
                if globs is not None and not globs.takes(rel):
                    continue
            try:
                folder = folders.folder(dirs)
            except OSError as exc:
                if exc.errno in GONE_ERRNOS:
                    linked.discard(rel)
                    continue  # a folder on the way is gone, or no longer one
                raise unreadable("Folder", "/".join(dirs), exc) from None
            try:
                st: Any = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError as exc:
                if exc.errno in GONE_ERRNOS:
                    linked.discard(rel)
                    continue
                st = None  # (as the walk: the read says what is wrong)
            if st is None:
                pass
            elif not reads.S_ISREG(st.st_mode):
                linked.discard(rel)
                continue  # a link, a folder, a FIFO now: the walk leaves it out
            elif st.st_nlink > 1:
                linked.add(rel)
            if st is not None and state is not None and state[3] is not None and rel not in marked:
                fp = (
                    fingerprint(st)
                    if coarse
                    else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                )
                if fp == state[3]:
                    found.append((rel, state))
                    continue
                if named is not None and rel not in named:
                    linked.add(rel)  # changed through another name
            if not rel.isascii():
                check_utf8(rel, "/".join(dirs) + "/" if dirs else "")
            content: object = UNREAD
            if prefetch.read <= budget:
                content = read_listed(bk, folder, name, rel, limits.max_file_bytes, prefetch)
            found.append((rel, content))
            found.unread = True
    if len(found) > max_files:
        raise limit_error("max_files", max_files + 1, max_files)
    found.walked = Walked(signature, frozenset(linked))
    return found


__all__ = ["list_changed", "rules_above"]
