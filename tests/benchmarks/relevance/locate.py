"""Where the judged sets' corpora are on this machine (stdlib only).

A set names its bundle relative to the repository root (`../shared/corpora/...`), which
holds for the main checkout. A git worktree elsewhere finds the corpora next to the main
checkout instead; CITELINE_SHARED (the folder holding `corpora/`) overrides both.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SHARED_PREFIX = "../shared/"


def _main_checkout() -> Path | None:
    try:
        common = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return Path(common).parent if common else None


def bundle_path(relative: str) -> Path:
    """The bundle folder a judged set names, found as described above."""
    candidates: list[Path] = []
    shared = os.environ.get("CITELINE_SHARED")
    if shared and relative.startswith(SHARED_PREFIX):
        candidates.append(Path(shared) / relative[len(SHARED_PREFIX) :])
    candidates.append(REPO / relative)
    main = _main_checkout()
    if main is not None:
        candidates.append(main / relative)
    for path in candidates:
        if path.is_dir():
            return path.resolve()
    return candidates[0]
