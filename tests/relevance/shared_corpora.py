"""Where ../shared/corpora is, from the main checkout or from a git worktree elsewhere."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def corpora_root() -> Path:
    """The shared corpora folder beside the repository (or beside its main checkout)."""
    near = REPO.parent / "shared" / "corpora"
    if near.is_dir():
        return near
    try:
        common = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return near
    return Path(common).parent.parent / "shared" / "corpora" if common else near
