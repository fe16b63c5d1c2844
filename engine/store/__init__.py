"""citeline.engine.store: the persistent cache (SQLite) and the ownership rules of its folder and
files, importing only engine.base."""
