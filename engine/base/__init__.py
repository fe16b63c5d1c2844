"""citeline.engine.base: what every stage shares (errors, cancellation, limits and settings, the
safe binary codec, the platform seam, the relevance options), importing nothing else of citeline."""
