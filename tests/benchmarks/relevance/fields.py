"""Issue 52, phase 1: what lifts `recall` when a section's words are read by block kind.

Run by hand from the repository root:

    python tests/benchmarks/relevance/fields.py > fields.json        # every set; tables on stderr
    python tests/benchmarks/relevance/fields.py nuxt til              # some sets
    python tests/benchmarks/relevance/fields.py --save   # also saved under results/
    python tests/benchmarks/relevance/fields.py --markdown tests/benchmarks/results/<file>.json

For each judged set it asks today's engine, through its public face only (`citeline.engine`
Engine.search, profile `recall`, limit 100), for a candidate pool per question, and measures
the pool's recall (is a judged answer in it). It then re-scores the pool with features read
from each section's markdown-it tokens, split into fields (heading, title, outline, prose,
list items, table cells, link labels, link destinations, code, inline code, HTML, MDC/include
directives), under many variants at once. Collection statistics (df, N, per-field mean
lengths) come from every Markdown file of the corpus, parsed once per process, so a re-scored
ranking is what an engine that indexed these fields would compute over that pool.

The harness is independent of the engine's internals (it survives issue 50's moves): its
tokeniser follows SPEC §4 and §13 (case folding, NFC, L/N/M runs, CJK bigrams, identifier
parts, Snowball English stems), which is close to, not byte-identical with, the engine's.
That is why the table has two baselines: `recall (engine)`, the engine's own order, and
`base`, the re-scorer with every field weighing what the engine weighs today (SPEC §5's
weights, recall's k1/b, coordination, heading bonus, stems + words as typed). Variants
differ from `base` in one thing each, then in combination.

Held-out queries are reported only as aggregates; --explain lists dev misses only.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import snowballstemmer
from locate import bundle_path
from markdown_it import MarkdownIt

from citeline.engine import Engine, Limits, Settings

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"
ALL_SETS = ("en", "zh", "tldr", "ref", "cmd", "nuxt", "til", "fastapi")
NEW_SETS = ("nuxt", "til", "fastapi")
POOL = 100  # SPEC §4's largest limit
K = 10
Hit = tuple[str, int]

# -- tokenising (SPEC §4, §13) ----------------------------------------------------------------


@lru_cache(maxsize=1)
def _word_re() -> re.Pattern[str]:
    ranges: list[str] = []
    start = prev = -2
    for cp in range(0x110000):
        if unicodedata.category(chr(cp))[0] in "LNM":
            if cp != prev + 1:
                if start >= 0:
                    ranges.append(_range(start, prev))
                start = cp
            prev = cp
    ranges.append(_range(start, prev))
    return re.compile("[" + "".join(ranges) + "]+")


def _range(lo: int, hi: int) -> str:
    return f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"


CJK = re.compile(
    "[\u1100-\u11ff\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+"
)
HIRAGANA = re.compile("[\u3040-\u309f]")
HANGUL = re.compile("[\uac00-\ud7af]")
ASCII_JOIN = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z][0-9]|[0-9][A-Za-z]")
ID_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing would should could ought a an the and but if or because as until while of
    at by for with about against between into through during before after above below to
    from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very""".split()  # noqa: SIM905
)
_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=500_000)
def stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def norm(text: str) -> str:
    return unicodedata.normalize("NFC", text.casefold())


@lru_cache(maxsize=500_000)
def run_tokens(run: str) -> tuple[tuple[str, int], ...]:
    """One run of the original text → (token, chain id) pairs; the chain id groups a CJK
    stretch's bigrams (0 = not a chain)."""
    out: list[tuple[str, int]] = []
    if run.isascii() and ASCII_JOIN.search(run):
        out.append((run.lower(), 0))
        out.extend((p.lower(), 0) for p in ID_PART.findall(run))
        return tuple(out)
    word = norm(run)
    pos = 0
    chain = 1
    for m in CJK.finditer(word):
        if m.start() > pos:
            out.append((word[pos : m.start()], 0))
        s = m.group()
        if len(s) == 1:
            out.append((s, 0))
        else:
            out.extend((s[i : i + 2], chain) for i in range(len(s) - 1))
            chain += 1
        pos = m.end()
    if pos < len(word):
        out.append((word[pos:], 0))
    return tuple(out)


def tokens(text: str) -> list[str]:
    return [t for run in _word_re().findall(text) for t, _ in run_tokens(run)]


