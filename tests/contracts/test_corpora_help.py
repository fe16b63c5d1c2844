"""A corpus test that skips tells a contributor how to get the corpora, and the place it
names says it (issue 51)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import needs

REPO = Path(__file__).resolve().parents[2]


def test_a_skip_for_a_missing_corpus_says_where_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(needs.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        needs.missing("corpus /nowhere/tldr/docs")
    assert "docs/testing.md" in str(skipped.value)
    assert "The corpora" in str(skipped.value)


def test_the_named_section_lists_every_corpus_the_tests_read() -> None:
    text = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    section = text.split("### The corpora", 1)[1].split("\n## ", 1)[0]
    used = set()
    for path in (REPO / "tests").rglob("*.py"):
        used |= set(re.findall(r"""corpus\(\s*["']([a-z0-9-]+)["']""", path.read_text("utf-8")))
    assert used, "no test reads a corpus by name"
    for name in sorted(used):
        assert f"`{name}`" in section, name
    assert "docs/testing.md#the-corpora" in (REPO / "README.md").read_text(encoding="utf-8")
