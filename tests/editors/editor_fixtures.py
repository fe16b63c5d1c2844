"""Helpers shared by the end-to-end editor tests (real Neovim / Emacs against `citeline lsp`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from bundles import write_bundle

REPO = Path(__file__).resolve().parents[2]

# A small workspace with known headings, front matter and non-ASCII text.
FILES: dict[str, str] = {
    "guide.md": (
        "---\n"
        "title: User Guide\n"
        "---\n"
        "# Installation\n"
        "\n"
        "Install citeline with pip and run the language server.\n"
        "\n"
        "## Configuration\n"
        "\n"
        "Set the profile option to recall for broader matching.\n"
        "\n"
        "# Troubleshooting\n"
        "\n"
        "If the server does not start, check the executable path.\n"
    ),
    "notes/hashing.md": (
        "# Ordered hashtable\n"
        "\n"
        "An ordered hashtable keeps insertion order while hashing keys.\n"
        "\n"
        "## Collisions\n"
        "\n"
        "Collisions are resolved by chaining buckets.\n"
    ),
    "notes/unicode.md": ("# Café notes\n\nLe café crème coûte 3 €, the hashtable costs nothing.\n"),
}


# Files whose matching text ("zucchini") comes before their first heading: a hit the
# editors name by the file's title (front matter `title`, else its first H1), else its path.
PREAMBLES: dict[str, str] = {
    "kitchen/titled.md": (
        "---\ntitle: Kitchen Notes\n---\nThe zucchini soup needs garlic.\n\n# Soup\n\nSimmer.\n"
    ),
    "kitchen/bread.md": "Zucchini bread, from the old card.\n\n# Bread Basics\n\nKnead.\n",
    "kitchen/plain.md": "zucchini, and nothing else\n",
}
LABELS_QUERY = "zucchini"


def write_preambles(workspace: Path) -> None:
    write_bundle(workspace, PREAMBLES)


def require_editors() -> bool:
    return os.environ.get("CITELINE_REQUIRE_EDITORS") == "1"


def editor_or_skip(name: str) -> str:
    """Path of the editor binary; skip when missing unless CITELINE_REQUIRE_EDITORS=1."""
    path = shutil.which(name)
    if path is None:
        if require_editors():
            pytest.fail(f"{name} is not installed and CITELINE_REQUIRE_EDITORS=1")
        pytest.skip(f"{name} is not installed")
    return path


NVIM_BUILDS_FILE = Path(__file__).with_name("nvim-builds.txt")
NVIM_CACHE = REPO / ".cache" / "nvim"


def nvim_builds() -> list[str]:
    """Labels of the Neovim builds to test: "path" (the `nvim` on PATH, Debian's 0.7.2 in
    CI), then each build of nvim-builds.txt (installed by scripts/test)."""
    labels = ["path"]
    for line in NVIM_BUILDS_FILE.read_text("utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            labels.append(line.split()[0])
    return labels


def nvim_binary(label: str) -> str:
    """The binary of one Neovim build; a missing build skips, or fails when
    CITELINE_REQUIRE_EDITORS=1."""
    if label == "path":
        return editor_or_skip("nvim")
    found = sorted(NVIM_CACHE.glob(f"{label}/*/install/bin/nvim"))
    if found and os.access(found[0], os.X_OK):
        return str(found[0])
    why = f"Neovim {label} is not installed in {NVIM_CACHE / label} (scripts/test installs it)"
    if require_editors():
        pytest.fail(f"{why} and CITELINE_REQUIRE_EDITORS=1")
    pytest.skip(why)


def lsp_command() -> list[str]:
    """The server command the editors start: the installed `citeline` next to this
    Python when there is one, else `python -m citeline.cli.cli`."""
    exe = Path(sys.executable).with_name("citeline")
    if exe.exists():
        return [str(exe), "lsp"]
    found = shutil.which("citeline")
    if found:
        return [found, "lsp"]
    return [sys.executable, "-c", "from citeline.cli.cli import main; main()", "lsp"]


def cli_search(workspace: Path, query: str, profile: str = "recall") -> dict:
    """The same search through the CLI: the editors must show the server's order,
    and the server must agree with the CLI."""
    cmd = [*lsp_command()[:-1], "search", str(workspace), "-q", query, "--json"]
    cmd += ["--profile", profile]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def expected_column(workspace: Path, rel: str, line: int, needle: str) -> tuple[int, int]:
    """(1-based code-point column, 1-based byte column) of `needle` on `line`."""
    text = (workspace / rel).read_text("utf-8").split("\n")[line - 1]
    cp = text.index(needle)
    return cp + 1, len(text[:cp].encode("utf-8")) + 1


def kept_share(cited: str, now: str) -> float:
    """verify's `similarity` as engine/answer/verify.py defines it: the share of the cited
    text's word tokens (a multiset, case-folded) that the section keeps."""
    a = Counter(w.casefold() for w in re.findall(r"\w+", cited))
    b = Counter(w.casefold() for w in re.findall(r"\w+", now))
    return sum((a & b).values()) / sum(a.values())


# The edit both editors' verify tests make inside the Collisions section: two words replaced.
COLLISIONS_CITED = "## Collisions\n\nCollisions are resolved by chaining buckets."
COLLISIONS_NOW = "## Collisions\n\nCollisions are resolved by open addressing."
