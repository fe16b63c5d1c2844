"""Hypothesis strategies for issue 14: front matter drawn from YAML's whole surface (plain,
quoted and escaped scalars, every core tag and some foreign ones, timestamps in and out of
range, numbers in every base and of any size, binary, anchors and aliases (defined or not),
merge keys, sets and ordered maps, deep flow and block nesting, huge scalars, billion laughs,
raw text), and file or folder names made of arbitrary bytes."""

from __future__ import annotations

import base64
import json

from hypothesis import strategies as st

PLAIN = [
    "alpha",
    "Title words",
    "yes",
    "No",
    "on",
    "off",
    "null",
    "~",
    "true",
    "FALSE",
    "0",
    "-0",
    "+12",
    "0b101",
    "0b_",
    "0x_",
    "0x1F",
    "0o17",
    "017",
    "1_000",
    "1:20:30",
    "-1:20",
    "1:",
    "190:20:30.15",
    "._",
    ".5",
    "1e400",
    "-.inf",
    ".NaN",
    "=",
    "<<",
    "-",
    "?",
    "|",
    ">",
    "%x",
    "@x",
    "`x",
    "'",
    '"',
    "a: b",
    "a #comment",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&",
    "*",
    "!",
    "é",
    "网关",
    "\u2028",
    "\x85",
]

ESCAPED = [
    r'"\ud800"',
    r'"\udcff tail"',
    r'"\ud83d\ude00 smile"',
    r'"\U0001F600"',
    r'"\U0000d800"',
    r'"\x41\x00"',
    r'"\N\_\L\P"',
    r'"\z"',
    r'"\u12"',
    r'"\
 continued"',
    r"'it''s'",
]

TAGS = [
    "!!str",
    "!!int",
    "!!float",
    "!!bool",
    "!!null",
    "!!timestamp",
    "!!binary",
    "!!set",
    "!!omap",
    "!!pairs",
    "!!seq",
    "!!map",
    "!!merge",
    "!!value",
    "!!python/object:os.system",
    "!!python/name:os.system",
    "!local",
    "!",
    "!<tag:yaml.org,2002:str>",
    "!<tag:%ff>",
    "!<!>",
]

ANCHORS = ["a0", "a1", "a2"]


def _timestamp(y: int, mo: int, d: int, time: str | None) -> str:
    return f"{y:04d}-{mo:02d}-{d:02d}" + (time or "")


timestamps = st.builds(
    _timestamp,
    st.integers(0, 9999),
    st.integers(0, 19),
    st.integers(0, 39),
    st.one_of(
        st.none(),
        st.builds(
            "t{:02d}:{:02d}:{:02d}{}{}".format,
            st.integers(0, 29),
            st.integers(0, 59),
            st.integers(0, 59),
            st.sampled_from(["", ".1", ".123456789"]),
            st.sampled_from(["", "Z", "+05:30", "-99:00", " -23:59", "+24"]),
        ),
    ),
)

binaries = st.one_of(
    st.binary(max_size=30).map(lambda b: "!!binary " + base64.b64encode(b).decode()),
    st.sampled_from(
        ["!!binary 'not base64!!'", "!!binary 'é'", "!!binary ''", "!!binary |\n  QQ=="]
    ),
)

