"""Hostile input (SPEC §4, §8, §9, §10): every outcome is a contract-valid result or a
CitelineError with a §10 code, never another exception — and a result is a *right* one.

Each test must produce a floor of successful results (the strategies are shaped so that most
requests are valid), and every result is checked against the files themselves with code of
its own: revision, hashes, line ranges inside the file, snippet inside the section's text,
spans sorted, disjoint, on code-point boundaries and covering, lines and context as in the
file, the outline against markdown-it-py run directly. "No crash" alone passes nothing.

Bounded: each test has a fixed max_examples and no deadline, so the file runs in about a
minute. Examples and outcomes per test are printed at the end (run with -s to see them).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import tempfile
import urllib.parse
from collections import Counter
from collections.abc import Callable, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml
from bundles import section_text
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from citeline.engine import CODES, CitelineError, Engine, Limits, Settings
from citeline.engine.answer.present import encode
from citeline.engine.answer.requests import CHOICES, Relevance
from citeline.engine.base.errors import ParseIssue
from citeline.engine.contracts import validate
from citeline.engine.text.analysis import outline_tree
from citeline.lsp.symbols import EMPTY_HEADING, display, document_symbols

TRIED: Counter[str] = Counter()
OUTCOMES: dict[str, Counter[str]] = {}
atexit.register(
    lambda: print(
        "\nfuzz examples and outcomes: "
        + "; ".join(f"{k} {TRIED[k]}: {dict(v)}" for k, v in OUTCOMES.items())
    )
)

FAST = settings(
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
ENGINE = Engine()
SMALL = Settings(limits=Limits(max_response_bytes=4 << 20))
RESERVED = ("index.md", "log.md")

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


def mostly(
    valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """About five valid requests to one hostile one: the results, not only the refusals, get
    checked. (st.one_of gives every branch the same chance however often it is listed, and
    Hypothesis favours the ends of an integer range, so the hostile value sits inside it.)"""
    return st.integers(0, 5).flatmap(lambda i: hostile if i == 3 else valid)


# Words of the fixed bundle (and a few that are not in it), in several spellings.
VOCAB = ["alpha", "Alpha", "ALPHA", "beta", "gamma", "été", "ÉTÉ", "notes", "网关", "apisix"]
VOCAB += ["running", "runs", "run", "Σίσυφος", "σίσυφος", "fine", "ﬁne", "index", "nothing"]
words = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4)
valid_query = st.one_of(
    words.map(" ".join),
    words.map(", ".join),
    st.builds(lambda w, tail: " ".join(w) + tail, words, st.sampled_from(["", " ", "?", "!!"])),
    st.text(st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=12),
)
# The lexical options: profile hybrid runs the embedding model (SPEC §15; a few passages a
# second), tested over real sections by tests/engine/test_semantic_engine.py.
LEXICAL = {k: tuple(x for x in v if x != "hybrid") for k, v in CHOICES.items()}
valid_options = st.fixed_dictionaries(
    {}, optional={k: st.sampled_from(v) for k, v in LEXICAL.items()}
)

search_requests = mostly(
    st.builds(
        lambda q, opts, limit: {"query": q, **opts, **limit},
        valid_query,
        valid_options,
        st.one_of(st.just({}), st.integers(1, 100).map(lambda n: {"limit": n})),
    ),
    request_dicts(
        {
            "query": unicode_text,
            "limit": small_int,
            **{k: st.sampled_from([*v, "bogus"]) for k, v in LEXICAL.items()},
        }
    ),
)
concept_requests = mostly(
    st.builds(
        lambda q, limit: {"query": q, **limit},
        st.one_of(valid_query, st.sampled_from(["a", "/", "b", "notes", "Alpha", "A.M", "."])),
        st.one_of(st.just({}), st.integers(1, 100).map(lambda n: {"limit": n})),
    ),
    request_dicts({"query": unicode_text, "limit": small_int}),
)
regexes = st.one_of(
    st.text(st.sampled_from(list("ab.*+?|()[]{}^$\\dwsSbB-,0123:P<>=!é\n")), max_size=20),
    st.sampled_from(["(a*)*b", "(?i)alpha", "\\p{Han}+", "(?P<x>a)(?P=x)", "a{1000}{1000}", "^$"]),
    unicode_text,
)
valid_regexes = st.sampled_from(
    ["alpha", "^#", "(?i)ALPHA", "\\p{Han}+", "[a-z]+ing", "^$", "é|ï", "a.*a", "^---$", "s$"]
)
lines_requests = mostly(
    st.builds(
        lambda pattern, extra: {**pattern, **extra},
        st.one_of(
            st.builds(lambda p: {"pattern": p, "mode": "regex"}, valid_regexes),
            st.builds(lambda p: {"pattern": p}, st.sampled_from([*VOCAB, "a", "# ", "---"])),
        ),
        st.fixed_dictionaries(
            {},
            optional={
                "case_sensitive": st.booleans(),
                "limit": st.integers(1, 1000),
                "context": st.integers(0, 10),
            },
        ),
    ),
    request_dicts(
        {
            "pattern": st.one_of(unicode_text, regexes),
            "mode": st.sampled_from(["exact", "regex", "semantic", "EXACT"]),
            "case_sensitive": st.one_of(st.booleans(), json_value),
            "limit": small_int,
            "context": small_int,
        }
    ),
)

md_lines = st.one_of(
    st.sampled_from(
        [
            "---",
            "...",
            "--- ",
            "---\t",
            "... \t",
            "----",
            " ---",
            "---\u00a0",
            "title: T",
            "id: x",
            "id: [1, 2",
            "title: {a: b}",
            "# alpha",
            "## Beta *gamma*",
            "#",
            "### #",
            "Setext",
            "===",
            "---",
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
file_bytes = st.one_of(markdown, markdown, markdown, st.binary(max_size=300))
file_names = st.sampled_from(
    ["a.md", "b.markdown", "dir/c.md", "dir/deep/d.MD", "index.md", "log.md", "é ü#%.md", "x.txt"]
)
bundles = st.dictionaries(file_names, file_bytes, min_size=1, max_size=5)

# -- independent oracles ------------------------------------------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def captured(files: Mapping[str, bytes]) -> dict[str, bytes]:
    return {p: d for p, d in files.items() if p.lower().endswith((".md", ".markdown"))}


def searchable(path: str) -> bool:
    return path not in RESERVED


def revision_of(files: Mapping[str, bytes]) -> str:
    """SPEC §2, written out: Go's encoding/json of the sorted records, then SHA-256."""
    records = [{"path": p, "size": len(d), "sha256": sha(d)} for p, d in sorted(files.items())]
    text = json.dumps(records, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return sha(text.encode("utf-8"))


def file_lines(data: bytes) -> list[str]:
    """SPEC §3 lines: LF-delimited, a CR before the LF dropped, a final LF ends the last."""
    text = data.decode("utf-8").removeprefix("\ufeff")
    if not text:
        return []
    parts = text.split("\n")
    if text.endswith("\n"):
        parts.pop()
    ended = len(parts) if text.endswith("\n") else len(parts) - 1  # lines followed by LF
    return [p[:-1] if i < ended and p.endswith("\r") else p for i, p in enumerate(parts)]


def front_matter(lines: list[str]) -> tuple[dict[str, Any], int] | None:
    """(mapping, first body line) per SPEC §3, or None when the file cannot be parsed."""
    # a fence may end in spaces or tabs, nothing else (SPEC §3)
    if not lines or lines[0].rstrip(" \t") != "---":
        return {}, 0
    close = next(
        (i for i in range(1, len(lines)) if lines[i].rstrip(" \t") in ("---", "...")), None
    )
    if close is None:
        return None
    source = "\n".join(lines[1:close])
    try:
        value = yaml.safe_load(source) if source.strip() else {}
    except Exception:  # any failure to load is a parse error (SPEC §3)
        return None
    if value is None:  # only comments, or `null`: an empty mapping (docs/decisions.md)
        value = {}
    return (value, close + 1) if isinstance(value, dict) else None


def concept_of(path: str, data: bytes) -> tuple[str, str] | None:
    """(concept_id, title), or None for an unparsable file."""
    try:
        lines = file_lines(data)
    except UnicodeDecodeError:
        return None
    parsed = front_matter(lines)
    if parsed is None:
        return None
    front, _ = parsed
    cid = front.get("id")
    title = front.get("title")
    return (
        cid if isinstance(cid, str) and cid else path.rsplit(".", 1)[0],
        title if isinstance(title, str) else "",
    )


COMMONMARK = MarkdownIt("commonmark")


def expected_headings(data: bytes) -> list[tuple[int, int]] | None:
    """(0-based line, level) of each heading per markdown-it-py itself, or None when the
    file must be a parse issue."""
    try:
        lines = file_lines(data)
    except UnicodeDecodeError:
        return None
    parsed = front_matter(lines)
    if parsed is None:
        return None
    _, body = parsed
    source = "\n".join(["" for _ in lines[:body]] + [ln.replace("\r", " ") for ln in lines[body:]])
    return [
        (tok.map[0], int(tok.tag[1]))
        for tok in COMMONMARK.parse(source)
        if tok.type == "heading_open" and tok.map is not None
    ]


def check_spans(
    snippet: str, spans: list[dict[str, int]], terms: tuple[str, ...], rel: Relevance
) -> None:
    raw = snippet.encode("utf-8")
    assert len(spans) <= 100
    end = 0
    for span in spans:
        assert end <= span["start"] < span["end"] <= len(raw), spans  # sorted, disjoint
        end = span["end"]
        raw[: span["start"]].decode("utf-8")  # both ends on code-point boundaries
        raw[: span["end"]].decode("utf-8")
    # Covering (SPEC §7): the first occurrence of every term in the snippet is inside a span.
    seen: set[str] = set()
    for token, start, stop in rel.tokenizer.located(snippet):
        if token in terms and token not in seen:
            seen.add(token)
            a = len(snippet[:start].encode("utf-8"))
            b = len(snippet[:stop].encode("utf-8"))
            assert any(s["start"] <= a and b <= s["end"] for s in spans), (token, spans)


def check_search(
    files: Mapping[str, bytes], request: dict[str, Any], result: dict[str, Any]
) -> None:
    from citeline.engine.text.terms import query_terms

    files = captured(files)
    assert result["snapshot_revision"] == revision_of(files)
    assert result["query"] == request["query"]
    rel = Relevance.from_mapping(request)
    terms = query_terms(request["query"], rel.tokenizer)
    hits = result["hits"]
    assert len(hits) <= request.get("limit", 20)
    assert result["total"] >= len(hits)
    assert result["truncated"] == (result["total"] > len(hits))
    # Best first. Under match=any the engine puts more distinct terms first (docs/relevance.md)
    # while SPEC §13 now asks for one scaled score: what both agree on is checked here.
    if rel.match == "all":
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True)
    else:
        for before, after in pairwise(hits):
            if len(before["matched_terms"]) == len(after["matched_terms"]):
                assert before["score"] >= after["score"]
    for hit in hits:
        path = hit["path"]
        assert searchable(path)
        data = files[path]
        assert hit["content_sha256"] == sha(data)
        first, last = hit["line_start"], hit["line_end"]
        assert 1 <= first <= last <= len(file_lines(data))
        assert hit["snippet"] in section_text(data, first, last)
        assert len(hit["snippet"]) <= 512
        assert hit["locator"] == urllib.parse.quote(path, safe="/$&+,:;=@") + f"#L{first}-L{last}"
        matched = hit["matched_terms"]
        assert matched and matched == [t for t in result["terms"] if t in matched]
        if rel.match == "all":
            assert matched == result["terms"]
        check_spans(hit["snippet"], hit["match_spans"], terms, rel)


