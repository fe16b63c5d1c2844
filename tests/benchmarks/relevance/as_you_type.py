"""As-you-type symbol search (SPEC §11 workspace/symbol) measured on the tldr pages.

Run by hand from the repository root (or anywhere):

    python tests/benchmarks/relevance/as_you_type.py      # JSON on stdout, tables on stderr
    python tests/benchmarks/relevance/as_you_type.py --explain "docker run"

What a person types into the editor's symbol picker on the tldr pages is a command's name,
and the section they want is the page whose heading is that name: `docker run` → the page
headed `docker run`. So the questions here are made, not judged: the headings of English
pages (every 25th English page with a heading of two words or more, and every 50th with one
word, in path order; alternately dev and held-out), each typed a character at a time. For
each prefix that ends inside or at the end of a word (what the editor sends as the user
types; prefixes of one or two characters are left out, where any page is as good as
another), this reports:

- `named`: the rank of the first section whose heading is the whole question (any
  language: the translations of a page keep its heading) — what the user will have typed;
  MRR@100 (as the symbol cap), and Hit@1 / Hit@10, over every prefix and over the prefixes
  that end a word;
- `english`: the rank of the English page itself (`pages/…`) at the last keystroke (the
  whole name typed), Hit@10 and the median rank (101 when not in the first 100).

The judged sets (tests/benchmarks/relevance/judged_*.json) are also asked as the symbol
picker would ask them at their last keystroke (the last word matched as a prefix): Hit@5 and
MRR@10, so that a change made for command names does not cost natural questions.

Systems are keyword arguments of engine.rank.rank (`as_you_type=AsYouType(...)`); the
queries go straight to the ranker over one index per profile, exactly as Engine.symbols
ranks (checked against Engine.symbols for a few prefixes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from locate import bundle_path

from citeline.engine import Engine
from citeline.engine.answer.requests import Relevance
from citeline.engine.base.limits import Limits, Settings
from citeline.engine.index.index import Index
from citeline.engine.rank.rank import rank
from citeline.engine.text.terms import normalise, query_terms, word_re

try:  # the parameters exist from issue 32 on; without them, the code as it was
    from citeline.engine.rank.scoring import AS_YOU_TYPE, AsYouType
except ImportError:  # pragma: no cover - measuring an older checkout
    AS_YOU_TYPE = None
    AsYouType = None  # type: ignore[assignment,misc]

HERE = Path(__file__).resolve().parent
TLDR = "../shared/corpora/tldr/docs"
CAP = 100  # the symbol cap (SPEC §11 default)
K_JUDGED = 10
MIN_PREFIX = 3
SETS = ("en", "tldr", "cmd", "ref")


@dataclass(frozen=True, slots=True)
class System:
    name: str
    profile: str  # "recall" (the editors' default) or "contract"
    kwargs: dict[str, Any] = field(default_factory=dict)


def systems() -> list[System]:
    out = [System("recall", "recall"), System("contract", "contract")]
    if AsYouType is None:
        return out
    base = AS_YOU_TYPE
    out += [
        System(
            "recall: expansions as separate terms",
            "recall",
            {"as_you_type": replace(base, grouped=False, expansion=1.0, named=0.0)},
        ),
        System(
            "recall: expansions weigh 1", "recall", {"as_you_type": replace(base, expansion=1.0)}
        ),
        System(
            "recall: expansions weigh 0.5",
            "recall",
            {"as_you_type": replace(base, expansion=0.5)},
        ),
        System(
            "recall: expansions weigh 0.75",
            "recall",
            {"as_you_type": replace(base, expansion=0.75)},
        ),
        System("recall: named bonus off", "recall", {"as_you_type": replace(base, named=0.0)}),
        System("recall: named bonus 0.2", "recall", {"as_you_type": replace(base, named=0.2)}),
        System("recall: named bonus 0.5", "recall", {"as_you_type": replace(base, named=0.5)}),
        System("recall: named bonus 1", "recall", {"as_you_type": replace(base, named=1.0)}),
        System(
            "contract: expansions as separate terms",
            "contract",
            {"as_you_type": replace(base, grouped=False, expansion=1.0, named=0.0)},
        ),
    ]
    return out


@dataclass(frozen=True, slots=True)
class Question:
    text: str  # the heading, as the user types it (case as written)
    english: str  # the English page's path
    split: str


def questions(index: Index) -> list[Question]:
    """Headings of English pages, sampled in path order (see the module docstring)."""
    pages: dict[str, str] = {}
    for g in range(index.n):
        sec = index.section(g)
        if sec.path.startswith("pages/") and sec.level == 1 and sec.heading:
            pages.setdefault(sec.path, sec.heading)
    multi = [p for p in sorted(pages) if len(word_re(pages[p]).findall(pages[p])) >= 2]
    single = [p for p in sorted(pages) if len(word_re(pages[p]).findall(pages[p])) == 1]
    chosen = sorted(multi[::25] + single[::50])
    return [Question(pages[p], p, "dev" if i % 2 == 0 else "heldout") for i, p in enumerate(chosen)]


def prefixes(text: str) -> list[tuple[str, bool]]:
    """(prefix, ends a word) for each prefix typed that ends in a word character."""
    out = []
    for n in range(MIN_PREFIX, len(text) + 1):
        p = text[:n]
        if not word_re(p[-1:]).fullmatch(p[-1:]):
            continue
        ends = n == len(text) or not word_re(text[n : n + 1]).fullmatch(text[n : n + 1])
        out.append((p, ends))
    return out


def ranker(index: Index, system: System) -> Callable[[str], list[int]]:
    rel = Relevance.from_mapping({"profile": system.profile})

    def symbols(query: str) -> list[int]:
        terms = query_terms(query, rel.tokenizer)
        prefix = bool(word_re(query[-1:]).fullmatch(query[-1:]))
        ranked = rank(
            index,
            terms,
            match_any=rel.match == "any",
            prefix_last=prefix,
            limit=CAP,
            **system.kwargs,
        )
        return [s.section for s in ranked.best]

    return symbols


def rank_of(found: Sequence[int], good: Callable[[int], bool]) -> int | None:
    for i, g in enumerate(found, 1):
        if good(g):
            return i
    return None


def mrr(ranks: Sequence[int | None]) -> float:
    return sum(1 / r for r in ranks if r) / len(ranks) if ranks else 0.0


def hit(ranks: Sequence[int | None], k: int) -> float:
    return sum(1 for r in ranks if r and r <= k) / len(ranks) if ranks else 0.0


def measure_headings(
    index: Index, system: System, qs: Sequence[Question], explain: str | None
) -> dict[str, Any]:
    symbols = ranker(index, system)
    out: dict[str, Any] = {}
    times: list[float] = []
    for split in ("dev", "heldout", "all"):
        chosen = [q for q in qs if split == "all" or q.split == split]
        every: list[int | None] = []
        ends: list[int | None] = []
        english: list[int | None] = []
        for q in chosen:
            want = normalise(q.text)
            for p, at_end in prefixes(q.text):
                start = time.perf_counter()
                found = symbols(p)
                if split == "all":
                    times.append(time.perf_counter() - start)
                r = rank_of(found, lambda g, w=want: normalise(index.section(g).heading) == w)
                every.append(r)
                if at_end:
                    ends.append(r)
                if p == q.text:
                    english.append(
                        rank_of(found, lambda g, e=q.english: index.section(g).path == e)
                    )
                if explain is not None and q.text == explain:
                    top = [f"{index.section(g).path}|{index.section(g).heading}" for g in found[:5]]
                    print(f"  {system.name}: {p!r} named at {r}; top {top}", file=sys.stderr)
        out[split] = {
            "prefixes": len(every),
            "named_mrr@100": round(mrr(every), 4),
            "named_hit@1": round(hit(every, 1), 4),
            "named_hit@10": round(hit(every, 10), 4),
            "named_mrr@100_word_ends": round(mrr(ends), 4),
            "english_hit@10": round(hit(english, 10), 4),
            "english_median_rank": statistics.median(r or CAP + 1 for r in english),
        }
    out["rank_ms_p50"] = round(1000 * statistics.median(times), 3)
    return out


def measure_judged(indexes: dict[str, Index], system: System) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in SETS:
        data = json.loads((HERE / f"judged_{name}.json").read_text(encoding="utf-8"))
        index = indexes[f"{data['bundle']}|{system.profile}"]
        symbols = ranker(index, system)
        ranks = []
        for q in data["queries"]:
            answers = {(a["path"], a["line_start"]) for a in q["answers"]}
            found = symbols(q["query"])[:K_JUDGED]
            ranks.append(
                rank_of(
                    found,
                    lambda g, i=index, a=answers: (i.section(g).path, i.section(g).first + 1) in a,
                )
            )
        out[name] = {"hit@5": round(hit(ranks, 5), 4), "mrr@10": round(mrr(ranks), 4)}
    return out


def crosscheck(engine: Engine, bundle: Path, index: Index, profile: str) -> int:
    """The direct ranker agrees with Engine.symbols on a few prefixes."""
    symbols = ranker(index, System(profile, profile))
    checked = 0
    for query in ("docker ru", "git commit", "tar"):
        hits = engine.symbols(engine.call(bundle), query, cap=CAP, relevance={"profile": profile})
        got = [(h.path, h.line_start) for h in hits]
        want = [(index.section(g).path, index.section(g).first + 1) for g in symbols(query)]
        if got != want:
            raise SystemExit(f"harness and Engine.symbols disagree on {query!r} ({profile})")
        checked += 1
    return checked


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--explain", metavar="QUESTION", help="print every prefix's top five")
    parser.add_argument("--no-judged", action="store_true", help="headings only")
    parser.add_argument("--cache", help="a cache folder for the indexes (default: none)")
    args = parser.parse_args()
    settings = Settings(limits=Limits.editor(), skip_invalid=True)
    engine = Engine(settings, workers=2, cache=args.cache)
    report: dict[str, Any] = {"cap": CAP, "min_prefix": MIN_PREFIX, "systems": {}}
    indexes: dict[str, Index] = {}
    bundles = {TLDR} | (
        set()
        if args.no_judged
        else {
            json.loads((HERE / f"judged_{n}.json").read_text(encoding="utf-8"))["bundle"]
            for n in SETS
        }
    )
    for name in sorted(bundles):
        bundle = bundle_path(name)
        snapshot = engine.capture(engine.call(bundle))
        for profile in ("recall", "contract"):
            rel = Relevance.from_mapping({"profile": profile})
            start = time.perf_counter()
            indexes[f"{name}|{profile}"] = engine.index(snapshot, rel.analysis, bundle=bundle)
            print(f"{name} {profile}: {time.perf_counter() - start:.1f}s", file=sys.stderr)
            if name == TLDR:
                report.setdefault("crosschecked", 0)
                report["crosschecked"] += crosscheck(
                    engine, bundle, indexes[f"{name}|{profile}"], profile
                )
    qs = questions(indexes[f"{TLDR}|recall"])
    report["questions"] = {s: sum(q.split == s for q in qs) for s in ("dev", "heldout")}
    for system in systems():
        index = indexes[f"{TLDR}|{system.profile}"]
        row: dict[str, Any] = {"headings": measure_headings(index, system, qs, args.explain)}
        if not args.no_judged:
            row["judged"] = measure_judged(indexes, system)
        report["systems"][system.name] = row
        h = row["headings"]
        line = (
            f"{system.name:45} named MRR dev {h['dev']['named_mrr@100']:.3f} "
            f"held {h['heldout']['named_mrr@100']:.3f} hit@1 {h['all']['named_hit@1']:.3f} "
            f"word-ends {h['all']['named_mrr@100_word_ends']:.3f} | english hit@10 "
            f"{h['all']['english_hit@10']:.3f} median {h['all']['english_median_rank']}"
            f" | {h['rank_ms_p50']} ms"
        )
        if "judged" in row:
            line += " | " + " ".join(
                f"{n} {v['hit@5']:.2f}/{v['mrr@10']:.2f}" for n, v in row["judged"].items()
            )
        print(line, file=sys.stderr)
    issue = {}
    for text, path in (
        ("git commit", "pages/common/git-commit.md"),
        ("docker run", "pages/common/docker-run.md"),
    ):
        for system in systems()[:2]:
            index = indexes[f"{TLDR}|{system.profile}"]
            symbols = ranker(index, system)
            issue[f"{system.name}: {text}"] = {
                p: rank_of(symbols(p), lambda g, i=index, w=path: i.section(g).path == w)
                for p, _ in prefixes(text)
            }
    report["issue_32"] = issue
    print(json.dumps(issue, indent=1), file=sys.stderr)
    json.dump(report, sys.stdout, indent=1)
    print()
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
