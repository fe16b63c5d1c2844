"""The one error type every front reports (SPEC §10), and the one table of its codes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Code = Literal[
    "schema_validation",
    "resource_limit",
    "bundle_not_found",
    "bundle_invalid",
    "parse_error",
    "cancelled",
]


@dataclass(frozen=True, slots=True)
class Reported:
    """How the fronts report an error code: the command line's exit status and the
    language server's JSON-RPC error code (SPEC §10). MCP reports every code as a tool
    error; its server exits with `exit` when it cannot start."""

    exit: int
    rpc: int


INVALID_PARAMS, REQUEST_CANCELLED, REQUEST_FAILED, INTERNAL_RPC = -32602, -32800, -32803, -32603

ERRORS: dict[Code, Reported] = {
    "schema_validation": Reported(2, INVALID_PARAMS),
    "resource_limit": Reported(3, REQUEST_FAILED),
    "bundle_not_found": Reported(4, REQUEST_FAILED),
    "bundle_invalid": Reported(4, REQUEST_FAILED),
    "parse_error": Reported(5, REQUEST_FAILED),
    "cancelled": Reported(130, REQUEST_CANCELLED),
}
CODES: tuple[str, ...] = tuple(ERRORS)

# Not a §10 code: the envelope of a bug (an exception that is not a CitelineError reached a
# front). The CLI exits with INTERNAL_EXIT (EX_SOFTWARE of sysexits.h) and the language
# server answers JSON-RPC -32603; see docs/contract.md.
INTERNAL = "internal_error"
INTERNAL_REPORTED = Reported(70, INTERNAL_RPC)
INTERNAL_EXIT = INTERNAL_REPORTED.exit


def reported(code: str) -> Reported:
    """How an error code is reported (a bug's for a code that is not one of SPEC §10's)."""
    return ERRORS.get(code, INTERNAL_REPORTED)  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class LimitHit:
    """Which limit (a field of limits.Limits) a request went over: the front says how to
    raise it, in its own words (a flag, a setting)."""

    name: str
    value: int
    maximum: int


@dataclass(frozen=True, slots=True)
class Unparsable:
    """Files that cannot be parsed stopped the request: the front says how to leave them out
    (skip_invalid), in its own words."""


Remedy = LimitHit | Unparsable

_SURROGATE = re.compile("[\ud800-\udfff]")
# A lone surrogate as repr() shows it, not preceded by an escaped backslash.
_REPR_ESCAPED_BYTE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")


@dataclass(frozen=True, slots=True)
class ParseIssue:
    """Why a file cannot be searched, and where (1-based line): not an error of the request
    (the file is reported, or skipped with skip_invalid), but what becomes a parse_error."""

    line: int
    reason: str


class CitelineError(Exception):
    """A request that cannot be answered; carries the §10 envelope fields.

    Message and details are made printable (see printable()), so that every front can
    encode the envelope as UTF-8 whatever names the bundle holds. `remedy`: what the user
    can change, which the front words and adds to the message (fronts/remedies.py); the
    engine's message says what was wrong.
    """

    def __init__(
        self,
        code: Code,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        remedy: Remedy | None = None,
    ) -> None:
        if code not in ERRORS:
            raise ValueError(f"unknown error code {code!r}")
        message = printable(message)
        super().__init__(message)
        self.code: Code = code
        self.message = message
        self.details: dict[str, Any] = _printable_json(details) if details else {}
        self.remedy = remedy

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}

    def __repr__(self) -> str:
        return f"CitelineError({self.code!r}, {self.message!r})"


def schema_error(message: str, **details: Any) -> CitelineError:
    return CitelineError("schema_validation", message, details)


def cancelled() -> CitelineError:
    return CitelineError("cancelled", "The request was cancelled; nothing was returned.")


def parse_error(
    problems: list[dict[str, Any]], what: str, advice: str | None = None
) -> CitelineError:
    """parse_error listing each file and line (the first five in the message, all in details).
    `advice`: what to do, when it is the same for every front; without it the front says how
    to skip unparsable files (remedy Unparsable)."""
    listing = "; ".join(f"{p['path']}:{p['line']}: {p['reason']}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return CitelineError(
        "parse_error",
        f"{len(problems)} file(s) {what}: {listing}{more}." + (f" {advice}" if advice else ""),
        {"errors": problems},
        remedy=None if advice else Unparsable(),
    )


def printable(text: str) -> str:
    """`text` with each lone surrogate escaped, so that it encodes as UTF-8.

    A name that is not valid UTF-8 reaches Python with each undecodable byte as a surrogate
    (U+DC80..U+DCFF, the "surrogateescape" error handler); it is shown as that byte, `\\xNN`.
    Any other lone surrogate is shown as `\\uNNNN`.
    """
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(_escape_surrogate, text)


def quoted(name: str) -> str:
    """repr() of a name for a message, an undecodable byte shown as `\\xNN` (not `\\udcNN`)."""
    return _REPR_ESCAPED_BYTE.sub(r"\1\\x\2", repr(name))


def _escape_surrogate(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _printable_json(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {
            printable(k) if isinstance(k, str) else k: _printable_json(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_printable_json(v) for v in value]
    return value


def internal_error(exc: BaseException) -> dict[str, Any]:
    """The envelope for a bug: an exception that is not a CitelineError reached a front.

    Its code is INTERNAL, outside the contract's six: the request was fine, citeline failed.
    One line, no traceback (the fronts log that where a user does not read it).
    """
    what = " ".join(printable(str(exc)).split())
    if len(what) > 200:
        what = what[:199] + "…"
    name = type(exc).__name__
    return {
        "error": {
            "code": INTERNAL,
            "message": f"Internal error ({name}{': ' + what if what else ''}). This is a bug "
            "in citeline, not a problem with the request or the files; please report it "
            "with the request that caused it.",
            "details": {"exception": name},
        }
    }