scalars = st.one_of(
    st.sampled_from(PLAIN),
    st.sampled_from(ESCAPED),
    timestamps,
    st.text(st.characters(exclude_categories=("Cs",)), max_size=20).map(json.dumps),
    st.text(max_size=12).map(lambda t: "'" + t.replace("'", "''") + "'"),
    st.text("0123456789_", min_size=1, max_size=12),
    st.integers(4290, 4400).map(lambda n: "7" * n),  # around the int() digit limit
    st.integers(0, 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    binaries,
    st.integers(2_000, 30_000).map(lambda n: '"' + "huge " * (n // 5) + '"'),  # large scalar
)


def _flow_seq(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _flow_map(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


keys = st.one_of(
    st.sampled_from(["title", "id", "x", "date", "<<", "=", "? [1, 2]", "? {a: 1}", "[1]", "1"]),
    scalars,
)
aliases = st.sampled_from(ANCHORS).map(lambda a: "*" + a)

nodes = st.recursive(
    st.one_of(scalars, aliases),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(_flow_seq),
        st.lists(st.tuples(keys, inner), max_size=4).map(_flow_map),
        st.tuples(st.sampled_from(TAGS), inner).map(" ".join),
        st.tuples(st.sampled_from(ANCHORS), inner).map(lambda p: f"&{p[0]} {p[1]}"),
    ),
    max_leaves=12,
)


def _nested_flow(depth: int, kind: str) -> str:
    if kind == "[":
        return "[" * depth + "1" + "]" * depth
    return "{a: " * depth + "1" + "}" * depth


def _nested_block(depth: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(depth)) + " " * depth + "leaf"


def _laughs(levels: int) -> str:
    out = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        out.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(out)


def _merge_chain(length: int) -> str:
    out = ["m0: &m0 {k0: 0}"]
    out += [f"m{i}: &m{i} {{<<: [*m{i - 1}], k{i}: {i}}}" for i in range(1, length)]
    return "\n".join(out)


entries = st.one_of(
    st.tuples(keys, nodes).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.tuples(st.sampled_from(["title", "id"]), scalars).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.builds(
        lambda depth, kind: "deep: " + _nested_flow(depth, kind),
        st.integers(0, 130),
        st.sampled_from("[{"),
    ),
    st.integers(90, 110).map(lambda depth: "block:\n" + _nested_block(depth)),
    st.integers(1, 14).map(_laughs),
    st.integers(2, 450).map(_merge_chain),
    st.sampled_from(
        [
            "base: &a0 {x: 1, title: Merged}\nchild:\n  <<: *a0\n  y: 2",
            "<<: {title: From merge}",
            "<<: [*a0, *a1]",
            "self: &a2 {<<: *a2}",
            "rec: &a1 [*a1]",
            "set: !!set {a, b, ? c}",
            "omap: !!omap [a: 1, b: 2]",
            "pairs: !!pairs [a: 1, a: 2]",
            "---",
            "...",
            "%YAML 1.1",
            "%TAG ! tag:example.com,2000:",
            "- item",
            "\t tab: indented",
            "title: |\n  two\n  lines",
            "title: >-\n  folded\n  text",
            "title: 'multi\n  line'",
        ]
    ),
    st.text(max_size=40),  # anything at all
)

front_matter = st.lists(entries, max_size=6).map("\n".join)


# -- names from arbitrary bytes -------------------------------------------------------------------


def _allowed(name: bytes) -> bool:
    return bool(name) and b"/" not in name and b"\0" not in name and name not in (b".", b"..")


names = st.one_of(
    st.sampled_from([b"a", b"B", b"notes", b"index", b"log", b"sub dir", b"x-y_z"]),
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12).map(
        lambda t: t.encode("utf-8")
    ),
    st.binary(min_size=1, max_size=16),
).filter(_allowed)

suffixes = st.sampled_from(
    [b".md", b".md", b".MD", b".Markdown", b".markdown", b".mar\xe2\x84\xaadown", b".txt", b""]
)

file_names = st.builds(lambda stem, suffix: stem[:200] + suffix, names, suffixes).filter(_allowed)

# Front matter whose title and id are any scalar: what reaches results (concept titles, ids).
titled_front_matter = st.builds(
    lambda title, ident, rest: f"title: {title}\nid: {ident}\n{rest}",
    st.one_of(st.sampled_from(ESCAPED), scalars),
    st.one_of(st.sampled_from(ESCAPED), scalars),
    st.lists(entries, max_size=3).map("\n".join),
)
