"""Relevance benchmark: citeline's ranking options against an SQLite FTS5 baseline.

Run by hand from the repository root (or anywhere):

    python tests/benchmarks/relevance/run.py            # JSON on stdout, tables on stderr
    python tests/benchmarks/relevance/run.py --explain recall   # per-query ranks, dev only

For each judged set (en, zh, tldr) and split (dev, heldout, all) and for each system, it
reports Hit@1, Hit@5, MRR@10 and the share of queries with no result. A hit is correct
when its (path, line_start) is one of the query's judged answers.

Systems:
- `contract`: the SPEC §4-§7 defaults;
- `recall`: profile recall (match=any + context=outline + cjk=bigrams + stemming=english +
  identifiers=split), ranked as engine/rank/scoring.py says;
- `only OPTION=VALUE`: the contract with that one §13 option (ablation);
- `recall OPTION=VALUE`: recall with one option back at its default (leave-one-out);
- `recall scoring:…`: recall with one feature of the match=any ranking switched off
  (engine/rank/scoring.py AnyScoring), or with Lucene's classic coordination (matched ÷ terms
  over §5's BM25, as SPEC §13 suggests starting from); `recall scoring:stop-word hits` is
  recall before SPEC §13's stop-word rule (a section holding only the query's stop words
  is a hit);
- `proposal:recall + adjacency β`: recall with a bonus of up to ×(1+β) for the share of
  the query's neighbouring word pairs (and of the consecutive bigrams of a CJK word, and
  the parts of an identifier) that stand next to each other in the section's text;
  measured here (exactly: rescoring only the sections that can reach the top 10), not
  an engine feature, since it did not earn its cost;
- `proposal:stop words weigh w`: recall with English stop words counting w (instead of 1)
  in the BM25 sum; `proposal:heading bonus 0.3`: a stronger heading bonus;
- `proposal:recall + page score λ`: each section's score plus λ × its page's summed
  section scores (a page prior); `proposal:recall + exact forms γ`: a bonus of up to
  ×(1+γ) for the query's words found as typed when the stemmer changes them. Measured in
  a third round, not adopted (docs/relevance.md says why);
- `proposal:recall + feedback α`: pseudo-relevance feedback (RM3-like): the ten words
  that weigh most in recall's top five sections, ranked as a second query whose scores
  are added with weight α; also measured and not adopted;
- `fts5-unicode61` / `fts5-trigram`: an in-memory SQLite FTS5 table over the very sections
  the engine sees (text = the section's lines), queried with citeline's contract tokens,
  each quoted, joined with OR, ranked by bm25(). The targets compare `recall` with the
  better of the two on each measure and split.

One index is built per analysis option set and reused for every query and every system
that shares it (tldr's 38,000 files take some 20 s to index per option set); the queries
then go straight to the ranker, exactly as Engine.search does (checked against
Engine.search for a few queries per set).

--explain prints dev queries only: held-out queries are reported as aggregates, never
one by one, so that nobody tunes on them.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from locate import bundle_path

from citeline.engine import Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.index.index import Index
from citeline.engine.rank.rank import idf, rank
from citeline.engine.rank.scoring import (
    LUCENE_CLASSIC,
    MATCH_ANY,
    AnyScoring,
    rescore_bounded,
    stop_terms,
)
from citeline.engine.rank.stems import stemmed
from citeline.engine.text.layout import decode
from citeline.engine.text.options import AnalysisOptions
from citeline.engine.text.terms import CJK_RE, CONTRACT, Tokenizer, query_terms, word_re

HERE = Path(__file__).resolve().parent
K = 10  # results asked for; MRR is MRR@10
# ref and cmd: written after tuning, all held out; nuxt, til, fastapi: issue 52's new kinds
SETS = ("en", "zh", "tldr", "ref", "cmd", "nuxt", "til", "fastapi")
SPLITS = ("dev", "heldout", "all")
METRICS = ("hit@1", "hit@5", "mrr@10", "no_result")
FTS_TOKENIZERS = ("unicode61", "trigram")

Hit = tuple[str, int]  # (path, line_start)


@dataclass(frozen=True, slots=True)
class System:
    name: str
    options: dict[str, str]
    scoring: AnyScoring = MATCH_ANY
    # A proposal measured here, not an engine feature (see below): its name and strength.
    proposal: str = ""
    strength: float = 0.0

    @property
    def relevance(self) -> Relevance:
        return Relevance.from_mapping(self.options)


RECALL = {"profile": "recall"}
DEFAULTS = {"match": "all", "context": "section", "cjk": "runs", "stemming": "none"}
DEFAULTS["identifiers"] = "whole"
NON_DEFAULT = {
    "match": "any",
    "context": "outline",
    "cjk": "bigrams",
    "stemming": "english",
    "identifiers": "split",
}
SYSTEMS: tuple[System, ...] = (
    System("contract", {}),
    System("recall", RECALL),
    *(System(f"only {k}={v}", {k: v}) for k, v in NON_DEFAULT.items()),
    *(System(f"recall {k}={DEFAULTS[k]}", {**RECALL, k: DEFAULTS[k]}) for k in NON_DEFAULT),
    System("recall scoring:chains off", RECALL, replace(MATCH_ANY, chains=False)),
    System("recall scoring:no coordination", RECALL, replace(MATCH_ANY, exponent=0.0)),
    System(
        "recall scoring:coordination 1", RECALL, replace(MATCH_ANY, exponent=1.0)
    ),  # the factor at full strength (Lucene's exponent)
    System("recall scoring:terms count 1", RECALL, replace(MATCH_ANY, idf_weighted=False)),
    System("recall scoring:stop words count", RECALL, replace(MATCH_ANY, stop_words=False)),
    System("recall scoring:heading bonus off", RECALL, replace(MATCH_ANY, heading=0.0)),
    System("recall scoring:typed words off", RECALL, replace(MATCH_ANY, typed=0.0)),
    # Before SPEC §13's "Stop words under match=any": sections holding only the query's stop
    # words are hits, and stop words are matched terms.
    System("recall scoring:stop-word hits", RECALL, replace(MATCH_ANY, stop_filter=False)),
    System("recall scoring:k1=1.2 b=0.75", RECALL, replace(MATCH_ANY, k1=1.2, b=0.75)),
    System("recall scoring:Lucene classic", RECALL, LUCENE_CLASSIC),
    System("proposal:recall + adjacency 0.25", RECALL, MATCH_ANY, "adjacency", 0.25),
    System("proposal:stop words weigh 0.5", RECALL, replace(MATCH_ANY, stop_weight=0.5)),
    System("proposal:stop words weigh 0", RECALL, replace(MATCH_ANY, stop_weight=0.0)),
    System("proposal:heading bonus 0.3", RECALL, replace(MATCH_ANY, heading=0.3)),
    System("proposal:recall + page score 0.1", RECALL, MATCH_ANY, "page", 0.1),
    System("proposal:recall + exact forms 0.2", RECALL, MATCH_ANY, "forms", 0.2),
    System("proposal:recall + feedback 0.2", RECALL, MATCH_ANY, "feedback", 0.2),
)


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    answers: frozenset[Hit]
    split: str
    kind: str


def load(name: str) -> tuple[Path, list[Query], str]:
    data = json.loads((HERE / f"judged_{name}.json").read_text(encoding="utf-8"))
    queries = [
        Query(
            q["id"],
            q["query"],
            frozenset((a["path"], a["line_start"]) for a in q["answers"]),
            q["split"],
            q.get("kind", ""),
        )
        for q in data["queries"]
    ]
    return bundle_path(data["bundle"]), queries, data["bundle"]


# -- the engine, straight to the ranker ----------------------------------------------------


def where(index: Index, g: int) -> Hit:
    sec = index.section(g)
    return (sec.path, sec.first + 1)


class Texts:
    """The decoded text of the bundle's files, read from disk once each."""

    def __init__(self, bundle: Path) -> None:
        self.bundle = bundle
        self.known: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        text = self.known.get(path)
        if text is None:
            decoded = decode((self.bundle / path).read_bytes())
            assert isinstance(decoded, str)  # the engine parsed it
            text = self.known[path] = decoded
        return text


