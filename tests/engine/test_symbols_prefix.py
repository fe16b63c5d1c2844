"""As-you-type symbol search (SPEC §11, docs/performance.md): the last term also matches as a
prefix, expanded to at most the 64 most frequent indexed terms that start with it (ties by
the term itself), so a one-letter prefix cannot make every keystroke rank the vocabulary."""

from __future__ import annotations

from citeline.engine import Call, Engine, Settings

CAP = 64


def files_for(counts: dict[str, int]) -> dict[str, str]:
    """`term` in `count` sections (one file each), nothing else shared."""
    return {
        f"{term}-{k}.md": f"# Note {k}\n\n{term} here\n"
        for term, count in counts.items()
        for k in range(count)
    }


def expanded_terms(engine: Engine, bundle, query: str) -> set[str]:
    hits = engine.symbols(engine.call(bundle), query, cap=10_000)
    return {h.path.split("-")[0] for h in hits}


def test_prefix_expands_to_the_64_most_frequent_terms(make_bundle) -> None:
    # Six rare terms sort first alphabetically; the 64 frequent ones must win over them.
    rare = {f"zza{i}": 1 for i in range(6)}
    frequent = {f"zzb{i:02}": 2 for i in range(CAP)}
    bundle = make_bundle(files_for({**rare, **frequent}))
    engine = Engine()
    assert expanded_terms(engine, bundle, "zz") == set(frequent)
    hits = engine.symbols(engine.call(bundle), "zz", cap=10_000)
    assert len(hits) == 2 * CAP
    # A longer prefix that only the rare terms share finds them all.
    assert expanded_terms(engine, bundle, "zza") == set(rare)
    # A whole word, not a prefix (the query ends in a separator): one term, no expansion.
    assert expanded_terms(engine, bundle, "zzb07 ") == {"zzb07"}


def test_equal_frequencies_keep_the_first_64_terms_in_code_point_order(make_bundle) -> None:
    terms = {f"zz{i:03}": 1 for i in range(CAP + 6)}
    bundle = make_bundle(files_for(terms))
    assert expanded_terms(Engine(), bundle, "zz") == set(sorted(terms)[:CAP])


def test_the_cap_counts_terms_not_sections(make_bundle) -> None:
    # Exactly 64 terms: every one is kept, however many sections hold them.
    terms = {f"zz{i:02}": 1 + i % 3 for i in range(CAP)}
    bundle = make_bundle(files_for(terms))
    hits = Engine().symbols(Call(bundle, Settings()), "zz", cap=10_000)
    assert len(hits) == sum(terms.values())
    assert {h.path.split("-")[0] for h in hits} == set(terms)
