"""Hostile input (SPEC §4, §8, §9, §10): every outcome is a contract-valid result or a
CitelineError with a §10 code, never another exception.

Bounded: each test has a fixed max_examples and no deadline, so the file runs in well under a
minute. Examples per test are printed at the end (run with -s to see them).
"""

from __future__ import annotations

import atexit
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.engine import CODES, CitelineError, Engine, Limits, Settings
from citeline.engine.contracts import validate
from citeline.engine.present import encode
from citeline.engine.requests import CHOICES

TRIED: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()
atexit.register(lambda: print(f"\nfuzz examples: {dict(TRIED)}; outcomes: {dict(OUTCOMES)}"))

FAST = settings(
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
ENGINE = Engine()
SMALL = Settings(limits=Limits(max_response_bytes=4 << 20))

# -- strategies -------------------------------------------------------------------------------

surrogate = st.integers(0xD800, 0xDFFF).map(chr)
any_char = st.one_of(
    st.characters(codec=None, exclude_categories=()),  # everything, surrogates included
    st.sampled_from(list("\x00\r\n\t\x0b\x0c\x85\u2028\u2029\ufeff\u200d\u0301ßİıﬁ#*_`[]()\\")),
    surrogate,
)
unicode_text = st.one_of(
    st.text(any_char, max_size=40),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=600),
    st.builds(lambda c, n: c * n, any_char, st.integers(0, 20_000)),  # huge strings
    st.sampled_from(["", " ", "a", "alpha", "Alpha beta", "a" * 513, " ".join("abcdefghij" * 4)]),
)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | unicode_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(unicode_text, inner, max_size=4),
    max_leaves=8,
)
small_int = st.one_of(st.integers(-3, 1_005), st.integers(), st.booleans(), st.floats(), st.none())