def engine_search(index: Index, system: System, texts: Texts) -> Callable[[str], list[Hit]]:
    """What Engine.search ranks for this system, without capturing the bundle again."""
    rel = system.relevance

    def search(text: str) -> list[Hit]:
        terms = query_terms(text, rel.tokenizer)
        ranked = rank(index, terms, match_any=rel.match == "any", limit=K, scoring=system.scoring)
        return [where(index, s.section) for s in ranked.best]

    return search


# -- a proposal: adjacency -------------------------------------------------------------------


def query_pairs(
    text: str, tokenizer: Tokenizer
) -> list[tuple[str, frozenset[str], frozenset[str]]]:
    """The neighbouring pairs of the query: (kind, terms that may come first, terms that
    may follow). Kinds: "cjk" (consecutive bigrams of one word: they overlap by one
    character), "part" (consecutive pieces of one word: they touch), "word" (consecutive
    typed words that are not all stop words: at most one word between them)."""
    stops = stop_terms()
    words = []
    for m in word_re(text).finditer(text):
        run = m.group()
        tokens = list(tokenizer.located(run))
        if not tokens:
            continue
        stop = all(t in stops for t, _, _ in tokens) and not CJK_RE.search(run)
        words.append((run, tokens, stop))
    pairs: list[tuple[str, frozenset[str], frozenset[str]]] = []
    for run, tokens, _ in words:
        inner = sorted(
            (x for x in tokens if (x[1], x[2]) != (0, len(run))), key=lambda x: (x[1], x[2])
        )
        for (a, sa, ea), (b, sb, _) in itertools.pairwise(inner):
            if a == b:
                continue
            if sb == sa + 1 and ea - sa == 2 and CJK_RE.fullmatch(run[sa:ea]):
                pairs.append(("cjk", frozenset([a]), frozenset([b])))
            elif sb == ea:
                pairs.append(("part", frozenset([a]), frozenset([b])))
    content = [w for w in words if not w[2]]
    for (ra, ta, _), (_rb, tb, _) in itertools.pairwise(content):
        first = frozenset(t for t, _, e in ta if e == len(ra))
        then = frozenset(t for t, s, _ in tb if s == 0)
        pairs.append(("word", first, then))
    return pairs


