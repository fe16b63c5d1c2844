"""`python -m citeline …` (issue 26): the `citeline` command where the console script is not on
the PATH (Windows' Scripts folder) and for editors set to an interpreter (`python -m citeline
lsp`). SPEC §1: `citeline` stays the namespace of citeline.engine and the fronts (it holds
only __main__.py), and nothing generic lands at the top of site-packages — checked on the
editable install the tests run and on a wheel built from this tree."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from bundles import write_bundle as write
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, client_capabilities

import citeline.engine as engine_package
import citeline.lsp as lsp_package

REPO = Path(__file__).resolve().parents[2]
LAUNCH = [sys.executable, "-m", "citeline.cli.entry"]  # what the console script runs
FILES = {"guide.md": "# Ordered hashtables\n\nAn ordered hashtable keeps insertion order.\n"}


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "citeline", *args],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "CITELINE_DAEMON": "0", **env},
        timeout=120,
        check=False,
    )


def test_python_m_citeline_is_the_command(tmp_path: Path) -> None:
    bundle = write(tmp_path / "b", FILES)
    got = run(["search", str(bundle), "-q", "hashtable", "--json"], tmp_path)
    same = subprocess.run(
        [*LAUNCH, "search", str(bundle), "-q", "hashtable", "--json"],
        capture_output=True,
        env={**os.environ, "CITELINE_DAEMON": "0"},
        timeout=120,
        check=False,
    )
    assert (got.returncode, got.stdout, got.stderr) == (same.returncode, same.stdout, b"")
    assert b'"path":"guide.md"' in got.stdout
    usage = run(["search"], tmp_path)
    assert usage.returncode == 2 and b"usage: citeline search" in usage.stderr
    assert run(["--version"], tmp_path).stdout.startswith(b"citeline ")


def test_citeline_is_still_a_namespace_of_two_packages() -> None:
    namespace = sys.modules["citeline"]
    assert getattr(namespace, "__file__", None) is None  # no __init__.py: a namespace
    assert Path(engine_package.__file__).parent.name == "engine"
    assert Path(lsp_package.__file__).parent.name == "lsp"


async def test_python_m_citeline_lsp_serves(tmp_path: Path) -> None:
    bundle = write(tmp_path / "ws", FILES)
    config = ClientServerConfig(server_command=[sys.executable, "-m", "citeline", "lsp"])
    client = await config.start()
    try:
        result = await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual_studio_code"),
                root_uri=from_fs_path(str(bundle)),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(bundle)) or "", name="ws")
                ],
            )
        )
        assert result.server_info is not None and result.server_info.name == "citeline"
        found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="hash"))
        assert [s.name for s in found or []] == ["Ordered hashtables"]
        await client.shutdown_session()
    finally:
        await client.stop()


def source_copy(dest: Path) -> None:
    """What a wheel is built from, copied: pip builds in the source tree (build/, egg-info),
    which must neither be written by a test nor feed it files a past build left there."""
    import shutil

    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    for folder in ("engine", "lsp", "cli", "mcp_server", "fronts", "citeline"):
        shutil.copytree(REPO / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_wheel_holds_citeline_only_and_runs_as_python_m_citeline(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    source_copy(source)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("citeline-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"citeline", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert "citeline/__main__.py" in names and "citeline/__init__.py" not in names
    assert {n.split("/")[1] for n in names if n.startswith("citeline/")} == {
        "__main__.py",
        "engine",
        "lsp",
        "cli",
        "mcp_server",
        "fronts",
    }
    # the wheel's files, ahead of the editable install on the path
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    bundle = write(tmp_path / "b", FILES)
    code = (
        "import runpy, sys, citeline.engine; "
        "assert citeline.engine.__file__.startswith(sys.argv[1]), citeline.engine.__file__; "
        "sys.argv = ['citeline', 'search', sys.argv[2], '-q', 'hashtable', '--json']; "
        "runpy.run_module('citeline', run_name='__main__')"
    )
    got = subprocess.run(
        [sys.executable, "-c", code, str(unpacked), str(bundle)],
        capture_output=True,
        env={**os.environ, "CITELINE_DAEMON": "0", "PYTHONPATH": str(unpacked)},
        timeout=120,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    assert b'"path":"guide.md"' in got.stdout
