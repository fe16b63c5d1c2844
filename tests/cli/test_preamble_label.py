"""The text before a file's first heading is named by the file's title — front matter
`title`, else the file's first H1, else its path — the same way in every front."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.engine import Call, Engine, Settings
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
    call = Call(bundle, Settings())
    hits = Engine().symbols(call, "deploy", relevance={"profile": "recall"})
    names = {h.path: symbol_name(h) for h in hits if not h.heading}
    assert names == EXPECTED


def semantic_result(bundle: Path) -> dict[str, object]:
    """A semantic-mode result whose matches are the preambles of FILES (as the engine would
    cite them: the section's fields under `x-`), for the renderers."""
    import hashlib

    starts = {"titled.md": 4, "h1.md": 1, "bare.md": 1, "empty.md": 5}
    matches = []
    for path, line in starts.items():
        data = (bundle / path).read_bytes()
        text = data.decode().split("\n")[line - 1]
        matches.append(
            {
                "path": path,
                "line": line,
                "column": 1,
                "text": text,
                "context": {"before": [], "after": []},
                "score": 0.9,
                "x-line_start": line,
                "x-line_end": line,
                "x-heading": "",
                "x-content_sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    return {
        "mode": "semantic",
        "pattern": "deploy",
        "threshold": 0.5,
        "model": "m",
        "snapshot_revision": "0" * 64,
        "total": len(matches),
        "truncated": False,
        "matches": matches,
    }


def test_semantic_matches_name_it_the_same_way(bundle: Path) -> None:
    from citeline.cli.render import render_semantic
    from citeline.fronts.hits import Sources
    from citeline.mcp_server.text import render_text

    result = semantic_result(bundle)
    shown = render_semantic(result, False, sources=Sources(str(bundle))).splitlines()
    heads = [line for line in shown if not line.startswith("  ")]
    assert [h.split(" 0.90 ", 1)[1] for h in heads] == [
        EXPECTED[m["path"]] for m in result["matches"]
    ]  # type: ignore[index, union-attr]
    text = render_text("search_lines", result, Sources(str(bundle)))
    for path, label in EXPECTED.items():
        assert f"{path} lines" in text and f'"{label}"' in text, (path, text)
    assert "(text before the first heading)" not in text