# Korean particles and endings a question glues to a noun (`파일을`, `설정에서`); Japanese
# particles sit inside a CJK run between a katakana/kanji word and the next.
KO_PARTICLES = sorted(
    "을 를 이 가 은 는 에 에서 으로 로 의 와 과 도 만 하기 하는 하려면 하는법 방법".split(),  # noqa: SIM905
    key=len,
    reverse=True,
)
JA_SPLIT = re.compile("[\u3040-\u309f]+")


@dataclass(frozen=True)
class Term:
    text: str  # typed form (token)
    m: float  # chain weight
    stop: bool
    word: int  # index of the typed word, for proximity


def query_terms(query: str, ko_particles: bool = False, ja_split: bool = False) -> list[Term]:
    out: dict[str, Term] = {}
    for w, run in enumerate(_word_re().findall(query)):
        pieces = [run]
        if ja_split and HIRAGANA.search(run) and CJK.fullmatch(run):
            # split a Japanese run at its hiragana (particles, okurigana) when it also has
            # katakana or kanji: `ファイルをアップロード` → `ファイル`, `アップロード`
            parts = [p for p in JA_SPLIT.split(run) if p]
            if parts:
                pieces = parts
        if ko_particles and HANGUL.search(run):
            for p in KO_PARTICLES:
                if run.endswith(p) and len(run) - len(p) >= 2:
                    pieces = [run[: -len(p)]]
                    break
        for piece in pieces:
            toks = run_tokens(piece)
            chains = Counter(c for _, c in toks if c)
            for t, c in toks:
                if t not in out:
                    m = 1 / chains[c] if c else 1.0
                    out[t] = Term(t, m, t in STOP_WORDS, w)
    return list(out.values())


# -- sections and fields from markdown-it tokens ------------------------------------------------

FIELDS = (
    "heading",
    "title",
    "outline",
    "prose",
    "list",
    "table",
    "label",
    "dest",
    "code",
    "inline",
    "html",
    "directive",
)
ANCHOR = re.compile(r"\{\s*#[^}]*\}")
DIRECTIVE = re.compile(r"(?m)^\s*::+[\w-]*.*$|:[\w-]+\{[^}]*\}|\{\*[^}]*\*\}|\{\{[^}]*\}\}")
MD = MarkdownIt("commonmark").enable("table")


@dataclass
class Section:
    path: str
    line: int  # 1-based heading line (or first line of a preamble)
    level: int
    tf: dict[str, Counter[str]] = field(default_factory=dict)
    seq: list[str] = field(default_factory=list)  # heading + body tokens in order

    def add(self, where: str, text: str) -> None:
        if where not in ("directive", "dest", "html"):
            for m in DIRECTIVE.finditer(text):
                self.add("directive", m.group())
            text = DIRECTIVE.sub(" ", text)
        if where == "heading":
            for m in ANCHOR.finditer(text):
                self.add("dest", m.group())
            text = ANCHOR.sub(" ", text)
        toks = tokens(text)
        if not toks:
            return
        self.tf.setdefault(where, Counter()).update(toks)
        if where not in ("title", "outline"):
            self.seq.extend(toks)

    def length(self, f: str) -> int:
        c = self.tf.get(f)
        return sum(c.values()) if c else 0


def front_matter(lines: list[str]) -> tuple[int, str]:
    """(lines it takes, its title)."""
    if not lines or lines[0].rstrip(" \t\n") != "---":
        return 0, ""
    for i in range(1, len(lines)):
        if lines[i].rstrip(" \t\n") in ("---", "..."):
            title = ""
            for line in lines[1:i]:
                m = re.match(r"title:\s*(.*)$", line.rstrip("\n"))
                if m:
                    title = m.group(1).strip().strip("'\"")
            return i + 1, title
    return 0, ""