def clip(line: str) -> str:
    return line if len(line) <= 256 else line[:255] + "…"


def check_lines(
    files: Mapping[str, bytes], request: dict[str, Any], result: dict[str, Any]
) -> None:
    files = captured(files)
    assert result["snapshot_revision"] == revision_of(files)
    matches = result["matches"]
    assert len(matches) <= request.get("limit", 100)
    assert result["total"] >= len(matches)
    assert result["truncated"] == (result["total"] > len(matches))
    order = [(m["path"], m["line"]) for m in matches]
    assert order == sorted(set(order))  # path order, then line order, one match a line
    context = request.get("context", 2)
    for m in matches:
        assert searchable(m["path"])
        lines = file_lines(files[m["path"]])
        n = m["line"]
        assert 1 <= n <= len(lines)
        line = lines[n - 1]
        if len(line) <= 256:
            assert m["text"] == line
        else:
            inner = m["text"].removeprefix("…").removesuffix("…")
            assert len(inner) == 256 and inner in line
        assert 1 <= m["column"] <= len(line) + 1
        if request.get("mode", "exact") == "exact" and request.get("case_sensitive", True):
            assert line.find(request["pattern"]) == m["column"] - 1
        assert m["context"]["before"] == [clip(x) for x in lines[max(0, n - 1 - context) : n - 1]]
        assert m["context"]["after"] == [clip(x) for x in lines[n : n + context]]


