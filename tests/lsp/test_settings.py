"""Server settings (docs/lsp.md "Settings"): the parser keeps every documented key, and the
server applies `reserved` and `use_ignore` to what it searches, from initializationOptions
and from workspace/didChangeConfiguration alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_support import DOCS, command, serve, symbols, write_files
from lsprotocol import types

from citeline.engine import CitelineError, Engine, Settings
from citeline.lsp.settings import parse_settings

# -- the parser ------------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", [False, True], ids=["bare", "under-citeline"])
def test_reserved_and_use_ignore_are_parsed(wrap: bool) -> None:
    raw: dict[str, Any] = {"reserved": ["guide.md", "notes/x.md"], "use_ignore": False}
    parsed = parse_settings({"citeline": raw} if wrap else raw).engine
    assert parsed.reserved == ("guide.md", "notes/x.md")
    assert parsed.use_ignore is False
    # Each key on its own changes only itself.
    defaults = parse_settings(None).engine
    only_reserved = parse_settings({"reserved": []}).engine
    assert only_reserved.reserved == ()
    assert only_reserved.use_ignore is defaults.use_ignore is True
    only_ignore = parse_settings({"use_ignore": False}).engine
    assert only_ignore.reserved == defaults.reserved == ("index.md", "log.md")
    assert only_ignore.use_ignore is False
    assert parse_settings({"use_ignore": True}).engine.use_ignore is True


def test_every_documented_key_reaches_the_settings() -> None:
    parsed = parse_settings(
        {
            "limits": {"max_files": 7, "max_tokens": 9},
            "reserved": ["a.md"],
            "use_ignore": False,
            "skip_invalid": True,
            "symbols": {"cap": 3, "list_cap": 4},
            "profile": "recall",
            "match": "all",
        }
    )
    assert parsed.engine.limits.max_files == 7
    assert parsed.engine.limits.max_tokens == 9
    assert parsed.engine.reserved == ("a.md",)
    assert parsed.engine.use_ignore is False
    assert parsed.engine.skip_invalid is True
    assert (parsed.symbol_cap, parsed.list_cap) == (3, 4)
    assert dict(parsed.relevance) == {"profile": "recall", "match": "all"}
    assert parsed.relevance_options.match == "all"
    assert parsed.relevance_options.stemming == "english"  # the rest from the profile
    assert parse_settings({"skip_invalid": False}).engine.skip_invalid is False


@pytest.mark.parametrize(
    ("raw", "setting"),
    [
        ({"reserved": "index.md"}, "reserved"),
        ({"reserved": ["a.md", 3]}, "reserved"),
        ({"reserved": {"a.md": True}}, "reserved"),
        ({"use_ignore": "no"}, "use_ignore"),
        ({"use_ignore": 0}, "use_ignore"),
        ({"skip_invalid": "yes"}, "skip_invalid"),
        ({"symbols": {"cap": 0}}, "symbols.cap"),
        ({"symbols": {"list_cap": True}}, "symbols.list_cap"),
        ({"symbols": {"caps": 1}}, "symbols"),
        ({"symbols": []}, "symbols"),
        ({"limits": [1]}, "limits"),
        ({"limits": []}, "limits"),
        ({"limits": 0}, "limits"),
        ({"symbols": False}, "symbols"),
        ({"limits": {"max_files": 0}}, "max_files"),
        ({"colour": "red"}, "colour"),
        ([1, 2], "citeline"),
    ],
)
def test_invalid_settings_name_the_setting(raw: Any, setting: str) -> None:
    with pytest.raises(CitelineError) as err:
        parse_settings(raw)
    assert err.value.code == "schema_validation"
    assert err.value.details["setting"] == setting
    assert err.value.message.startswith("Invalid citeline setting: ") or setting == "max_files"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"limits": []}, 'limits must be an object such as {"max_files": 20000}.'),
        ({"symbols": 7}, 'symbols must be an object such as {"cap": 100, "list_cap": 1000}.'),
        ({"match": "some"}, "match must be one of all, any; got 'some'."),
    ],
)
def test_a_setting_of_the_wrong_shape_says_what_it_should_be(raw: Any, message: str) -> None:
    """The message shows the user the shape to write (docs/lsp.md's settings table)."""
    with pytest.raises(CitelineError) as err:
        parse_settings(raw)
    assert err.value.message == f"Invalid citeline setting: {message}"


# -- the parser, key by key (docs/lsp.md's table; found by mutation testing) ------------------


def test_no_settings_are_the_editor_defaults() -> None:
    from citeline.engine import Limits

    editor = Settings(limits=Limits.editor(), skip_invalid=True)
    for raw in (None, {}, {"citeline": None}, {"citeline": {}}):
        parsed = parse_settings(raw)
        assert parsed.engine == editor, raw
        assert (parsed.cache, parsed.reread, parsed.unsaved) == (True, False, False)
        assert (parsed.symbol_cap, parsed.list_cap) == (100, 1000)
        assert dict(parsed.relevance) == {}
        assert parsed.relevance_options.match == "all"  # the contract
    # null for a key is "not given" (its default), not an invalid value
    nulls = parse_settings({"limits": None, "reserved": None, "symbols": None, "match": None})
    assert nulls.engine == editor and dict(nulls.relevance) == {}


@pytest.mark.parametrize("key", ["cache", "reread", "unsaved", "skip_invalid", "use_ignore"])
def test_each_switch_is_its_own(key: str) -> None:
    defaults = parse_settings(None)
    for value in (True, False):
        parsed = parse_settings({key: value})
        got = {
            "cache": parsed.cache,
            "reread": parsed.reread,
            "unsaved": parsed.unsaved,
            "skip_invalid": parsed.engine.skip_invalid,
            "use_ignore": parsed.engine.use_ignore,
        }
        wanted = {
            "cache": defaults.cache,
            "reread": defaults.reread,
            "unsaved": defaults.unsaved,
            "skip_invalid": defaults.engine.skip_invalid,
            "use_ignore": defaults.engine.use_ignore,
        }
        wanted[key] = value
        assert got == wanted, (key, value)
    with pytest.raises(CitelineError) as err:
        parse_settings({key: 1})
    assert err.value.details["setting"] == key
    assert f"{key} must be true or false, got 1." in err.value.message


def test_limits_given_are_set_and_the_others_keep_the_editor_defaults() -> None:
    from dataclasses import replace

    from citeline.engine import Limits

    parsed = parse_settings({"limits": {"max_files": 5, "max-tokens": 7}})  # - or _
    assert parsed.engine.limits == replace(Limits.editor(), max_files=5, max_tokens=7)


def test_symbol_caps_are_positive_integers() -> None:
    assert (parse_settings({"symbols": {"cap": 1}}).symbol_cap, 1000) == (1, 1000)
    assert parse_settings({"symbols": {"list_cap": 1}}).list_cap == 1
    assert parse_settings({"symbols": {"list_cap": 1}}).symbol_cap == 100
    for bad in (0, -1, 2.5, "3", None, False):
        with pytest.raises(CitelineError) as err:
            parse_settings({"symbols": {"cap": bad}})
        assert err.value.details["setting"] == "symbols.cap"
        assert err.value.message == (
            f"Invalid citeline setting: symbols.cap must be a positive integer, got {bad!r}."
        )


def test_unknown_keys_are_listed_with_the_known_ones() -> None:
    with pytest.raises(CitelineError) as err:
        parse_settings({"zeta": 1, "colour": 2, "limits": {}})
    assert err.value.details == {"setting": "colour"}  # the first, in name order
    message = err.value.message
    assert message.startswith("Invalid citeline setting: unknown key(s) colour, zeta; known keys: ")
    assert "limits, reserved, use_ignore, skip_invalid, cache, reread, unsaved, symbols" in message
    with pytest.raises(CitelineError) as extra:
        parse_settings({"symbols": {"b": 1, "a": 2, "cap": 3}})
    assert extra.value.message == (
        "Invalid citeline setting: unknown symbols key(s) a, b; known: cap, list_cap."
    )
    for raw, kind in (([1], "list"), ("x", "str"), (3, "int")):
        with pytest.raises(CitelineError) as whole:
            parse_settings(raw)
        assert whole.value.message == (
            f"Invalid citeline setting: the settings must be a JSON object, got {kind}."
        )


def test_a_bad_relevance_option_names_its_field() -> None:
    with pytest.raises(CitelineError) as err:
        parse_settings({"match": "some"})
    assert err.value.details == {"setting": "match"}
    assert err.value.message.startswith("Invalid citeline setting: ")
    assert "some" in err.value.message
    with pytest.raises(CitelineError) as profile:
        parse_settings({"profile": "fast"})
    assert profile.value.details == {"setting": "profile"}


def test_reserved_must_be_a_list_of_names() -> None:
    with pytest.raises(CitelineError) as err:
        parse_settings({"reserved": "index.md"})
    assert err.value.message == "Invalid citeline setting: reserved must be a list of file names."


def test_search_requests_take_the_settings_relevance_unless_they_name_a_profile() -> None:
    settings = parse_settings({"profile": "recall", "stemming": "none"})
    assert settings.search_request({"query": "q"}) == {
        "query": "q",
        "profile": "recall",
        "stemming": "none",
    }
    # a key the request gives wins; the others come from the settings
    assert settings.search_request({"query": "q", "stemming": "english"}) == {
        "query": "q",
        "stemming": "english",
        "profile": "recall",
    }
    # a request naming its own profile gets that profile's defaults, not the settings'
    own = {"query": "q", "profile": "contract"}
    assert settings.search_request(own) == own
    assert parse_settings(None).search_request({"query": "q"}) == {"query": "q"}


# -- the server applies them -----------------------------------------------------------------

FILES = {
    **DOCS,
    ".gitignore": "drafts/\n",
    "drafts/kumquat.md": "# Kumquat draft\n\nkumquat notes, ignored by git\n",
}


def paths(result: dict[str, Any]) -> list[str]:
    return [h["path"] for h in result["hits"]]


async def test_reserved_and_use_ignore_change_what_the_server_searches(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "ws", FILES)
    custom = {"reserved": ["guide.md"], "use_ignore": False}
    engine = Engine()
    expected = engine.search(
        engine.call(folder, settings=Settings(reserved=("guide.md",), use_ignore=False)),
        {"query": "kumquat", "profile": "recall"},  # the fronts' default
    )
    assert paths(expected) == ["drafts/kumquat.md"]
    async with serve([folder], {"citeline": custom}) as client:
        # guide.md is now navigation: captured, never searched; index.md is searchable.
        assert (await command(client, "citeline.search", {"query": "walrus"}))["hits"] == []
        assert await symbols(client, "walrus") == []
        navigation = await command(client, "citeline.search", {"query": "navigation"})
        assert paths(navigation) == ["index.md"]
        assert [s.container_name for s in await symbols(client, "navigation")] == ["index.md"]
        # .gitignore is not honoured: the ignored draft is captured and searched.
        found = await command(client, "citeline.search", {"query": "kumquat"})
        assert paths(found) == ["drafts/kumquat.md"]
        assert found["hits"] == expected["hits"]
        assert found["snapshot_revision"] == expected["snapshot_revision"]
        assert [s.name for s in await symbols(client, "kumquat")] == ["Kumquat draft"]
        lines = await command(client, "citeline.lines", {"pattern": "kumquat", "mode": "exact"})
        assert {m["path"] for m in lines["matches"]} == {"drafts/kumquat.md"}

        # Back to the documented defaults by workspace/didChangeConfiguration.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"citeline": {"reserved": ["index.md", "log.md"], "use_ignore": True}}
            )
        )
        assert (await command(client, "citeline.search", {"query": "kumquat"}))["hits"] == []
        assert await symbols(client, "kumquat") == []
        assert paths(await command(client, "citeline.search", {"query": "walrus"})) == ["guide.md"]
        assert (await command(client, "citeline.search", {"query": "navigation"}))["hits"] == []
        default = await command(client, "citeline.search", {"query": "walrus"})
        assert default["snapshot_revision"] == engine.capture(engine.call(folder)).revision

        # And to the custom ones again, this time by didChangeConfiguration.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=custom)
        )
        assert paths(await command(client, "citeline.search", {"query": "kumquat"})) == [
            "drafts/kumquat.md"
        ]
        assert await symbols(client, "walrus") == []
