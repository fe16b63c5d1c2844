"""The one error type every front reports (SPEC §10)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

CODES = (
    "schema_validation",
    "resource_limit",
    "bundle_not_found",
    "bundle_invalid",
    "parse_error",
    "cancelled",
)


# Not a §10 code: the envelope of a bug (an exception that is not a CitelineError reached a
# front). The CLI exits with INTERNAL_EXIT (EX_SOFTWARE of sysexits.h) and the language
# server answers JSON-RPC -32603; see docs/contract.md.
INTERNAL = "internal_error"
INTERNAL_EXIT = 70

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
    encode the envelope as UTF-8 whatever names the bundle holds.
    """

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        message = printable(message)
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = _printable_json(details) if details else {}

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
