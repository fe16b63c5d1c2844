"""Front matter that PyYAML's safe loader cannot load (SPEC §3): each is a parse_error with
the file's line and a reason, never another exception (issue 14).

The cases cover the whole class the safe constructor can raise besides yaml.YAMLError
(ValueError, AttributeError, IndexError, KeyError from its scalar constructors; RecursionError
from nesting and chained merges), and the documents that would cost time or memory (alias
bombs, merge-key chains), which must stay fast and small.
"""

from __future__ import annotations

import pickle
import time

import pytest

from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.base.errors import ParseIssue
from citeline.engine.index.build import PARALLEL_MIN_BYTES
from citeline.engine.text.frontmatter import MAX_YAML_DEPTH, MAX_YAML_MERGED
from citeline.engine.text.layout import Layout, layout
from citeline.engine.text.sections import Structure, structure


def front(yaml_text: str, body: str = "# H\nalpha\n") -> bytes:
    return f"---\n{yaml_text}\n---\n{body}".encode()


def issue_of(data: bytes) -> ParseIssue:
    found = layout(data)
    assert isinstance(found, ParseIssue), found
    return found


# (id, YAML between the fences, 1-based file line of the error, words of the reason)
BAD = [
    ("date_does_not_exist", "title: T\ndate: 2021-02-30", 3, "'2021-02-30' is not a valid"),
    ("timestamp_tag_month_13", 'when: !!timestamp "2021-13-45"', 2, "month must be in 1..12"),
    ("timestamp_tag_not_a_date", 'when: !!timestamp "soon"', 2, "'soon' is not a valid timestamp"),
    ("timestamp_hour_25", "when: 2001-12-14 25:59:43", 2, "hour must be in 0..23"),
    ("timestamp_offset_99h", "when: 2001-12-14t21:59:43.10-99:00", 2, "time zone offset"),
    ("year_zero", "when: 0000-01-01", 2, "year 0 is out of range"),
    ("binary_not_base64", "x: !!binary 'not base64!!'", 2, "base64"),
    ("binary_not_ascii", "x: !!binary 'é'", 2, "base64"),
    ("int_tag_letters", 'n: !!int "abc"', 2, "'abc' is not a valid int"),
    ("int_tag_empty", 'n: !!int ""', 2, "'' is not a valid int"),
    ("float_tag_empty", 'n: !!float ""', 2, "'' is not a valid float"),
    ("float_tag_letters", 'n: !!float "abc"', 2, "'abc' is not a valid float"),
    ("float_sexagesimal", 'n: !!float "1:"', 2, "'1:' is not a valid float"),
    ("int_sexagesimal", 'n: !!int "1:x"', 2, "'1:x' is not a valid int"),
    ("bool_tag_maybe", 'b: !!bool "maybe"', 2, "'maybe' is not a valid bool"),
    ("implicit_binary_int_underscore", "n: 0b_", 2, "'0b_' is not a valid int"),
    ("implicit_hex_int_underscore", "n: 0x_", 2, "'0x_' is not a valid int"),
    ("int_over_4300_digits", "n: " + "7" * 5000, 2, "not a valid int (Exceeds the limit"),
    ("python_tag", "x: !!python/object:os.system 1", 2, "could not determine a constructor"),
    ("unhashable_key", "a: 1\n? [1, 2]\n: x", 3, "unhashable key"),
    ("control_character", "a: 1\nb: \x07", 3, "character #x0007 is not allowed"),
    ("tag_uri_not_utf8", "x: !<tag:%ff> 1", 2, "can't decode byte 0xff"),
    ("str_tag_on_list", "x: !!str [1]", 2, "expected a scalar node"),
    ("lone_surrogate_title", 'title: "T \\ud800 x"', 2, "lone surrogate \\ud800, which is not"),
    ("lone_surrogate_id", 'a: 1\nid: "i\\udcff"', 3, "the lone surrogate \\udcff"),
    ("reversed_pair", 'title: "\\ude00\\ud83d"', 2, "the lone surrogate \\ude00"),
    ("surrogate_as_U", 'title: "\\U0000d800"', 2, "the lone surrogate \\ud800"),
    ("bad_omap", "x: !!omap [1]", 2, "expected a mapping of length 1"),
    ("deep_flow_lists", "x: " + "[" * 20_000 + "]" * 20_000, 2, "nested more than 100 levels"),
    ("deep_flow_maps", "x: " + "{a: " * 2_000 + "1" + "}" * 2_000, 2, "nested more than 100"),
    (
        "deep_block_maps",
        "".join(" " * i + f"k{i}:\n" for i in range(150)) + " " * 150 + "v",
        MAX_YAML_DEPTH + 2,  # the 101st mapping starts on YAML line 101, file line 102
        "nested more than 100 levels",
    ),
]


