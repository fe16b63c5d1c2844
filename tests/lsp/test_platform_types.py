"""lsp/ type-checks as Windows and macOS see it (SPEC §16: no such machine runs the tests, so
typeshed's per-platform stubs stand in): `mypy --platform win32|darwin|linux` over
citeline.lsp, clean. An attribute a platform lacks (`os.getuid`, `os.fchdir`, `fcntl`,
`socket.AF_UNIX` on Windows; `msvcrt` elsewhere) is an error unless the code reaches it only
behind a check of that platform. (engine/ is checked the same way by its own suite.)

mypy cannot map the folders lsp/ and engine/ to citeline.lsp and citeline.engine the way the
installation does, so it reads them through a tree of links named as installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("typed")
    (root / "citeline").mkdir()
    for name in ("engine", "lsp"):
        (root / "citeline" / name).symlink_to(REPO / name)
    return root


@pytest.mark.parametrize("platform", ["win32", "darwin", "linux"])
def test_lsp_type_checks_on_each_platform(tree: Path, platform: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--platform",
            platform,
            "--namespace-packages",
            "--explicit-package-bases",
            "--follow-imports=silent",  # the engine's own errors are its suite's
            "--cache-dir",
            str(tree / ".mypy_cache"),
            "-p",
            "citeline.lsp",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found")
