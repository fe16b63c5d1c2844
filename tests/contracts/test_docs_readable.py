"""The docs a user reads point only at what a user can open.

docs/, README.md and editors/*/README.md describe behaviour themselves: they cite no section
of the project's specification (which is not in the repository), and every relative link
resolves to a file or folder inside the repository. Anchors (`#…`) are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# [text](target) and [text](target "title"); images too. Autolinks and URLs are skipped below.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def user_docs() -> list[Path]:
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [*docs, ROOT / "README.md", *sorted(ROOT.glob("editors/*/README.md"))]


def test_the_user_docs_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in user_docs()}
    assert {"README.md", "docs/cli.md", "docs/install.md"} <= names


def test_no_spec_section_is_cited() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in user_docs()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"SPEC\s*§|SPEC\.md", line)
    ]
    assert cited == [], "docs cite the specification a user cannot open:\n" + "\n".join(cited)


def broken_links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    bad = []
    for match in LINK.finditer(text):
        target = match.group(1)
        if SCHEME.match(target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (path.parent / file).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            bad.append(f"{path.relative_to(ROOT)}: ({target})")
    return bad


def test_relative_links_resolve_inside_the_repository() -> None:
    bad = [entry for path in user_docs() for entry in broken_links(path)]
    assert bad == [], "links to nothing or outside the repository:\n" + "\n".join(bad)


def test_the_link_check_catches_a_link_outside(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "index.md"
    assert broken_links(doc) == []
    text = "see [the spec](../../shared/SPEC.md) and [gone](nowhere.md#x), [ok](cli.md#y)\n"
    probe = ROOT / "docs" / f".probe-{tmp_path.name}.md"
    probe.write_text(text, encoding="utf-8")
    try:
        found = broken_links(probe)
    finally:
        probe.unlink()
    assert [entry.split(": ", 1)[1] for entry in found] == [
        "(../../shared/SPEC.md)",
        "(nowhere.md#x)",
    ]
