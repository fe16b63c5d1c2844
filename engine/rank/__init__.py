"""citeline.engine.rank: BM25 and match=any scoring over an Index, stems at query time and the words
that name a section, importing only the layers below it (base … index)."""
