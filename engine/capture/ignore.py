"""git's ignore rules for a capture (SPEC §2 "What is captured").

Two sources, each file applied to paths relative to its own folder, deeper files winning
and, within a file, the last matching pattern:

- the `.gitignore` files inside the bundle, which the walk reads folder by folder
  (`Ignores.stack`);
- when the bundle lies in a git repository (the nearest folder at or above it holding an
  entry named `.git`), the repository's `info/exclude` and every `.gitignore` from the
  repository's root down to the bundle's parent (`repository_rules`), read afresh by every
  capture, so that an edit to one of them is seen by the next request like any other input.

Patterns are matched as git matches them: against each folder and file the walk meets,
the path itself (`Rules`), and a folder that is ignored is not entered, so nothing below
it can be re-included. The bundle's folder and those above it are never matched: the
bundle was named explicitly, and is searched even when a rule above ignores it (as ripgrep
does). pathspec parses the patterns (git's wildmatch); its matching of a file through an
ignored folder of its path is not used, since the walk never reaches such a file, and it
would let a rule above the bundle that ignores the bundle's folder ignore all of it.

Every file is opened as the capture opens files (files.py: without following links, relative
to its folder's descriptor, or by path with identity checks on Windows), and only regular
files are read. pathspec is imported only when there is a file to compile.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.platform import is_link

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec, PathSpec

    from .files import Backend
MAX_IGNORE_BYTES = 16 * 1024 * 1024  # of one ignore file: the lines past it do not apply
MAX_GITFILE_BYTES = 64 * 1024  # a `.git` file or `commondir` names one path
GIT = ".git"
# pathspec's gitignore regexes are searched in a path and match a file through any folder of
# it: `docs/` is "(?:.+/)?docs(?P<ps_d>/)", which finds docs/a.md by its folder. The group
# marks that folder's "/"; a test checks the form is still the one relied on here.
DIR_MARK = "(?P<ps_d>/)"


_FILE_END = "(?:" + DIR_MARK + "|$)"  # how pathspec ends a pattern that may name a file
_NOT_LITERAL = re.compile(r"[*?\[\]\\]")  # wildmatch's special characters, and escapes


class Rules:
    """The patterns of one ignore file, for paths relative to its folder: a file path
    ("a/b.md") or a folder path ending in "/" ("a/")."""

    __slots__ = ("_folded", "_simple", "lines", "patterns", "spec", "tails")

    def __init__(self, patterns: Sequence[tuple[Any, str | None]]) -> None:
        from pathspec import PathSpec

        self.patterns = [p for p, _ in patterns]  # pathspec RegexPatterns, matching a path
        # What every file a pattern matches ends with ("/" for a pattern naming folders only,
        # so no file), when each pattern tells: most files match no pattern, and a file
        # ending in none of them needs no regex (docs/performance.md). "/" is always among
        # them, so that a folder ("a/") is always matched in full.
        tails = {t for _, t in patterns}
        self.tails: tuple[str, ...] | None = (
            None if None in tails else tuple(sorted({t for t in tails if t is not None} | {"/"}))
        )
        self._simple: PathSpec | None = None
        # The ignore file's lines (compile_rules sets them), for folded(): folding can make a
        # line valid or invalid, so the patterns are compiled again from the lines.
        self.lines: list[str] = []
        self._folded: dict[Fold, Rules] = {}
        try:
            self.spec: PathSpec = PathSpec(self.patterns)  # RE2 when it is there
        except UnicodeEncodeError:
            # A pattern holding bytes that are not UTF-8 (read with surrogate escapes):
            # RE2 compiles UTF-8 only; Python's re matches them byte for byte.
            self.spec = self._simple = PathSpec(self.patterns, backend="simple")

    def check(self, path: str) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no pattern matches."""
        tails = self.tails
        if tails is not None and not path.endswith(tails):
            return None
        try:
            return self.spec.check_file(path).include
        except UnicodeEncodeError:
            # A name that is not valid UTF-8 (surrogate escapes): RE2 matches UTF-8 only;
            # Python's re matches the escaped bytes as the patterns hold them.
            return self._fallback().check_file(path).include

    def folded(self, fold: Fold) -> Rules:
        """These rules for names compared through `fold` (name_fold): compiled from the
        file's lines folded as the paths checked will be, once per fold."""
        rules = self._folded.get(fold)
        if rules is None:
            rules = self._folded[fold] = compile_rules([fold(line) for line in self.lines])
        return rules

    def _fallback(self) -> PathSpec:
        if self._simple is None:
            from pathspec import PathSpec

            self._simple = PathSpec(self.patterns, backend="simple")
        return self._simple