def check_concepts(
    files: Mapping[str, bytes], request: dict[str, Any], result: dict[str, Any]
) -> None:
    files = captured(files)
    assert result["snapshot_revision"] == revision_of(files)
    concepts = result["concepts"]
    assert len(concepts) <= request.get("limit", 20)
    assert result["total"] >= len(concepts)
    assert result["truncated"] == (result["total"] > len(concepts))
    ids = [c["concept_id"] for c in concepts]
    assert ids == sorted(ids)
    query = request["query"].casefold()
    for c in concepts:
        assert searchable(c["path"])
        data = files[c["path"]]
        assert c["content_sha256"] == sha(data)
        assert (c["concept_id"], c["title"]) == concept_of(c["path"], data)
        assert query in c["concept_id"].casefold() or query in c["title"].casefold()


def check_outline(data: bytes) -> bool:
    """The outline of one file against markdown-it-py and the SPEC's parse rules; True when
    the file has one (False: it is a parse issue, as it must be)."""
    found = outline_tree(data)
    expected = expected_headings(data)
    if expected is None:
        assert isinstance(found, ParseIssue), found
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            assert found.line == data[: exc.start].count(b"\n") + 1
        return False
    assert not isinstance(found, ParseIssue), found
    lay, heads = found
    assert [(h.line, h.level) for h in heads] == expected
    assert lay.line_count == len(file_lines(data))
    # The editor's outline (lsp/symbols.py): every heading once, in order, nested by level,
    # each range inside its parent's, named by its text or "(empty heading)".
    flat: list[tuple[Any, Any]] = []

    def walk(symbols: list[Any], parent: Any) -> None:
        previous_end = None
        for s in symbols:
            flat.append((s, parent))
            start, end = s.range.start, s.range.end
            assert (start.line, start.character) <= (end.line, end.character)
            sel = s.selection_range
            assert (start.line, 0) == (sel.start.line, sel.start.character)
            assert (sel.end.line, sel.end.character) <= (end.line, end.character)
            if parent is not None:
                assert parent.range.start.line < start.line
                assert (end.line, end.character) <= (
                    parent.range.end.line,
                    parent.range.end.character,
                )
            if previous_end is not None:
                assert previous_end < start.line  # siblings do not overlap
            previous_end = end.line
            walk(s.children or [], s)

    walk(document_symbols(lay, heads, len), None)
    assert [s.range.start.line for s, _ in flat] == [h.line for h in heads]
    assert [s.name for s, _ in flat] == [display(h.text) or EMPTY_HEADING for h in heads]
    assert all("\n" not in s.name and "\r" not in s.name for s, _ in flat)  # one line each
    for (s, parent), h in zip(flat, heads, strict=True):
        assert s.detail == "#" * h.level
        assert parent is None or len(parent.detail) < h.level
    return True


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


