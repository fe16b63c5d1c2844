"""Reuse (the stat index, live indexes, the persistent cache) never changes a result.

A warmed engine with a persistent cache, a second engine started on the same cache (as a
new process would be) and engines that read and analyse everything afresh on every request
(``reread=True``, no cache) must give byte-identical compact JSON for the same query set over
the Apache APISIX documentation (Chinese and mixed queries, the contract and the recall
profile, symbols), and the warm engine must see an edit made between two requests (fresh
snapshot, new revision), analysing only the edited file.

To stay within ~30 s on a loaded machine the bundle is a fixed part of the corpus (getting
started, terminology, tutorials, service discovery, FAQ and a few plugin pages), copied to a
temporary folder so that it can be edited.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from needs import CORPORA, missing

from citeline.engine import Call, Engine, Settings
from citeline.engine.answer.present import encode

pytestmark = pytest.mark.corpus

CORPUS = CORPORA / "apisix-zh" / "docs"
LATEST = "docs/zh/latest"
SUBSET = (
    "getting-started",
    "terminology",
    "tutorials",
    "discovery",
    "architecture-design",
    "FAQ.md",
    "plugins/limit-req.md",
    "plugins/limit-count.md",
    "plugins/api-breaker.md",
    "plugins/proxy-rewrite.md",
    "plugins/cors.md",
)
EDITED = f"{LATEST}/getting-started/rate-limiting.md"
SETTINGS = Settings(skip_invalid=True)

# (kind, argument): "search" takes a request object; "symbols" a (query, relevance) pair.
Case = tuple[str, Any]
CASES: tuple[Case, ...] = (
    ("search", {"query": "upstream"}),
    ("search", {"query": "限流"}),
    ("search", {"query": "健康检查"}),
    ("search", {"query": "jwt 认证"}),
    ("search", {"query": "limit-req"}),
    ("search", {"query": "consumer key-auth"}),
    ("search", {"query": "route upstream service"}),
    ("search", {"query": "APISIX", "limit": 100}),
    ("search", {"query": "nacos 服务发现"}),
    ("search", {"query": "CORS allow_origins"}),
    ("search", {"query": "熔断", "limit": 5}),
    ("search", {"query": "etcd"}),
    ("search", {"query": "如何配置限流", "profile": "recall"}),
    ("search", {"query": "upstream 健康检查", "profile": "recall"}),
    ("search", {"query": "rate limiting consumers", "profile": "recall", "limit": 50}),
    ("search", {"query": "负载均衡 upstream", "match": "any"}),
    ("search", {"query": "插件 配置", "cjk": "bigrams", "context": "outline"}),
    ("symbols", ("upst", None)),
    ("symbols", ("key-auth cons", None)),
    ("symbols", ("限流", {"profile": "recall"})),
    ("symbols", ("", None)),
)


def _writable(path: Path) -> None:
    """The corpus is read-only; its copy must be editable and removable."""
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            full = os.path.join(dirpath, name)
            os.chmod(full, os.stat(full).st_mode | stat.S_IWUSR)
    os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def _copy_subset(dest: Path) -> Path:
    for rel in SUBSET:
        src = CORPUS / LATEST / rel
        target = dest / LATEST / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, copy_function=shutil.copyfile)
        else:
            shutil.copyfile(src, target)
    _writable(dest)
    return dest


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (CORPUS / LATEST).is_dir():
        missing(f"corpus {CORPUS / LATEST}")  # a skip, or a failure in CI
    return _copy_subset(tmp_path_factory.mktemp("apisix-subset"))


def run(engine: Engine, root: Path, case: Case) -> str:
    kind, arg = case
    if kind == "search":
        return encode(engine.search(engine.call(root, settings=SETTINGS), arg))
    query, relevance = arg
    hits = engine.symbols(engine.call(root, settings=SETTINGS), query, relevance=relevance)
    return encode({"query": query, "symbols": [asdict(h) for h in hits]})


def fresh() -> Engine:
    """An engine that reads and analyses every file on every request, caching nothing."""
    return Engine(SETTINGS, reread=True, hold_bytes=0)


def test_reuse_gives_the_same_bytes_as_reading_everything(
    bundle: Path, tmp_path: Path, analysed: list[str]
) -> None:
    warm = Engine(SETTINGS, cache=tmp_path / "cache")
    first = [run(warm, bundle, case) for case in CASES]  # fills memory and the cache
    files = len(warm.capture(warm.call(bundle)).searchable)
    assert len(analysed) >= files  # every file analysed at least once
    count = len(analysed)
    second = [run(warm, bundle, case) for case in CASES]  # served from memory
    assert len(analysed) == count, "warm runs over unchanged files must not re-analyse"
    later = Engine(SETTINGS, cache=tmp_path / "cache")  # a new process on the same cache
    third = [run(later, bundle, case) for case in CASES]
    assert len(analysed) == count, "a new engine must find every analysis in the cache"

    nonempty = 0
    for case, a, b, c in zip(CASES, first, second, third, strict=True):
        reference = run(fresh(), bundle, case)
        assert a == reference, f"reuse (filling) differs from reading everything for {case}"
        assert b == reference, f"reuse (warm) differs from reading everything for {case}"
        assert c == reference, f"reuse (cache) differs from reading everything for {case}"
        nonempty += '"total":0,' not in reference and '"symbols":[]' not in reference
    assert nonempty >= len(CASES) - 3  # the set exercises real hits, not empty answers


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reuse_sees_an_edit(tmp_path: Path, analysed: list[str]) -> None:
    if not (CORPUS / LATEST).is_dir():
        missing(f"corpus {CORPUS / LATEST}")  # a skip, or a failure in CI
    root = _copy_subset(tmp_path / "bundle")
    target = root / EDITED
    memo = Engine(SETTINGS)
    request = {"query": "zebrafrobnicate 限流"}

    before = memo.search(memo.call(root, settings=SETTINGS), request)
    baseline = memo.search(memo.call(root, settings=SETTINGS), {"query": "rate"})  # warmed
    assert before["total"] == 0
    analysed.clear()

    # 1. a new section appended (the file grows)
    original = target.read_bytes()
    target.write_bytes(original + "\n## 基准 zebrafrobnicate\n\nzebrafrobnicate 限流\n".encode())
    after = memo.search(memo.call(root, settings=SETTINGS), request)
    assert after["snapshot_revision"] != before["snapshot_revision"]
    assert after["snapshot_revision"] == fresh().capture(Call(root, SETTINGS)).revision
    assert after["total"] == 1
    hit = after["hits"][0]
    assert hit["path"] == EDITED and hit["heading"] == "基准 zebrafrobnicate"
    assert hit["content_sha256"] == _sha(target)
    assert analysed == [_sha(target)]  # only the edited file was analysed again
    plain = fresh()
    assert encode(after) == encode(plain.search(plain.call(root, settings=SETTINGS), request))
    symbols = memo.symbols(memo.call(root, settings=SETTINGS), "zebrafrob")
    assert [(s.path, s.heading) for s in symbols] == [(EDITED, "基准 zebrafrobnicate")]

    # 2. an edit that keeps the size: one ASCII letter of the new heading changed
    edited = target.read_bytes().replace(
        b"## \xe5\x9f\xba\xe5\x87\x86 zebra", b"## \xe5\x9f\xba\xe5\x87\x86 zebrb"
    )
    assert len(edited) == target.stat().st_size
    target.write_bytes(edited)
    again = memo.search(memo.call(root, settings=SETTINGS), {"query": "zebrbfrobnicate"})
    assert again["snapshot_revision"] not in (
        before["snapshot_revision"],
        after["snapshot_revision"],
    )
    assert again["total"] == 1 and again["hits"][0]["heading"] == "基准 zebrbfrobnicate"
    assert encode(again) == encode(
        plain.search(plain.call(root, settings=SETTINGS), {"query": "zebrbfrobnicate"})
    )

    # 3. back to the original bytes: the original revision and results again
    target.write_bytes(original)
    restored = memo.search(memo.call(root, settings=SETTINGS), {"query": "rate"})
    assert restored["snapshot_revision"] == before["snapshot_revision"]
    assert encode(restored) == encode(baseline)
    assert encode(restored) == encode(
        plain.search(plain.call(root, settings=SETTINGS), {"query": "rate"})
    )