@pytest.mark.parametrize(
    ("yaml_text", "line", "words"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_unloadable_front_matter_is_a_parse_issue_with_its_line(
    yaml_text: str, line: int, words: str
) -> None:
    found = issue_of(front(yaml_text))
    assert found.line == line
    assert found.reason.startswith("invalid YAML in front matter: ")
    assert words in found.reason
    assert "\n" not in found.reason and "Traceback" not in found.reason


def test_escaped_surrogate_pair_is_the_character_it_stands_for() -> None:
    # As JSON writes U+1F600; YAML reads each escape alone, PyYAML keeps two surrogates.
    lay = layout(front('title: "\\ud83d\\ude00 smile"\nid: "\\uD83D\\uDE00"'))
    assert isinstance(lay, Layout)
    assert lay.front == {"title": "\U0001f600 smile", "id": "\U0001f600"}


def test_lone_surrogate_title_is_a_parse_error_not_a_crash(make_bundle) -> None:
    """A title escaping a lone surrogate made every UTF-8 answer fail to encode."""
    bundle = make_bundle({"a.md": front('title: "T \\ud800 x"'), "b.md": "# B\nalpha\n"})
    for method in (Engine().search, Engine().concepts):
        with pytest.raises(CitelineError) as err:
            method(
                Call(bundle, Settings()), {"query": "alpha" if method.__name__ == "search" else "t"}
            )
        assert err.value.code == "parse_error"
        assert err.value.details["errors"][0]["line"] == 2
    res = Engine().concepts(Call(bundle, Settings(skip_invalid=True)), {"query": "b"})
    assert [c["path"] for c in res["concepts"]] == ["b.md"]


def test_date_that_does_not_exist_through_search(make_bundle) -> None:
    """The issue's first example, through the engine: a parse_error, then --skip-invalid."""
    bundle = make_bundle(
        {"good.md": "# A\nalpha\n", "post.md": front("title: Post\ndate: 2021-02-30")}
    )
    with pytest.raises(CitelineError) as err:
        Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert err.value.code == "parse_error"
    (problem,) = err.value.details["errors"]
    assert problem["path"] == "post.md"
    assert problem["line"] == 3
    assert "day is out of range for month" in problem["reason"]
    res = Engine().search(Call(bundle, Settings(skip_invalid=True)), {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["good.md"]
    assert res["skipped"] == [problem]


def test_error_line_counts_file_lines_not_yaml_lines() -> None:
    # YAML breaks lines at a lone CR and U+2028; the file does not (SPEC §3 "Lines").
    assert issue_of(front("a: 1\rb: 2\u2028c: 3\nd: ]")).line == 3
    assert issue_of(front("a: 1\r\nb: ]\r\nc: 2")).line == 3  # CRLF is one line end


def test_nesting_up_to_the_bound_loads() -> None:
    inner = MAX_YAML_DEPTH - 1  # lists inside the root mapping
    lay = layout(front("title: Deep\nx: " + "[" * inner + "1" + "]" * inner))
    assert isinstance(lay, Layout)
    assert lay.front == {"title": "Deep"}
    deeper = issue_of(front("title: Deep\nx: " + "[" * (inner + 1) + "]" * (inner + 1)))
    assert (deeper.line, deeper.reason) == (
        3,
        f"invalid YAML in front matter: collections are nested more than {MAX_YAML_DEPTH} "
        "levels deep",
    )


# -- documents that would cost time or memory -------------------------------------------------


def laughs(levels: int, fan: int = 10) -> str:
    """The "billion laughs": fan**levels leaves through aliases of aliases."""
    out = ["a0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    for i in range(1, levels + 1):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(out) + "\ntitle: Laughs"


def merge_chain(length: int) -> str:
    """Each mapping merges the one before: quadratic copying without a bound."""
    out = ["m0: &m0 {k0: 0}"]
    out += [f"m{i}: &m{i} {{<<: [*m{i - 1}], k{i}: {i}}}" for i in range(1, length)]
    return "\n".join(out) + "\ntitle: Chain"


def test_billion_laughs_is_loaded_in_linear_time_and_not_kept() -> None:
    started = time.monotonic()
    lay = layout(front(laughs(12)))  # 10**12 leaves if anything expanded it
    assert time.monotonic() - started < 2.0
    assert isinstance(lay, Layout)
    assert lay.front == {"title": "Laughs"}  # only the fields the engine reads are held


def test_structure_sent_to_workers_holds_only_title_and_id() -> None:
    """engine/index/parallel.py pickles Structure objects: nothing large or recursive travels."""
    data = front(laughs(12) + "\nid: lol\nrecursive: &r [*r]\nself: &s {me: *s}")
    found = structure(data)
    assert isinstance(found, Structure)
    assert found.front == {"title": "Laughs", "id": "lol"}
    assert len(pickle.dumps(found)) < 1024


def test_non_string_title_and_id_are_not_kept() -> None:
    lay = layout(front("title: [1, 2]\nid: 7\nother: x"))
    assert isinstance(lay, Layout)
    assert lay.front == {}


def test_merge_chain_is_bounded() -> None:
    started = time.monotonic()
    found = issue_of(front(merge_chain(2_000)))
    assert time.monotonic() - started < 3.0
    assert f"merge keys (<<) copy more than {MAX_YAML_MERGED:,} entries" in found.reason
    assert 2 < found.line < 2_002
    short = layout(front(merge_chain(50)))
    assert isinstance(short, Layout) and short.front == {"title": "Chain"}


def test_merges_chained_through_aliases_beyond_the_nesting_bound() -> None:
    # The anchors sit side by side in one list (shallow text), each merging the one before;
    # merging the last one recursed once per anchor and overflowed the stack.
    chain = ", ".join(f"&a{i} {{<<: *a{i - 1}, k{i}: 1}}" for i in range(2, 1_000))
    found = issue_of(front(f"list: [&a1 {{k1: 1}}, {chain}]\nb: {{<<: *a999}}"))
    assert found.line == 2
    assert "chained more than 100 levels deep" in found.reason


def test_self_merge_loads_like_pyyaml() -> None:
    lay = layout(front("a: &a {<<: *a, k: 1}\ntitle: Self"))
    assert isinstance(lay, Layout) and lay.front == {"title": "Self"}


def test_unexpected_loader_failure_is_still_a_parse_issue(monkeypatch) -> None:
    """The net under the loader: any other exception is a parse issue on the fence line."""
    import citeline.engine.text.frontmatter as lay_mod

    def boom(*args: object, **kwargs: object) -> object:
        raise MemoryError("simulated")

    monkeypatch.setattr(lay_mod.yaml, "load", boom)
    found = issue_of(front("title: T"))
    assert found.line == 1
    assert found.reason == "front matter cannot be loaded (MemoryError: simulated)"


def test_bad_front_matter_parsed_in_worker_processes(make_bundle) -> None:
    """The same parse errors when structures are computed by the worker pool."""
    filler = ("# Filler\n" + "words " * 20_000 + "\n").encode()
    files: dict[str, bytes] = {
        f"fill{i}.md": filler for i in range(PARALLEL_MIN_BYTES // len(filler) + 2)
    }
    files["bad-date.md"] = front("date: 2021-02-30")
    files["deep.md"] = front("x: " + "[" * 5_000 + "]" * 5_000)
    files["laughs.md"] = front(laughs(9))
    settings = Settings(skip_invalid=True)
    bundle = make_bundle(files)
    pooled = Engine(workers=2)
    try:
        res = pooled.search(pooled.call(bundle, settings=settings), {"query": "alpha"})
    finally:
        pooled.close()
    alone = Engine().search(Call(bundle, settings), {"query": "alpha"})
    assert res == alone
    assert [s["path"] for s in res["skipped"]] == ["bad-date.md", "deep.md"]
    assert [h["path"] for h in res["hits"]] == ["laughs.md"]


def test_front_matter_over_a_mebibyte_is_a_parse_issue() -> None:
    """Bounded time: the pure-Python loader reads about 1 MB/s."""
    from citeline.engine.text.frontmatter import MAX_FRONT_MATTER_BYTES

    big = "title: " + "x" * MAX_FRONT_MATTER_BYTES
    found = issue_of(front(big))
    assert found.line == 1 and "at most 1,048,576 are read" in found.reason
    just = "title: " + "x" * (MAX_FRONT_MATTER_BYTES - len("title: ") - 1)
    assert not isinstance(layout(front(just)), ParseIssue)
