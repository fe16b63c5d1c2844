"""The import rules of pyproject.toml's [tool.importlinter] (docs/architecture.md, "Layers"),
checked by import-linter: the engine's layers, no front imported by the engine, the fronts
independent, no import circle in any package, every import counted (module level, inside
functions, under TYPE_CHECKING).

import-linter reads the package from disk as it is laid out when installed; an editable
install maps `citeline.engine` to `engine/` by a finder it cannot walk, so the checkout's
packages are copied into that layout first."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"


def installed_layout(tmp: Path) -> Path:
    root = tmp / "site"
    (root / "citeline").mkdir(parents=True)
    shutil.copy(REPO / "citeline" / "__main__.py", root / "citeline")
    for name in ("engine", "lsp", "cli", "mcp_server", "fronts"):
        shutil.copytree(
            REPO / name,
            root / "citeline" / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.txt"),
        )
    return root


def lint(tmp: Path, config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LINT, str(config), "--no-cache", "--no-logo"],
        cwd=tmp,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_are_kept(tmp_path: Path) -> None:
    done = lint(tmp_path, REPO / "pyproject.toml", installed_layout(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout, done.stdout


def test_a_broken_rule_is_seen(tmp_path: Path) -> None:
    """The check can fail: a base module that imports the engine's face breaks the layers,
    and a circle between two of the command line's modules is found."""
    config = tmp_path / "pyproject.toml"
    config.write_text((REPO / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    site = installed_layout(tmp_path / "t")
    with (site / "citeline" / "engine" / "base" / "cancel.py").open("a") as f:
        f.write("\nfrom citeline.engine import core  # noqa\n")
    with (site / "citeline" / "cli" / "render.py").open("a") as f:
        f.write("\nfrom . import cli  # noqa\n")
    done = lint(tmp_path, config, site)
    assert done.returncode != 0
    assert "citeline.engine.base is not allowed to import citeline.engine.core" in " ".join(
        done.stdout.split()
    ), done.stdout
    assert "No cycles are allowed in citeline.cli" in done.stdout, done.stdout


def test_no_module_imports_another_modules_private_name() -> None:
    """A name that starts with `_` is its module's own: another module that needs it gets a
    public name (issue 50). Read from the source: `from X import _y` anywhere in a module."""
    import ast

    found = []
    for name in ("engine", "lsp", "cli", "mcp_server", "fronts"):
        for path in sorted((REPO / name).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                    private = [
                        a.name
                        for a in node.names
                        if a.name.startswith("_")
                        # (a private module of its own package, `from . import _wordclass`)
                        and not (node.level == 1 and (path.parent / f"{a.name}.py").exists())
                    ]
                    # (the standard library's C modules, `_socket`, are modules, not names)
                    if private and (node.level or (node.module or "").startswith("citeline")):
                        found.append(f"{path.relative_to(REPO)}:{node.lineno} {private}")
    assert not found, found
