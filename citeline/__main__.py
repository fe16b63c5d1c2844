"""`python -m citeline …`: the `citeline` command, for where the console script is not on the
PATH (Windows' `Scripts\\` folder often is not) and for editors configured with an interpreter
(`python -m citeline lsp`). The same entry as the script: cli/entry.py's console()."""

from citeline.cli.entry import console

if __name__ == "__main__":
    console()