def own_patterns(spec: GitIgnoreSpec) -> list[tuple[Any, str | None]]:
    """`spec`'s patterns, each made to match only the path itself, not a file through a
    folder of its path, with the tail of the files it can match (see Rules).

    "(?:.+/)?docs(?P<ps_d>/)" becomes "(?:(?:.+/)?docs/)$" (folders named docs); "*.md"'s
    "...\\.md(?:(?P<ps_d>/)|$)" matches a.md and a folder x.md/ but no longer x.md/y. A
    regex without the mark (`a/**` is "^a/", `*` is ".") names what lies after what it
    finds. `$` is the end of the path: the paths matched never end in a line break (folders
    end in "/", files in .md or .markdown)."""
    from pathspec import RegexPattern
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    own: list[tuple[Any, str | None]] = []
    for pattern in spec.patterns:
        if pattern.include is None or pattern.regex is None:
            continue  # a comment or a blank line
        regex = pattern.regex.pattern
        text = pattern.pattern if isinstance(pattern.pattern, str) else ""
        text = text.removesuffix("\r").rstrip(" ")  # as git reads a line of a CRLF file
        if pattern.include is False and text.startswith("!"):
            text = text[1:]
        if text.endswith("/**/") and not _any_depth(text[:-4]):
            # `a/**/`: for git the folders inside a/, not a/ itself (pathspec reads it as
            # `a/`): what `a/**` finds, where it is a folder. Not `/**/` or `**/**/`: with
            # only `**` before them they name every folder, which pathspec reads right.
            inside = GitIgnoreSpecPattern(text[:-1]).regex
            if inside is not None and DIR_MARK not in inside.pattern:
                own.append(
                    (
                        RegexPattern(re.compile(f"(?:{inside.pattern})(?s:.+/)$"), pattern.include),
                        "/",
                    )
                )
                continue
        tail = _tail(regex, text)
        if DIR_MARK in regex:
            regex = "(?:" + regex.replace(DIR_MARK, "/") + ")$"
        else:
            # "Everything inside" (`a/**` is "^a/", `*` is "."): something must follow
            # what it finds, so that `a/**` names what is inside a/, not a/ itself.
            regex = "(?:" + regex + ")(?s:.)"
        own.append((RegexPattern(re.compile(regex), pattern.include), tail))
    return own


def _any_depth(head: str) -> bool:
    """Whether a pattern's leading part (`/**`, `**/**`, or nothing) matches any number of
    folders, so that `head/**/` names every folder."""
    return all(part == "**" for part in head.strip("/").split("/") if part)


def _tail(regex: str, text: str) -> str | None:
    """The end of every file path pathspec's `regex` (for the pattern `text`) matches: "/"
    when it names folders only, the literal end of its last component ("*.vsix": ".vsix"),
    or None when it does not tell. Taken from the text, and kept only when the regex
    ends with it, so that how pathspec reads the line decides."""
    if regex.endswith(DIR_MARK):
        return "/"
    if not regex.endswith(_FILE_END):
        return None
    literal = _NOT_LITERAL.split(text.rsplit("/", 1)[-1])[-1]
    if literal and regex[: -len(_FILE_END)].endswith(re.escape(literal)):
        return literal
    return None


@dataclass(frozen=True, slots=True)
class Above:
    """One ignore file above the bundle (or the repository's info/exclude): its rules, and
    the bundle's path relative to its folder ("docs/sub/"; "" for the info/exclude of a
    bundle that is the repository's root)."""

    rules: Rules
    prefix: str

    def check(self, rel: str) -> bool | None:
        return self.rules.check(self.prefix + rel)


Fold = Callable[[str], str]


def name_fold(case: bool, nfc: bool) -> Fold | None:
    """How names are folded for a volume that compares them without case (`case`: git's
    core.ignorecase) or with NFD and NFC as one (`nfc`: core.precomposeunicode); None when it
    compares them exactly. Case by str.lower(), as fronts/names.py compares editor paths."""
    if case and nfc:
        return _lower_nfc
    if case:
        return str.lower
    if nfc:
        return _nfc
    return None


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _lower_nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


class _FoldedStack(list):  # type: ignore[type-arg]
    """Ignores.stack on a folding volume: each ignore file pushed by the walk is kept
    folded (its folder's path and its patterns), as the paths checked are."""

    __slots__ = ("fold",)

    def __init__(self, fold: Fold) -> None:
        super().__init__()
        self.fold = fold

    def append(self, item: tuple[str, Rules]) -> None:
        base, rules = item
        super().append((self.fold(base), rules.folded(self.fold)))