def adjacent_share(
    text: str, pairs: Sequence[tuple[str, frozenset[str], frozenset[str]]], tokenizer: Tokenizer
) -> float:
    """The share of the query's pairs found next to each other in `text`."""
    wanted = set().union(*(a | b for _, a, b in pairs))
    where: dict[str, list[tuple[int, int]]] = {}
    for token, start, end in tokenizer.located(text):
        if token in wanted:
            where.setdefault(token, []).append((start, end))
    runs = [m.start() for m in word_re(text).finditer(text)]
    found = 0
    for kind, first, then in pairs:
        after = sorted(x for t in then for x in where.get(t, ()))
        starts = [s for s, _ in after]
        for t in first:
            hit = False
            for s1, e1 in where.get(t, ()):
                if kind == "cjk":
                    hit = s1 + 1 in starts
                elif kind == "part":
                    hit = e1 in starts
                else:
                    i = bisect.bisect_left(starts, e1)
                    hit = i < len(starts) and (
                        bisect.bisect_left(runs, starts[i]) - bisect.bisect_right(runs, s1) <= 1
                    )
                if hit:
                    break
            if hit:
                found += 1
                break
    return found / len(pairs)


def adjacency_search(index: Index, system: System, texts: Texts) -> Callable[[str], list[Hit]]:
    rel = system.relevance

    def search(text: str) -> list[Hit]:
        terms = query_terms(text, rel.tokenizer)
        pairs = query_pairs(text, rel.tokenizer)
        ranked = rank(index, terms, match_any=True, scoring=system.scoring)
        found = [(s.score, s.section) for s in ranked.best]

        def bonus(e: tuple[float, int]) -> tuple[float, int]:
            score, g = e
            sec = index.section(g)
            share = adjacent_share(texts(sec.path)[sec.start : sec.end], pairs, rel.tokenizer)
            return (score * (1 + system.strength * share), g)

        kept = rescore_bounded(found, K, 1 + system.strength, bonus) if pairs else found
        return best(index, kept)

    return search


