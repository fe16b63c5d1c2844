"""The user's globs (CLI `-g/--glob`, the language server's `globs` setting, `citeline mcp
--glob`): which of the bundle's files a capture takes, as ripgrep's overrides decide it.

Each glob is matched against the bundle-relative path with git's wildmatch (`*` stays inside
one folder, `**` crosses them, a glob without `/` matches a name at any depth), plus
ripgrep's `{a,b}` alternatives. A glob starting with `!` excludes what it matches; any other
includes it. The last glob that matches a path decides; a file no glob matches is left out
when at least one including glob was given. Folders are entered unless a glob excludes the
folder itself, or an excluding glob covers everything below it (`!old/**`) and no including
glob follows it: then the folder is not even walked, as an ignored one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..base.errors import CitelineError, quoted

MAX_GLOBS = 256
MAX_GLOB_BYTES = 4096


class Globs:
    """Compiled globs, in the order given (later ones win)."""

    __slots__ = ("entries", "includes", "source")

    def __init__(self, globs: Sequence[str]) -> None:
        self.source = tuple(globs)
        # (include?, [regexes], whether an including glob comes later)
        entries: list[tuple[bool, list[Any], bool, bool]] = []
        for glob in self.source:
            include = not glob.startswith("!")
            body = glob if include else glob[1:]
            dir_only = body.endswith("/")
            entries.append((include, _compile(glob, body), dir_only, False))
        later_include = False
        for i in range(len(entries) - 1, -1, -1):
            include, regexes, dir_only, _ = entries[i]
            entries[i] = (include, regexes, dir_only, later_include)
            later_include = later_include or include
        self.entries = entries
        self.includes = any(e[0] for e in entries)

    def takes(self, rel: str) -> bool:
        """Whether the file `rel` ("a/b.md") is captured under these globs."""
        for include, regexes, _, _ in reversed(self.entries):
            if any(r.match(rel) for r in regexes):
                return include
        return not self.includes

    def prunes(self, rel_dir: str) -> bool:
        """Whether the walk leaves out the folder `rel_dir` ("a/b/") and all below it."""
        bare = rel_dir.rstrip("/")
        for include, regexes, dir_only, _ in reversed(self.entries):
            probe = rel_dir if dir_only else bare
            if any(r.match(probe) and r.match(probe).end() == len(probe) for r in regexes):
                if include:
                    break
                return True
        # An excluding glob covering every path below the folder, with no including glob
        # after it: nothing inside can be taken.
        for include, regexes, _, later_include in self.entries:
            if not include and not later_include and any(r.match(rel_dir) for r in regexes):
                return True
        return False


def check_globs(value: object, field: str = "globs") -> tuple[str, ...]:
    """The globs of a request or setting, validated (schema_validation naming the bad one)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _invalid(f"{field} must be a list of glob strings.", field)
    if len(value) > MAX_GLOBS:
        raise _invalid(f"{field} holds {len(value)} globs; at most {MAX_GLOBS}.", field)
    out = []
    for glob in value:
        if not isinstance(glob, str):
            raise _invalid(f"{field} must be a list of glob strings.", field)
        body = glob[1:] if glob.startswith("!") else glob
        if not body:
            raise _invalid(f"The glob {quoted(glob)} is empty.", field, glob)
        if len(glob.encode("utf-8", "surrogatepass")) > MAX_GLOB_BYTES:
            raise _invalid(f"A glob is over {MAX_GLOB_BYTES} UTF-8 bytes.", field, glob)
        if any(c in glob for c in "\x00\n\r"):
            raise _invalid(f"The glob {quoted(glob)} holds a line break or NUL.", field, glob)
        _compile(glob, body)  # raises on a glob that does not compile
        out.append(glob)
    return tuple(out)


def _invalid(message: str, field: str, glob: str | None = None) -> CitelineError:
    details: dict[str, Any] = {"field": field}
    if glob is not None:
        details["glob"] = glob
    return CitelineError("schema_validation", message, details)


def _compile(glob: str, body: str) -> list[Any]:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    # A leading "#" would be a comment in an ignore file, a leading "!" a negation: in a
    # glob both are literal characters (the "!" of an excluding glob is already gone).
    regexes = []
    for alternative in _expand(glob, body):
        text = "\\" + alternative if alternative[:1] in ("#", "!") else alternative
        try:
            pattern = GitIgnoreSpecPattern(text)
        except Exception as exc:  # pathspec's errors name the pattern
            raise _invalid(f"The glob {quoted(glob)} is invalid: {exc}", "globs", glob) from None
        if pattern.regex is None:
            raise _invalid(
                f"The glob {quoted(glob)} is invalid (an unclosed '[' or only separators).",
                "globs",
                glob,
            )
        regexes.append(re.compile(pattern.regex.pattern))
    return regexes


def _expand(glob: str, body: str) -> list[str]:
    """ripgrep's alternatives: "*.{md,markdown}" is "*.md" and "*.markdown"."""
    start = _unescaped(body, "{", 0)
    if start < 0:
        if _unescaped(body, "}", 0) >= 0:
            raise _invalid(f"The glob {quoted(glob)} has an unopened '}}'.", "globs", glob)
        return [body]
    depth, i, parts, last = 0, start, [], start + 1
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(body[last:i])
                break
        elif c == "," and depth == 1:
            parts.append(body[last:i])
            last = i + 1
        i += 1
    else:
        raise _invalid(f"The glob {quoted(glob)} has an unclosed '{{'.", "globs", glob)
    head, tail = body[:start], body[i + 1 :]
    out: list[str] = []
    for part in parts:
        out.extend(_expand(glob, head + part + tail))
    return out


def _unescaped(text: str, char: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == char:
            return i
        i += 1
    return -1


def echo(result: dict[str, Any], globs: tuple[str, ...]) -> dict[str, Any]:
    """A result says which globs chose its files, when any did (additive: none, no field)."""
    if globs:
        result["globs"] = list(globs)
    return result


def globs_of(globs: tuple[str, ...]) -> Globs | None:
    """The compiled globs of a Settings (None when there are none: nothing to check)."""
    return Globs(globs) if globs else None


__all__ = ["Globs", "check_globs", "echo", "globs_of"]
