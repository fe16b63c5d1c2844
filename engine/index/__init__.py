"""citeline.engine.index: a snapshot's files to blocks and an Index (the build, its worker
processes, the lexicon, the postings), importing only the layers below it (base … capture)."""