def outcome(
    name: str,
    kind: str,
    call: Callable[[], dict[str, Any]],
    check: Callable[[dict[str, Any]], None],
) -> None:
    """Run `call`: a result valid against `kind`.result that passes `check`, or a
    CitelineError of §10."""
    TRIED[name] += 1
    tally = OUTCOMES.setdefault(name, Counter())
    try:
        result = call()
    except CitelineError as err:
        assert err.code in CODES
        validate("error", err.to_json())
        encode(err.to_json())  # the envelope is always serialisable
        tally[err.code] += 1
        return
    validate(f"{kind}.result", result)
    encode(result)
    check(result)
    tally["ok"] += 1


def at_least(name: str, floor: int) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """The decorated property test must give `floor` checked results, not only refusals."""

    def wrap(run: Callable[[], None]) -> Callable[[], None]:
        def test() -> None:
            before = OUTCOMES.setdefault(name, Counter())["ok"]
            run()
            ok = OUTCOMES[name]["ok"] - before
            assert ok >= floor, f"{name}: {ok} results checked, {floor} needed: {OUTCOMES[name]}"

        test.__name__ = run.__name__
        test.__doc__ = run.__doc__
        return test

    return wrap


FIXED_FILES = {
    "a.md": "---\ntitle: Alpha notes\n---\n# Alpha\nalpha beta\n## Gamma\ngamma été\n".encode(),
    "b.md": "# 网关\napisix网关 running runs\nΣίσυφος ﬁne\n".encode(),
    "index.md": b"# Index\nalpha\n",
}
FIXED = make_bundle(FIXED_FILES)