def parse_file(path: str, text: str) -> list[Section]:
    lines = text.split("\n")
    skip, title = front_matter([x + "\n" for x in lines])
    body = "\n" * skip + "\n".join(lines[skip:]).replace("\r", " ")
    toks = MD.parse(body)
    heads = [(t.map[0], int(t.tag[1])) for t in toks if t.type == "heading_open" and t.map]
    starts = [h for h, _ in heads]
    sections: list[Section] = []
    # the preamble starts on the line after front matter (SPEC §3), blank or not; a preamble
    # of white space only is no section
    end = starts[0] if starts else len(lines)
    if any(lines[i].strip() for i in range(skip, end)):
        sections.append(Section(path, skip + 1, 0))
    for h, level in heads:
        sections.append(Section(path, h + 1, level))
    if not sections:
        return []
    lines0 = [s.line - 1 for s in sections]

    def at(line: int) -> Section:
        lo, hi = 0, len(lines0) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if lines0[mid] <= line:
                lo = mid
            else:
                hi = mid - 1
        return sections[lo]

    stack: list[str] = []  # list / table context
    line = 0
    for i, t in enumerate(toks):
        if t.map:
            line = t.map[0]
        if t.type in ("bullet_list_open", "ordered_list_open"):
            stack.append("list")
        elif t.type in ("table_open",):
            stack.append("table")
        elif t.type in ("bullet_list_close", "ordered_list_close", "table_close"):
            stack.pop()
        elif t.type in ("fence", "code_block"):
            at(line).add("code", t.info + " " + t.content)
        elif t.type == "html_block":
            at(line).add("html", t.content)
        elif t.type == "inline":
            sec = at(line)
            is_heading = i > 0 and toks[i - 1].type == "heading_open"
            where = "heading" if is_heading else (stack[-1] if stack else "prose")
            label = 0
            for c in t.children or []:
                if c.type == "link_open":
                    sec.add("dest", str(c.attrs.get("href", "")))
                    label += 1
                elif c.type == "link_close":
                    label -= 1
                elif c.type == "image":
                    sec.add("dest", str(c.attrs.get("src", "")))
                    sec.add("label", c.content)
                elif c.type in ("text", "softbreak", "hardbreak"):
                    sec.add("heading" if is_heading else ("label" if label else where), c.content)
                elif c.type == "code_inline":
                    sec.add("heading" if is_heading else "inline", c.content)
                elif c.type == "html_inline":
                    sec.add("html", c.content)
    # titles and outlines (SPEC §13 `context=outline`: the headings above, one per level)
    above: dict[int, Section] = {}
    for s in sections:
        if title:
            s.add("title", title)
        if s.level:
            for lvl in sorted(above):
                if lvl < s.level:
                    for f in ("heading",):
                        for tok, n in above[lvl].tf.get(f, Counter()).items():
                            s.tf.setdefault("outline", Counter())[tok] += n
            above = {k: v for k, v in above.items() if k < s.level}
            above[s.level] = s
    return [s for s in sections if s.seq or s.tf.get("title")]


@dataclass
class Corpus:
    sections: dict[Hit, Section]
    n: int
    df: Counter[str]  # typed tokens
    df_stem: Counter[str]
    mean_len: dict[str, float]
    page: dict[str, list[Section]]


def load_corpus(bundle: Path) -> Corpus:
    secs: dict[Hit, Section] = {}
    page: dict[str, list[Section]] = {}
    for p in sorted(bundle.rglob("*")):
        if p.suffix.lower() not in (".md", ".markdown") or not p.is_file():
            continue
        rel = p.relative_to(bundle).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        try:
            text = p.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
        found = parse_file(rel, text)
        page[rel] = found
        for s in found:
            secs[(rel, s.line)] = s
    df: Counter[str] = Counter()
    df_stem: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for s in secs.values():
        vocab: set[str] = set()
        for f, c in s.tf.items():
            vocab.update(c)
            total[f] += sum(c.values())
        df.update(vocab)
        df_stem.update({stem(w) for w in vocab})
    n = len(secs)
    return Corpus(secs, n, df, df_stem, {f: total[f] / max(n, 1) for f in FIELDS}, page)


# -- per (query, section) features, computed once; variants are arithmetic over them --------------


@dataclass
class Feat:
    hit: Hit
    engine_rank: int
    lens: dict[str, int]
    typed: list[dict[str, int]]  # per query term: field → tf of the word as typed
    stems: list[dict[str, int]]  # per query term: field → tf of the words sharing its stem
    decomp: list[dict[str, int]]  # per query term: field → tf of words holding it as a part
    span: float  # minimal window covering the matched non-stop query words (tokens), or inf
    matched_words: int
    adjacent: float  # share of the query's neighbouring word pairs adjacent in the section
    nav: float  # share of the section's body tokens that are link labels or destinations
    code_share: float
    table_share: float
    page_sections: int
    script: str  # the section's language by script: ko, ja, zh or latin


