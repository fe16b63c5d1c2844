"""engine/text/simple.py on real files: on every file of the corpora where it answers, it finds
exactly markdown-it-py's headings, and it answers for most of the tldr pages."""

from __future__ import annotations

import pytest
from needs import corpus

from citeline.engine.base.errors import ParseIssue
from citeline.engine.text.layout import layout
from citeline.engine.text.sections import _BLOCK, parser_input
from citeline.engine.text.simple import atx_headings

pytestmark = pytest.mark.corpus


@pytest.mark.parametrize("name", ["tldr", "powershell-docs", "apisix-zh"])
def test_agrees_with_markdown_it_on_every_file(name: str) -> None:
    root = corpus(name)
    files = answered = 0
    for path in sorted(root.rglob("*.md")):
        lay = layout(path.read_bytes())
        if isinstance(lay, ParseIssue):
            continue
        files += 1
        src = parser_input(lay)
        found = atx_headings(src)
        if found is None:
            continue
        answered += 1
        tokens = _BLOCK.parse(src, {})
        expected = [
            (tok.map[0], int(tok.tag[1]), tokens[i + 1].content)
            for i, tok in enumerate(tokens)
            if tok.type == "heading_open" and tok.map is not None
        ]
        assert found == expected, path
    assert files > 100
    if name == "tldr":
        assert answered > 0.95 * files  # the shortcut is what makes tldr fast to analyse
