"""The one error type every front reports (SPEC §10)."""

from __future__ import annotations

from typing import Any

CODES = (
    "schema_validation",
    "resource_limit",
    "bundle_not_found",
    "bundle_invalid",
    "parse_error",
    "cancelled",
)


class CitelineError(Exception):
    """A request that cannot be answered; carries the §10 envelope fields."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}

    def __repr__(self) -> str:
        return f"CitelineError({self.code!r}, {self.message!r})"


def schema_error(message: str, **details: Any) -> CitelineError:
    return CitelineError("schema_validation", message, details)


def cancelled() -> CitelineError:
    return CitelineError("cancelled", "The request was cancelled; nothing was returned.")


def parse_error(problems: list[dict[str, Any]], what: str, advice: str) -> CitelineError:
    """parse_error listing each file and line (the first five in the message, all in details)."""
    listing = "; ".join(f"{p['path']}:{p['line']}: {p['reason']}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return CitelineError(
        "parse_error",
        f"{len(problems)} file(s) {what}: {listing}{more}. {advice}",
        {"errors": problems},
    )
