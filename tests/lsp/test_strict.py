"""`"strict": true` in the language server's commands (docs/lsp.md, "Defaults and strict"):
by default a command gets a person's workspace (profile recall, unparsable files skipped, the
workspace limits); with `strict` okf's contract exactly (profile contract, a parse error
blocks, the contract's limits), and what the user set in the settings still wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import command, serve, write_files
from pygls.exceptions import JsonRpcException

from citeline.engine import Call, Engine, Settings
from citeline.engine.base.limits import Limits
from citeline.engine.contracts import validate

FILES = {
    "guide.md": "# Installing\n\nRun the installer to install the tool.\n",
    "broken.md": "---\ntitle: [unclosed\n---\n# Broken\ninstall\n",
}


async def test_default_is_recall_and_skips_what_strict_refuses(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", FILES)
    async with serve([folder]) as client:
        relaxed = await command(client, "citeline.search", {"query": "how to install a tool"})
        validate("search.result", relaxed)
        assert relaxed["options"]["profile"] == "recall"
        assert [h["path"] for h in relaxed["hits"]] == ["guide.md"]
        assert [s["path"] for s in relaxed["skipped"]] == ["broken.md"]
        assert "strict" not in relaxed

        # The same question under strict: every word must occur, and the parse error blocks.
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "install", "strict": True})
        assert err.value.code == -32803
        assert err.value.data["code"] == "parse_error"
        assert [e["path"] for e in err.value.data["details"]["errors"]] == ["broken.md"]


async def test_strict_is_okf_contract_byte_for_byte(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", {"guide.md": FILES["guide.md"]})
    async with serve([folder]) as client:
        result = await command(client, "citeline.search", {"query": "installer", "strict": True})
    direct = Engine().search(Call(folder, Settings()), {"query": "installer", "strict": True})
    assert result == direct
    assert result["strict"] is True and "options" not in result and "skipped" not in result
    assert [h["path"] for h in result["hits"]] == ["guide.md"]


async def test_strict_takes_the_contract_limits_and_the_settings_still_win(
    tmp_path: Path,
) -> None:
    # One more file than the contract's max_files (10,000), far under the workspace's.
    files = {f"n/{i:05}.md": "" for i in range(Limits().max_files)}
    folder = write_files(tmp_path / "ws", {**files, "guide.md": FILES["guide.md"]})
    assert Limits().max_files < Limits.editor().max_files
    async with serve([folder]) as client:
        relaxed = await command(client, "citeline.search", {"query": "installer"})
        assert [h["path"] for h in relaxed["hits"]] == ["guide.md"]
        with pytest.raises(JsonRpcException) as err:
            await command(client, "citeline.search", {"query": "installer", "strict": True})
        assert err.value.data["code"] == "resource_limit"
        assert err.value.data["details"]["limit"] == "max_files"
    # A limit the user set wins over strict's: strict with max_files 20,000 answers.
    async with serve([folder], {"limits": {"max_files": 20_000}}) as client:
        result = await command(client, "citeline.search", {"query": "installer", "strict": True})
    direct = Engine().search(
        Call(folder, Settings(limits=Limits(max_files=20_000))),
        {"query": "installer", "strict": True},
    )
    assert result == direct and result["total"] == 1


async def test_a_settings_profile_does_not_override_strict(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", {"guide.md": FILES["guide.md"]})
    async with serve([folder], {"profile": "recall"}) as client:
        assert (await command(client, "citeline.search", {"query": "install tool"}))["total"] == 1
        strict = await command(client, "citeline.search", {"query": "install tool", "strict": True})
    # contract: whole words as typed, every word: "install" is in the text, "tool" too
    assert strict == Engine().search(
        Call(folder, Settings()), {"query": "install tool", "strict": True}
    )
    assert "options" not in strict
