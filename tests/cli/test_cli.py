"""The command line: output formats, --json byte-identity, exit codes, limit flags, and the
habits of grep and ripgrep users (see also test_habits.py)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from dataclasses import fields, replace
from pathlib import Path

import pytest
from bundles import write_bundle as write
from inprocess import run_cli

from citeline.cli import cli, render, style
from citeline.engine import Call, Engine, Limits, Settings
from citeline.engine.answer.present import encode
from citeline.engine.contracts import validate

REPO = Path(__file__).resolve().parents[2]

FILES = {
    "guide.md": "---\ntitle: Guide\n---\nIntro text.\n\n# Ordered hashtables\n\nAn ordered "
    "hashtable keeps insertion order.\n\n## Other\n\nNothing here about tables.\n",
    "notes/b.md": "# Hashtable basics\n\nA hashtable maps keys to values. Ordered ones too.\n",
    "index.md": "# Index\n\nordered hashtable navigation\n",
}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cwd=cwd, env={"NO_COLOR": "1"})


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    return write(tmp_path / "b", FILES)


def test_human_output_blocks(bundle: Path) -> None:
    """rg's habits: path:line: of the first matching line, the lines holding matches with
    their numbers, no marker in plain text, no summary on stdout."""
    out = run("search", "b", "--query", "ordered hashtable", "--strict", cwd=bundle.parent)
    assert out.returncode == 0, out.stderr
    scores = {
        h["path"]: h["score"]
        for h in Engine().search(Call(bundle, Settings()), {"query": "ordered hashtable"})["hits"]
    }
    assert out.stdout == (
        f"b/guide.md:6: Ordered hashtables  (lines 6-9, score {scores['guide.md']:.3f})\n"
        "  6: # Ordered hashtables\n"
        "  …\n"
        "  8: An ordered hashtable keeps insertion order.\n"
        "\n"
        f"b/notes/b.md:1: Hashtable basics  (lines 1-3, score {scores['notes/b.md']:.3f})\n"
        "  1: # Hashtable basics\n"
        "  …\n"
        "  3: A hashtable maps keys to values. Ordered ones too.\n"
    )
    assert out.stderr == ""  # not a terminal and no --stats: no summary


def test_summary_on_stderr_with_stats(bundle: Path) -> None:
    out = run("search", str(bundle), "-q", "ordered hashtable", "--stats", "--strict")
    assert out.returncode == 0
    result = Engine().search(Call(bundle, Settings()), {"query": "ordered hashtable"})
    revision = result["snapshot_revision"]
    assert out.stderr == (
        f"2 of 2 sections · snapshot {revision[:6]}… · index.md at the root is not searched "
        "(navigation files); --no-reserved includes them\n"
    )
    assert "sections" not in out.stdout
    # Said only when such a file is there, and not when it is searched.
    assert (
        "index.md" not in run("search", str(bundle), "-q", "x", "--stats", "--no-reserved").stderr
    )
    (bundle / "index.md").unlink()
    assert "not searched" not in run("search", str(bundle), "-q", "hashtable", "--stats").stderr


def test_paths_open_from_where_the_command_ran(bundle: Path) -> None:
    inside = run("search", "-q", "insertion", cwd=bundle)
    assert inside.stdout.startswith("guide.md:8: Ordered hashtables  ")
    absolute = run("search", str(bundle), "-q", "insertion")
    assert absolute.stdout.startswith(f"{bundle / 'guide.md'}:8: ")
    target, line = absolute.stdout.split(":")[:2]
    assert "insertion" in Path(target).read_text(encoding="utf-8").split("\n")[int(line) - 1]
    relative = run("concepts", "b", "-q", "b", cwd=bundle.parent)
    # the title: the file's first H1, as no front matter gives one
    assert relative.stdout == f"notes/b  {os.path.join('b', 'notes', 'b.md')}  Hashtable basics\n"
    # --json keeps the contract's bundle-relative paths.
    js = json.loads(run("search", "b", "-q", "insertion", "--json", cwd=bundle.parent).stdout)
    assert [h["path"] for h in js["hits"]] == ["guide.md"]


def test_color_always_marks_spans(bundle: Path) -> None:
    out = run("search", str(bundle), "-q", "hashtable", "--color", "always")
    assert out.returncode == 0
    assert f"{style.BOLD_RED}hashtable{style.RESET}" in out.stdout
    plain = run("search", str(bundle), "-q", "hashtable")
    assert "\x1b[" not in plain.stdout and "[hashtable]" not in plain.stdout


def test_json_is_byte_identical_to_the_engine(bundle: Path) -> None:
    out = run("search", str(bundle), "-q", "ordered hashtable", "--json", "-m", "1", "--strict")
    assert out.returncode == 0
    expected = Engine().search(
        Call(bundle, Settings()), {"query": "ordered hashtable", "limit": 1, "strict": True}
    )
    assert out.stdout == encode(expected) + "\n"
    result = json.loads(out.stdout)
    validate("search.result", result)
    assert result["truncated"] is True and result["total"] == 2 and len(result["hits"]) == 1


def test_bundle_defaults_to_current_directory(bundle: Path) -> None:
    out = run("search", "-q", "insertion", "--json", cwd=bundle)
    assert out.returncode == 0
    assert [h["path"] for h in json.loads(out.stdout)["hits"]] == ["guide.md"]


def test_reserved_index_is_not_searched_unless_asked(bundle: Path) -> None:
    out = run("search", str(bundle), "-q", "navigation", "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["total"] == 0
    out = run("search", str(bundle), "-q", "navigation", "--json", "--no-reserved")
    assert out.returncode == 0
    assert json.loads(out.stdout)["hits"][0]["path"] == "index.md"


def test_no_match_exits_1_with_an_empty_result(bundle: Path) -> None:
    out = run("search", str(bundle), "-q", "zebra", "--json")
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["hits"] == [] and result["total"] == 0 and result["truncated"] is False


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["-q", "x", "--limit", "0"], "schema_validation", 2),
        (["-q", "x", "-m", "101"], "schema_validation", 2),
        (["-q", "x", "-C", "11"], "schema_validation", 2),
        (["-q", "!!!"], "schema_validation", 2),
        (["-q", "x", "--max-files", "2"], "resource_limit", 3),
        (["-q", "x" * 513], "schema_validation", 2),
    ],
)
def test_errors_exit_codes_and_envelope(
    bundle: Path, args: list[str], code: str, exit_code: int
) -> None:
    out = run("search", str(bundle), *args, "--json")
    assert out.returncode == exit_code
    envelope = json.loads(out.stdout)
    validate("error", envelope)
    assert envelope["error"]["code"] == code
    assert "hits" not in out.stdout
    plain = run("search", str(bundle), *args)
    assert plain.returncode == exit_code
    assert plain.stdout == ""
    assert plain.stderr.startswith(f"citeline: {code}: ") and plain.stderr.count("\n") == 1


def test_bundle_errors(tmp_path: Path) -> None:
    missing = run("search", str(tmp_path / "nope"), "-q", "x", "--json")
    assert missing.returncode == 4
    assert json.loads(missing.stdout)["error"]["code"] == "bundle_not_found"
    (tmp_path / "file.md").write_text("# x\n")
    not_dir = run("search", str(tmp_path / "file.md"), "-q", "x", "--json")
    assert not_dir.returncode == 4
    assert json.loads(not_dir.stdout)["error"]["code"] == "bundle_invalid"
    (tmp_path / "link").symlink_to(tmp_path)
    link = run("concepts", str(tmp_path / "link"), "-q", "x", "--json")
    assert link.returncode == 4
    assert json.loads(link.stdout)["error"]["details"]["reason"] == "symlink"


def test_parse_error_and_skip_invalid(bundle: Path) -> None:
    (bundle / "broken.md").write_text("---\ntitle: [unclosed\n---\n# ordered hashtable\n")
    out = run("search", str(bundle), "-q", "ordered hashtable", "--json", "--strict")
    assert out.returncode == 5
    err = json.loads(out.stdout)["error"]
    assert err["code"] == "parse_error"
    assert err["details"]["errors"][0]["path"] == "broken.md"
    # Skipping is the default, and --skip-invalid asks for it under --strict too.
    for flags in ((), ("--strict", "--skip-invalid")):
        skipped = run("search", str(bundle), "-q", "ordered hashtable", "--json", *flags)
        assert skipped.returncode == 0
        result = json.loads(skipped.stdout)
        assert [s["path"] for s in result["skipped"]] == ["broken.md"]
        assert all(h["path"] != "broken.md" for h in result["hits"])
    human = run("search", str(bundle), "-q", "ordered hashtable")
    assert human.returncode == 0
    assert human.stderr == (
        f"citeline: skipped 1 unparsable file: {bundle / 'broken.md'}:2: "
        f"{result['skipped'][0]['reason']}\n"
    )
    assert "broken" not in human.stdout


def test_no_ignore_flag(bundle: Path) -> None:
    write(bundle, {".gitignore": "secret/\n", "secret/s.md": "# Secret hashtable\n"})
    out = run("search", str(bundle), "-q", "secret", "--json")
    assert out.returncode == 1
    out = run("search", str(bundle), "-q", "secret", "--json", "--no-ignore")
    assert [h["path"] for h in json.loads(out.stdout)["hits"]] == ["secret/s.md"]


def _needed(bundle: Path) -> dict[str, int]:
    """The value each limit reaches on the fixture bundle (exactly at it must pass)."""
    snap = Engine().capture(Call(bundle, Settings()))
    paths = [f.path for f in snap.files]
    idx = Engine().index(snap)
    result = Engine().search(Call(bundle, Settings()), {"query": "hashtable", "strict": True})
    return {
        "max_files": len(paths),
        "max_total_bytes": sum(f.size for f in snap.files),
        "max_file_bytes": max(f.size for f in snap.files),
        "max_sections": idx.n,
        "max_tokens": idx.tokens,
        "max_path_components": max(p.count("/") + 1 for p in paths),
        "max_path_bytes": max(len(p.encode()) for p in paths),
        "max_response_bytes": len(encode(result).encode()),
    }


@pytest.mark.parametrize("name", [f.name for f in fields(Limits)])
def test_every_limit_has_a_flag_at_and_over(bundle: Path, name: str) -> None:
    need = _needed(bundle)[name]
    flag = "--" + name.replace("_", "-")
    at = run("search", str(bundle), "-q", "hashtable", "--json", "--strict", flag, str(need))
    assert at.returncode == 0, at.stdout
    over = run("search", str(bundle), "-q", "hashtable", "--json", "--strict", flag, str(need - 1))
    assert over.returncode == 3
    err = json.loads(over.stdout)["error"]
    assert err["code"] == "resource_limit"
    assert err["details"]["limit"] == name and err["details"]["flag"] == flag
    assert flag in err["message"]
    # The one flag that lifts every limit is named where it would help.
    raised_by_it = getattr(Limits.editor(), name) > getattr(Limits(), name)
    assert ("--raise-limits" in err["message"]) == raised_by_it
    plain = run("search", str(bundle), "-q", "hashtable", "--strict", flag, str(need - 1))
    assert plain.stderr == f"citeline: resource_limit: {err['message']}\n"
    # Given --raise-limits, the explicit flag still wins, and the advice is not repeated.
    both = run(
        "search",
        str(bundle),
        "-q",
        "hashtable",
        "--json",
        "--strict",
        "--raise-limits",
        flag,
        str(need - 1),
    )
    assert both.returncode == 3
    assert "--raise-limits" not in json.loads(both.stdout)["error"]["message"]


def test_concepts_human_and_json(bundle: Path) -> None:
    out = run("concepts", "-q", "GUIDE", cwd=bundle)
    assert out.returncode == 0
    assert out.stdout == "guide  guide.md  Guide\n"
    js = json.loads(run("concepts", str(bundle), "-q", "b", "--json").stdout)
    validate("concepts.result", js)
    assert [c["concept_id"] for c in js["concepts"]] == ["notes/b"]


def test_relevance_flags_travel_and_are_echoed(bundle: Path) -> None:
    out = run("search", str(bundle), "-q", "hashtables basics", "--json", "--profile", "recall")
    result = json.loads(out.stdout)
    validate("search.result", result)
    assert result["options"]["match"] == "any" and result["options"]["stemming"] == "english"
    assert result["hits"][0]["path"] == "notes/b.md"


def test_keyboard_interrupt_is_cancelled(
    monkeypatch: pytest.MonkeyPatch, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Engine, "search", interrupted)
    assert cli.main(["search", str(bundle), "-q", "x", "--json"]) == 130
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "cancelled"
    assert cli.main(["search", str(bundle), "-q", "x"]) == 130
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("citeline: cancelled: ")


def test_progress_bar_only_after_delay_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = render.ProgressBar(stream, delay=0.0)
    bar("capture", 5, 10)
    assert "capture" in stream.getvalue() and "5/10" in stream.getvalue()
    bar.clear()
    assert stream.getvalue().endswith("\r\x1b[2K")
    quiet = io.StringIO()
    render.ProgressBar(quiet, delay=0.0)("capture", 1, 1)
    assert quiet.getvalue() == ""
    late = Tty()
    render.ProgressBar(late, delay=60.0)("capture", 1, 2)
    assert late.getvalue() == ""


def test_readme_first_command_searches_the_docs() -> None:
    out = run("search", "docs", "--query", "raise a limit", "--json", cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["hits"], "the user guide must answer the README's example query"
    assert any(h["path"] == "limits.md" for h in result["hits"])
    human = run("search", "docs", "--query", "raise a limit", cwd=REPO)
    assert any(line.startswith("docs/limits.md:") for line in human.stdout.splitlines())
    for hit in result["hits"]:
        lines = (REPO / "docs" / hit["path"]).read_text(encoding="utf-8").split("\n")
        section = "\n".join(lines[hit["line_start"] - 1 : hit["line_end"]])
        assert hit["snippet"] in section


def test_settings_from_flags() -> None:
    args = cli.parser().parse_args(
        ["search", "-q", "x", "--max-tokens", "5", "--reserved", "a.md", "--no-ignore", "--strict"]
    )
    settings = cli.settings_from(args)
    assert settings == Settings(
        limits=Limits(max_tokens=5), reserved=("a.md",), use_ignore=False, skip_invalid=False
    )


def test_raise_limits_flag_gives_the_editor_limits() -> None:
    strict = ["search", "-q", "x", "--strict"]
    raised = cli.settings_from(cli.parser().parse_args([*strict, "--raise-limits"]))
    assert raised.limits == Limits.editor() != Limits()
    # Without --strict the workspace limits are the default: --raise-limits changes nothing.
    assert cli.settings_from(cli.parser().parse_args(["search", "-q", "x"])).limits == (
        Limits.editor()
    )
    assert cli.settings_from(cli.parser().parse_args([*strict])).limits == Limits()
    both = cli.parser().parse_args([*strict, "--raise-limits", "--max-files", "7"])
    assert cli.settings_from(both).limits == replace(Limits.editor(), max_files=7)
