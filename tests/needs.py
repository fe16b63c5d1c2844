"""What some tests need from the machine (real corpora, command-line tools), and what its
absence means: a skip on a developer's machine, a failure in CI.

The corpora live in ../shared/corpora beside the repository (read in place, never copied);
CITELINE_CORPORA points elsewhere (a git worktree has no ../shared of its own). Without them
a corpus test skips, unless CITELINE_REQUIRE_CORPORA=1 (set by .ci/run): then it fails, so
that CI can never pass by not running the tests over real documentation.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRE = "CITELINE_REQUIRE_CORPORA"
REQUIRE_TOOLS = "CITELINE_REQUIRE_TOOLS"
CORPORA = Path(
    os.environ.get("CITELINE_CORPORA")
    or Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
)


# Where a contributor without the corpora learns how to get them (the skip says it).
HOW_TO_GET = "how to get the corpora: docs/testing.md, section 'The corpora'"


def required() -> bool:
    return os.environ.get(REQUIRE) == "1"


def missing(what: str) -> None:
    """Skip the calling test because `what` is absent, or fail it when corpora are required."""
    if required():
        pytest.fail(f"{what} is absent and {REQUIRE}=1 (set CITELINE_CORPORA to their folder)")
    pytest.skip(f"{what} is absent: {HOW_TO_GET}")


def corpus(name: str) -> Path:
    """The docs folder of corpus `name` (e.g. "apisix-zh"), or skip/fail as missing() says."""
    path = CORPORA / name / "docs"
    if not path.is_dir():
        missing(f"corpus {path}")
    return path


@pytest.fixture
def corpora() -> Path:
    """The corpora folder; the test skips (or fails, see REQUIRE) without it."""
    if not CORPORA.is_dir():
        missing(f"corpora folder {CORPORA}")
    return CORPORA


def tool(name: str) -> str:
    """The path of command `name` (rg, git): skip without it, fail under REQUIRE_TOOLS=1."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{name} is not installed and {REQUIRE_TOOLS}=1")
        pytest.skip(f"{name} is not installed")
    return path
