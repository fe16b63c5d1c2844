"""Portability of the source itself (SPEC §16): mypy as Windows and macOS see the code
(typeshed's per-platform stubs know every attribute a platform lacks), and no raw platform
fact outside the seam (engine/base/platform.py) — no bare `os.O_NOFOLLOW`-like flag, which is an
AttributeError on Windows, and no `os.kill(pid, 0)`, which is Ctrl+C there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEAM = Path("engine/base/platform.py")
RAW = re.compile(
    r"\bos\.(?:O_NOFOLLOW|O_DIRECTORY|O_NONBLOCK|O_CLOEXEC|O_BINARY|O_NOINHERIT)\b"
    r"|\bos\.kill\([^()]*,\s*0\s*\)"
)
PLATFORMS = ("linux", "win32", "darwin")


def sources() -> list[Path]:
    return sorted(
        p.relative_to(REPO)
        for part in ("engine", "lsp", "cli", "mcp_server", "fronts")
        for p in (REPO / part).rglob("*.py")
    )


def test_the_check_finds_what_it_is_for() -> None:
    for bad in (
        "flags = os.O_RDONLY | os.O_NOFOLLOW",
        "os.open(p, os.O_DIRECTORY)",
        "x = os.O_BINARY",
        "os.kill(pid, 0)",
        "os.kill(self.pid,0)",
    ):
        assert RAW.search(bad), bad
    for fine in (
        'getattr(os, "O_NOFOLLOW", 0)',
        "os.O_RDONLY | os.O_CREAT",
        "os.kill(pid, signal.SIGTERM)",
        "PLATFORM.nofollow",
    ):
        assert not RAW.search(fine), fine


def test_no_raw_platform_facts_outside_the_seam() -> None:
    found: dict[Path, list[int]] = {}
    for rel in sources():
        if rel == SEAM:
            continue
        for n, line in enumerate((REPO / rel).read_text(encoding="utf-8").splitlines(), 1):
            if RAW.search(line.split("#", 1)[0]):
                found.setdefault(rel, []).append(n)
    assert found == {}


@pytest.fixture(scope="session")
def mypy_root() -> Path:
    """citeline's packages as a folder mypy can import (the editable install maps them
    with an import hook mypy cannot follow): links to engine/ and lsp/ under .cache/."""
    root = REPO / ".cache" / "mypy" / "root"
    (root / "citeline").mkdir(parents=True, exist_ok=True)
    for part in ("engine", "lsp", "cli", "mcp_server", "fronts"):
        link = root / "citeline" / part
        if not link.is_symlink():
            link.symlink_to(REPO / part, target_is_directory=True)
    return root


_RUNS: dict[str, list[str]] = {}


def mypy_errors(root: Path, platform: str) -> list[str]:
    """mypy's errors over citeline.engine and citeline.lsp as `platform` sees them (one
    run per platform per session, its cache kept in .cache/mypy/)."""
    if platform not in _RUNS:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--platform",
                platform,
                "--python-version",
                "3.11",
                "--ignore-missing-imports",
                "--explicit-package-bases",
                "--namespace-packages",
                "--no-error-summary",
                "--hide-error-context",
                "--cache-dir",
                str(REPO / ".cache" / "mypy" / platform),
                "-p",
                "citeline.engine",
                "-p",
                "citeline.lsp",
                "-p",
                "citeline.cli",
                "-p",
                "citeline.mcp_server",
                "-p",
                "citeline.fronts",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "MYPY_FORCE_COLOR": "0"},
        )
        assert out.returncode in (0, 1), out.stderr  # 1: errors found, 2: mypy failed
        _RUNS[platform] = [line for line in out.stdout.splitlines() if ": error:" in line]
    return _RUNS[platform]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_engine_type_checks_on_every_platform(mypy_root: Path, platform: str) -> None:
    errors = [e for e in mypy_errors(mypy_root, platform) if e.startswith("citeline/engine/")]
    assert errors == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_fronts_type_check_on_every_platform(mypy_root: Path, platform: str) -> None:
    errors = [e for e in mypy_errors(mypy_root, platform) if e.startswith("citeline/lsp/")]
    assert errors == []