KANA = re.compile("[\u3040-\u30ff]")
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


def script_of(words: Counter[str], share: float) -> str:
    """ko when Hangul, ja when kana, zh when Han, each only when that share of the words
    holds CJK characters (a bigram counts as a word); else latin."""
    total = sum(words.values())
    cjk = Counter({w: n for w, n in words.items() if CJK.search(w)})
    n = sum(cjk.values())
    if not n or n < share * total:
        return "latin"
    if sum(k for w, k in cjk.items() if HANGUL.search(w)) * 2 >= n:
        return "ko"
    if sum(k for w, k in cjk.items() if KANA.search(w)) * 10 >= n:
        return "ja"
    return "zh" if any(HAN.search(w) for w in cjk) else "latin"


NATURAL = ("heading", "prose", "list", "table", "label")  # what a reader reads as the language


def same_language(query: str, section: str) -> bool:
    """A Han-only query may be Japanese as well as Chinese."""
    return query == section or (query == "zh" and section == "ja")


BODY = ("prose", "list", "table", "label", "dest", "code", "inline", "html", "directive")


def features(corpus: Corpus, sec: Section, rank: int, terms: list[Term]) -> Feat:
    typed: list[dict[str, int]] = []
    stems: list[dict[str, int]] = []
    decomp: list[dict[str, int]] = []
    for t in terms:
        st = stem(t.text)
        a: dict[str, int] = {}
        b: dict[str, int] = {}
        d: dict[str, int] = {}
        for f, c in sec.tf.items():
            if t.text in c:
                a[f] = c[t.text]
            n = 0
            nd = 0
            for w, k in c.items():
                if stem(w) == st:
                    n += k
                elif (
                    len(t.text) >= 4
                    and len(w) >= len(t.text) + 3
                    and t.text.isalpha()
                    and (w.startswith(t.text) or w.endswith(t.text))
                ):
                    nd += k
            if n:
                b[f] = n
            if nd:
                d[f] = nd
        typed.append(a)
        stems.append(b)
        decomp.append(d)
    lens = {f: sec.length(f) for f in sec.tf}
    body = sum(lens.get(f, 0) for f in BODY) or 1
    # proximity over the query's typed words (a word is found by its stem)
    words: dict[int, set[str]] = {}
    for t in terms:
        if not t.stop:
            words.setdefault(t.word, set()).add(stem(t.text))
    span, matched, adjacent = proximity(sec.seq, words)
    return Feat(
        (sec.path, sec.line),
        rank,
        lens,
        typed,
        stems,
        decomp,
        span,
        matched,
        adjacent,
        (lens.get("label", 0) + lens.get("dest", 0)) / body,
        (lens.get("code", 0) + lens.get("inline", 0)) / body,
        lens.get("table", 0) / body,
        len(corpus.page.get(sec.path, ())),
        script_of(sum((sec.tf.get(k, Counter()) for k in NATURAL), Counter()), 0.2),
    )


def proximity(seq: list[str], words: dict[int, set[str]]) -> tuple[float, int, float]:
    """(minimal window holding every matched query word, how many matched, share of the
    query's neighbouring word pairs found adjacent). A CJK word's bigrams all count as it."""
    if not words:
        return math.inf, 0, 0.0
    where: list[tuple[int, int]] = []
    for i, tok in enumerate(seq):
        st = stem(tok)
        for w, stems in words.items():
            if st in stems:
                where.append((i, w))
    present = {w for _, w in where}
    if not present:
        return math.inf, 0, 0.0
    need = len(present)
    best = math.inf
    count: Counter[int] = Counter()
    lo = 0
    for hi in range(len(where)):
        count[where[hi][1]] += 1
        while len(count) == need:
            best = min(best, where[hi][0] - where[lo][0] + 1)
            w = where[lo][1]
            count[w] -= 1
            if not count[w]:
                del count[w]
            lo += 1
    order = sorted(words)
    pairs = list(itertools.pairwise(order))
    pos: dict[int, set[int]] = {}
    for i, w in where:
        pos.setdefault(w, set()).add(i)
    adj = sum(
        1 for a, b in pairs if any(i + d in pos.get(b, ()) for i in pos.get(a, ()) for d in (1, 2))
    )
    return float(best), need, adj / len(pairs) if pairs else 0.0


