"""As-you-type ranking (SPEC §11 workspace/symbol; engine/rank/scoring.py AsYouType): the last
term's prefix expansions count as one term in which the word itself weighs most, and among
sections that score alike the one whose name says the query comes first (issue 32: on the
tldr pages `run` expanded to `runner`, `runsv`… and each rare expansion brought its own high
idf, so `docker run` sank under `gitlab-runner` and `runsv`)."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.requests import Relevance
from citeline.engine.rank.rank import rank
from citeline.engine.rank.scoring import AS_YOU_TYPE
from citeline.engine.text.terms import query_terms

PROFILES = ("contract", "recall")


def commands(extra: dict[str, str]) -> dict[str, str]:
    """Forty pages that say `run` (a common word) and a few given ones."""
    files = {f"cmd{i:02}.md": f"# cmd{i:02}\n\nrun the cmd{i:02} tool\n" for i in range(40)}
    files.update(extra)
    return files


def paths(hits: list) -> list[str]:
    return [h.path for h in hits]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("query", ["docker run", "docker ru", "docker r"])
def test_a_rare_expansion_does_not_outweigh_the_word(make_bundle, profile: str, query: str) -> None:
    bundle = make_bundle(
        commands(
            {
                "docker-run.md": "# docker run\n\ndocker run starts a container\n",
                # `runner` is rare (high idf), and said three times in the heading's page
                "gitlab-runner.md": "# gitlab-runner\n\nregister a docker runner runner\n",
                "runsv.md": "# runsv\n\nrunsv runsv runsv starts a service\n",
            }
        )
    )
    hits = Engine().symbols(Call(bundle, Settings()), query, relevance={"profile": profile})
    assert paths(hits)[0] == "docker-run.md"
    # Scored apart (as before), the rare expansions won: the slip this guards against.
    engine = Engine()
    rel = Relevance.from_mapping({"profile": profile})
    index = engine.index(engine.capture(engine.call(bundle)), rel.analysis)
    apart = replace(AS_YOU_TYPE, grouped=False, expansion=1.0, named=0.0)
    ranked = rank(
        index,
        query_terms(query, rel.tokenizer),
        match_any=rel.match == "any",
        prefix_last=True,
        limit=5,
        as_you_type=apart,
    )
    assert index.section(ranked.best[0].section).path != "docker-run.md"


def test_the_word_itself_weighs_more_than_its_expansions(make_bundle) -> None:
    # Same length, same counts: only the word differs (`run` typed, `runs` an expansion).
    bundle = make_bundle({"a.md": "# A\n\nthe runs here\n", "b.md": "# B\n\nthe run here\n"})
    engine = Engine()
    hits = engine.symbols(engine.call(bundle), "run")
    assert paths(hits) == ["b.md", "a.md"]
    assert hits[0].score > hits[1].score
    # Weighing as much as the word, the expansion ties with it (then concept_id decides).
    index = engine.index(engine.capture(engine.call(bundle)), Relevance().analysis)
    even = replace(AS_YOU_TYPE, expansion=1.0)
    ranked = rank(index, query_terms("run"), prefix_last=True, as_you_type=even)
    assert ranked.best[0].score == ranked.best[1].score
    assert [index.section(s.section).path for s in ranked.best] == ["a.md", "b.md"]


def test_expansions_are_one_term_so_holding_several_does_not_add_up(make_bundle) -> None:
    # `c.md` holds four different expansions of `ru` once each, `d.md` one expansion four
    # times: as one term, both hold it four times at the same weight and score alike.
    # Scored apart, c.md summed four idfs (each rare word's high) and came far ahead.
    bundle = make_bundle(
        commands(
            {
                "c.md": "# C\n\nrune rugby rural rusty\n",
                "d.md": "# D\n\nruns runs runs runs\n",
            }
        )
    )
    engine = Engine()
    hits = engine.symbols(engine.call(bundle), "ru", cap=5)
    assert paths(hits)[:2] == ["c.md", "d.md"]
    assert hits[0].score == hits[1].score
    index = engine.index(engine.capture(engine.call(bundle)), Relevance().analysis)
    apart = replace(AS_YOU_TYPE, grouped=False, expansion=1.0, named=0.0)
    ranked = rank(index, query_terms("ru"), prefix_last=True, limit=2, as_you_type=apart)
    assert ranked.best[0].score > 1.5 * ranked.best[1].score


@pytest.mark.parametrize("profile", PROFILES)
def test_the_section_named_as_asked_comes_first_among_alike(make_bundle, profile: str) -> None:
    # `docker container run` holds `docker` once more in a shorter body, so it scores a
    # little higher without the bonus; its name says the query less fully (two words of
    # three).
    bundle = make_bundle(
        commands(
            {
                "docker-run.md": "# docker run\n\ndocker run a new container\n",
                "docker-container-run.md": "# docker container run\n\ndocker docker run\n",
            }
        )
    )
    engine = Engine()
    rel = Relevance.from_mapping({"profile": profile})
    hits = engine.symbols(engine.call(bundle), "docker run", relevance={"profile": profile})
    assert paths(hits)[:2] == [
        "docker-run.md",
        "docker-container-run.md",
    ]
    index = engine.index(engine.capture(engine.call(bundle)), rel.analysis)
    terms = query_terms("docker run", rel.tokenizer)
    off = replace(AS_YOU_TYPE, named=0.0)
    ranked = rank(index, terms, match_any=rel.match == "any", prefix_last=True, as_you_type=off)
    first = index.section(ranked.best[0].section).path
    assert first == "docker-container-run.md"


def test_typing_a_word_reaches_its_stem(make_bundle) -> None:
    # Under stemming the terms are stems: `runnin` is no stem's prefix (`running` → `run`),
    # but it is the prefix of the word `running`, whose stem it then stands for.
    bundle = make_bundle({"a.md": "# Jobs\n\nkeep the service running\n", "b.md": "# B\n\nx\n"})
    hits = Engine().symbols(
        Call(bundle, Settings()), "service runnin", relevance={"profile": "recall"}
    )
    assert paths(hits) == ["a.md"]
    assert Engine().symbols(Call(bundle, Settings()), "runnin", relevance={"profile": "recall"})


@pytest.mark.parametrize("profile", PROFILES)
def test_the_best_k_are_the_first_k_of_all(make_bundle, profile: str) -> None:
    # The named bonus rescores only the sections that can reach the top k (rescore_bounded):
    # the first k of a ranking without a limit must be the ranking with limit k.
    rng = random.Random(32)
    words = ["run", "runs", "runner", "rust", "docker", "container", "ru", "start", "stop"]
    files = {}
    for i in range(60):
        heading = " ".join(rng.sample(words, rng.randint(1, 3)))
        body = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        files[f"p{i:02}.md"] = f"# {heading}\n\n{body}\n"
    bundle = make_bundle(files)
    engine = Engine()
    rel = Relevance.from_mapping({"profile": profile})
    index = engine.index(engine.capture(engine.call(bundle)), rel.analysis)
    queries = ["r", "ru", "run", "docker r", "docker ru", "container run", "stop ru"]
    for query, k in itertools.product(queries, (1, 3, 7)):
        terms = query_terms(query, rel.tokenizer)
        every = rank(index, terms, match_any=rel.match == "any", prefix_last=True)
        best = rank(index, terms, match_any=rel.match == "any", prefix_last=True, limit=k)
        assert every.best, query
        assert [(s.section, s.score) for s in best.best] == [
            (s.section, s.score) for s in every.best[:k]
        ], (query, k)
