"""citeline.engine.text: one file's bytes to its lines, front matter, headings, sections and tokens,
and the options of that analysis, importing only engine.base and engine.store."""
