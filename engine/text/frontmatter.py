"""Front matter (SPEC §3): YAML read with a bounded PyYAML safe loader, every failure a
parse error with its line.

A module of its own: PyYAML is imported only when a file has front matter to read.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..base.errors import ParseIssue

# Front matter is read with PyYAML's pure-Python safe loader, bounded so that no document
# can exhaust the stack, time or memory (SPEC §3: every failure is a parse error):
# - MAX_YAML_DEPTH: collections nested in collections. The composer recurses once per level
#   (two frames), so a fixed bound keeps it far from Python's recursion limit whatever the
#   caller's stack depth, and every front reports the same error for the same file.
# - MAX_YAML_MERGED: entries merge keys (`<<`) may copy in one document. Each merge copies
#   the entries of the mappings it names, so a chain of anchors that each merge the one
#   before costs time quadratic in its length; plain aliases share one object and cost
#   nothing.
MAX_YAML_DEPTH = 100
MAX_YAML_MERGED = 100_000
# - MAX_FRONT_MATTER_BYTES: the loader reads about 1 MB/s, so a 16 MiB block would hold a
#   request for a quarter of a minute; real front matter is a few hundred bytes.
MAX_FRONT_MATTER_BYTES = 1 << 20
FRONT_FIELDS = ("title", "id")  # the only front-matter fields the engine reads
_YAML_TAG = "tag:yaml.org,2002:"
_SURROGATE = re.compile("[\ud800-\udfff]")
_SHOWN_VALUE = 40  # characters of an offending scalar quoted in a parse error


def load_front_matter(source: str) -> dict[str, Any] | ParseIssue:
    """The fields the engine uses (FRONT_FIELDS, when they are strings) of the YAML between
    the front-matter fences; `source` starts on line 2 of the file.

    Only those fields are kept: nothing large, shared or recursive that a document can build
    with anchors is held in memory or sent to a worker process with the file's structure.
    """
    if not source.strip():
        return {}
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_FRONT_MATTER_BYTES:
        return ParseIssue(
            1,
            f"front matter is {size:,} bytes; at most {MAX_FRONT_MATTER_BYTES:,} are read "
            "(move the data out of the front matter)",
        )
    try:
        value = yaml.load(source, Loader=_FrontMatterLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        return ParseIssue(_yaml_line(source, exc), f"invalid YAML in front matter: {_problem(exc)}")
    except Exception as exc:  # SPEC §3: any failure to load is a parse error
        # The loader turns every failure it can place into a YAMLError with a line; this
        # is the net for anything else (MemoryError, say), reported on the opening fence.
        return ParseIssue(
            1, f"front matter cannot be loaded ({type(exc).__name__}: {_one_line(str(exc))})"
        )
    if value is None:
        return {}
    if not isinstance(value, dict):
        return ParseIssue(1, f"front matter is not a mapping (it is a {type(value).__name__})")
    return {k: value[k] for k in FRONT_FIELDS if isinstance(value.get(k), str)}


class _FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader with bounded nesting and merging, and value errors located.

    The safe constructors raise plain Python errors for scalars they cannot build (a date
    that does not exist, `!!int ""`, `!!bool maybe`, `0b_`, an int of more than 4,300
    digits, `!!timestamp x`...); construct_object turns each into a ConstructorError marked
    at its node, so it is reported with its line like a syntax error.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._merged = 0
        self._flattening: set[int] = set()  # ids of mappings whose merges are being copied

    def compose_scalar_node(self, anchor: str | None) -> Node:
        event = self.peek_event()
        if _SURROGATE.search(event.value):
            # Only an escape makes one (the source is decoded UTF-8): "\ud83d\ude00", as
            # JSON writes U+1F600, is read as the pair it stands for; a lone surrogate is not
            # Unicode text and could not be written in any UTF-8 result.
            try:
                event.value = event.value.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeDecodeError:
                raise ComposerError(
                    None,
                    None,
                    f"an escape makes the lone surrogate \\u{_lone_surrogate(event.value):04x}, "
                    "which is not Unicode text",
                    event.start_mark,
                ) from None
        node: Node = super().compose_scalar_node(anchor)
        return node

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if not self.check_event(SequenceStartEvent, MappingStartEvent):
            scalar: Node = super().compose_node(parent, index)  # or an alias: no recursion
            return scalar
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"collections are nested more than {MAX_YAML_DEPTH} levels deep",
                    self.peek_event().start_mark,
                )
            node: Node = super().compose_node(parent, index)
            return node
        finally:
            self._depth -= 1

    def flatten_mapping(self, node: MappingNode) -> None:
        if id(node) in self._flattening:
            return  # a mapping that merges itself (`&a {<<: *a}`): PyYAML drops the key
        if len(self._flattening) >= MAX_YAML_DEPTH:
            # Merges of merges recurse, and aliases can chain them beyond the nesting
            # of the text (a list of anchors, each merging the one before, merged last).
            raise ConstructorError(
                None,
                None,
                f"merge keys (<<) are chained more than {MAX_YAML_DEPTH} levels deep",
                node.start_mark,
            )
        self._flattening.add(id(node))
        try:
            for key_node, value_node in node.value:
                if key_node.tag != _YAML_TAG + "merge":
                    continue
                named = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in named:
                    if isinstance(source, MappingNode):
                        self.flatten_mapping(source)  # first: its merged size is what is copied
                        self._merged += len(source.value)
                if self._merged > MAX_YAML_MERGED:
                    raise ConstructorError(
                        None,
                        None,
                        f"merge keys (<<) copy more than {MAX_YAML_MERGED:,} entries",
                        key_node.start_mark,
                    )
            super().flatten_mapping(node)
        finally:
            self._flattening.discard(id(node))

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except RecursionError:
            raise ConstructorError(
                None, None, "the document is nested too deeply to load", node.start_mark
            ) from None
        except Exception as exc:  # see the class docstring
            raise ConstructorError(None, None, _value_problem(node, exc), node.start_mark) from None


def _lone_surrogate(text: str) -> int:
    """The first surrogate of `text` that is not half of a high-low pair."""
    i = 0
    while i < len(text):
        code = ord(text[i])
        if 0xD800 <= code <= 0xDBFF and i + 1 < len(text) and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            i += 2
            continue
        if 0xD800 <= code <= 0xDFFF:
            return code
        i += 1
    return 0


def _value_problem(node: Node, exc: Exception) -> str:
    kind = node.tag[len(_YAML_TAG) :] if node.tag.startswith(_YAML_TAG) else node.tag
    if not isinstance(node, ScalarNode):
        return f"a {node.id} cannot be read as {kind} ({type(exc).__name__})"
    value = node.value
    shown = value if len(value) <= _SHOWN_VALUE else value[: _SHOWN_VALUE - 1] + "…"
    detail = str(exc) if isinstance(exc, ValueError | OverflowError) else ""
    if detail.startswith(("invalid literal", "could not convert")):
        detail = ""  # Python's wording for "not a number", which the value already shows
    if "timedelta" in detail:
        detail = "the time zone offset must be under 24 hours"
    detail = detail.split(";")[0]
    return f"{shown!r} is not a valid {kind}" + (f" ({_one_line(detail)})" if detail else "")


def _yaml_line(source: str, exc: yaml.YAMLError) -> int:
    """The file line (1-based) of a YAML error; `source` starts on the file's line 2.

    Counted from the error's character index, not PyYAML's line: YAML also breaks lines at
    a lone CR, U+0085, U+2028 and U+2029, which are not line breaks of the file.
    """
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    index = mark.index if mark is not None else getattr(exc, "position", None)
    if not isinstance(index, int):
        return 1
    return source.count("\n", 0, index) + 2


def _problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    if isinstance(exc, yaml.reader.ReaderError):
        problem = f"character #x{exc.character:04x} is not allowed in YAML"
    if not problem:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return _one_line(problem)


def _one_line(text: str) -> str:
    """A message part on one line: line and paragraph breaks shown as spaces."""
    return " ".join(text.splitlines()) if text else text