# -- the variants ---------------------------------------------------------------------------------

TODAY = {  # what the engine weighs today: every raw token 1, heading +3, title 2, outline 2
    "heading": 4.0,  # the heading line is raw Markdown (1) and the heading (3)
    "title": 2.0,
    "outline": 2.0,
    **{f: 1.0 for f in BODY},
}
CODE_Q = re.compile(
    r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]|\(\)|--?[a-z][\w-]*|</?[A-Za-z][\w.-]*>?|[=:]|\.[a-z]+\(|::|\$\w|\w\.\w"
)


NAV_Q = re.compile(r"(?i)\b(list|lists|index|overview) of\b|\bwhat\b.*\bare there\b")


def asks_for_list(query: str) -> bool:
    """`list of the folders …`, `what TILs are there …`: a navigation section is wanted."""
    return NAV_Q.search(query) is not None


def looks_like_code(query: str) -> bool:
    return any(CODE_Q.search(w) for w in query.split())


@dataclass(frozen=True)
class Variant:
    name: str
    weights: tuple[tuple[str, float], ...] = tuple(TODAY.items())
    code_query: float = 0.0  # code and inline weights when the query looks like code (0: unchanged)
    k1: float = 1.6
    b: float = 0.3
    coord: float = 0.1
    heading_bonus: float = 0.1
    nav: float = 0.0  # demotion ×(1 − nav) of a section whose body is ≥ 60% links
    min_len: float = 0.0  # length normalisation's floor, as a share of the mean length
    page_stub: float = 0.0  # (unused when 0) demotion of one-line sections on pages with others
    prox: float = 0.0  # ×(1 + prox · matched/span) when ≥ 2 query words matched
    adj: float = 0.0  # ×(1 + adj · adjacent share)
    decomp: float = 0.0  # weight of a word holding a query word as prefix/suffix
    table: float = 0.0  # demotion of table-heavy (reference-like) sections
    ko: bool = False
    ja: bool = False
    bm25f: bool = False  # per-field length normalisation instead of one over weighted length
    nav_q: bool = False  # no navigation demotion (a ×(1 + nav) lift) when a list is asked for
    lang: float = 0.0  # demotion ×(1 − lang) of a section in another script than the query's

    def w(self) -> dict[str, float]:
        return dict(self.weights)


def with_weights(name: str, base: Variant, **changes: float) -> Variant:
    w = base.w()
    w.update(changes)
    return replace(base, name=name, weights=tuple(w.items()))


def score(
    v: Variant,
    corpus: Corpus,
    f: Feat,
    terms: list[Term],
    codeish: bool,
    script: str = "latin",
    listq: bool = False,
) -> float:
    w = v.w()
    if codeish and v.code_query:
        w["code"] = w["inline"] = v.code_query
    mean = corpus.mean_len
    avg = sum(w.get(k, 0) * mean.get(k, 0) for k in w) or 1.0
    length = sum(w.get(k, 0) * n for k, n in f.lens.items())
    if v.min_len:
        length = max(length, v.min_len * avg)
    norm_len = 1 - v.b + v.b * length / avg
    n = corpus.n
    total = 0.0
    named = 0.0
    for part in ("stems", "typed"):
        tfs = f.stems if part == "stems" else f.typed
        num = 0.0
        held = 0.0
        want = 0.0
        head = 0.0
        for i, t in enumerate(terms):
            df = corpus.df_stem[stem(t.text)] if part == "stems" else corpus.df[t.text]
            tf_f = tfs[i]
            if v.bm25f:
                tf = sum(
                    w.get(k, 0) * c / (1 - v.b + v.b * f.lens.get(k, 0) / max(mean.get(k, 1), 1e-9))
                    for k, c in tf_f.items()
                )
                nl = 1.0
            else:
                tf = sum(w.get(k, 0) * c for k, c in tf_f.items())
                nl = norm_len
            if v.decomp and f.decomp[i]:
                tf += v.decomp * sum(w.get(k, 0) * c for k, c in f.decomp[i].items())
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else math.log(1 + n + 0.5)
            weight = 0.0 if t.stop else idf * t.m
            want += weight
            if tf > 0:
                num += t.m * idf * tf * (v.k1 + 1) / (tf + v.k1 * nl)
                held += weight
                if any(k in tf_f for k in ("heading", "title", "outline")):
                    head += weight
        if num <= 0:
            continue
        coord = (held / want) ** v.coord if want > 0 and held > 0 else 1.0
        named = head / want if want > 0 else 0.0
        total += num * coord * (1 + v.heading_bonus * named)
    if v.nav and f.nav >= 0.6:
        total *= (1 + v.nav) if v.nav_q and listq else 1 - v.nav
    if v.table and f.table_share >= 0.5:
        total *= 1 - v.table
    if v.prox and f.matched_words >= 2 and math.isfinite(f.span):
        total *= 1 + v.prox * f.matched_words / f.span
    if v.adj:
        total *= 1 + v.adj * f.adjacent
    if v.lang and not same_language(script, f.script):
        total *= 1 - v.lang
    return total