def best(index: Index, found: list[tuple[float, int]]) -> list[Hit]:
    """The first K of (score, section) in the engine's order (ties: concept_id, line)."""
    found.sort(key=lambda e: (-e[0], *index.concept_and_line(e[1])))
    return [where(index, g) for _, g in found[:K]]


# -- a proposal: the page's evidence ---------------------------------------------------------


def page_search(index: Index, system: System, texts: Texts) -> Callable[[str], list[Hit]]:
    """recall, each section's score plus λ × the summed scores of its page's sections
    (scaled so that the best page's sum equals the best section's score): a page that
    answers the question as a whole lifts its sections."""
    rel = system.relevance

    def search(text: str) -> list[Hit]:
        terms = query_terms(text, rel.tokenizer)
        found = [(s.score, s.section) for s in rank(index, terms, match_any=True).best]
        if not found:
            return []
        pages: dict[str, float] = {}
        for score, g in found:
            path = index.section(g).path
            pages[path] = pages.get(path, 0.0) + score
        scale = found[0][0] / max(pages.values())
        return best(
            index,
            [(s + system.strength * scale * pages[index.section(g).path], g) for s, g in found],
        )

    return search


# -- a proposal: exact forms under stemming ---------------------------------------------------


def forms_search(index: Index, system: System, texts: Texts) -> Callable[[str], list[Hit]]:
    """recall with a bonus of up to ×(1+γ) for the share (by idf) of the query's typed
    words that the stemmer changes (`stopped` → `stop`) and that the section holds as
    typed, as Lucene's KeywordRepeatFilter rewards an exact form; rescored exactly."""
    rel = system.relevance
    stops = stop_terms()

    def search(text: str) -> list[Hit]:
        terms = query_terms(text, rel.tokenizer)
        found = [(s.score, s.section) for s in rank(index, terms, match_any=True).best]
        forms = []
        for word in dict.fromkeys(CONTRACT.tokens(text)):
            stems = rel.tokenizer.tokens(word)
            if stems and stems != [word] and word not in stops:
                forms.append((word, max(idf(stemmed(index), t) for t in stems)))
        total = sum(w for _, w in forms)
        if not total:
            return best(index, found)

        def bonus(e: tuple[float, int]) -> tuple[float, int]:
            score, g = e
            sec = index.section(g)
            words = set(CONTRACT.tokens(f"{texts(sec.path)[sec.start : sec.end]}\n{sec.title}"))
            held = sum(w for word, w in forms if word in words)
            return (score * (1 + system.strength * held / total), g)

        return best(index, rescore_bounded(found, K, 1 + system.strength, bonus))

    return search


# -- a proposal: pseudo-relevance feedback ----------------------------------------------------

FEEDBACK_SECTIONS = 5  # the top sections read for new words
FEEDBACK_TERMS = 10  # the words added


