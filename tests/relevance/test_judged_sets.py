"""The relevance benchmark's judged sets and its scoring of them (tests/benchmarks/relevance).

The benchmark itself is run by hand (it indexes tldr many times); what is tested here is
what its figures rest on: every judged answer is a real heading of the corpus it names, and
the metrics and target checks mean what docs/relevance.md says they mean.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.needs import CORPORA, missing

RELEVANCE = Path(__file__).resolve().parents[1] / "benchmarks" / "relevance"
sys.path.insert(0, str(RELEVANCE))

import check_judged  # noqa: E402
import run  # noqa: E402


def test_every_judged_answer_is_a_heading_of_its_corpus(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not CORPORA.is_dir():
        missing(f"corpora folder {CORPORA}")
    monkeypatch.setenv("CITELINE_SHARED", str(CORPORA.parent))
    assert check_judged.main() == 0, capsys.readouterr().err
    names = {spec.filename for spec in check_judged.SPECS}
    # every set the benchmark runs is validated, and nothing it does not run
    assert names == {f"judged_{name}.json" for name in run.SETS}
    assert len(names) == 8


def test_sets_written_after_tuning_have_only_held_out_queries() -> None:
    for spec in check_judged.SPECS:
        if spec.id_prefix in ("ref", "cmd"):
            assert spec.dev == 0 and spec.heldout == spec.total >= 24


def test_metrics() -> None:
    rows = [(1, False), (3, False), (7, False), (None, False), (None, True)]
    assert run.score(rows) == {
        "hit@1": 0.2,
        "hit@5": 0.4,
        "mrr@10": pytest.approx((1 + 1 / 3 + 1 / 7) / 5),
        "no_result": 0.2,
    }
    assert run.first_rank([("a.md", 1), ("b.md", 4)], frozenset({("b.md", 4)})) == 2
    # only the first K hits count
    late = [("x.md", i) for i in range(1, run.K + 1)] + [("b.md", 4)]
    assert run.first_rank(late, frozenset({("b.md", 4)})) is None


def _split(h1: float, h5: float, mrr: float, none: float = 0.0) -> dict[str, float]:
    return {"hit@1": h1, "hit@5": h5, "mrr@10": mrr, "no_result": none}


def test_targets_compare_with_the_better_fts5_and_skip_an_absent_split() -> None:
    table = {
        "recall": {"heldout": _split(0.72, 0.92, 0.8), "all": _split(0.72, 0.92, 0.8)},
        "fts5-unicode61": {"heldout": _split(0.5, 0.7, 0.6)},
        "fts5-trigram": {"heldout": _split(0.4, 0.93, 0.5)},
    }
    verdict = run.targets("ref", table, ["fts5-unicode61", "fts5-trigram"])
    assert set(verdict) == {"heldout"}  # no dev queries: no dev verdict
    checks = verdict["heldout"]["checks"]
    assert checks["hit@5>=0.9"] and checks["hit@1>=0.7"] and checks["hit@1>fts5"]
    assert not checks["hit@5>fts5"]  # trigram's 0.93 is the better baseline here
    assert verdict["heldout"]["fts5_best"]["hit@5"] == 0.93
    assert not verdict["heldout"]["met"]
    table["recall"]["heldout"] = _split(0.72, 0.95, 0.8, none=0.04)
    assert (
        run.targets("ref", table, ["fts5-unicode61", "fts5-trigram"])["heldout"]["checks"][
            "no_result<=0.02"
        ]
        is False
    )
    # tldr's and cmd's languages have no Hit@1 target
    assert "hit@1>=0.7" not in run.targets("cmd", table, ["fts5-unicode61"])["heldout"]["checks"]


def test_markdown_shows_only_the_splits_a_set_has() -> None:
    report = {
        "sets": {
            "cmd": {
                "sections": 38_365,
                "systems": {"recall": {"heldout": _split(0.5, 0.875, 0.6), "all": _split(0, 0, 0)}},
            }
        }
    }
    text = run.markdown(report)
    assert "#### cmd (38,365 sections)" in text
    assert "| system | held-out H@1 | held-out H@5 | held-out MRR | held-out none |" in text
    assert "dev H@1" not in text
    assert "| **recall** | 0.50 | 0.88 | 0.60 | 0.00 |" in text


def test_proposals_are_named_and_measured_beside_recall() -> None:
    names = [s.name for s in run.SYSTEMS]
    assert names[:2] == ["contract", "recall"]
    for system in run.SYSTEMS:
        if system.proposal:
            assert system.proposal in run.PROPOSALS and system.strength > 0
            assert system.name.startswith("proposal:")
    assert {s.proposal for s in run.SYSTEMS} - {""} == set(run.PROPOSALS)
