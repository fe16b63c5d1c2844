"""Limits and settings: every default of SPEC §2 (and the fronts' defaults of §17), each
raisable, never silently."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import CitelineError, LimitHit

MiB = 1024 * 1024

# Fixed by the contract, not configurable.
MAX_QUERY_CODEPOINTS = 512
MAX_QUERY_TERMS = 32
MAX_TERM_CODEPOINTS = 4096
MAX_HEADING_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Limits:
    max_files: int = 10_000
    max_total_bytes: int = 64 * MiB
    max_file_bytes: int = 16 * MiB
    max_sections: int = 100_000
    max_tokens: int = 1_000_000
    max_path_components: int = 64
    max_path_bytes: int = 4096
    max_response_bytes: int = 1 * MiB

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> Limits:
        """Build from settings such as {"max_tokens": 5000000}; unknown or bad keys are errors."""
        known = {f.name for f in fields(cls)}
        changes: dict[str, int] = {}
        for key, value in values.items():
            name = key.replace("-", "_")
            if name not in known:
                raise CitelineError(
                    "schema_validation",
                    f"Unknown limit {key!r}; known limits: {', '.join(sorted(known))}.",
                    {"setting": key},
                )
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise CitelineError(
                    "schema_validation",
                    f"Limit {key!r} must be a positive integer, got {value!r}.",
                    {"setting": key},
                )
            changes[name] = value
        return replace(cls(), **changes)

    @classmethod
    def editor(cls) -> Limits:
        """The editor limits of SPEC §11: a language server serves whole repositories."""
        return cls(
            max_files=200_000,
            max_total_bytes=512 * MiB,
            max_sections=2_000_000,
            max_tokens=200_000_000,
        )


# What each limit is called in an error's message.
LIMIT_NAMES: dict[str, str] = {
    "max_files": "captured files",
    "max_total_bytes": "captured bytes, all files",
    "max_file_bytes": "bytes of one file",
    "max_sections": "sections",
    "max_tokens": "indexed tokens",
    "max_path_components": "components of a path",
    "max_path_bytes": "UTF-8 bytes of a path",
    "max_response_bytes": "bytes of one JSON response",
}


def limit_error(name: str, value: int, maximum: int, **extra: Any) -> CitelineError:
    """resource_limit naming the limit and the value reached; how to raise it is the front's
    to say (remedy LimitHit: a flag on the command line, a setting in an editor)."""
    where = f" ({extra['path']})" if "path" in extra else ""
    return CitelineError(
        "resource_limit",
        f"Limit exceeded: {LIMIT_NAMES[name]}{where} reached {value}, over the maximum of "
        f"{maximum}.",
        {"limit": name, "value": value, "max": maximum, "setting": name, **extra},
        remedy=LimitHit(name, value, maximum),
    )


# Root files captured but never searched unless a front says otherwise (SPEC §2).
RESERVED: tuple[str, ...] = ("index.md", "log.md")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable about capture and indexing; one per engine call."""

    limits: Limits = field(default_factory=Limits)
    reserved: tuple[str, ...] = RESERVED
    use_ignore: bool = True
    skip_invalid: bool = False
    # How .gitignore patterns compare names, as git does on the volume: without case
    # (core.ignorecase, which git sets where the volume folds case: macOS, Windows) and with
    # NFD and NFC as one (core.precomposeunicode, macOS). The fronts set them from the
    # bundle's volume (fronts/names.py); the engine's default is exact, as on Linux.
    ignore_case: bool = False
    ignore_nfc: bool = False
    # The user's globs (ripgrep's -g, engine/capture/globs.py): which files are captured at
    # all. Part of every key the walk's reuse depends on (capture/journals.py, capture.py).
    globs: tuple[str, ...] = ()


def front_settings(
    strict: bool,
    *,
    limits: Mapping[str, int] | None = None,
    skip_invalid: bool | None = None,
    reserved: tuple[str, ...] = RESERVED,
    use_ignore: bool = True,
) -> Settings:
    """The one place every front (CLI, language server, MCP) gets its Settings from, so that
    the three cannot disagree on the defaults (SPEC §17). By default a person's workspace:
    the workspace limits of Limits.editor() and unparsable files skipped and listed. Under
    `strict`, okf's contract: Limits() and parse errors block. What the user set explicitly
    (`limits`, already validated by Limits.from_mapping, and `skip_invalid`) wins over either."""
    base = Limits() if strict else Limits.editor()
    given = dict(limits or {})
    Limits.from_mapping(given)  # every value validated, whatever the caller did
    return Settings(
        limits=replace(base, **{k.replace("-", "_"): v for k, v in given.items()}),
        reserved=reserved,
        use_ignore=use_ignore,
        skip_invalid=(not strict) if skip_invalid is None else skip_invalid,
    )
