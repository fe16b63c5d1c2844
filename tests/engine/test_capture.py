"""Capture (SPEC §2): what is read, what is skipped, what is rejected."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from needs import tool

from citeline.engine import Call, CitelineError, Engine, Settings
from citeline.engine.capture.capture import capture


def captured(bundle, **kw) -> list[str]:
    return [f.path for f in capture(bundle, Settings(**kw)).files]


def error(bundle) -> CitelineError:
    with pytest.raises(CitelineError) as err:
        Engine().search(Call(bundle, Settings()), {"query": "x"})
    return err.value


def test_missing_bundle_is_bundle_not_found(tmp_path: Path) -> None:
    err = error(tmp_path / "nope")
    assert err.code == "bundle_not_found"
    assert err.details["bundle"] == str(tmp_path / "nope")


def test_file_bundle_is_bundle_invalid(tmp_path: Path) -> None:
    f = tmp_path / "a.md"
    f.write_text("# x\n")
    err = error(f)
    assert err.code == "bundle_invalid"
    assert err.details["reason"] == "not_a_directory"


@pytest.mark.parametrize("suffix", ["", "/"], ids=["plain", "trailing_slash"])
def test_symlinked_bundle_root_is_bundle_invalid(make_bundle, tmp_path: Path, suffix) -> None:
    real = make_bundle({"a.md": "x\n"})
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    err = error(str(link) + suffix)
    assert err.code == "bundle_invalid"
    assert err.details["reason"] == "symlink"


@pytest.mark.parametrize("suffix", ["", "/"], ids=["plain", "trailing_slash"])
def test_dangling_symlink_bundle_is_bundle_invalid(tmp_path: Path, suffix) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "missing")
    err = error(str(link) + suffix)
    assert err.code == "bundle_invalid"


def test_bundle_with_trailing_slash_is_fine(make_bundle) -> None:
    bundle = make_bundle({"a.md": "x\n"})
    assert captured(str(bundle) + "/") == ["a.md"]


def test_markdown_suffixes_ascii_case_insensitive(make_bundle) -> None:
    bundle = make_bundle(
        dict.fromkeys(
            ["a.md", "b.markdown", "c.MD", "d.MarkDown", "e.txt", "f.mdx", "g.md.bak", "md"],
            "x\n",
        )
    )
    (bundle / "dir.md").mkdir()  # a folder named like Markdown is walked, not captured
    (bundle / "dir.md" / "inner.md").write_text("y\n")
    assert captured(bundle) == ["a.md", "b.markdown", "c.MD", "d.MarkDown", "dir.md/inner.md"]


def test_hidden_files_and_folders_are_skipped(make_bundle) -> None:
    bundle = make_bundle(
        {
            ".hidden.md": "x\n",
            ".git/HEAD.md": "x\n",
            ".obsidian/notes.md": "x\n",
            "sub/.draft.md": "x\n",
            "sub/ok.md": "x\n",
            "sub/.deep/ok.md": "x\n",
        }
    )
    assert captured(bundle) == ["sub/ok.md"]
    assert captured(bundle, use_ignore=False) == ["sub/ok.md"]


def test_symlinks_inside_bundle_are_skipped(make_bundle, tmp_path: Path) -> None:
    outside = make_bundle({"secret.md": "outside secret\n"}, name="outside")
    bundle = make_bundle({"real.md": "real\n", "dir/inner.md": "inner\n"}, name="b")
    (bundle / "link.md").symlink_to(bundle / "real.md")
    (bundle / "out.md").symlink_to(outside / "secret.md")
    (bundle / "linkdir").symlink_to(bundle / "dir", target_is_directory=True)
    (bundle / "outdir").symlink_to(outside, target_is_directory=True)
    (bundle / "dangling.md").symlink_to(tmp_path / "missing.md")
    assert captured(bundle) == ["dir/inner.md", "real.md"]
    assert Engine().search(Call(bundle, Settings()), {"query": "secret"})["hits"] == []


def test_records_have_size_and_sha256(make_bundle) -> None:
    data = "# Ünïcode\r\nbody\n".encode()
    snap = capture(make_bundle({"a.md": data, "b/c.md": b""}), Settings())
    a, c = snap.files
    assert (a.path, a.size, a.sha256) == ("a.md", len(data), hashlib.sha256(data).hexdigest())
    assert (c.path, c.size, c.sha256) == ("b/c.md", 0, hashlib.sha256(b"").hexdigest())


def test_gitignore_nested_and_negation(make_bundle) -> None:
    bundle = make_bundle(
        {
            ".gitignore": "*.tmp.md\nbuild/\n/top-only.md\n",
            "a.md": "x\n",
            "a.tmp.md": "x\n",
            "top-only.md": "x\n",
            "build/out.md": "x\n",
            "build/.gitignore": "!out.md\n",  # cannot re-include: its folder is excluded
            "sub/.gitignore": "!keep.tmp.md\n/local.md\n",
            "sub/keep.tmp.md": "x\n",
            "sub/drop.tmp.md": "x\n",
            "sub/local.md": "x\n",
            "sub/top-only.md": "x\n",  # "/top-only.md" is anchored to the root
            "sub/deeper/local.md": "x\n",  # "/local.md" is anchored to sub/
            "other/keep.tmp.md": "x\n",  # negation in sub/ does not reach here
        }
    )
    assert captured(bundle) == [
        "a.md",
        "sub/deeper/local.md",
        "sub/keep.tmp.md",
        "sub/top-only.md",
    ]


def test_gitignore_negation_in_one_file(make_bundle) -> None:
    bundle = make_bundle(
        {
            ".gitignore": "*.md\n!important.md\n",
            "a.md": "x",
            "important.md": "x",
            "d/important.md": "x",
        }
    )
    assert captured(bundle) == ["d/important.md", "important.md"]


def test_gitignore_deeper_file_overrides(make_bundle) -> None:
    bundle = make_bundle(
        {
            ".gitignore": "!*.md\n",
            "docs/.gitignore": "*.md\n",
            "docs/a.md": "x",
            "docs/sub/.gitignore": "!b.md\n",
            "docs/sub/b.md": "x",
            "docs/sub/c.md": "x",
            "root.md": "x",
        }
    )
    assert captured(bundle) == ["docs/sub/b.md", "root.md"]


def test_no_ignore_captures_ignored_files(make_bundle) -> None:
    bundle = make_bundle(
        {".gitignore": "*.md\n", "a.md": "alpha\n", "sub/.gitignore": "*\n", "sub/b.md": "alpha\n"}
    )
    assert captured(bundle) == []
    assert captured(bundle, use_ignore=False) == ["a.md", "sub/b.md"]
    res = Engine().search(Call(bundle, Settings(use_ignore=False)), {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["a.md", "sub/b.md"]
    assert Engine().search(Call(bundle, Settings()), {"query": "alpha"})["hits"] == []


def test_reserved_files_captured_but_never_searched(make_bundle) -> None:
    bundle = make_bundle(
        {
            "index.md": "# Index\nalpha\n",
            "log.md": "alpha\n",
            "sub/index.md": "alpha\n",
            "sub/log.md": "alpha\n",
            "Index.md": "alpha\n",  # case-sensitive names
            "page.md": "alpha\n",
        }
    )
    snap = Engine().capture(Call(bundle, Settings()))
    reserved = {f.path for f in snap.files if f.reserved}
    assert reserved == {"index.md", "log.md"}
    assert len(snap.files) == 6
    res = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert sorted(h["path"] for h in res["hits"]) == [
        "Index.md",
        "page.md",
        "sub/index.md",
        "sub/log.md",
    ]
    # the reserved files count in the revision: changing one changes it
    before = res["snapshot_revision"]
    (bundle / "log.md").write_text("changed\n")
    assert (
        Engine().search(Call(bundle, Settings()), {"query": "alpha"})["snapshot_revision"] != before
    )


def test_reserved_files_are_configurable(make_bundle) -> None:
    bundle = make_bundle({"index.md": "alpha\n", "toc.md": "alpha\n"})
    res = Engine().search(Call(bundle, Settings(reserved=("toc.md",))), {"query": "alpha"})
    assert [h["path"] for h in res["hits"]] == ["index.md"]


def test_reserved_files_can_be_unparsable(make_bundle) -> None:
    # never searched, so never parsed: a broken index.md blocks nothing
    bundle = make_bundle({"index.md": b"---\nunclosed\n\xff", "a.md": "alpha\n"})
    assert [
        h["path"] for h in Engine().search(Call(bundle, Settings()), {"query": "alpha"})["hits"]
    ] == ["a.md"]


def test_paths_with_spaces_hash_percent_non_ascii(make_bundle) -> None:
    names = ["a b/c d.md", "#tag.md", "50%.md", "ünï/cødé.md", "数据.md"]
    bundle = make_bundle(dict.fromkeys(names, "alpha\n"))
    assert sorted(captured(bundle)) == sorted(names)
    hits = Engine().search(Call(bundle, Settings()), {"query": "alpha"})["hits"]
    assert sorted(h["path"] for h in hits) == sorted(names)


def test_non_utf8_markdown_name_is_bundle_invalid(make_bundle) -> None:
    bundle = make_bundle({"sub/ok.md": "x\n"})
    os.makedirs(os.fsencode(bundle / "sub"), exist_ok=True)
    with open(os.path.join(os.fsencode(bundle / "sub"), b"bad\xff.md"), "wb") as fh:
        fh.write(b"x\n")
    err = error(bundle)
    assert err.code == "bundle_invalid"
    assert err.details["path"] == "sub"
    assert "sub" in err.message


def test_non_utf8_name_of_uncaptured_file_does_not_matter(make_bundle) -> None:
    bundle = make_bundle({"ok.md": "x\n"})
    with open(os.path.join(os.fsencode(bundle), b"bad\xff.txt"), "wb") as fh:
        fh.write(b"x\n")
    with open(os.path.join(os.fsencode(bundle), b".bad\xff.md"), "wb") as fh:
        fh.write(b"x\n")
    assert captured(bundle) == ["ok.md"]


def test_files_read_once_bytes_used_everywhere(make_bundle, file_reads) -> None:
    bundle = make_bundle({"a.md": "# A\nalpha\n", "b.md": "alpha\n"})
    res = Engine().search(Call(bundle, Settings()), {"query": "alpha"})
    assert len(res["hits"]) == 2
    assert sorted(file_reads) == ["a.md", "b.md"]


def test_gitignore_agrees_with_git(make_bundle) -> None:
    git = tool("git")
    bundle = make_bundle(
        {
            ".gitignore": "docs\n**/tmp/*.md\ntrail.md   \n\\#hash.md\nc/*\n!c/keep.md\n",
            "a/docs/x.md": "x",
            "b/tmp/y.md": "x",
            "b/tmp2/y.md": "x",
            "trail.md": "x",
            "#hash.md": "x",
            "c/drop.md": "x",
            "c/keep.md": "x",
            "ok.md": "x",
            "n/.gitignore": "*.md\n",
            "n/m/.gitignore": "!keep.md\n",
            "n/m/keep.md": "x",
            "n/m/drop.md": "x",
            "n/top.md": "x",
        }
    )
    subprocess.run([git, "init", "-q", str(bundle)], check=True)
    listed = subprocess.run(
        [git, "-C", str(bundle), "ls-files", "--others", "--exclude-standard", "-z"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    expected = sorted(p for p in listed.split("\0") if p.endswith(".md"))
    assert expected == ["b/tmp2/y.md", "c/keep.md", "n/m/keep.md", "ok.md"]
    assert captured(bundle) == expected


def test_unchanged_files_keep_the_bytes_already_held(make_bundle) -> None:
    """Files just written are racy (SPEC §2), so each capture reads them again; a file read
    with a SHA-256 the engine already holds keeps those (equal) bytes rather than a second
    copy, and a changed file gets its new bytes."""
    bundle = make_bundle({"a.md": "# A\nalpha\n", "b.md": "beta\n"})
    engine = Engine()
    first = {f.path: f for f in engine.capture(engine.call(bundle)).files}
    (Path(bundle) / "b.md").write_text("gamma\n")
    second = {f.path: f for f in engine.capture(engine.call(bundle)).files}
    assert second["a.md"].data is first["a.md"].data
    assert second["b.md"].data == b"gamma\n"
    assert second["b.md"].sha256 == hashlib.sha256(b"gamma\n").hexdigest()
    (Path(bundle) / "b.md").write_text("# A\nalpha\n")  # now equal to a.md
    third = {f.path: f for f in engine.capture(engine.call(bundle)).files}
    assert third["b.md"].data == b"# A\nalpha\n" and third["b.md"].sha256 == first["a.md"].sha256
    # Holding no bytes, every read is a new buffer.
    plain = Engine(hold_bytes=0)
    assert (
        plain.capture(plain.call(bundle)).files[0].data
        is not plain.capture(plain.call(bundle)).files[0].data
    )