BASE = Variant("base")
CODE_LOW = with_weights("code 0.3", BASE, code=0.3, inline=0.5)
LINKS = with_weights("links: dest 0, html 0, directive 0", BASE, dest=0.0, html=0.0, directive=0.0)


def variants() -> list[Variant]:
    one = [
        BASE,
        with_weights("dest 0", BASE, dest=0.0),
        with_weights("html+directive 0", BASE, html=0.0, directive=0.0),
        LINKS,
        with_weights("label 0.5", BASE, label=0.5),
        CODE_LOW,
        replace(CODE_LOW, name="code 0.3, 1 if query looks like code", code_query=1.0),
        with_weights("code 0.5", BASE, code=0.5, inline=0.75),
        with_weights("heading 6", BASE, heading=6.0),
        with_weights("table 0.5", BASE, table=0.5),
        replace(BASE, name="language prior 0.3", lang=0.3),
        replace(BASE, name="language prior 0.5", lang=0.5),
        replace(BASE, name="nav prior 0.3", nav=0.3),
        replace(BASE, name="nav prior 0.5", nav=0.5),
        replace(BASE, name="nav prior 0.3, lift for list questions", nav=0.3, nav_q=True),
        replace(BASE, name="length floor 0.25", min_len=0.25),
        replace(BASE, name="length floor 0.5", min_len=0.5),
        replace(BASE, name="reference prior 0.2", table=0.2),
        replace(BASE, name="proximity 0.1", prox=0.1),
        replace(BASE, name="proximity 0.3", prox=0.3),
        replace(BASE, name="adjacency 0.1", adj=0.1),
        replace(BASE, name="adjacency 0.25", adj=0.25),
        replace(BASE, name="no coordination", coord=0.0),
        replace(BASE, name="decompound 0.5", decomp=0.5),
        replace(BASE, name="decompound 0.25", decomp=0.25),
        replace(BASE, name="korean particles", ko=True),
        replace(BASE, name="japanese split", ja=True),
        replace(BASE, name="bm25f", bm25f=True),
        replace(BASE, name="b 0.5", b=0.5),
    ]
    fields = with_weights(
        "F: dest 0, html 0, dir 0, label 0.5, code 0.3 (1 if code q)",
        BASE,
        dest=0.0,
        html=0.0,
        directive=0.0,
        label=0.5,
        code=0.3,
        inline=0.5,
    )
    fields = replace(fields, code_query=1.0)
    combos = [
        fields,
        replace(fields, name="F + nav 0.3", nav=0.3),
        replace(fields, name="F + floor 0.25", min_len=0.25),
        replace(fields, name="F + proximity 0.1", prox=0.1),
        replace(fields, name="F + nav 0.3 + floor 0.25", nav=0.3, min_len=0.25),
        replace(
            fields, name="F + nav 0.3 + floor 0.25 + prox 0.1", nav=0.3, min_len=0.25, prox=0.1
        ),
        replace(
            fields,
            name="F + nav + floor + prox + ko + ja",
            nav=0.3,
            min_len=0.25,
            prox=0.1,
            ko=True,
            ja=True,
        ),
        replace(
            fields,
            name="F + nav + floor + prox + ko + ja + decomp 0.25",
            nav=0.3,
            min_len=0.25,
            prox=0.1,
            ko=True,
            ja=True,
            decomp=0.25,
        ),
        with_weights("D: dest 0", BASE, dest=0.0),
    ]
    d = combos[-1]
    combos += [
        replace(d, name="D + language 0.5", lang=0.5),
        replace(d, name="D + language 0.5 + nav 0.3", lang=0.5, nav=0.3),
        replace(d, name="D + language 0.3 + nav 0.3 lift", lang=0.3, nav=0.3, nav_q=True),
        replace(d, name="D + nav 0.3 lift", nav=0.3, nav_q=True),
        replace(d, name="D + nav 0.3 lift + ko", nav=0.3, nav_q=True, ko=True),
        replace(
            d, name="D + language 0.3 + nav 0.3 lift + ko", lang=0.3, nav=0.3, nav_q=True, ko=True
        ),
        replace(d, name="D + language 0.5 + ko", lang=0.5, ko=True),
        replace(d, name="D + language 0.5 + nav 0.3 + ko", lang=0.5, nav=0.3, ko=True),
        replace(
            d,
            name="D + language 0.5 + nav 0.3 + ko + prox 0.1",
            lang=0.5,
            nav=0.3,
            ko=True,
            prox=0.1,
        ),
    ]
    return one + combos


