"""The few real sections the semantic suites embed (the model does about three passages a
second on this machine): corpus files copied into a test's own temporary folder, never into
the repository."""

from __future__ import annotations

import shutil
from pathlib import Path

from needs import corpus

# bundle-relative path -> (corpus, folder of the corpus holding the file)
FILES = {
    "ps/Managing-Services.md": ("powershell-docs", "reference/docs-conceptual/samples"),
    "zh/service.md": ("apisix-zh", "docs/zh/latest/terminology"),
}
QUESTION = "how do I stop a windows service"


def copy_bundle(root: Path, files: dict[str, tuple[str, str]] = FILES) -> Path:
    """`files` copied from the corpora under `root`; `root` returned."""
    for rel, (name, folder) in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus(name) / folder / Path(rel).name, root / rel)
    return root
