"""The JSON name of a decoded value's type, for the messages of the fronts that read JSON-RPC
(the language server's and the MCP server's framing). Imports nothing."""

from __future__ import annotations


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