class Ignores:
    """The rules in force at one point of the walk: those above the bundle (outermost
    first), then the bundle's own `.gitignore` files down to the current folder.

    With `fold` (name_fold), names are compared as a volume that folds them does (git's
    core.ignorecase on macOS and Windows): the patterns and the paths checked both folded."""

    __slots__ = ("_above_tails", "above", "fold", "stack")

    def __init__(self, above: Sequence[Above] = (), fold: Fold | None = None) -> None:
        self.fold = fold
        if fold is not None:
            above = [Above(a.rules.folded(fold), fold(a.prefix)) for a in above]
        self.above = tuple(above)
        # (bundle-relative folder "a/", its rules)
        self.stack: list[tuple[str, Rules]] = [] if fold is None else _FoldedStack(fold)
        # The files' ends any rule above can match (see Rules.tails; a tail holds no "/",
        # so it ends the path relative to the rule's folder exactly when it ends `rel`).
        tails = [r.rules.tails for r in self.above]
        self._above_tails: tuple[str, ...] | None = (
            None if None in tails else tuple(sorted({"/"}.union(*tails)))  # type: ignore[arg-type]
        )

    @property
    def active(self) -> bool:
        return bool(self.stack or self.above)

    def ignored(self, rel: str) -> bool:
        """Whether the bundle-relative path `rel` (a folder ends in "/") is ignored."""
        if self.fold is not None:
            rel = self.fold(rel)
        # The deepest file with an opinion decides, so look from the deepest up.
        if self.stack:
            for base, rules in reversed(self.stack):
                result = rules.check(rel[len(base) :])
                if result is not None:
                    return result
        tails = self._above_tails
        if tails is not None and not rel.endswith(tails):
            return False  # (most files: no rule above can match them)
        for rule in reversed(self.above):
            result = rule.check(rel)
            if result is not None:
                return result
        return False


def read_gitignore(
    folder: Any, name: str = ".gitignore", backend: Backend | None = None
) -> Rules | None:
    """The rules of the ignore file `name` in `folder` (a handle of `backend`, the capture's
    by default); None when there is none, or it is a link, not a regular file or cannot be
    read."""
    raw = _backend(backend).read_small(folder, name, MAX_IGNORE_BYTES)
    if raw is None:
        return None
    with _LOCK:
        rules = _COMPILED.get(raw)
        if rules is not None:
            _COMPILED.move_to_end(raw)
            return rules
    # git splits at LF only (a CR before it is dropped by the pattern parser); str.splitlines
    # would also split at form feeds and U+2028.
    rules = compile_rules(raw.decode("utf-8", "surrogateescape").split("\n"))
    if len(raw) <= MAX_MEMO_BYTES:
        with _LOCK:
            _COMPILED[raw] = rules
            while len(_COMPILED) > MAX_MEMO:
                _COMPILED.popitem(last=False)
    return rules


# Every capture reads each ignore file again (an edit must be seen at once), but compiling
# one costs a millisecond or more (RE2 builds its set) where reading it costs microseconds:
# the compiled rules are kept by the file's bytes, so unchanged bytes are not compiled twice.
MAX_MEMO = 64
MAX_MEMO_BYTES = 64 * 1024
_COMPILED: OrderedDict[bytes, Rules] = OrderedDict()
_LOCK = threading.Lock()


def compile_rules(lines: list[str]) -> Rules:
    """The patterns of an ignore file; like git, a line that is not a valid pattern is
    skipped and the others still apply."""
    import warnings

    from pathspec import GitIgnoreSpec  # only for bundles that have an ignore file

    def parse(kept: list[str]) -> Rules:
        # (only parsed here: Rules compiles the patterns for matching)
        rules = Rules(own_patterns(GitIgnoreSpec.from_lines(kept, backend="simple")))
        rules.lines = lines  # (every line: folded, a line may become valid or invalid)
        return rules

    with warnings.catch_warnings():  # re's FutureWarnings about odd patterns: not the user's
        warnings.simplefilter("ignore")
        try:
            return parse(lines)
        except Exception:  # pathspec's own errors, re.error, …
            pass
        kept = []
        for line in lines:
            try:
                parse([line])
            except Exception:
                continue
            kept.append(line)
        return parse(kept)


def _backend(backend: Backend | None) -> Backend:
    if backend is not None:
        return backend
    from . import files

    return files.BACKEND


def _open_dir(backend: Backend, name: str, parent: Any = None) -> Any:
    """A folder (`name` of `parent`, or the absolute path `name`), None when it is gone,
    a link or cannot be opened."""
    try:
        if parent is None:
            return backend.open_path(name)
        return backend.open_dir(parent, name)
    except (OSError, ValueError):
        return None


