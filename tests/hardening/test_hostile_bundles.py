"""Property tests for issue 14: front matter from YAML's whole surface and file or folder names
from arbitrary bytes, driven through every front (the CLI in both output modes, the language
server, the MCP server). The only outcomes are a contract result or a §10 error, the same on
every front; the servers stay up and keep answering; nothing is written to the bundle.

Bounded for two shared cores: a fixed number of examples, no deadline, no example database.
A floor of results (not only "no crash") is asserted, so that the generators keep reaching
the search itself.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fronts_harness import RawMCP, fingerprint, run_cli, tool_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rpc import RawServer
from yaml_surface import file_names, front_matter, names, titled_front_matter

from citeline.cli.cli import EXIT
from citeline.engine import CODES
from citeline.engine.base.errors import ParseIssue
from citeline.engine.contracts import validate
from citeline.engine.text.frontmatter import FRONT_FIELDS
from citeline.engine.text.layout import Layout, layout
from citeline.engine.text.sections import Structure, structure

BOUNDED = settings(
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)


def document(yaml_text: str) -> bytes:
    return f"---\n{yaml_text}\n---\n# Heading\nalpha body\n".encode()


# -- the loader alone: many examples, PyYAML as the oracle --------------------------------------

STRICTER = (  # what citeline refuses that PyYAML's safe_load would load (or overflow on)
    "collections are nested more than",
    "merge keys (<<)",
    "lone surrogate",
)


def front_source(data: bytes) -> str:
    """The YAML between the fences, found independently of the engine (SPEC §3): a line
    `---` or `...` (spaces or tabs after it or not) inside the generated text closes the
    block early."""
    lines = [line.removesuffix("\r") for line in data.decode("utf-8").split("\n")]
    close = next(i for i in range(1, len(lines)) if lines[i].rstrip(" \t") in ("---", "..."))
    return "\n".join(lines[1:close])


def _pairs_joined(value: str) -> str:
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


LOADER: Counter[str] = Counter()


@settings(BOUNDED, max_examples=250)
@given(yaml_text=front_matter)
def check_front_matter_against_pyyaml(yaml_text: str) -> None:
    data = document(yaml_text)
    found = layout(data)  # never raises
    source = front_source(data)
    try:
        reference = yaml.safe_load(source) if source.strip() else None
        failure = None
    except Exception as exc:  # whatever PyYAML raises: YAMLError, ValueError, RecursionError...
        reference, failure = None, exc
    if isinstance(found, ParseIssue):
        LOADER["parse_issue"] += 1
        assert 1 <= found.line <= data.count(b"\n")
        assert found.reason and "\n" not in found.reason
        found.reason.encode("utf-8")
        if failure is None and (reference is None or isinstance(reference, dict)):
            # PyYAML loaded it: citeline refused it only for one of its own bounds.
            assert any(words in found.reason for words in STRICTER), (found, reference)
        return
    assert isinstance(found, Layout)
    LOADER["loaded"] += 1
    assert failure is None or isinstance(failure, RecursionError), failure
    assert set(found.front) <= set(FRONT_FIELDS)
    for value in found.front.values():
        assert isinstance(value, str)
        value.encode("utf-8")
    if isinstance(reference, dict):
        expected = {k: reference[k] for k in FRONT_FIELDS if isinstance(reference.get(k), str)}
        assert found.front == {k: _pairs_joined(v) for k, v in expected.items()}
    got = structure(data)
    assert isinstance(got, Structure)
    # What a worker sends back is no bigger than the file: nothing an anchor shares travels.
    assert len(pickle.dumps(got)) < 2 * len(data) + 1024


def test_front_matter_loads_or_is_a_parse_issue() -> None:
    LOADER.clear()
    check_front_matter_against_pyyaml()
    print(f"\nfront matter outcomes: {dict(LOADER)}")
    assert LOADER["loaded"] >= 40, LOADER  # a floor: the generator reaches valid YAML
    assert LOADER["parse_issue"] >= 40, LOADER


# -- every front over one bundle folder -----------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile") / "ws"


@pytest.fixture(scope="module")
def fronts(workspace: Path) -> Iterator[tuple[RawServer, RawMCP]]:
    workspace.mkdir()
    (workspace / "start.md").write_text("# Start\nalpha\n")
    lsp = RawServer()
    mcp = None
    try:
        # The fronts' defaults: each search below asks for `strict` (okf's contract, parse
        # errors block), which must then give the same answer through every front.
        lsp.initialize(workspace)
        mcp = RawMCP([sys.executable, "-m", "citeline.cli.cli", "mcp", str(workspace)])
        yield lsp, mcp
    finally:
        lsp.close()
        if mcp is not None:
            mcp.close()


def write_tree(root: Path, files: list[tuple[list[bytes], bytes, bytes]]) -> None:
    """Replace the folder's contents: each file is (folder names, file name, bytes)."""
    base = os.fsencode(root)
    for entry in os.listdir(base):
        path = os.path.join(base, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    for folders, name, data in files:
        folder = os.path.join(base, *folders)
        path = os.path.join(folder, name)
        try:
            os.makedirs(folder, exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        except (FileExistsError, IsADirectoryError, NotADirectoryError):
            continue  # a file and a folder of one name: the first one made stays


contents = st.one_of(
    front_matter.map(document),
    titled_front_matter.map(document),
    titled_front_matter.map(document),
    st.just(b"# Plain\nalpha words\n"),
    st.sampled_from(
        [
            b"Setext\r\nover two\n===\nalpha\n",
            b"# Lone\rCR\nalpha\n",
            b"\xef\xbb\xbf---\ntitle: BOM\n---\nalpha\n",
            b"bad \xff byte alpha\n",
            b"---\ntitle: never closed\nalpha\n",
        ]
    ),
)
trees = st.lists(
    st.tuples(st.lists(names, max_size=2), file_names, contents), min_size=1, max_size=4
)

OUTCOMES: Counter[str] = Counter()
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # C0 but tab, DEL, C1


def escaped(found: re.Match[str]) -> str:
    c = found.group()
    return {"\n": "\\n", "\r": "\\r"}.get(c, f"\\x{ord(c):02x}")


def cli_outcome(workspace: Path) -> tuple[int, bytes, Any]:
    """`citeline search --strict --json` and the human output: they agree on the outcome."""
    argv = ["search", str(workspace), "-q", "alpha", "--strict"]
    as_json = run_cli([*argv, "--json"])
    assert as_json.stderr == b""
    assert as_json.stdout.endswith(b"\n")
    decoded = json.loads(as_json.stdout.decode("utf-8"))
    human = run_cli([*argv, "--color", "never"])
    assert human.code == as_json.code
    if as_json.code in (0, 1):
        validate("search.result", decoded)
        assert human.stderr == b""
        assert human.stdout.decode("utf-8")
    else:
        validate("error", decoded)
        code = decoded["error"]["code"]
        assert code in CODES
        assert as_json.code == EXIT[code]
        line = human.stderr.decode("ascii")  # an ASCII stream: anything else is escaped
        # control characters shown escaped as for a terminal (SPEC §10), the rest as JSON has it
        shown = CONTROL.sub(escaped, decoded["error"]["message"])
        assert line == f"citeline: {code}: {shown}\n".encode("ascii", "backslashreplace").decode(
            "ascii"
        )
        assert human.stdout == b""
    return as_json.code, as_json.stdout, decoded


FRONT_EXAMPLES = 60


ADVISED = ("parse_error", "resource_limit")


def same_error(seen: dict[str, Any], cli: dict[str, Any]) -> bool:
    """The same §10 error. The advice that ends a parse_error or resource_limit message names
    each front's own way out (a flag, a setting, a server restart), so that last sentence
    may differ, and so may the flag a resource_limit names in its details."""
    if seen["code"] != cli["code"]:
        return False
    if seen["code"] not in ADVISED:
        return seen == cli

    def stem(error: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        details = {k: v for k, v in error["details"].items() if k not in ("flag", "setting")}
        return error["message"].rsplit(". ", 1)[0], details

    return stem(seen) == stem(cli)


def through_every_front(
    tree: list[tuple[list[bytes], bytes, bytes]],
    workspace: Path,
    lsp: RawServer,
    mcp: RawMCP,
) -> str:
    """The bundle `tree` searched by every front under `strict` (okf's contract, so that a
    parse error blocks): the outcome ("result" or the error code)."""
    write_tree(workspace, tree)
    before = fingerprint(os.fsencode(workspace))
    code, stdout, decoded = cli_outcome(workspace)
    kind = "result" if code in (0, 1) else decoded["error"]["code"]

    answer = lsp.call(
        "workspace/executeCommand",
        {"command": "citeline.search", "arguments": [{"query": "alpha", "strict": True}]},
        timeout=60,
    )
    if kind == "result":
        assert answer.get("result") == decoded, answer
    else:
        error = answer["error"]
        assert error["code"] == (-32602 if kind == "schema_validation" else -32803)
        assert same_error(error["data"], decoded["error"]), (error, decoded)
    symbols = lsp.call("workspace/symbol", {"query": "alpha"}, timeout=60)
    if kind == "result":
        assert isinstance(symbols["result"], list)
        assert all("\n" not in s["name"] and "\r" not in s["name"] for s in symbols["result"])
    else:  # symbols skip unparsable files (the default), so they may answer
        assert symbols.get("error", {}).get("code") != -32603, symbols

    result = mcp.tool("search_sections", {"query": "alpha", "strict": True})
    assert bool(result.get("isError")) == (kind != "result")
    if kind == "result":
        assert result["structuredContent"] == decoded
    else:
        envelope = json.loads(tool_text(result))
        assert same_error(envelope["error"], decoded["error"]), (envelope, decoded)
        if kind not in ADVISED:
            assert tool_text(result) + "\n" == stdout.decode("utf-8")

    assert fingerprint(os.fsencode(workspace)) == before  # nothing written, by any front
    assert lsp.proc.poll() is None and mcp.proc.poll() is None
    return kind


@settings(BOUNDED, max_examples=FRONT_EXAMPLES)
@given(tree=trees)
def check_every_front(
    tree: list[tuple[list[bytes], bytes, bytes]],
    workspace: Path,
    lsp: RawServer,
    mcp: RawMCP,
) -> None:
    OUTCOMES[through_every_front(tree, workspace, lsp, mcp)] += 1


def test_every_front_answers_hostile_bundles(
    workspace: Path, fronts: tuple[RawServer, RawMCP]
) -> None:
    lsp, mcp = fronts
    OUTCOMES.clear()
    check_every_front(workspace=workspace, lsp=lsp, mcp=mcp)
    total = sum(OUTCOMES.values())
    print(f"\nfront outcomes: {dict(OUTCOMES)}")
    assert total >= FRONT_EXAMPLES * 0.9, OUTCOMES
    # A floor of searches that succeed: over 10 runs they were 24 to 45 of 60, once 12
    # (hypothesis drew many non-UTF-8 names), so a quarter was too tight to be steady.
    assert OUTCOMES["result"] >= total // 6, OUTCOMES
    assert OUTCOMES["parse_error"] + OUTCOMES["bundle_invalid"] >= total // 5, OUTCOMES
    # Still serving after all of that.
    write_tree(workspace, [([], b"last.md", b"# Last\nalpha\n")])
    answer = lsp.call(
        "workspace/executeCommand",
        {"command": "citeline.search", "arguments": [{"query": "alpha"}]},
    )
    assert answer["result"]["total"] == 1
    assert mcp.tool("search_sections", {"query": "alpha"})["structuredContent"]["total"] == 1


# The issue's examples (and the bugs the properties found), through every front.
GOOD = b"# Good\nalpha\n"
REGRESSIONS: list[tuple[str, list[tuple[list[bytes], bytes, bytes]], str]] = [
    ("date_2021_02_30", [([], b"post.md", document("date: 2021-02-30"))], "parse_error"),
    ("timestamp_tag", [([], b"t.md", document('d: !!timestamp "2021-13-45"'))], "parse_error"),
    (
        "nesting_20000",
        [([], b"n.md", document("x: " + "[" * 20_000 + "]" * 20_000))],
        "parse_error",
    ),
    ("bad_binary", [([], b"b.md", document("x: !!binary 'not base64!!'"))], "parse_error"),
    ("bool_maybe", [([], b"b.md", document('x: !!bool "maybe"'))], "parse_error"),
    ("lone_surrogate_title", [([], b"s.md", document('title: "\\ud800"'))], "parse_error"),
    ("folder_not_utf8", [([b"caf\xe9"], b"a.md", GOOD), ([], b"ok.md", GOOD)], "bundle_invalid"),
    ("file_not_utf8", [([], b"\xff.md", GOOD)], "bundle_invalid"),
    ("kelvin_suffix", [([], "h.mar\u212adown".encode(), b"\xff"), ([], b"g.md", GOOD)], "result"),
    ("laughs", [([], b"l.md", document("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]"))], "result"),
    ("setext_and_cr", [([], b"s.md", b"one\rtwo\nthree\n===\nalpha\n")], "result"),
    ("newline_in_name", [([b"a\nb"], b"c\r.md", GOOD)], "result"),
]


@pytest.mark.parametrize(
    ("tree", "expected"), [r[1:] for r in REGRESSIONS], ids=[r[0] for r in REGRESSIONS]
)
def test_issue_examples_through_every_front(
    workspace: Path,
    fronts: tuple[RawServer, RawMCP],
    tree: list[tuple[list[bytes], bytes, bytes]],
    expected: str,
) -> None:
    lsp, mcp = fronts
    assert through_every_front(tree, workspace, lsp, mcp) == expected
