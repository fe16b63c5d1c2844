"""Limits and settings: every default of SPEC §2, each raisable, never silently."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import CitelineError

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


# What each limit is called in the error details, and how the user raises it.
LIMIT_INFO: dict[str, tuple[str, str]] = {
    "max_files": ("captured files", "--max-files"),
    "max_total_bytes": ("captured bytes, all files", "--max-total-bytes"),
    "max_file_bytes": ("bytes of one file", "--max-file-bytes"),
    "max_sections": ("sections", "--max-sections"),
    "max_tokens": ("indexed tokens", "--max-tokens"),
    "max_path_components": ("components of a path", "--max-path-components"),
    "max_path_bytes": ("UTF-8 bytes of a path", "--max-path-bytes"),
    "max_response_bytes": ("bytes of one JSON response", "--max-response-bytes"),
}


def limit_error(
    name: str, value: int, maximum: int, *, advice: str = "cli", **extra: Any
) -> CitelineError:
    """resource_limit naming the limit, the value reached and how to raise it: a CLI flag
    for the command line and MCP (`advice="cli"`), the setting for an editor."""
    what, flag = LIMIT_INFO[name]
    where = f" ({extra['path']})" if "path" in extra else ""
    how = (
        f"Raise it with the citeline setting limits.{name}."
        if advice == "editor"
        else f"Raise it with {flag} (setting limits.{name})."
    )
    return CitelineError(
        "resource_limit",
        f"Limit exceeded: {what}{where} reached {value}, over the maximum of {maximum}. {how}",
        {"limit": name, "value": value, "max": maximum, "setting": name, "flag": flag, **extra},
    )


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable about capture and indexing; one per engine call."""

    limits: Limits = field(default_factory=Limits)
    reserved: tuple[str, ...] = ("index.md", "log.md")
    use_ignore: bool = True
    skip_invalid: bool = False
    # How error messages say what to change: CLI flags ("cli") or editor settings ("editor").
    advice: str = "cli"
    # How .gitignore patterns compare names, as git does on the volume: without case
    # (core.ignorecase, which git sets where the volume folds case: macOS, Windows) and with
    # NFD and NFC as one (core.precomposeunicode, macOS). The fronts set them from the
    # bundle's volume (lsp/names.py); the engine's default is exact, as on Linux.
    ignore_case: bool = False
    ignore_nfc: bool = False


def with_limit_advice(err: CitelineError, advice: str) -> CitelineError:
    """A resource_limit error that the editor limits would lift, with `advice` (how to get
    them: --raise-limits) added to its message: the editor value of that limit is above the
    default, the limit in force is below it, and the value reached is within it."""
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
