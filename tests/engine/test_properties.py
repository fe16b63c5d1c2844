"""Property-based tests: §7 span guarantees, section structure, verbatim snippets, revision."""

from __future__ import annotations

import hashlib
import shutil
import unicodedata
from itertools import pairwise

from bundles import section_text
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.snippets import MAX_SPANS, fold, snippet
from citeline.engine.text.analysis import analyse
from citeline.engine.text.layout import Layout, layout
from citeline.engine.text.sections import headings
from citeline.engine.text.terms import Tokenizer, query_terms

TOK = Tokenizer()
FAST = settings(max_examples=150, deadline=None)
WITH_DIRS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

WORDS = ["a", "ab", "B", "é", "e\u0301", "ss", "ß", "ẞ", "İ", "i", "数据", "网关", "𝒳", "ﬁ", "σ"]
WORDS += ["Σ", "ς", "１２", "x1", "don't", "foo_bar", "ǅ", "\u0301"]
PIECES = [*WORDS, " ", "  ", "\n", "\r\n", "\r", "\t", ".", ",", "-", "#", "\u2028", "\f", "😀"]
text_st = st.lists(
    # (decoded UTF-8 holds no lone surrogates: st.characters() makes one now and then)
    st.one_of(
        st.sampled_from(PIECES),
        st.characters(exclude_categories=["Cs"]),
        st.text(max_size=3),
    ),
    max_size=250,
).map("".join)
query_st = st.lists(
    st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=4)), min_size=1, max_size=6
)


def is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM"


def runs(text: str) -> list[tuple[int, int]]:
    """Maximal runs of L*/N*/M* code points, found by scanning categories directly."""
    out, start = [], None
    for i, ch in enumerate(text):
        if is_word_char(ch):
            if start is None:
                start = i
        elif start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(text)))
    return out


def words_of(run: str) -> list[str]:
    norm = unicodedata.normalize("NFC", run.casefold())
    return ["".join(text[a:b]) for text in [norm] for a, b in runs(norm)]


def byte_range(text: str, a: int, b: int) -> tuple[int, int]:
    start = len(text[:a].encode("utf-8"))
    return start, start + len(text[a:b].encode("utf-8"))


def terms_for(words: list[str]) -> tuple[str, ...]:
    query = " ".join(words)
    assume(len(query) <= 512 and any(unicodedata.category(c)[0] in "LN" for c in query))
    terms = query_terms(query)
    assume(terms)
    return terms


@FAST
@given(text_st, query_st)
def test_span_guarantees(text: str, words: list[str]) -> None:
    terms = terms_for(words)
    snip = snippet(text, terms, TOK)
    shown, spans = snip.text, list(snip.spans)
    raw = shown.encode("utf-8")

    # verbatim window of at most 512 code points
    assert shown in text
    assert len(shown) <= 512
    # sorted, disjoint, non-empty, at most 100, on code-point boundaries
    assert len(spans) <= MAX_SPANS
    for a, b in spans:
        assert 0 <= a < b <= len(raw)
        raw[:a].decode("utf-8")
        raw[a:b].decode("utf-8")
    for (_, end), (start, _) in pairwise(spans):
        assert end <= start
    # idempotent
    assert fold(spans) == spans
    # independent of the order of the query's words
    for other in (tuple(reversed(terms)), tuple(sorted(terms))):
        again = snippet(text, other, TOK)
        assert again.text == shown and list(again.spans) == spans
    assert snippet(text, terms_for(list(reversed(words))), TOK).spans == snip.spans

    # covering: the first occurrence of every term in the snippet lies inside a span
    first: dict[str, tuple[int, int]] = {}
    for a, b in runs(shown):
        for w in words_of(shown[a:b]):
            if w in terms and w not in first:
                first[w] = byte_range(shown, a, b)
    for w, (a, b) in first.items():
        assert any(s <= a and b <= e for s, e in spans), (w, (a, b), spans)
    # and nothing else: every span holds a query term
    for s, e in spans:
        assert set(TOK.tokens(raw[s:e].decode())) & set(terms)
    budget = max(1, 100 // len(terms))
    occurrences = {t: 0 for t in terms}
    for a, b in runs(shown):
        for w in words_of(shown[a:b]):
            if w in occurrences:
                occurrences[w] += 1
    assert len(spans) <= sum(min(n, budget) for n in occurrences.values())
    assert bool(spans) == bool(first)


@FAST
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)), max_size=40))
def test_fold_properties(pairs: list[tuple[int, int]]) -> None:
    ranges = [(a, a + n) for a, n in pairs]
    out = fold(ranges)
    assert fold(out) == out
    for a, b in out:
        assert a < b
    for (_, end), (start, _) in pairwise(out):
        assert end <= start

    def points(rs):
        return {p for a, b in rs for p in range(a, b)}

    assert points(out) == points(ranges)
    # every output range is the union of the inputs it contains (touching ones stay apart)
    for a, b in out:
        inside = [(x, y) for x, y in ranges if a <= x and y <= b]
        assert min(x for x, _ in inside) == a and max(y for _, y in inside) == b


