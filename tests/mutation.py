"""Mutation testing support (docs/testing.md): make `citeline.engine` and `citeline.lsp` the
mutated copies mutmut writes to mutants/engine and mutants/lsp.

mutmut names a module by its file path (engine/answer/snippets.py is `engine.snippets`) and only
switches a mutant on when the function's `__module__` is that name, while the package is
installed as `citeline.engine` (pyproject.toml maps the folders). This finder makes
`citeline.engine.X` the very module object `engine.X`, imported from mutants/ (first on
sys.path under mutmut), so the tests' imports reach the mutants unchanged.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

ALIASES = {
    "citeline.engine": "engine",
    "citeline.lsp": "lsp",
    "citeline.cli": "cli",
    "citeline.mcp_server": "mcp_server",
    "citeline.fronts": "fronts",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self.specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        for alias, real in ALIASES.items():
            if fullname == alias or fullname.startswith(alias + "."):
                return importlib.util.spec_from_loader(
                    fullname, self, origin=real + fullname[len(alias) :]
                )
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        assert spec.origin is not None
        module = importlib.import_module(spec.origin)  # keeps its own name and path
        self.specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Already executed under its real name; the import system has just replaced its
        # __spec__ by the alias's (always, unlike __name__), which is no package spec.
        module.__spec__ = self.specs[module.__name__]


def install() -> None:
    """Route citeline.engine/citeline.lsp to the top-level engine/lsp packages (once: mutmut
    runs pytest several times in one process, and conftest.py each time)."""
    if any(isinstance(finder, _Alias) for finder in sys.meta_path):
        return
    loaded = [
        n
        for n in sys.modules
        if n.split(".")[:2] in [["citeline", a.split(".")[1]] for a in ALIASES]
    ]
    assert not loaded, f"imported before the mutants could be routed: {loaded}"
    sys.meta_path.insert(0, _Alias())


def _durations() -> dict[str, float]:
    """How long each test took in mutmut's stats run (empty outside mutmut)."""
    try:
        from mutmut.state import state
    except ImportError:  # pragma: no cover - only loaded under mutmut
        return {}
    return state().duration_by_test


def fastest_first(items: list[Any]) -> None:
    """Order a mutant's tests by the time each took in mutmut's stats run, quickest first:
    mutmut stops at the first failure, so a mutant is most often killed in a fraction of a
    second instead of after the slow tests that happen to come first in file order."""
    durations = _durations()
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, 0.0))


QUICK = "CITELINE_MUTATION_QUICK"


def quick_pass(items: list[Any], config: Any) -> None:
    """With CITELINE_MUTATION_QUICK=S, a mutant's run leaves out the tests that took more
    than S seconds in mutmut's stats run. A survivor then costs seconds instead of a minute
    (lsp/server.py's mutants each run language-server sessions, a few of which wait on
    8,000-file workspaces); it is only a first pass: its survivors are run again by name
    without it, with every test (docs/testing.md). Never during mutmut's own stats, clean
    and forced-fail runs, whose verdicts must see every test."""
    limit = os.environ.get(QUICK, "")
    if not limit or "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    durations = _durations()
    keep, slow = [], []
    for item in items:
        (slow if durations.get(item.nodeid, 0.0) > float(limit) else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep
