"""The block parser's shortcut for simple files (engine/text/simple.py) is exact: whenever it
answers, markdown-it-py finds the same headings (line, level, inline content); otherwise it
declines and markdown-it is asked."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.engine.text.sections import _BLOCK
from citeline.engine.text.simple import atx_headings


def markdown_it(src: str) -> list[tuple[int, int, str]]:
    tokens = _BLOCK.parse(src, {})
    return [
        (tok.map[0], int(tok.tag[1]), tokens[i + 1].content)
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.map is not None
    ]


WORDS = st.sampled_from(["alpha", "b", "x y", "#", "##", "`c`", "*e*", "é", "\u3000", "\t", " "])
# Line forms: the simple ones, and every one near them that changes block structure.
FORMS = [
    "",
    " ",
    "\t",
    "{w}",
    "# {w}",
    "## {w} ##",
    "###### {w}",
    "####### {w}",
    "#{w}",
    "#",
    "# #",
    "### ###",
    "# {w} #",
    "# {w}#",
    "#\t{w}",
    "# {w} \t",
    " # {w}",
    "   # {w}",
    "    # {w}",
    "\t# {w}",
    "> {w}",
    ">{w}",
    ">",
    "> # {w}",
    ">> {w}",
    "> - {w}",
    "> ---",
    ">\t# {w}",
    "- {w}",
    "- # {w}",
    "-",
    "- ",
    "-{w}",
    "---",
    "--- ",
    "===",
    "= {w}",
    "* {w}",
    "* * *",
    "***",
    "+ {w}",
    "_ {w}",
    "___",
    "1. {w}",
    "1) # {w}",
    "2. {w}",
    "10. {w}",
    "1.{w}",
    "  - {w}",
    "-    # {w}",
    "```",
    "``` {w}",
    "~~~",
    "<div>",
    "</div>",
    "<!-- {w}",
    "-->",
    "[a]: /u",
    '[a]: /u "t',
    '{w}"',
    "[a]",
    "\\# {w}",
    "{w}\\",
    "| {w} |",
    "\u00a0# {w}",
    "# {w}\x00",
]


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = draw(
        st.lists(
            st.tuples(st.sampled_from(FORMS), WORDS).map(lambda fw: fw[0].format(w=fw[1])),
            min_size=1,
            max_size=12,
        )
    )
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines) + draw(st.sampled_from(["", ending]))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_answers_only_what_markdown_it_says(src: str) -> None:
    found = atx_headings(src)
    if found is not None:
        assert found == markdown_it(src)


def test_answers_for_simple_files_and_declines_the_rest() -> None:
    tldr = (
        "# tar\n\n> Archiving utility.\n> More: <https://x>.\n\n"
        "- Create an archive:\n\n`tar cf {{t}}`\n"
    )
    assert atx_headings(tldr) == [(0, 1, "tar")]
    notes = "Intro\n\n## One ##\ntext\n1. item\n* item\n#hashtag\n### Three #\r\nend\r\n"
    assert atx_headings(notes) == markdown_it(notes) == [(2, 2, "One"), (7, 3, "Three")]
    for tricky in (
        "Title\n===\n",  # Setext
        "Title\n-\n",
        "```\n# in a fence\n```\n",
        "    # indented code\n",
        "> # heading in a quote\n",
        "- # heading in a list item\n",
        "<div>\n# in HTML\n</div>\n",
        '[a]: /url "title\n# inside the title\n"\n',
    ):
        assert atx_headings(tricky) is None, tricky


def test_heading_content_is_cut_as_markdown_it_cuts_it() -> None:
    for line in ("# a #", "# a ##  ", "# a#", "#  a  ", "# #", "### ###", "#\ta\t#", "# a \\#"):
        src = line + "\n"
        assert atx_headings(src) == markdown_it(src), line


@settings(max_examples=800, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab é中 \t#$%+-:=@^{}~|.,;'\"()/?x\\`*_[]!<&\n")), max_size=30
    )
)
def test_heading_text_without_inline_syntax_is_the_content(content: str) -> None:
    """headings() takes a heading's content as its text when no inline rule can act on it."""
    from citeline.engine.text.sections import _INLINE_SYNTAX, plain_text

    content = content.strip(" \t\n")
    if not _INLINE_SYNTAX.search(content):
        assert plain_text(content) == content


def test_every_inline_syntax_character_is_needed() -> None:
    """Each of these changes under the inline parser, so its first character must be in
    _INLINE_SYNTAX (dropping one from the class makes this fail)."""
    from citeline.engine.text.sections import _INLINE_SYNTAX, plain_text

    for changed in ("a &amp; b", "\\*a", "`a`", "*a*", "_a_", "[a](b)", "![a](b)", "<b>x"):
        assert plain_text(changed) != changed, changed
        assert _INLINE_SYNTAX.search(changed), changed
    assert plain_text("a]b") == "a]b" and plain_text("a!b") == "a!b"  # harmless alone
