r"""The workspace's text made safe to show: SPEC §10's escaping, one function for every front.

Human output (the CLI's, cli/style.py) and MCP's text content (mcp_server/text.py) carry the
workspace's bytes — file names, headings, titles, ids, lines — and messages that quote them.
A terminal obeys the control characters among them (ESC starts sequences that set the window
title, clear the screen or write the clipboard; a lone CR overwrites the line); a model, and
the client showing it the text, read a newline in a file name as the start of a line the
file name then forges (a fake `fake.md:1:` line, a fake cited hit). Each control character
(C0 but tab, DEL, C1) and each of Unicode's line and paragraph separators (U+2028, U+2029:
line breaks to JavaScript and to some renderers) is shown escaped instead, as ripgrep and ls
do: `\n`, `\r`, `\u2028`, `\u2029`, else `\xNN` of its code point. A backslash is left as it
is (as ripgrep does): Markdown is full of them, and the escapes only need to be harmless,
not reversible. `--json` and structuredContent never come through here: they are exact.

This module imports nothing: every front may use it without importing another's renderer.
"""

from __future__ import annotations

_ESCAPED = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if c != 0x09}
_ESCAPED[0x0A] = "\\n"
_ESCAPED[0x0D] = "\\r"
_ESCAPED[0x2028] = "\\u2028"
_ESCAPED[0x2029] = "\\u2029"


def escaped(text: str) -> str:
    r"""`text` with every control character but tab, and U+2028/U+2029, shown escaped
    (`\x1b`, `\n`, `\r`, `\u2028`).

    Idempotent: what it returns holds no control character, so text escaped twice (a
    painted piece of a line already escaped) is shown the same.
    """
    return text.translate(_ESCAPED)


__all__ = ["escaped"]