# -- requests against a fixed bundle -----------------------------------------------------------


@at_least("search request", 120)
@FAST
@given(search_requests)
def test_search_any_request(request: Any) -> None:
    outcome(
        "search request",
        "search",
        lambda: ENGINE.search(ENGINE.call(FIXED), request),
        lambda result: check_search(FIXED_FILES, request, result),
    )


@at_least("concepts request", 110)
@FAST
@given(concept_requests)
def test_concepts_any_request(request: Any) -> None:
    # okf's contract (strict): the title is front matter's only, as check_concepts models it
    if isinstance(request, dict) and "strict" not in request:
        request = {**request, "strict": True}
    outcome(
        "concepts request",
        "concepts",
        lambda: ENGINE.concepts(ENGINE.call(FIXED), request),
        lambda result: check_concepts(FIXED_FILES, request, result),
    )


@at_least("lines request", 110)
@FAST
@given(lines_requests)
def test_lines_any_request(request: Any) -> None:
    outcome(
        "lines request",
        "lines",
        lambda: ENGINE.lines(ENGINE.call(FIXED), request),
        lambda result: check_lines(FIXED_FILES, request, result),
    )


@at_least("lines pattern", 60)
@FAST
@given(st.one_of(unicode_text, st.sampled_from(VOCAB)), st.booleans(), st.booleans())
def test_lines_any_pattern_both_modes(pattern: str, regex: bool, case: bool) -> None:
    req = {"pattern": pattern, "mode": "regex" if regex else "exact", "case_sensitive": case}
    outcome(
        "lines pattern",
        "lines",
        lambda: ENGINE.lines(ENGINE.call(FIXED), req),
        lambda result: check_lines(FIXED_FILES, req, result),
    )


@at_least("search options", 120)
@FAST
@given(
    mostly(valid_query, unicode_text),
    st.fixed_dictionaries({k: st.sampled_from(v) for k, v in LEXICAL.items()}),
    st.integers(1, 100),
)
def test_search_every_option_combination(query: str, options: dict[str, str], limit: int) -> None:
    req = {"query": query, "limit": limit, **options}
    outcome(
        "search options",
        "search",
        lambda: ENGINE.search(ENGINE.call(FIXED), req),
        lambda result: check_search(FIXED_FILES, req, result),
    )


@at_least("symbols", 150)
@FAST
@given(
    mostly(st.one_of(valid_query, words.map(lambda w: " ".join(w)[:-1])), unicode_text),
    st.sampled_from([None, {}, {"profile": "recall"}, {"cjk": "bigrams"}]),
)
def test_symbols_any_query(query: str, relevance: Any) -> None:
    """The editor's as-you-type path (workspace/symbol) takes raw text, not a request."""
    name = "symbols"
    TRIED[name] += 1
    tally = OUTCOMES.setdefault(name, Counter())
    try:
        hits = ENGINE.symbols(ENGINE.call(FIXED), query, relevance=relevance)
    except CitelineError as err:
        assert err.code in CODES
        tally[err.code] += 1
        return
    assert len(hits) <= 100
    for before, after in pairwise(hits):  # best first (see check_search on match=any)
        if len(before.matched) == len(after.matched):
            assert before.score >= after.score
    files = captured(FIXED_FILES)
    for hit in hits:
        assert searchable(hit.path)
        assert 1 <= hit.line_start <= hit.line_end <= len(file_lines(files[hit.path]))
        if not any(ch.isalnum() for ch in query):  # no terms: the listing of headings
            assert hit.heading and hit.score == 0.0
    tally["ok"] += 1
    tally["hits"] += len(hits)