def feedback_search(index: Index, system: System, texts: Texts) -> Callable[[str], list[Hit]]:
    """recall, then the words that weigh most in its top sections (RM3-like: a word's
    share of each section's tokens × that section's share of their scores × idf; stop
    words and the query's own terms left out) ranked as a second query whose scores,
    scaled to the first query's best, are added with weight α. The usual lexical answer to
    a vocabulary gap: the answer's words may be found in what the query finds first."""
    rel = system.relevance
    words = rel.tokenizer.unstemmed
    stops = stop_terms()
    plain = replace(MATCH_ANY, exponent=0.0, heading=0.0)

    def search(text: str) -> list[Hit]:
        terms = query_terms(text, rel.tokenizer)
        found = [(s.score, s.section) for s in rank(index, terms, match_any=True).best]
        asked = {*terms, *(terms.typed or ())}
        top = found[:FEEDBACK_SECTIONS]
        mass = sum(s for s, _ in top)
        weights: dict[str, float] = {}
        for score, g in top:
            sec = index.section(g)
            # the words as indexed (an index keeps them as typed: engine/rank/stems.py)
            tokens = words.tokens(f"{texts(sec.path)[sec.start : sec.end]}\n{sec.title}")
            kept = [t for t in tokens if t not in stops and t not in asked and len(t) > 1]
            for t in set(kept):
                share = kept.count(t) / len(kept) * score / mass
                weights[t] = weights.get(t, 0.0) + share * idf(index, t)
        added = sorted(weights, key=lambda t: (-weights[t], t))[:FEEDBACK_TERMS]
        if not added:
            return best(index, found)
        more = rank(index, added, match_any=True, scoring=plain).best
        if not more:
            return best(index, found)
        scale = system.strength * found[0][0] / more[0].score
        scores = {g: s for s, g in found}
        for hit in more:
            scores[hit.section] = scores.get(hit.section, 0.0) + scale * hit.score
        return best(index, [(s, g) for g, s in scores.items()])

    return search


PROPOSALS = {
    "adjacency": adjacency_search,
    "page": page_search,
    "forms": forms_search,
    "feedback": feedback_search,
}


# -- the FTS5 baseline ---------------------------------------------------------------------


class Fts5:
    """An in-memory FTS5 table with one row per section the engine sees."""

    def __init__(self, index: Index, tokenizer: str, texts: Texts) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE s USING fts5(body, tokenize='{tokenizer}')")
        self.where: list[Hit] = []
        rows = []
        lines: dict[str, list[str]] = {}
        for g in range(index.n):
            sec = index.section(g)
            if sec.path not in lines:
                lines[sec.path] = _lines(texts(sec.path))
            self.where.append((sec.path, sec.first + 1))
            body = "".join(lines[sec.path][sec.first : sec.last + 1])
            rows.append((len(self.where), body))
        self.db.executemany("INSERT INTO s(rowid, body) VALUES (?, ?)", rows)

    def search(self, query: str, limit: int = K) -> list[Hit]:
        words = list(dict.fromkeys(CONTRACT.tokens(query)))
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        cur = self.db.execute(
            "SELECT rowid FROM s WHERE s MATCH ? ORDER BY bm25(s), rowid LIMIT ?",
            (match, limit),
        )
        return [self.where[r - 1] for (r,) in cur]


def _lines(text: str) -> list[str]:
    """Lines split on LF only (SPEC §3), each keeping its LF."""
    return [line + "\n" for line in text.split("\n")]


def fts5_tokenizers() -> list[str]:
    available = []
    db = sqlite3.connect(":memory:")
    for name in FTS_TOKENIZERS:
        try:
            db.execute(f"CREATE VIRTUAL TABLE t_{name} USING fts5(x, tokenize='{name}')")
        except sqlite3.OperationalError:
            continue
        available.append(name)
    return available


# -- measuring -----------------------------------------------------------------------------

Result = tuple[int | None, bool, list[Hit]]  # (rank of the first answer, empty, hits)


def first_rank(hits: Sequence[Hit], answers: frozenset[Hit]) -> int | None:
    for i, hit in enumerate(hits[:K], 1):
        if hit in answers:
            return i
    return None


def score(rows: Sequence[tuple[int | None, bool]]) -> dict[str, float]:
    """rows: (rank of the first correct hit or None, whether the system returned nothing)."""
    n = len(rows)
    if not n:
        return dict.fromkeys(METRICS, 0.0)
    return {
        "hit@1": sum(r == 1 for r, _ in rows) / n,
        "hit@5": sum(r is not None and r <= 5 for r, _ in rows) / n,
        "mrr@10": sum(1 / r for r, _ in rows if r is not None) / n,
        "no_result": sum(empty for _, empty in rows) / n,
    }


