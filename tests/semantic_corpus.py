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


# Eight sample pages (51 sections) for the background embedder's tests: a request over
# BACKGROUND_QUESTION needs 10 of them, which leaves 41 for the worker (several seconds of
# one thread, long enough to watch it advance, pause and resume).
_SAMPLES = ("powershell-docs", "reference/docs-conceptual/samples")
BACKGROUND_FILES = {
    f"{name}.md": _SAMPLES
    for name in (
        "Managing-Services",
        "Managing-Processes-with-Process-Cmdlets",
        "Changing-Computer-State",
        "Sorting-Objects",
        "Working-with-Printers",
        "Managing-Current-Location",
        "Working-with-Registry-Keys",
        "Performing-Networking-Tasks",
    )
}
BACKGROUND_QUESTION = "halt a service"
BACKGROUND_SECTIONS = 51
