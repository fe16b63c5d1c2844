"""The text before a file's first heading is named by the file's title — front matter
`title`, else the file's first H1, else its path — the same way in every front."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.engine import Engine, Settings
from citeline.engine.text.sections import label_in, section_label
from citeline.lsp.symbols import symbol_name

FILES = {
    "titled.md": "---\ntitle: Deploy guide\n---\nDeploy intro.\n\n# Other heading\n\nText.\n",
    "h1.md": "Deploy before the title.\n\n## Sub first\n\nx\n\n# The H1 title\n\ny\n",
    "bare.md": "Deploy with no heading at all.\n",
    "empty.md": "# Start\n\nnothing\n\n#\n\nDeploy under an empty heading.\n",
}
EXPECTED = {
    "titled.md": "Deploy guide",
    "h1.md": "The H1 title",
    "bare.md": "bare.md",
    "empty.md": "(empty heading)",
}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cwd=cwd, env={"NO_COLOR": "1"})


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "b", FILES)


def test_the_rule() -> None:
    assert section_label("a.md", "Heading", 2, "T", "H") == "Heading"
    assert section_label("a.md", "", 1, "T", "H") == "(empty heading)"
    assert section_label("a.md", "", 0, "T", "H") == "T"
    assert section_label("a.md", "", 0, "", "H") == "H"
    assert section_label("a.md", "", 0, "", "") == "a.md"
    for path, text in FILES.items():
        line = 4 if path == "titled.md" else (7 if path == "empty.md" else 1)
        if path == "empty.md":
            line = 5
        assert label_in(path, text.encode(), line, "") == EXPECTED[path], path


def test_cli_human_output_names_the_preamble_by_title(bundle: Path) -> None:
    out = run("search", "b", "--query", "deploy", "--profile", "recall", cwd=bundle.parent)
    assert out.returncode == 0, out.stderr
    assert "(no heading)" not in out.stdout
    heads: dict[str, set[str]] = {}
    for line in out.stdout.splitlines():
        if line.startswith(tuple(f"b/{p}:" for p in FILES)):
            where, _, rest = line.partition(": ")
            path = where.split(":")[0].removeprefix("b/")
            heads.setdefault(path, set()).add(rest.split("  (lines")[0])
    for path, label in EXPECTED.items():
        assert label in heads[path], (path, heads)


def test_lsp_symbols_name_it_the_same_way(bundle: Path) -> None:
    hits = Engine(Settings()).symbols(bundle, "deploy", relevance={"profile": "recall"})
    names = {h.path: symbol_name(h) for h in hits if not h.heading}
    assert names == EXPECTED