def run_system(
    queries: Sequence[Query], search: Callable[[str], list[Hit]], times: list[float] | None = None
) -> dict[str, Result]:
    out = {}
    for q in queries:
        start = time.perf_counter()
        hits = search(q.text)
        if times is not None:
            times.append(time.perf_counter() - start)
        out[q.id] = (first_rank(hits, q.answers), not hits, hits)
    return out


def crosscheck(
    engine: Engine, bundle: Path, queries: Sequence[Query], index: Index, texts: Texts
) -> int:
    """The direct ranker agrees with Engine.search (recall) on the first queries."""
    system = next(s for s in SYSTEMS if s.name == "recall")
    search = engine_search(index, system, texts)
    checked = 0
    for q in queries[:2]:
        result = engine.search(engine.call(bundle), {"query": q.text, "limit": K, **system.options})
        got = [(h["path"], h["line_start"]) for h in result["hits"]]
        if got != search(q.text):
            raise SystemExit(f"harness and Engine.search disagree on {q.id}")
        checked += 1
    return checked


def measure(settings: Settings, only: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    engine = Engine(settings)
    report: dict[str, Any] = {"k": K, "sets": {}}
    raw: dict[str, Any] = {}
    for name in only:
        bundle, queries, bundle_name = load(name)
        snapshot = engine.capture(engine.call(bundle))
        texts = Texts(bundle)
        systems: dict[str, dict[str, Result]] = {}
        seconds: dict[str, float] = {}
        rank_ms: dict[str, float] = {}
        by_analysis: dict[AnalysisOptions, list[System]] = {}
        for system in SYSTEMS:
            by_analysis.setdefault(system.relevance.analysis, []).append(system)
        index = None
        sections = skipped = checked = 0
        deep: dict[str, int | None] = {}
        for analysis, group in by_analysis.items():
            start = time.perf_counter()
            index = engine.index(snapshot, analysis, bundle=bundle)
            seconds[f"index for {group[0].name} (+{len(group) - 1} systems)"] = (
                time.perf_counter() - start
            )
            sections = index.n
            skipped = len(index.problems)
            for system in group:
                times: list[float] = []
                make = PROPOSALS[system.proposal] if system.proposal else engine_search
                search = make(index, system, texts)
                systems[system.name] = run_system(queries, search, times)
                if system.name == "recall":
                    deep = full_ranks(index, system, queries, systems["recall"])
                    # again, now that the corpus remembers each term's documents
                    again = engine_search(index, system, texts)
                    warm: list[float] = []
                    for q in queries:
                        start = time.perf_counter()
                        again(q.text)
                        warm.append(time.perf_counter() - start)
                    rank_ms = {
                        "median": round(1000 * statistics.median(times), 1),
                        "max": round(1000 * max(times), 1),
                        "warm_median": round(1000 * statistics.median(warm), 1),
                        "warm_max": round(1000 * max(warm), 1),
                    }
                    checked = crosscheck(engine, bundle, queries, index, texts)
        assert index is not None
        fts_names = []
        for tokenizer in fts5_tokenizers():
            start = time.perf_counter()
            fts = Fts5(index, tokenizer, texts)
            system_name = f"fts5-{tokenizer}"
            systems[system_name] = run_system(queries, fts.search)
            seconds[system_name] = time.perf_counter() - start
            fts_names.append(system_name)
        del index

        table: dict[str, dict[str, dict[str, float]]] = {}
        for system_name, results in systems.items():
            table[system_name] = {}
            for split in SPLITS:
                chosen = [q for q in queries if split in ("all", q.split)]
                if chosen:
                    table[system_name][split] = score([results[q.id][:2] for q in chosen])
        report["sets"][name] = {
            "bundle": bundle_name,
            "sections": sections,
            "skipped": skipped,
            "queries": {s: sum(1 for q in queries if s in ("all", q.split)) for s in SPLITS},
            "seconds": {s: round(t, 2) for s, t in seconds.items()},
            "recall_rank_ms": rank_ms,
            "checked_against_engine_search": checked,
            "systems": table,
            "targets": targets(name, table, fts_names),
            "misses": misses(queries, systems["recall"], deep),
        }
        raw[name] = (queries, systems)
    return report, raw


# ref (English) is held to the English targets, cmd (tldr's languages) to tldr's; issue 52's
# sets to its own: English Hit@5 0.90 and Hit@1 0.65 (nuxt, til), and for fastapi (English,
# Chinese, Japanese, Korean questions) Chinese's Hit@5 0.85 with English's Hit@1.
TARGET_HIT5 = {"en": 0.9, "zh": 0.8, "tldr": 0.85, "ref": 0.9, "cmd": 0.85}
TARGET_HIT5 |= {"nuxt": 0.9, "til": 0.9, "fastapi": 0.85}
TARGET_HIT1 = {"en": 0.7, "ref": 0.7, "nuxt": 0.65, "til": 0.65, "fastapi": 0.65}
MAX_NO_RESULT = 0.02


def targets(
    name: str, table: dict[str, dict[str, dict[str, float]]], fts: Sequence[str]
) -> dict[str, Any]:
    """The issue's targets for `recall`, per split: against the better FTS5 variant on
    each measure."""
    out: dict[str, Any] = {}
    for split in ("dev", "heldout"):
        if split not in table["recall"]:
            continue  # a set written after tuning has no dev queries
        r = table["recall"][split]
        best = {m: max(table[f][split][m] for f in fts) for m in ("hit@1", "hit@5", "mrr@10")}
        checks = {f"hit@5>={TARGET_HIT5[name]}": r["hit@5"] >= TARGET_HIT5[name]}
        if name in TARGET_HIT1:
            checks[f"hit@1>={TARGET_HIT1[name]}"] = r["hit@1"] >= TARGET_HIT1[name]
        checks[f"no_result<={MAX_NO_RESULT}"] = r["no_result"] <= MAX_NO_RESULT
        for m, v in best.items():
            checks[f"{m}>fts5"] = r[m] > v
        out[split] = {"met": all(checks.values()), "checks": checks, "fts5_best": best}
    return out


def full_ranks(
    index: Index, system: System, queries: Sequence[Query], results: dict[str, Result]
) -> dict[str, int | None]:
    """For the dev queries not answered first: the rank of the first answer among every
    matching section (None: no answer matches a single term)."""
    rel = system.relevance
    out: dict[str, int | None] = {}
    for q in queries:
        if q.split != "dev" or results[q.id][0] == 1:
            continue
        terms = query_terms(q.text, rel.tokenizer)
        ranked = rank(index, terms, match_any=True, scoring=system.scoring).best
        hits = (where(index, s.section) for s in ranked)
        out[q.id] = next((i for i, hit in enumerate(hits, 1) if hit in q.answers), None)
    return out


def misses(
    queries: Sequence[Query], results: dict[str, Result], deep: dict[str, int | None]
) -> dict[str, Any]:
    """Dev queries whose answer `recall` does not rank first, with its rank among all the
    matching sections (None: no answer holds a query term); held-out ones only counted."""
    dev = {q.id: deep.get(q.id) for q in queries if q.split == "dev" and results[q.id][0] != 1}
    held = sum(1 for q in queries if q.split == "heldout" and results[q.id][0] != 1)
    return {"dev": dev, "heldout_count": held}


# -- printing ------------------------------------------------------------------------------


def print_table(report: dict[str, Any]) -> None:
    err = sys.stderr
    width = max(len(s.name) for s in SYSTEMS) + 2
    for name, data in report["sets"].items():
        q = data["queries"]
        print(
            f"\n== {name}: {data['bundle']} ({data['sections']} sections; queries: "
            f"{q['dev']} dev, {q['heldout']} held-out; recall ranks in "
            f"{data['recall_rank_ms'].get('median')} ms median, "
            f"{data['recall_rank_ms'].get('max')} ms max; again: "
            f"{data['recall_rank_ms'].get('warm_median')} ms median, "
            f"{data['recall_rank_ms'].get('warm_max')} ms max)",
            file=err,
        )
        shown = [split for split in SPLITS if split in data["systems"]["recall"]]
        head = f"{'system':<{width}}" + "".join(f" | {split:^27}" for split in shown)
        sub = f"{'':<{width}}" + " | H@1   H@5   MRR   none " * len(shown)
        print(head, file=err)
        print(sub.rstrip(), file=err)
        for system, splits in data["systems"].items():
            cells = "".join(
                " | " + " ".join(f"{splits[s][m]:.2f}".ljust(5) for m in METRICS) for s in shown
            )
            print(f"{system:<{width}}{cells}".rstrip(), file=err)
        for split, verdict in data["targets"].items():
            failed = [c for c, ok in verdict["checks"].items() if not ok]
            state = "met" if verdict["met"] else "NOT met: " + ", ".join(failed)
            print(f"targets for recall on {split}: {state}", file=err)


def markdown(report: dict[str, Any], systems: Sequence[str] | None = None) -> str:
    """The tables of docs/relevance.md."""
    out = []
    for name, data in report["sets"].items():
        out.append(f"\n#### {name} ({data['sections']:,} sections)\n")
        shown = [s for s in ("dev", "heldout") if s in data["systems"]["recall"]]
        names = {"dev": "dev", "heldout": "held-out"}
        metrics = ("H@1", "H@5", "MRR", "none")
        out.append(
            "| system | " + " | ".join(f"{names[s]} {m}" for s in shown for m in metrics) + " |"
        )
        out.append("|---" * (1 + 4 * len(shown)) + "|")
        for system, splits in data["systems"].items():
            if systems is not None and system not in systems:
                continue
            cells = [f"{splits[s][m]:.2f}" for s in shown for m in METRICS]
            label = f"**{system}**" if system == "recall" else system
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def explain(raw: dict[str, Any], system: str, index_of: dict[str, Any]) -> None:
    """Per-query ranks on the dev split, with what outranks the answer."""
    err = sys.stderr
    for name, (queries, systems) in raw.items():
        print(f"\n== {name} dev, system {system}", file=err)
        for q in queries:
            if q.split != "dev":
                continue
            rank_, empty, hits = systems[system][q.id]
            base = systems["fts5-unicode61"][q.id][0]
            shown = "none" if empty else (str(rank_) if rank_ else ">10")
            print(
                f"{q.id} [{q.kind}] rank={shown} (contract="
                f"{systems['contract'][q.id][0]}, fts5={base}) {q.text!r}",
                file=err,
            )
            if rank_ != 1:
                want = ", ".join(f"{p}:{ln}" for p, ln in sorted(q.answers))
                print(f"    want {want}", file=err)
                for i, (p, ln) in enumerate(hits[:3], 1):
                    print(f"    {i}. {p}:{ln} {index_of[name].get((p, ln), '')}", file=err)


def headings(engine: Engine, names: Sequence[str]) -> dict[str, dict[Hit, str]]:
    out: dict[str, dict[Hit, str]] = {}
    for name in names:
        bundle, _, _ = load(name)
        index = engine.prepare(engine.call(bundle))
        out[name] = {where(index, g): index.section(g).heading for g in range(index.n)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--explain", metavar="SYSTEM", help="per-query dev ranks of SYSTEM")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated (en,zh,tldr)")
    parser.add_argument("--markdown", action="store_true", help="also print the docs tables")
    args = parser.parse_args(argv)
    names = [s for s in args.sets.split(",") if s]
    # tldr (38,000 files) is over the CLI's default limits and within the editor's; the
    # limits only ever refuse, never change a result. Unparsable files would be skipped
    # and counted (none are, on these corpora).
    settings = Settings(limits=Limits.editor(), skip_invalid=True)
    report, raw = measure(settings, names)
    json.dump(report, sys.stdout, indent=1, sort_keys=False, ensure_ascii=False)
    print(file=sys.stdout)
    print_table(report)
    if args.markdown:
        print(markdown(report), file=sys.stderr)
    if args.explain:
        explain(raw, args.explain, headings(Engine(settings), names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