# -- running ------------------------------------------------------------------------------------


@dataclass
class Query:
    id: str
    text: str
    answers: frozenset[Hit]
    split: str
    kind: str


def load_set(name: str) -> tuple[Path, list[Query]]:
    data = json.loads((HERE / f"judged_{name}.json").read_text(encoding="utf-8"))
    qs = [
        Query(
            q["id"],
            q["query"],
            frozenset((a["path"], a["line_start"]) for a in q["answers"]),
            q["split"],
            q.get("kind", ""),
        )
        for q in data["queries"]
    ]
    return bundle_path(data["bundle"]), qs


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "n": len(ranks),
        "hit@1": round(sum(1 for r in ranks if r == 1) / n, 4),
        "hit@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 4),
        "mrr@10": round(sum(1 / r for r in ranks if r is not None and r <= K) / n, 4),
    }


def first(order: Sequence[Hit], answers: frozenset[Hit]) -> int | None:
    for i, h in enumerate(order, 1):
        if h in answers:
            return i
    return None


CORPORA: dict[Path, Corpus] = {}  # cmd and tldr share a bundle: parsed once per process


def run_set(engine: Engine, name: str, vs: list[Variant]) -> dict[str, Any]:
    bundle, queries = load_set(name)
    t0 = time.perf_counter()
    corpus = CORPORA.get(bundle) or CORPORA.setdefault(bundle, load_corpus(bundle))
    t1 = time.perf_counter()
    pools: dict[str, list[Hit]] = {}
    for q in queries:
        r = engine.search(
            engine.call(bundle), {"query": q.text, "profile": "recall", "limit": POOL}
        )
        pools[q.id] = [(h["path"], h["line_start"]) for h in r["hits"]]
    t2 = time.perf_counter()
    missing = sum(1 for p in pools.values() for h in p if h not in corpus.sections)
    cache: dict[tuple[str, bool, bool], tuple[list[Term], list[Feat]]] = {}

    def feats(q: Query, ko: bool, ja: bool) -> tuple[list[Term], list[Feat]]:
        key = (q.id, ko, ja)
        if key not in cache:
            terms = query_terms(q.text, ko, ja)
            fs = [
                features(corpus, corpus.sections[h], i, terms)
                for i, h in enumerate(pools[q.id])
                if h in corpus.sections
            ]
            cache[key] = (terms, fs)
        return cache[key]

    ranks: dict[str, dict[str, int | None]] = {"recall (engine)": {}}
    for q in queries:
        ranks["recall (engine)"][q.id] = first(pools[q.id], q.answers)
    for v in vs:
        got: dict[str, int | None] = {}
        for q in queries:
            terms, fs = feats(q, v.ko, v.ja)
            codeish = looks_like_code(q.text)
            script = script_of(Counter(tokens(q.text)), 0.0)
            listq = asks_for_list(q.text)

            keyed = [
                (-score(v, corpus, f, terms, codeish, script, listq), f.engine_rank, f.hit)
                for f in fs
            ]
            scored = [hit for _, _, hit in sorted(keyed)]
            got[q.id] = first(scored, q.answers)
        ranks[v.name] = got
    t3 = time.perf_counter()
    out: dict[str, Any] = {
        "sections": corpus.n,
        "sections_in_pools_not_parsed": missing,
        "seconds": {
            "parse corpus": round(t1 - t0, 1),
            "pools": round(t2 - t1, 1),
            "rescore": round(t3 - t2, 1),
        },
        "pool_recall": {},
        "systems": {},
        "dev_ranks": {},
    }
    for split in ("dev", "heldout"):
        qs = [q for q in queries if q.split == split]
        if not qs:
            continue
        out["pool_recall"][split] = round(
            sum(1 for q in qs if any(h in q.answers for h in pools[q.id])) / len(qs), 4
        )
        for sys_name, got in ranks.items():
            out["systems"].setdefault(sys_name, {})[split] = metrics([got[q.id] for q in qs])
    for sys_name, got in ranks.items():
        out["dev_ranks"][sys_name] = {q.id: got[q.id] for q in queries if q.split == "dev"}
    if name == "fastapi":
        out["by_language"] = by_language(queries, ranks)
    return out