def repository_rules(bundle: str, backend: Backend | None = None) -> tuple[Above, ...]:
    """The rules above the bundle when it lies in a git repository (outermost first: the
    repository's info/exclude, then each `.gitignore` from its root down to the bundle's
    parent); () outside one.

    The folders are the bundle's physical ones (links in its path resolved, as git finds
    the repository of its working folder), so the rules come from the tree the walk reads.
    """
    try:
        folder = os.path.realpath(bundle)
    except (OSError, ValueError):
        return ()
    names: list[str] = []  # the bundle's path below `folder`, innermost first
    # The nearest folder at or above the bundle holding an entry named .git (of any kind).
    while True:
        try:
            entry = os.lstat(os.path.join(folder, GIT))
        except (OSError, ValueError):
            pass
        else:
            return _rules_below(folder, entry, names[::-1], _backend(backend))
        parent, name = os.path.split(folder)
        if parent == folder or not name:
            return ()  # the root of the file system ("/", "C:\\", "\\\\server\\share\\")
        names.append(name)
        folder = parent


def _rules_below(
    root: str, entry: os.stat_result, names: list[str], backend: Backend
) -> tuple[Above, ...]:
    """The rules of the repository at `root` (whose `.git` entry is `entry`) for the
    bundle `names` below it ([] when the bundle is the root)."""
    root_fd = _open_dir(backend, root)
    if root_fd is None:
        return ()
    found: list[Above] = []
    fds = [root_fd]
    try:
        exclude = _info_exclude(root, root_fd, entry, backend)
        if exclude is not None:
            found.append(_above(exclude, names))
        # .gitignore files from the root down to the bundle's parent (the walk reads the
        # bundle's own), each opened relative to its parent without following links.
        for depth in range(len(names)):
            rules = read_gitignore(fds[-1], backend=backend)
            if rules is not None:
                found.append(_above(rules, names[depth:]))
            if depth + 1 < len(names):
                fd = _open_dir(backend, names[depth], fds[-1])
                if fd is None:
                    break  # vanished or became a link: nothing below it applies
                fds.append(fd)
    finally:
        for fd in fds:
            backend.close(fd)
    return tuple(found)


def _info_exclude(root: str, root_fd: Any, entry: os.stat_result, backend: Backend) -> Rules | None:
    """The repository's info/exclude: in its `.git` folder, or, for a `.git` file (a
    worktree, a submodule), in the git folder it names — its common folder when that has
    a `commondir` file, since git reads `info/` there. A `.git` that is a link marks the
    repository's root but is not followed."""
    if is_link(entry):
        return None
    if stat.S_ISDIR(entry.st_mode):
        git_fd = _open_dir(backend, GIT, root_fd)
    elif stat.S_ISREG(entry.st_mode):
        git_fd = _git_folder(root, root_fd, backend)
    else:
        return None
    if git_fd is None:
        return None
    try:
        info = _open_dir(backend, "info", git_fd)
        if info is None:
            return None
        try:
            return read_gitignore(info, "exclude", backend)
        finally:
            backend.close(info)
    finally:
        backend.close(git_fd)


def _git_folder(root: str, root_fd: Any, backend: Backend) -> Any:
    """The common git folder named by the `.git` file at `root` ("gitdir: <path>", relative
    to `root` unless absolute, then its `commondir` file's path, relative to it)."""
    raw = backend.read_small(root_fd, GIT, MAX_GITFILE_BYTES)
    if raw is None or not raw.startswith(b"gitdir: "):
        return None
    gitdir = os.path.join(root, os.fsdecode(raw[len(b"gitdir: ") :].rstrip(b"\r\n")))
    git_fd = _open_dir(backend, gitdir)
    if git_fd is None:
        return None
    common = backend.read_small(git_fd, "commondir", MAX_GITFILE_BYTES)
    if common is None:
        return git_fd  # a submodule's or a plain git folder: info/ is its own
    backend.close(git_fd)
    path = os.fsdecode(common.rstrip(b"\r\n"))  # (as git reads it: only line breaks go)
    return _open_dir(backend, os.path.join(gitdir, path)) if path else None


def _above(rules: Rules, names: list[str]) -> Above:
    """`rules` of a folder above the bundle, `names` being the bundle's path below it."""
    return Above(rules, "".join(n + "/" for n in names))


__all__ = [
    "Above",
    "Ignores",
    "Rules",
    "compile_rules",
    "own_patterns",
    "read_gitignore",
    "repository_rules",
]
