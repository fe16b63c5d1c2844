"""citeline.fronts: what the fronts share and none of them owns (the words of each remedy, editor
paths compared as the volume compares names, the escaping of workspace text for people and models,
a hit's label, words and file lines as people and models are shown them, the JSON names of
values in framing errors), importing only citeline.engine: no front imports another."""
