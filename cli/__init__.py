"""citeline.cli: the command line — its parser and calls, the human renderer, Ctrl-C, the launcher
and the warm process — over citeline.engine, importing citeline.fronts and, only to serve `citeline
lsp` and `citeline mcp`, those fronts' entry points."""
