"""What each front tells the user to change (SPEC §10: a message says what was wrong *and
what to do*).

The engine says what was wrong and reports, as a value, what the user could change
(`CitelineError.remedy`: the limit that was hit, or that unparsable files may be left out);
the words for it are the front's: a command-line flag, an editor setting. Imports only the
engine's error module, so that the command line can word an error without the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from citeline.engine.base.errors import CitelineError, LimitHit, Unparsable


def limit_flag(name: str) -> str:
    """The command-line flag of a limit (a field of engine.limits.Limits)."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True, slots=True)
class Words:
    """How one front says what to change."""

    raise_limit: Callable[[str], str]  # the limit's name -> the sentence
    skip_unparsable: str


COMMAND_LINE = Words(
    lambda name: f"Raise it with {limit_flag(name)} (setting limits.{name}).",
    "Fix them, or skip unparsable files with --skip-invalid.",
)
# The MCP server is started with the command line's flags.
MCP = COMMAND_LINE
EDITOR = Words(
    lambda name: f"Raise it with the citeline setting limits.{name}.",
    "Fix them, or set the citeline setting skip_invalid to true to leave them out.",
)


def worded(err: CitelineError, words: Words) -> CitelineError:
    """`err` with what to change in `words` added to its message (and, for a limit, the
    flag that raises it among its details, whatever the front, as the contract has it)."""
    remedy = err.remedy
    if isinstance(remedy, LimitHit):
        details: dict[str, Any] = {}
        for key, value in err.details.items():
            details[key] = value
            if key == "setting":
                details["flag"] = limit_flag(remedy.name)
        return CitelineError(err.code, f"{err.message} {words.raise_limit(remedy.name)}", details)
    if isinstance(remedy, Unparsable):
        return CitelineError(err.code, f"{err.message} {words.skip_unparsable}", err.details)
    return err


def with_limit_advice(err: CitelineError, advice: str) -> CitelineError:
    """A resource_limit error that the editor limits would lift, with `advice` (how to get
    them: --raise-limits) added to its message: the editor value of that limit is above the
    default, the limit in force is below it, and the value reached is within it."""
    from citeline.engine.base.limits import Limits

    details = err.details or {}
    name, value, maximum = details.get("limit"), details.get("value"), details.get("max")
    if err.code != "resource_limit" or not isinstance(name, str):
        return err
    editor = getattr(Limits.editor(), name, None)
    default = getattr(Limits(), name, None)
    if not (
        isinstance(editor, int)
        and isinstance(default, int)
        and isinstance(value, int)
        and isinstance(maximum, int)
    ):
        return err
    if editor <= default or maximum >= editor or value > editor:
        return err
    return CitelineError(err.code, f"{err.message} {advice}", details)


__all__ = ["COMMAND_LINE", "EDITOR", "MCP", "Words", "limit_flag", "with_limit_advice", "worded"]
