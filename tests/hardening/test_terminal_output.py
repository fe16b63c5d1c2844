"""Nothing raw reaches a terminal (SPEC §10, issue 31 hole 7): control characters from file
names, headings, lines and messages are shown escaped (`\\x1b`, `\\n`, `\\r`) in human output,
through the real command line, and `--json` stays exact.

The bytes are read as the process wrote them (no universal-newline translation), so a lone
CR or an ESC cannot hide in the decoding.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bundles import write_bundle

from citeline.cli import render, style

C0 = "".join(chr(c) for c in range(0x01, 0x20) if c not in (0x09, 0x0A))  # NUL: no name holds it
C1 = "".join(chr(c) for c in range(0x80, 0xA0))
CONTROLS = C0 + "\x7f" + C1  # every class: C0 but tab and LF, DEL, C1 (ESC is C0)
IN_LINE = CONTROLS.replace("\r", "")  # a CR LF would end the line: a lone CR is tested apart
# Sequences an attacker would write: window title (OSC 0), clipboard write (OSC 52), a
# hyperlink (OSC 8), clear screen, BEL.
OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"
OSC_LINK = "\x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
FORGED = "a.md\nfake.md:1: forged"
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # citeline's own colours: the only ESC with --color


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("terminal") / "b"
    return write_bundle(
        root,
        {
            f"name{CONTROLS}.md": f"# Alpha {IN_LINE} end\n\nalpha body {IN_LINE} tail\n",
            f"{FORGED}.md": f"# Alpha forged {OSC_TITLE}\n\nalpha {CLEAR} lone\rCR\n",
            "sub/t.md": (
                '---\ntitle: "Title \\e]0;pwned\\a \\x9b \\x85 \\r x \\n y \\x7f"\n---\n'
                f"# Alpha {OSC_LINK}\n\nalpha {OSC_CLIPBOARD} more\n"
            ),
            f"bad{OSC_TITLE}.md": b"# Alpha\n\xff alpha\n",  # a parse error naming the file
        },
    )


def citeline(*args: str | os.PathLike[str], cwd: Path | None = None) -> tuple[int, bytes, bytes]:
    """`citeline *args` as a subprocess: exit code, stdout and stderr as raw bytes."""
    done = subprocess.run(
        [sys.executable, "-m", "citeline.cli.cli", *map(os.fspath, args)],
        capture_output=True,
        cwd=cwd,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def raw_controls(data: bytes, color: bool = False) -> list[str]:
    """The control characters in `data` a terminal would obey: every C0 but tab and the LF
    that ends citeline's own lines, DEL and C1 — ESC too, but in citeline's own colours."""
    if color:
        data = SGR.sub(b"", data)
    text = data.decode("utf-8")  # strict: the output is UTF-8
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0
        }
    )


def test_search_shows_names_headings_and_lines_escaped(hostile: Path) -> None:
    code, out, err = citeline(
        "search", "-q", "alpha", "-C", "2", "--skip-invalid", "--stats", hostile.name,
        cwd=hostile.parent,
    )  # fmt: skip
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    text = out.decode()
    # Every field came through (escaped, not dropped): the name with every class, the
    # heading, the body line, the OSC sequences, the lone CR, the file that is skipped.
    assert "name\\x01\\x02" in text and "\\x1b\\x1c" in text and "\\x7f\\x80" in text
    assert "\\x9f.md:" in text  # the file name's last C1 character
    assert "# Alpha \\x01" in text and "alpha body \\x01" in text
    assert "\\x1b]0;pwned\\x07" in text and "\\x1b]52;c;cHduZWQ=\\x07" in text
    assert "\\x1b]8;;http://evil.example/\\x1b\\here" in text
    assert "lone\\rCR" in text
    # A newline in a file name cannot print a forged result line.
    assert all(not line.startswith("fake.md") for line in text.splitlines())
    assert "a.md\\nfake.md:1: forged.md:" in text
    assert b"bad\\x1b]0;pwned\\x07.md:2: invalid UTF-8" in err


def test_search_with_colour_writes_only_its_own_escape_sequences(hostile: Path) -> None:
    code, out, err = citeline(
        "search", "-q", "alpha", "--skip-invalid", "--color", "always", hostile
    )
    assert code == 0, err
    assert SGR.search(out)  # coloured ...
    assert raw_controls(out, color=True) == []  # ... and nothing but the colours
    assert b"\\x1b]0;pwned" in out


def test_lines_and_context_are_escaped(hostile: Path) -> None:
    code, out, err = citeline("lines", "-F", "alpha", "-C", "1", "--skip-invalid", hostile)
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    text = out.decode()
    assert "alpha body \\x01" in text and "lone\\rCR" in text and "\\x1b[2J" in text
    assert all(not line.startswith("fake.md") for line in text.splitlines())
    code, out, _ = citeline("lines", "-F", "alpha", "--skip-invalid", "--color", "always", hostile)
    assert code == 0 and raw_controls(out, color=True) == [] and SGR.search(out)


def test_concept_titles_are_escaped(hostile: Path) -> None:
    code, out, err = citeline("concepts", "-q", "title", "--skip-invalid", hostile)
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert b"Title \\x1b]0;pwned\\x07 \\x9b" in out and b"\\x7f" in out


def test_error_messages_and_usage_errors_are_escaped(hostile: Path, tmp_path: Path) -> None:
    code, out, err = citeline("search", "-q", "alpha", "--strict", hostile)  # parse_error
    assert code == 5 and out == b""
    assert raw_controls(err) == [] and b"bad\\x1b]0;pwned\\x07.md" in err
    code, out, err = citeline("search", "-q", "alpha", hostile)  # skipped, named on stderr
    assert code == 0 and raw_controls(out) == []
    assert raw_controls(err) == [] and b"bad\\x1b]0;pwned\\x07.md" in err
    code, _, err = citeline("search", "-q", "alpha", hostile, "extra", CLEAR)
    assert code == 2 and raw_controls(err) == [] and b"\\x1b[2J" in err
    code, _, err = citeline("search", "-q", "alpha", tmp_path / f"gone{OSC_TITLE}")
    assert code == 4 and raw_controls(err) == [] and b"gone" in err


def test_json_stays_exact(hostile: Path) -> None:
    code, out, _ = citeline("search", "-q", "alpha", "--skip-invalid", "--json", hostile)
    assert code == 0
    result = json.loads(out)
    paths = {h["path"] for h in result["hits"]}
    assert f"name{CONTROLS}.md" in paths and f"{FORGED}.md" in paths
    headings = {h["heading"] for h in result["hits"]}
    assert f"Alpha {OSC_LINK}" in headings
    assert result["skipped"][0]["path"] == f"bad{OSC_TITLE}.md"


def test_terminal_escapes_every_control_character_but_tab() -> None:
    for code in range(0x100):
        c = chr(code)
        shown = style.terminal(c)
        if (code < 0x20 and c != "\t") or 0x7F <= code < 0xA0:
            assert shown.startswith("\\") and shown.isascii() and shown.isprintable(), code
        else:
            assert shown == c, code
    assert style.terminal("\n\r\x1b") == "\\n\\r\\x1b"
    assert style.terminal(style.terminal("\x1b[2J")) == "\\x1b[2J"  # idempotent


def test_progress_bar_stage_is_escaped() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = render.ProgressBar(stream, delay=0)
    bar(f"x{OSC_TITLE}", 1, 2)
    written = stream.getvalue()
    assert "\\x1b]0;pwned" in written
    assert written.count("\x1b") == 0 and written.startswith("\r")  # its own CR only
