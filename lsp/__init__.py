"""citeline.lsp: the language server (SPEC §11) over citeline.engine, importing only the engine and
citeline.fronts, never another front."""