def request_dicts(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Mostly well-formed requests with hostile values, some extra keys, some non-objects."""
    known = st.fixed_dictionaries({}, optional={k: v | json_value for k, v in fields.items()})
    extra = st.dictionaries(unicode_text, json_value, max_size=2)
    return st.one_of(
        st.builds(lambda a, b: {**a, **b}, known, extra),
        known,
        known,
        json_value,
    )


search_requests = request_dicts(
    {
        "query": unicode_text,
        "limit": small_int,
        **{k: st.sampled_from([*v, "bogus"]) for k, v in CHOICES.items()},
    }
)
concept_requests = request_dicts({"query": unicode_text, "limit": small_int})
regexes = st.one_of(
    st.text(st.sampled_from(list("ab.*+?|()[]{}^$\\dwsSbB-,0123:P<>=!é\n")), max_size=20),
    st.sampled_from(["(a*)*b", "(?i)alpha", "\\p{Han}+", "(?P<x>a)(?P=x)", "a{1000}{1000}", "^$"]),
    unicode_text,
)
lines_requests = request_dicts(
    {
        "pattern": st.one_of(unicode_text, regexes),
        "mode": st.sampled_from(["exact", "regex", "semantic", "EXACT"]),
        "case_sensitive": st.one_of(st.booleans(), json_value),
        "limit": small_int,
        "context": small_int,
    }
)

md_lines = st.one_of(
    st.sampled_from(
        [
            "---",
            "...",
            "title: T",
            "id: x",
            "id: [1, 2",
            "title: {a: b}",
            "# alpha",
            "## Beta *gamma*",
            "Setext",
            "===",
            "```",
            "    code # not heading",
            "> # quoted heading",
            "- # listed heading",
            "<div>",
            "alpha beta gamma",
            "",
            "\r",
            "Title\r===",
            "# " + "h" * 1100,
            "网关 apisix网关 running runs",
        ]
    ),
    st.text(st.characters(codec="utf-8"), max_size=60),
)
markdown = st.lists(md_lines, max_size=25).flatmap(
    lambda lines: st.sampled_from(["\n", "\r\n"]).map(lambda eol: eol.join(lines).encode())
)
file_bytes = st.one_of(markdown, markdown, st.binary(max_size=300))
file_names = st.sampled_from(
    ["a.md", "b.markdown", "dir/c.md", "dir/deep/d.MD", "index.md", "log.md", "é ü#%.md", "x.txt"]
)
bundles = st.dictionaries(file_names, file_bytes, min_size=1, max_size=5)

# -- harness ----------------------------------------------------------------------------------

_ROOT = tempfile.TemporaryDirectory(prefix="citeline-fuzz-")
atexit.register(_ROOT.cleanup)
_count = iter(range(10**9))


def make_bundle(files: dict[str, bytes]) -> Path:
    root = Path(_ROOT.name) / f"b{next(_count)}"
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    root.mkdir(exist_ok=True)
    return root


def outcome(name: str, kind: str, call: Callable[..., dict[str, Any]]) -> None:
    """Run `call`: a result valid against `kind`.result, or a CitelineError of §10."""
    TRIED[name] += 1
    try:
        result = call()
    except CitelineError as err:
        assert err.code in CODES
        validate("error", err.to_json())
        encode(err.to_json())  # the envelope is always serialisable
        OUTCOMES[err.code] += 1
        return
    validate(f"{kind}.result", result)
    encode(result)
    OUTCOMES["ok"] += 1


FIXED = make_bundle(
    {
        "a.md": "---\ntitle: Alpha notes\n---\n# Alpha\nalpha beta\n## Gamma\ngamma été\n".encode(),
        "b.md": "# 网关\napisix网关 running runs\nΣίσυφος ﬁne\n".encode(),
        "index.md": b"# Index\nalpha\n",
    }
)

# -- requests against a fixed bundle -----------------------------------------------------------


@FAST
@given(search_requests)
def test_search_any_request(request: Any) -> None:
    outcome("search request", "search", lambda: ENGINE.search(FIXED, request))


@FAST
@given(concept_requests)
def test_concepts_any_request(request: Any) -> None:
    outcome("concepts request", "concepts", lambda: ENGINE.concepts(FIXED, request))


@FAST
@given(lines_requests)
def test_lines_any_request(request: Any) -> None:
    outcome("lines request", "lines", lambda: ENGINE.lines(FIXED, request))


@FAST
@given(unicode_text, st.booleans(), st.booleans())
def test_lines_any_pattern_both_modes(pattern: str, regex: bool, case: bool) -> None:
    req = {"pattern": pattern, "mode": "regex" if regex else "exact", "case_sensitive": case}
    outcome("lines pattern", "lines", lambda: ENGINE.lines(FIXED, req))


@FAST
@given(
    unicode_text,
    st.fixed_dictionaries({k: st.sampled_from(v) for k, v in CHOICES.items()}),
    st.integers(1, 100),
)
def test_search_every_option_combination(query: str, options: dict[str, str], limit: int) -> None:
    req = {"query": query, "limit": limit, **options}
    outcome("search options", "search", lambda: ENGINE.search(FIXED, req))


@FAST
@given(unicode_text, st.sampled_from([None, {}, {"profile": "recall"}, {"cjk": "bigrams"}]))
def test_symbols_any_query(query: str, relevance: Any) -> None:
    """The editor's as-you-type path (workspace/symbol) takes raw text, not a request."""
    TRIED["symbols"] += 1
    try:
        hits = ENGINE.symbols(FIXED, query, relevance=relevance)
    except CitelineError as err:
        assert err.code in CODES
        OUTCOMES[err.code] += 1
        return
    assert len(hits) <= 100
    OUTCOMES["ok"] += 1


# -- arbitrary files ----------------------------------------------------------------------------

FILES = settings(FAST, max_examples=100)


@FILES
@given(bundles, st.sampled_from(["alpha", "gamma beta", "网关", "title", "h"]), st.booleans())
def test_search_arbitrary_files(files: dict[str, bytes], query: str, skip: bool) -> None:
    bundle = make_bundle(files)
    opts = Settings(skip_invalid=skip)
    for profile in ("contract", "recall"):
        req = {"query": query, "profile": profile}
        outcome("search files", "search", lambda r=req: ENGINE.search(bundle, r, settings=opts))


@FILES
@given(bundles, st.sampled_from(["a", "", "é", "dir/"]), st.booleans())
def test_concepts_arbitrary_files(files: dict[str, bytes], query: str, skip: bool) -> None:
    bundle = make_bundle(files)
    opts = Settings(skip_invalid=skip)
    outcome(
        "concepts files",
        "concepts",
        lambda: ENGINE.concepts(bundle, {"query": query}, settings=opts),
    )


@FILES
@given(bundles, st.one_of(regexes, st.sampled_from(["alpha", "^#", "\\r", "(?i)Σ"])))
def test_lines_arbitrary_files(files: dict[str, bytes], pattern: str) -> None:
    bundle = make_bundle(files)
    for mode in ("exact", "regex"):
        req = {"pattern": pattern, "mode": mode, "context": 3}
        outcome("lines files", "lines", lambda r=req: ENGINE.lines(bundle, r, settings=SMALL))


@FILES
@given(bundles)
def test_outline_and_symbols_arbitrary_files(files: dict[str, bytes]) -> None:
    """documentSymbol's outline and the symbol listing over arbitrary bytes."""
    TRIED["outline files"] += 1
    for data in files.values():
        Engine.outline(data)  # a ParseIssue or an outline: never raises
    bundle = make_bundle(files)
    for query in ("", "al", "alpha "):
        try:
            ENGINE.symbols(bundle, query)
        except CitelineError as err:
            assert err.code in CODES
