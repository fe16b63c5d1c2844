"""citeline.engine.capture: a bundle to a snapshot (the walk, git's ignore rules, the file backends,
the change journal, the stat index, the revision, captures shared by requests), importing only the
layers below it (base, store, text)."""
