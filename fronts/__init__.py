"""citeline.fronts: what the fronts share and none of them owns (the words of each remedy, editor
paths compared as the volume compares names, the escaping of workspace text for people and models),
importing only citeline.engine."""
