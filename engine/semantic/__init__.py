"""citeline.engine.semantic: semantic mode and the hybrid profile as a plug-in (passages, vectors,
backends, embedding, fusion), importing only the layers below it (base … answer), never the engine's
face."""