def by_language(
    queries: Sequence[Query], ranks: dict[str, dict[str, int | None]]
) -> dict[str, dict[str, dict[str, float]]]:
    """Each system's metrics by the language a question is asked in (the answer path's
    second part: fastapi's docs/<language>/…) and split."""
    lang = {q.id: sorted(q.answers)[0][0].split("/")[1] for q in queries}
    return {
        f"{la} {split}": {
            system: metrics([got[q.id] for q in queries if q.split == split and lang[q.id] == la])
            for system, got in ranks.items()
        }
        for la in sorted(set(lang.values()))
        for split in ("dev", "heldout")
    }


def table(report: dict[str, Any]) -> str:
    rows = []
    for name, r in report["sets"].items():
        for split in ("dev", "heldout"):
            if split not in r["pool_recall"]:
                continue
            rows.append(f"\n{name} {split} (pool recall {r['pool_recall'][split]:.2f})")
            for sys_name, m in r["systems"].items():
                x = m[split]
                rows.append(
                    f"  {sys_name:55s} {x['hit@1']:.2f} {x['hit@5']:.2f} {x['mrr@10']:.2f}"
                    f"  n={x['n']}"
                )
    return "\n".join(rows)


def markdown(report: dict[str, Any]) -> str:
    """Every set × every change, H@1 / H@5 per cell, one table per split."""
    sets = list(report["sets"])
    names = list(next(iter(report["sets"].values()))["systems"])
    out: list[str] = []
    for split in ("dev", "heldout"):
        cols = [s for s in sets if split in report["sets"][s]["pool_recall"]]
        out.append(f"\n{split} (H@1 / H@5)\n")
        out.append("| change | " + " | ".join(cols) + " |")
        out.append("|---" * (len(cols) + 1) + "|")
        for n in names:
            cells = []
            for s in cols:
                m = report["sets"][s]["systems"][n][split]
                cells.append(f"{m['hit@1']:.2f} / {m['hit@5']:.2f}")
            out.append(f"| {n} | " + " | ".join(cells) + " |")
        pool = " | ".join(f"{report['sets'][s]['pool_recall'][split]:.2f}" for s in cols)
        out.append(f"| *pool recall@{report['pool']}* | {pool} |")
    return "\n".join(out)


def main(argv: Sequence[str]) -> int:
    if "--markdown" in argv:  # from a saved report: fields.py --markdown results/….json
        path = next(a for a in argv if a.endswith(".json"))
        print(markdown(json.loads(Path(path).read_text(encoding="utf-8"))))
        return 0
    save = "--save" in argv
    names = [a for a in argv if not a.startswith("--")] or list(ALL_SETS)
    engine = Engine(Settings(limits=Limits.editor(), skip_invalid=True))  # as run.py
    vs = variants()
    report: dict[str, Any] = {
        "pool": POOL,
        "k": K,
        "variants": [v.__dict__ for v in vs],
        "sets": {},
    }
    start = time.perf_counter()
    for name in names:
        report["sets"][name] = run_set(engine, name, vs)
        print(f"{name}: {report['sets'][name]['seconds']}", file=sys.stderr, flush=True)
    report["seconds"] = round(time.perf_counter() - start, 1)
    print(table(report), file=sys.stderr)
    text = json.dumps(report, indent=1, ensure_ascii=False, default=list)
    print(text)
    if save:
        out = RESULTS / f"relevance-fields-{date.today():%Y%m%d}.json"
        out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
