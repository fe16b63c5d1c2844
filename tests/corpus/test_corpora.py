"""Real documentation corpora, read in place from ../shared/corpora (never copied)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from bundles import section_text
from needs import CORPORA, corpus

from citeline.engine import Engine, Limits, Settings
from citeline.engine.text.terms import Tokenizer

APISIX = CORPORA / "apisix-zh" / "docs"
POWERSHELL = CORPORA / "powershell-docs" / "docs"
PS_SETTINGS = Settings(limits=Limits(max_tokens=10**8), skip_invalid=True)
TOK = Tokenizer()

pytestmark = pytest.mark.corpus


@pytest.fixture(autouse=True)
def _corpora_present() -> None:
    """Skip without the corpora; fail instead under CITELINE_REQUIRE_CORPORA=1 (CI)."""
    corpus("apisix-zh")
    corpus("powershell-docs")


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine()


def check_hits(bundle: Path, res: dict) -> None:
    assert res["hits"], f"no hits for {res['query']!r}"
    assert res["total"] >= len(res["hits"])
    cache: dict[str, bytes] = {}
    for hit in res["hits"]:
        data = cache.setdefault(hit["path"], (bundle / hit["path"]).read_bytes())
        assert hit["content_sha256"] == hashlib.sha256(data).hexdigest()
        text = section_text(data, hit["line_start"], hit["line_end"])
        assert hit["snippet"] in text
        assert len(hit["snippet"]) <= 512
        assert hit["matched_terms"] == res["terms"]
        assert hit["locator"].endswith(f"#L{hit['line_start']}-L{hit['line_end']}")
        shown = hit["snippet"].encode()
        prev_end = 0
        for span in hit["match_spans"]:
            assert prev_end <= span["start"] < span["end"] <= len(shown)
            prev_end = span["end"]
            piece = shown[span["start"] : span["end"]].decode()
            assert set(TOK.tokens(piece)) & set(res["terms"])
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True)


_FENCE = re.compile(r"^ {0,3}(?:> ?)*\s*(`{3,}|~{3,})")


def code_and_comment_lines(text: str) -> tuple[set[int], set[int]]:
    """0-based lines inside fenced code and inside HTML comments, by a plain line scan."""
    fenced: set[int] = set()
    commented: set[int] = set()
    fence: str | None = None
    in_comment = False
    for i, line in enumerate(text.split("\n")):
        line = line.rstrip("\r")
        if in_comment:
            commented.add(i)
            if "-->" in line:
                in_comment = False
            continue
        if fence is not None:
            fenced.add(i)
            m = _FENCE.match(line)
            closing = m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
            if closing and not line.strip().lstrip(">").strip().lstrip(fence[0]).strip():
                fence = None
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in line.strip()[len(m.group(1)) :]):
            fence = m.group(1)
            continue
        if line.lstrip(" >").startswith("<!--") and "-->" not in line:
            commented.add(i)
            in_comment = True
    return fenced, commented


def test_apisix_searches(engine: Engine) -> None:
    for query in ["APISIX", "plugin", "route upstream", "limit-req", "Admin API", "etcd"]:
        check_hits(APISIX, engine.search(engine.call(APISIX), {"query": query, "limit": 100}))


def test_apisix_cjk_and_mixed_queries(engine: Engine) -> None:
    found = 0
    for query in ["描述", "注意", "参数", "示例", "APISIX 描述"]:
        res = engine.search(engine.call(APISIX), {"query": query, "limit": 50})
        if res["hits"]:
            found += 1
            check_hits(APISIX, res)
    assert found >= 2


def test_apisix_no_section_starts_in_code_or_comments(engine: Engine) -> None:
    idx = engine.prepare(engine.call(APISIX))
    by_path: dict[str, list] = {}
    for g in range(idx.n):
        sec = idx.section(g)
        by_path.setdefault(sec.path, []).append(sec)
    assert len(by_path) > 150
    starts = 0
    hash_in_comments = 0
    hash_in_fences = 0
    for path, sections in sorted(by_path.items()):
        text = (APISIX / path).read_bytes().decode("utf-8").removeprefix("\ufeff")
        lines = text.split("\n")
        fenced, commented = code_and_comment_lines(text)
        hash_in_comments += sum(1 for i in commented if lines[i].lstrip().startswith("#"))
        hash_in_fences += sum(1 for i in fenced if lines[i].lstrip().startswith("#"))
        for sec in sections:
            if sec.level == 0:
                continue
            starts += 1
            where = f"{path}:{sec.first + 1}: {lines[sec.first]!r}"
            assert sec.first not in fenced, where
            assert sec.first not in commented, where
    assert starts > 1000
    assert hash_in_comments > 2000  # the licence headers
    assert hash_in_fences > 50


def test_apisix_revision_is_stable(engine: Engine) -> None:
    one = engine.search(engine.call(APISIX), {"query": "APISIX"})["snapshot_revision"]
    two = engine.concepts(engine.call(APISIX), {"query": "plugin"})["snapshot_revision"]
    assert one == two == engine.capture(engine.call(APISIX)).revision


def test_apisix_concepts(engine: Engine) -> None:
    res = engine.concepts(engine.call(APISIX), {"query": "plugins/", "limit": 100})
    assert res["total"] > 20
    ids = [c["concept_id"] for c in res["concepts"]]
    assert ids == sorted(ids)
    for c in res["concepts"]:
        data = (APISIX / c["path"]).read_bytes()
        assert c["content_sha256"] == hashlib.sha256(data).hexdigest()


def test_powershell_skips_invalid_front_matter(engine: Engine) -> None:
    res = engine.search(engine.call(POWERSHELL, settings=PS_SETTINGS), {"query": "pipeline"})
    skipped = res["skipped"]
    assert [s["path"] for s in skipped] == [
        "reference/7.6/Microsoft.PowerShell.Core/ForEach-Object.md"
    ]
    assert skipped[0]["line"] > 1
    assert "YAML" in skipped[0]["reason"]
    # the revision still covers the skipped file
    assert (
        res["snapshot_revision"]
        == engine.capture(engine.call(POWERSHELL, settings=PS_SETTINGS)).revision
    )
    check_hits(POWERSHELL, res)


def test_powershell_searches(engine: Engine) -> None:
    for query in ["Get-Process", "pipeline variable", "ForEach-Object", "execution policy"]:
        res = engine.search(
            engine.call(POWERSHELL, settings=PS_SETTINGS), {"query": query, "limit": 100}
        )
        check_hits(POWERSHELL, res)
        assert all(
            h["path"] != "reference/7.6/Microsoft.PowerShell.Core/ForEach-Object.md"
            for h in res["hits"]
        )


def test_powershell_default_token_limit_is_reported(engine: Engine) -> None:
    from citeline.engine import CitelineError

    with pytest.raises(CitelineError) as err:
        engine.search(
            engine.call(POWERSHELL, settings=Settings(skip_invalid=True)), {"query": "pipeline"}
        )
    assert err.value.code == "resource_limit"
    assert err.value.details["limit"] == "max_tokens"
    with pytest.raises(CitelineError) as err:
        engine.search(
            engine.call(POWERSHELL, settings=Settings(limits=Limits(max_tokens=10**8))),
            {"query": "pipeline"},
        )
    assert err.value.code == "parse_error"
