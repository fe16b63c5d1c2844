"""citeline.engine.answer: typed requests and their answers (section search, concepts, lines,
snippets, the results and the response limit), importing only the layers below it (base … rank)."""
