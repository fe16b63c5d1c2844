"""citeline.lsp: the fronts (language server and command line) over citeline.engine."""