# Unicode White_Space (PropList.txt)
WHITE_SPACE = set("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)
}

LINES = [
    "# Heading one",
    "## Sub *em* `code`",
    "text words here",
    "",
    "   ",
    "\t\u3000\u00a0",
    "\u200b",
    "```",
    "~~~",
    "    # indented",
    "<!--",
    "# in comment? -->",
    "-->",
    "<div>",
    "</div>",
    "> # quoted",
    "- # item",
    "Setext",
    "===",
    "---",
    "Title\r===",
    "a\u2028# b",
    "\f# ff",
    "trailing cr\r",
    "# [ref][r]",
    "[r]: /url",
    "数据 网关",
    "Straße ẞ İ",
    "...",
    "--- ",
    "---\t",
    "... ",
]


def build_doc(front: bool, lines: list[str], crlf: bool, bom: bool, final: bool) -> str:
    if not front and lines and lines[0].rstrip(" \t") == "---":
        lines = ["text", *lines]  # an opening "---" without a close is a parse error
    return (
        ("\ufeff" if bom else "")
        + ("---\ntitle: T\n---\n" if front else "")
        + ("\r\n" if crlf else "\n").join(lines)
        + ("\n" if final else "")
    )


doc_st = st.builds(
    build_doc,
    st.booleans(),
    st.lists(st.sampled_from(LINES), max_size=30),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)


@FAST
@given(doc_st)
def test_sections_never_overlap_and_stay_inside_the_file(doc: str) -> None:
    data = doc.encode("utf-8")
    lay = layout(data)
    assert isinstance(lay, Layout)
    a = analyse(data)
    assert a.issue is None
    heading_lines = {h.line for h in headings(lay)}
    covered: set[int] = set()
    prev_last = lay.body_line - 1
    for i, sec in enumerate(a.sections):
        assert prev_last < sec.first <= sec.last < lay.line_count
        prev_last = sec.last
        covered.update(range(sec.first, sec.last + 1))
        if sec.first in heading_lines:
            assert sec.level > 0
        else:  # only the preamble may start elsewhere, right after front matter
            assert i == 0 and sec.first == lay.body_line and sec.heading == ""
        assert set(lay.span_text(sec.first, sec.last)) - WHITE_SPACE
    assert heading_lines <= {s.first for s in a.sections}
    for line in range(lay.body_line, lay.line_count):
        if line not in covered:
            assert not set(lay.line(line)) - WHITE_SPACE


@WITH_DIRS
@given(doc_st, doc_st, st.data())
def test_snippets_are_verbatim_at_stated_lines(make_bundle, doc1: str, doc2: str, data) -> None:
    files = {"one.md": doc1.encode(), "sub dir/two.md": doc2.encode()}
    tokens = sorted(set(TOK.tokens(doc1 + " " + doc2)) - {"t"})
    assume(tokens)
    words = data.draw(st.lists(st.sampled_from(tokens), min_size=1, max_size=2))
    bundle = make_bundle(files)
    res = Engine().search(Call(bundle, Settings()), {"query": " ".join(words), "limit": 100})
    assert res["total"] == len(res["hits"])
    for hit in res["hits"]:
        raw = (bundle / hit["path"]).read_bytes()
        assert hit["content_sha256"] == hashlib.sha256(raw).hexdigest()
        text = section_text(raw, hit["line_start"], hit["line_end"])
        assert hit["snippet"] in text
        assert len(hit["snippet"]) == min(512, len(text)) or text.endswith(hit["snippet"])
        shown = hit["snippet"].encode()
        for span in hit["match_spans"]:
            piece = shown[span["start"] : span["end"]].decode()
            assert set(TOK.tokens(piece)) & set(res["terms"])


name_st = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('abcXYZ019 -_#%&<>\u2028\u2029\x01\x1f\x7f\t\n\\"éß数😀')),
        st.characters(exclude_characters="/\x00", exclude_categories=("Cs",)),
    ),
    min_size=1,
    max_size=12,
).filter(lambda n: not n.startswith(".") and len((n + ".md").encode()) < 200)


def go_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20 or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@WITH_DIRS
@given(st.dictionaries(name_st, st.binary(max_size=40), min_size=1, max_size=6), st.data())
def test_revision_unchanged_when_copied(make_bundle, tmp_path_factory, contents, data) -> None:
    files = {f"{name}.md": body for name, body in contents.items()}
    if data.draw(st.booleans()):
        files = {f"d {i}/{k}": v for i, (k, v) in enumerate(files.items())}
    bundle = make_bundle(files)
    rev = Engine().capture(Call(bundle, Settings())).revision
    records = ",".join(
        f'{{"path":{go_string(p)},"size":{len(files[p])},'
        f'"sha256":"{hashlib.sha256(files[p]).hexdigest()}"}}'
        for p in sorted(files)
    )
    assert rev == hashlib.sha256(f"[{records}]".encode()).hexdigest()
    copy = tmp_path_factory.mktemp("copy") / "elsewhere"
    shutil.copytree(bundle, copy)
    assert Engine().capture(Call(copy, Settings())).revision == rev
