"""Text for a terminal, shared by the human output of every operation (cli/render.py,
cli/sections.py) and the progress bar: the workspace's text escaped, colour only on a
terminal that shows it, paths as the user would open them from where the command ran.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO

from citeline.fronts.escape import escaped

BOLD_RED = "\x1b[1;31m"
MAGENTA = "\x1b[35m"
GREEN = "\x1b[32m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"
RESET = "\x1b[0m"
ELLIPSIS = "…"


# -- text for a terminal (SPEC §10) ---------------------------------------------------------
#
# Every piece of the workspace's text (file names, headings, lines, messages quoting them)
# goes through `terminal`: the one escaping of control characters, shared with MCP's text
# content (fronts/escape.py says what it escapes and why). `--json` never comes through here.

terminal = escaped


def use_color(choice: str, stream: IO[str]) -> bool:
    """Colour by `--color`: always, never, or (auto) on a terminal that shows escape
    sequences as such, unless NO_COLOR is set (no-color.org) or TERM is dumb."""
    if choice == "always":
        shows_escapes(stream)  # asked for: turned on where it can be, whatever it says
        return True
    if choice == "never":
        return False
    return (
        stream.isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM") != "dumb"
        and shows_escapes(stream)
    )


ENABLE_VIRTUAL_TERMINAL_PROCESSING = 0x0004
_SHOWN: dict[int, bool] = {}  # descriptor -> whether its console shows escape sequences


def shows_escapes(stream: IO[str]) -> bool:
    """Whether the terminal `stream` writes to obeys escape sequences (colour, the progress
    bar's line clearing) rather than printing them: everywhere but a Windows console whose
    virtual-terminal processing is off and cannot be turned on (before Windows 10 1511). It
    is turned on here where it can be, once per stream; Windows Terminal has it on."""
    if sys.platform != "win32":
        return True
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if fd not in _SHOWN:
        _SHOWN[fd] = windows_virtual_terminal(fd)
    return _SHOWN[fd]


def windows_virtual_terminal(fd: int) -> bool:
    """Turn on virtual-terminal processing of the console behind `fd` (kernel32's
    GetConsoleMode/SetConsoleMode through ctypes); False when it is no console or the
    console cannot (then nothing is coloured)."""
    if sys.platform != "win32":
        return False
    import ctypes

    try:
        import msvcrt

        handle = msvcrt.get_osfhandle(fd)
        kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009
    except (ImportError, AttributeError, OSError):
        return False
    mode = ctypes.c_uint32()
    if not kernel32.GetConsoleMode(handle, ctypes.byref(mode)):
        return False  # a pipe or a file: not a console
    if mode.value & ENABLE_VIRTUAL_TERMINAL_PROCESSING:
        return True
    return bool(kernel32.SetConsoleMode(handle, mode.value | ENABLE_VIRTUAL_TERMINAL_PROCESSING))


def paint(text: str, style: str, color: bool) -> str:
    """`text` for the terminal (escaped), in `style` when colour is on."""
    shown = terminal(text)
    return f"{style}{shown}{RESET}" if color and shown else shown


def marked(text: str, spans: Iterable[tuple[int, int]], color: bool) -> str:
    """`text` for the terminal with its code-point spans in bold red; without colour, the
    text escaped alone (spans are positions in the raw text: escaped piece by piece)."""
    if not color:
        return terminal(text)
    out = []
    pos = 0
    for start, end in spans:
        out.append(terminal(text[pos:start]))
        out.append(paint(text[start:end], BOLD_RED, True))
        pos = end
    out.append(terminal(text[pos:]))
    return "".join(out)


def display_path(bundle: str | None, path: str) -> str:
    """The hit's path as the user opens it from the working directory (as rg prints it).

    `path` is bundle-relative with '/' separators; a bundle given on the command line is
    prefixed as typed, so `citeline search docs` prints `docs/limits.md`.
    """
    if bundle is None or os.path.normpath(bundle) == ".":
        return path
    return os.path.join(bundle, *path.split("/"))


def short(revision: str) -> str:
    return revision[:6] + ELLIPSIS


# A heading is text of the file (SPEC §3): a Setext heading over two lines holds "\n", a lone
# CR stays a CR, and a YAML title can hold line breaks. Each is shown as a space so that a
# hit's header stays one line (and a CR cannot overwrite it on a terminal).
_ONE_LINE = str.maketrans(dict.fromkeys("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


def one_line(text: str) -> str:
    return text.translate(_ONE_LINE)