# -- arbitrary files ----------------------------------------------------------------------------

FILES = settings(FAST, max_examples=100)


@at_least("search files", 80)  # of ~200 (100 bundles × 2 profiles): seen 112-170 in 9 runs
@FILES
@given(bundles, st.sampled_from(["alpha", "gamma beta", "网关", "title", "h"]), st.booleans())
@example({"a.md": b"---\n# alpha\n---"}, "alpha", True)  # front matter of a comment only
def test_search_arbitrary_files(files: dict[str, bytes], query: str, skip: bool) -> None:
    bundle = make_bundle(files)
    opts = Settings(skip_invalid=skip)
    for profile in ("contract", "recall"):
        req = {"query": query, "profile": profile}

        def check(result: dict[str, Any], req: dict[str, Any] = req) -> None:
            check_search(files, req, result)
            if skip:  # the skipped files are exactly the unparsable ones
                bad = {
                    p
                    for p, d in captured(files).items()
                    if searchable(p) and expected_headings(d) is None
                }
                assert {s["path"] for s in result["skipped"]} == bad

        outcome(
            "search files",
            "search",
            lambda r=req: ENGINE.search(ENGINE.call(bundle, settings=opts), r),
            check,
        )


@at_least("concepts files", 30)  # of 100: about 40-60 are results (seen 39-58)
@FILES
@given(bundles, mostly(st.sampled_from(["a", "é", "dir/", "d", "A.M"]), st.just("")), st.booleans())
def test_concepts_arbitrary_files(files: dict[str, bytes], query: str, skip: bool) -> None:
    bundle = make_bundle(files)
    opts = Settings(skip_invalid=skip)
    req = {"query": query, "strict": True}  # okf's titles, as check_concepts models them
    outcome(
        "concepts files",
        "concepts",
        lambda: ENGINE.concepts(ENGINE.call(bundle, settings=opts), req),
        lambda result: check_concepts(files, req, result),
    )


@at_least("lines files", 100)
@FILES
@given(bundles, mostly(st.sampled_from(["alpha", "^#", "\\r", "(?i)Σ", "a", "[é-ü]"]), regexes))
def test_lines_arbitrary_files(files: dict[str, bytes], pattern: str) -> None:
    bundle = make_bundle(files)
    for mode in ("exact", "regex"):
        req = {"pattern": pattern, "mode": mode, "context": 3}
        outcome(
            "lines files",
            "lines",
            lambda r=req: ENGINE.lines(ENGINE.call(bundle, settings=SMALL), r),
            lambda result, r=req: check_lines(files, r, result),
        )


@at_least("outline files", 90)  # of 300 (100 bundles × 3 queries): seen 129-246
@FILES
@given(bundles)
def test_outline_and_symbols_arbitrary_files(files: dict[str, bytes]) -> None:
    """documentSymbol's outline over arbitrary bytes: the headings markdown-it-py finds
    (after the front matter), at their lines and levels, nested as the editor shows them;
    a parse issue exactly when the SPEC says so. And the symbol listing."""
    TRIED["outline files"] += 1
    tally = OUTCOMES.setdefault("outline files", Counter())
    outlines = [check_outline(data) for data in files.values()]
    tally["outlines"] += sum(outlines)
    tally["parse issues"] += len(outlines) - sum(outlines)
    bundle = make_bundle(files)
    for query in ("", "al", "alpha "):
        try:
            hits = ENGINE.symbols(ENGINE.call(bundle), query)
        except CitelineError as err:
            assert err.code in CODES
            tally[err.code] += 1
            continue
        if query == "":  # the listing: every heading (text or not), of every searchable file
            want = sorted(
                (concept_of(p, d)[0], h.line)
                for p, d in captured(files).items()
                if searchable(p) and expected_headings(d) is not None
                for h in outline_tree(d)[1]  # type: ignore[index]
            )
            assert [(h.concept_id, h.line_start - 1) for h in hits] == [w for w in want][
                : len(hits)
            ]
        tally["ok"] += 1
