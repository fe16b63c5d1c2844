"""The `citeline` command (the console script and `python -m citeline`): hand a script's
call to the warm process (cli/launch.py), else answer it here (cli/cli.py).

The one module that imports both: the command line never imports the launcher, so neither
imports the other (no import circle). Like launch.py, it imports os and sys only before it
knows where the call goes.
"""

from __future__ import annotations

import os
import sys

from . import launch


def eligible(argv: list[str]) -> bool:
    """Whether this call may go to the warm process: a search, concepts or lines call with
    the cache on, whose output goes to pipes or files (at a terminal the output depends on
    the terminal: colour, progress, a summary line), where the platform has what the warm
    process needs (`usable`)."""
    return (
        os.environ.get("CITELINE_DAEMON", "1").strip().lower() not in launch.OFF
        and bool(argv)
        and argv[0] in launch.COMMANDS
        and (argv[0] != "verify" or reads_a_file(argv))
        and "--no-cache" not in argv
        and not own_model(argv)
        and not os.isatty(1)
        and not os.isatty(2)
        and launch.usable()
    )


def own_model(argv: list[str]) -> bool:
    """Whether the call names an embedding model of its own (flags or CITELINE_EMBEDDING_*):
    it is answered in its own process, which has the call's whole environment (the API
    key's variable among it), never handed to the warm process."""
    return any(a.startswith("--embedding-") for a in argv[1:]) or any(
        name.startswith("CITELINE_EMBEDDING_") and value for name, value in os.environ.items()
    )


def reads_a_file(argv: list[str]) -> bool:
    """Whether a verify call names its citations' file (--from): the warm process is handed
    the arguments and the working folder, not standard input, so a verify reading standard
    input is answered in its own process."""
    return any(a == "--from" or a.startswith("--from=") for a in argv[1:])


def here(argv: list[str]) -> int:
    from .cli import main as run

    return run(argv)


def main() -> int:
    from . import interrupt

    interrupt.begin_call()
    argv = sys.argv[1:]
    if not eligible(argv):
        return here(argv)
    key = launch.cache_key()
    try:
        got = launch.ask(key, argv)
    except KeyboardInterrupt:
        from .cli import interrupted, wants_json

        return interrupted(wants_json(argv))
    if isinstance(got, str):
        code = here(argv)
        if (
            got in ("absent", "stale")
            and not launch.folder_missing(key)
            and not launch.cache_refused(key)
        ):
            launch.start(key)
        return code
    code, out, err = got
    if os.environ.get("CITELINE_LOG", "").strip().lower() == "debug":
        err += b"citeline: answered by the warm process (CITELINE_DAEMON=0 turns it off)\n"
    try:
        with interrupt.held():  # a Ctrl-C stops the answer at a line's end
            for fd, data in ((1, out), (2, err)):
                for line in interrupt.lines(data):
                    if interrupt.pressed():
                        from .cli import interrupted, wants_json

                        return interrupted(wants_json(argv))
                    launch.write_all(fd, line)
                    if fd == 1:
                        interrupt.note_written()
    except BrokenPipeError:
        return 0  # output piped into `head`: stop quietly, as the CLI does
    return code


def console() -> None:
    """The `citeline` command: one call as this whole process, Ctrl-C handled at every
    moment (cli/interrupt.py). A server (`citeline lsp`, `citeline mcp`) ends itself."""
    from . import interrupt

    def cancelled() -> object:
        from .cli import interrupted, wants_json

        return interrupted(wants_json(sys.argv[1:]))

    # Whether the call asked for --json, read as cli.wants_json reads it, but without
    # importing the command line's module before the handler is in place.
    words = sys.argv[1:]
    words = words[: words.index("--")] if "--" in words else words
    interrupt.run(main, cancelled, "--json" in words)


if __name__ == "__main__":
    console()
