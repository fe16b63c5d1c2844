"""What the repository's ignore rules cost a capture: the measurement behind docs/performance.md.

Run by hand (pytest does not collect tests/benchmarks)::

    python tests/benchmarks/ignore_rules.py --corpus ../shared/corpora/tldr/docs [--repeat 9]

The corpus is copied under a temporary folder `top/docs` (the bundle). Then, in the same run
and interleaved, a warm capture (every file vouched for by its stat, nothing read: what a
long-lived server pays per request) is timed with `top` a plain folder and with `top` a git
repository whose root .gitignore is this project's own (so every folder and file of the
bundle is matched against it). Also timed: matching every path of the bundle against that
.gitignore with pathspec's GitIgnoreSpec (the matcher capture used before) and with
engine/capture/ignore.py's Rules (the one it uses now), and finding the rules above the bundle
alone.
Prints ONE JSON object (medians in milliseconds, and their ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from citeline.engine import Engine, Limits, Settings
from citeline.engine.capture.capture import capture
from citeline.engine.capture.ignore import compile_rules, repository_rules

REPO = Path(__file__).resolve().parents[2]


def timed(fn: Any, repeat: int, cpu: list[float] | None = None) -> list[float]:
    """Wall-clock milliseconds of each call; its CPU milliseconds go to `cpu` (on a shared
    machine the CPU time is the steadier of the two for single-threaded work)."""
    out = []
    for _ in range(repeat):
        started, used = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - used) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    rules_text = (REPO / ".gitignore").read_text()
    settings = Settings(limits=Limits.editor())
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "top"
        bundle = top / "docs"
        shutil.copytree(args.corpus, bundle, symlinks=True)
        time.sleep(2.2)  # past the racy window: every file can be reused
        engine = Engine(settings, cache=None)
        files = len(engine.capture(engine.call(bundle)).files)

        def as_repository(on: bool) -> None:
            if on:
                (top / ".git" / "info").mkdir(parents=True, exist_ok=True)
                (top / ".gitignore").write_text(rules_text)
            else:
                shutil.rmtree(top / ".git", ignore_errors=True)
                (top / ".gitignore").unlink(missing_ok=True)

        plain: list[float] = []
        inside: list[float] = []
        plain_cpu: list[float] = []
        inside_cpu: list[float] = []
        for _ in range(args.repeat):  # interleaved, so that both see the same machine
            as_repository(False)
            engine.capture(engine.call(bundle))  # (the first capture after a switch is not timed)
            plain += timed(lambda: engine.capture(engine.call(bundle)), 1, plain_cpu)
            as_repository(True)
            engine.capture(engine.call(bundle))
            inside += timed(lambda: engine.capture(engine.call(bundle)), 1, inside_cpu)
        assert len(capture(bundle, settings).files) == files  # the rules ignore no .md here

        # Every path the walk matches: folders ("a/") and files, relative to the root.
        paths = []
        for folder, dirs, names in os.walk(bundle):
            rel = Path(folder).relative_to(top).as_posix()
            paths += [f"{rel}/{d}/" for d in dirs] + [f"{rel}/{n}" for n in names]
        from pathspec import GitIgnoreSpec

        before = GitIgnoreSpec.from_lines(rules_text.split("\n"))
        after = compile_rules(rules_text.split("\n"))
        old_cpu: list[float] = []
        new_cpu: list[float] = []
        old = timed(lambda: [before.check_file(p) for p in paths], args.repeat, old_cpu)
        new = timed(lambda: [after.check(p) for p in paths], args.repeat, new_cpu)
        lookup = timed(lambda: repository_rules(str(bundle)), args.repeat * 10)

    def med(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    print(
        json.dumps(
            {
                "corpus": str(args.corpus),
                "files": files,
                "paths_matched": len(paths),
                "repeat": args.repeat,
                "python": sys.version.split()[0],
                "warm_capture_ms": {"plain_folder": med(plain), "in_repository": med(inside)},
                "warm_capture_cpu_ms": {
                    "plain_folder": med(plain_cpu),
                    "in_repository": med(inside_cpu),
                },
                "warm_capture_ratio_repository_over_plain": round(med(inside) / med(plain), 3),
                "warm_capture_cpu_ratio": round(med(inside_cpu) / med(plain_cpu), 3),
                "match_every_path_ms": {"GitIgnoreSpec": med(old), "Rules": med(new)},
                "match_every_path_cpu_ms": {"GitIgnoreSpec": med(old_cpu), "Rules": med(new_cpu)},
                "match_ratio_rules_over_gitignorespec": round(med(new) / med(old), 3),
                "repository_rules_ms": med(lookup),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
