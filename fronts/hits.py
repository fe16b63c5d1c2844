"""A result's hits as every front shows them to people and models: the query's words and which
of them a hit matched, the lines of a hit's file read back (checked against the SHA-256 the
engine cited), and a hit's label (the file's title for the text before its first heading).

Imports only the engine; the CLI's renderer and the MCP server's text both use it, so that
neither front imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def tokenizer_of(result: dict[str, Any]) -> Any:
    """The engine's tokenizer for a result: the contract's, or the one its `options` chose
    (through the engine's Relevance, so that every option that refines tokens is honoured)."""
    options = result.get("options")
    if not options:
        from citeline.engine.text.terms import CONTRACT

        return CONTRACT
    from citeline.engine.answer.requests import Relevance

    return Relevance.from_mapping(options).tokenizer


def query_words(result: dict[str, Any]) -> list[tuple[str, frozenset[str]]]:
    """Each distinct word of the query as typed, with the terms it becomes.

    Under stemming or CJK bigrams the terms (and so matched_terms) are stems or pairs
    (`remot`, `comput`); a word counts as matched when one of its terms did.
    """
    from citeline.engine.text.terms import normalise, word_re

    tokenizer = tokenizer_of(result)
    seen: dict[str, tuple[str, frozenset[str]]] = {}
    query = result["query"]
    for m in word_re(query).finditer(query):
        word = m.group()
        key = normalise(word)
        if key not in seen:
            seen[key] = (word, frozenset(tokenizer.tokens(word)))
    return list(seen.values())


def matched_words(
    words: Sequence[tuple[str, frozenset[str]]], matched_terms: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(query words matched, query words missing) for one hit."""
    terms = set(matched_terms)
    found = [w for w, ts in words if ts & terms]
    missing = [w for w, ts in words if ts and not ts & terms]
    return found, missing


class Sources:
    """The lines of each hit's file, to number the lines shown.

    First the text the search itself read (`texts`, filled by Engine.search(texts=…)): the
    file is not read a second time. A hit without it (a caller that has only the result) has
    its file read back with the capture's rules — no link followed, non-blocking, regular
    files only, at most `max_bytes` — and trusted only when its SHA-256 is the one the engine
    cited (SPEC §2: bytes "read and checked against that SHA-256"). A FIFO or a device
    swapped in, a file grown huge or changed gives None, and the hit is drawn from its
    snippet alone.
    """

    def __init__(
        self, root: str, texts: Mapping[str, str] | None = None, max_bytes: int | None = None
    ) -> None:
        self.root = root
        self.texts = texts or {}
        self.max_bytes = max_bytes
        self._lines: dict[tuple[str, str], list[str] | None] = {}

    def lines(self, path: str, sha256: str) -> list[str] | None:
        key = (path, sha256)
        if key not in self._lines:
            text = self.texts.get(sha256)
            if text is None:
                text = self._read(path, sha256)
            self._lines[key] = (
                None if text is None else [line.removesuffix("\r") for line in text.split("\n")]
            )
        return self._lines[key]

    def _read(self, path: str, sha256: str) -> str | None:
        from citeline.engine.capture.capture import read_inside

        limit = self.max_bytes
        if limit is None:
            from citeline.engine.base.limits import Limits

            limit = Limits().max_file_bytes
        data = read_inside(self.root, path, limit, sha256)
        if data is None:
            return None
        text = data.decode("utf-8", "replace")  # it decoded for the engine: same bytes
        return text[1:] if text.startswith("\ufeff") else text


def hit_label(hit: dict[str, Any], file_lines: list[str] | None) -> str:
    """A hit's heading; for the text before a file's first heading, the file's title (the
    engine's rule, from the lines the search read), else its path."""
    if hit["heading"] or file_lines is None:
        return hit["heading"] or hit["path"]
    from citeline.engine.text.sections import label_in

    data = "\n".join(file_lines).encode("utf-8", "surrogatepass")
    return label_in(hit["path"], data, hit["line_start"], "")


def match_as_hit(match: dict[str, Any]) -> dict[str, Any]:
    """A semantic match (its section's fields under `x-`) as the hit fields a label needs."""
    return {
        "heading": match["x-heading"],
        "path": match["path"],
        "line_start": match["x-line_start"],
        "content_sha256": match["x-content_sha256"],
    }


def verify_places(result: dict[str, Any], name: Callable[[str], str]) -> tuple[str, str]:
    """(the cited place, the text's place now) of one verify result, each `path:a-b` (or
    `path:a` for a line, or a one-line section) with the path shown by `name`."""

    def place(path: str | None, a: int | None, b: int | None) -> str:
        where = name(path or "")
        return f"{where}:{a}" if b is None or a == b else f"{where}:{a}-{b}"

    c = result["citation"]
    if "line" in c:
        return place(c["path"], c["line"], None), place(result["path"], result["line"], None)
    cited = place(c["path"], c["line_start"], c["line_end"])
    return cited, place(result["path"], result.get("line_start"), result.get("line_end"))
