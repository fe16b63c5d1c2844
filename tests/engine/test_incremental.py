"""Incremental capture (SPEC §2 "Reuse without reading again"): a request reads only the
files whose stat fingerprint changed, whose last read was racy, or that an editor marked;
its results are byte-identical to reading every file (`reread`).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from citeline.engine import Engine, Settings
from citeline.engine.answer.present import encode

WORDS = ["alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega", "zeta", "eta", "iota"]
SETTINGS = Settings(skip_invalid=True)
QUERIES = ("alpha beta", "gamma", "kappa omega", "zeta")


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files the tests make or age have a ctime of now: with the real 2 s racy window no read
    of them could be trusted within a test, so the window is 50 ms here (settle() waits it
    out). The tests of the window itself set their own."""
    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "RACY_NS", 50_000_000)


def settle() -> None:
    time.sleep(0.06)


def age(path: Path, seconds: float = 3600) -> None:
    """Make a file look modified long ago (its read is then not racy)."""
    past = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(past, past), follow_symlinks=False)


def text(rng: random.Random, size: int | None = None) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
    out = f"# {rng.choice(WORDS).title()}\n\n{body}\n"
    if size is not None:  # exactly `size` bytes: pad or cut, keep it ASCII
        out = (out + "x" * size)[:size]
    return out


def outputs(engine: Engine, bundle: Path) -> list[str]:
    snap = engine.capture(engine.call(bundle, settings=SETTINGS))
    out = [
        encode(
            {"revision": snap.revision, "records": [(f.path, f.size, f.sha256) for f in snap.files]}
        )
    ]
    for q in QUERIES:
        out.append(encode(engine.search(engine.call(bundle, settings=SETTINGS), {"query": q})))
        out.append(
            encode(
                engine.search(
                    engine.call(bundle, settings=SETTINGS), {"query": q, "profile": "recall"}
                )
            )
        )
    out.append(encode(engine.lines(engine.call(bundle, settings=SETTINGS), {"pattern": "a"})))
    out.append(encode(engine.concepts(engine.call(bundle, settings=SETTINGS), {"query": "a"})))
    return out


def markdown(bundle: Path) -> list[Path]:
    return sorted(p for p in bundle.rglob("*.md") if p.is_file() and not p.is_symlink())


class Editor:
    """Random edits of every kind SPEC §2 names, on a bundle."""

    def __init__(self, bundle: Path, rng: random.Random) -> None:
        self.bundle = bundle
        self.rng = rng
        self.marks: list[str] = []

    def pick(self) -> Path | None:
        files = markdown(self.bundle)
        return self.rng.choice(files) if files else None

    def create(self) -> None:
        folder = self.bundle / self.rng.choice(["", "sub", "sub/deep", "other"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{self.rng.randrange(10**6)}.md").write_text(text(self.rng))

    def delete(self) -> None:
        if (f := self.pick()) is not None:
            f.unlink()

    def rename(self) -> None:
        if (f := self.pick()) is not None:
            f.rename(f.with_name(f"r{self.rng.randrange(10**6)}.md"))

    def rewrite_same_size(self) -> None:
        """Within the same timestamp tick, as a fast editor or script does."""
        if (f := self.pick()) is not None:
            f.write_text(text(self.rng, f.stat().st_size))

    def rewrite_same_size_same_mtime(self) -> None:
        """Same size, and the modification time put back: only ctime (and the racy rule)
        can tell."""
        if (f := self.pick()) is not None:
            st = f.stat()
            f.write_text(text(self.rng, st.st_size))
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))

    def rewrite_within_tick(self, engine: Engine) -> None:
        """Write, capture, and write the same size again at once: both writes fall in one
        tick of the kernel's coarse clock (1-10 ms), so size, times and inode can all be
        equal; only the racy rule makes the second write be read."""
        if (f := self.pick()) is not None:
            size = f.stat().st_size
            f.write_text(text(self.rng, size))
            engine.capture(engine.call(self.bundle, settings=SETTINGS))
            f.write_text(text(self.rng, size))

    def rewrite(self) -> None:
        if (f := self.pick()) is not None:
            f.write_text(text(self.rng))

    def touch(self) -> None:
        if (f := self.pick()) is not None:
            os.utime(f)

    def link_swap(self) -> None:
        """A file replaced by a link to another (links are never captured), or back."""
        links = [p for p in self.bundle.rglob("*.md") if p.is_symlink()]
        if links and self.rng.random() < 0.5:
            link = self.rng.choice(links)
            link.unlink()
            link.write_text(text(self.rng))
            return
        files = markdown(self.bundle)
        if len(files) >= 2:
            a, b = self.rng.sample(files, 2)
            a.unlink()
            a.symlink_to(b)

    def age_all(self) -> None:
        for f in markdown(self.bundle):
            age(f, self.rng.uniform(10, 10_000))

    def mark(self, engine: Engine) -> None:
        if (f := self.pick()) is not None:
            engine.changed(self.bundle, [f.relative_to(self.bundle).as_posix()])

    def step(self, engine: Engine) -> str:
        name = self.rng.choice(
            [
                "create",
                "delete",
                "rename",
                "rewrite_same_size",
                "rewrite_same_size_same_mtime",
                "rewrite",
                "touch",
                "link_swap",
                "age_all",
                "age_all",
                "mark",
                "rewrite_within_tick",
                "rewrite_within_tick",
            ]
        )
        if name == "mark":
            self.mark(engine)
        elif name == "rewrite_within_tick":
            self.rewrite_within_tick(engine)
        else:
            getattr(self, name)()
        return name


@pytest.mark.parametrize("coarse", [0, 20_000_000], ids=["fs-times", "coarse-20ms"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edit_sequences_match_reading_everything(
    tmp_path: Path, seed: int, coarse: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also on a file system whose timestamps tick every 20 ms (simulated): then a write
    right after a capture keeps size, times and inode, and only the racy rule sees it."""
    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "COARSE_NS", coarse)  # the racy window (50 ms) is above it
    rng = random.Random(seed)
    bundle = tmp_path / "b"
    bundle.mkdir()
    for i in range(12):
        (bundle / ("sub" if i % 3 else "") / f"f{i}.md").parent.mkdir(exist_ok=True)
        (bundle / ("sub" if i % 3 else "") / f"f{i}.md").write_text(text(rng))
    editor = Editor(bundle, rng)
    editor.age_all()
    cache = tmp_path / "cache"
    warm = Engine(SETTINGS, cache=cache)
    reused_steps = 0
    for step in range(45):
        done = editor.step(warm)
        settle()  # past the racy window: unchanged files can now be reused
        expected = outputs(Engine(SETTINGS, reread=True, hold_bytes=0), bundle)
        got = outputs(warm, bundle)
        assert got == expected, f"step {step} ({done}): incremental differs from a full read"
        if step % 9 == 8:  # a new process on the same cache
            again = outputs(Engine(SETTINGS, cache=cache), bundle)
            assert again == expected, f"step {step} ({done}): a new engine on the cache differs"
        reused_steps += warm.capture(warm.call(bundle, settings=SETTINGS)).read == 0
    # The sequence did exercise reuse: many captures read nothing at all.
    assert reused_steps >= 5


@pytest.mark.parametrize("coarse", [0, 20_000_000], ids=["fs-times", "coarse-20ms"])
def test_unchanged_files_are_not_read_again(make_bundle, file_reads, monkeypatch, coarse) -> None:
    from citeline.engine.capture import stats

    monkeypatch.setattr(stats, "COARSE_NS", coarse)  # fingerprints of whole 20 ms ticks
    bundle = make_bundle({"a.md": "# A\nalpha\n", "sub/b.md": "beta\n", "c.md": "gamma\n"})
    for f in Path(bundle).rglob("*.md"):
        age(f)
    settle()
    engine = Engine()
    first = engine.search(engine.call(bundle), {"query": "alpha"})
    assert sorted(file_reads) == ["a.md", "c.md", "sub/b.md"]
    file_reads.clear()
    assert engine.search(engine.call(bundle), {"query": "alpha"}) == first
    assert file_reads == []  # every fingerprint unchanged, no read racy
    (Path(bundle) / "c.md").write_text("gamma delta\n")
    engine.search(engine.call(bundle), {"query": "alpha"})
    assert file_reads == ["c.md"]  # only the changed file


def test_a_racy_read_is_read_again_even_with_the_same_stat(
    make_bundle, file_reads, monkeypatch
) -> None:
    """git's racily-clean rule: bytes read less than RACY_NS after the file's last change may
    belong to a write in the same timestamp tick, so no stat can vouch for them."""
    from citeline.engine.capture import stats

    bundle = make_bundle({"fresh.md": "# Fresh\nalpha\n", "old.md": "# Old\nalpha\n"})
    age(Path(bundle) / "old.md")  # its ctime is now: wait out a short racy window
    monkeypatch.setattr(stats, "RACY_NS", 100_000_000)
    time.sleep(0.15)
    (Path(bundle) / "fresh.md").write_text("# Fresh\nalpha\n")
    engine = Engine()
    engine.capture(engine.call(bundle))
    file_reads.clear()
    snap = engine.capture(engine.call(bundle))  # nothing changed on disk
    assert file_reads == ["fresh.md"]
    assert snap.read == 1
    state = snap.known.files["fresh.md"]
    assert state.stat[3] >= state.read_ns - stats.RACY_NS and not state.trusted()
    assert snap.known.files["old.md"].trusted()


def test_editor_marks_force_a_read(make_bundle, file_reads) -> None:
    bundle = make_bundle({"a.md": "alpha\n", "b.md": "beta\n"})
    for f in Path(bundle).rglob("*.md"):
        age(f)
    settle()
    engine = Engine()
    engine.capture(engine.call(bundle))
    file_reads.clear()
    engine.changed(bundle, ["b.md"])
    engine.capture(engine.call(bundle))
    assert file_reads == ["b.md"]
    file_reads.clear()
    engine.capture(engine.call(bundle))  # the mark was used up
    assert file_reads == []
    engine.changed(bundle)  # every file
    engine.capture(engine.call(bundle))
    assert sorted(file_reads) == ["a.md", "b.md"]


def test_reread_reads_everything(make_bundle, file_reads) -> None:
    bundle = make_bundle({"a.md": "alpha\n", "b.md": "beta\n"})
    for f in Path(bundle).rglob("*.md"):
        age(f)
    settle()
    engine = Engine(reread=True)
    engine.capture(engine.call(bundle))
    file_reads.clear()
    engine.capture(engine.call(bundle))
    assert sorted(file_reads) == ["a.md", "b.md"]


def test_same_size_edit_with_mtime_put_back_is_seen(make_bundle) -> None:
    """Size and mtime equal, the inode kept: ctime (which no one can set) still changes."""
    bundle = make_bundle({"a.md": "# A\nalpha beta\n"})
    f = Path(bundle) / "a.md"
    age(f)
    settle()
    engine = Engine()
    before = engine.search(engine.call(bundle), {"query": "alpha"})
    st = f.stat()
    f.write_text("# A\nomega beta\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    after = engine.search(engine.call(bundle), {"query": "omega"})
    assert after["total"] == 1 and before["total"] == 1
    assert after["snapshot_revision"] != before["snapshot_revision"]


def test_a_file_changed_after_capture_is_never_cited_with_old_bytes(
    make_bundle, monkeypatch
) -> None:
    """A reused file's bytes, needed for a snippet, are read again and checked against the
    recorded SHA-256; when they differ (the file changed during the request) the request
    captures again, so the hit cites the bytes its records name."""
    from citeline.engine.capture import capture as cap

    bundle = make_bundle({"a.md": "# A\nalpha one\n", "b.md": "# B\nbeta\n"})
    for f in Path(bundle).rglob("*.md"):
        age(f)
    settle()
    engine = Engine(hold_bytes=0)  # nothing held: the snippet's bytes must be read again
    engine.search(engine.call(bundle), {"query": "beta"})
    real = cap.Fetcher.__call__
    state = {"done": False}

    def change_then_read(self, file):  # the file changes between capture and snippet
        if file.path == "a.md" and not state["done"]:
            state["done"] = True
            (Path(bundle) / "a.md").write_text("# A\nalpha two two\n")
        return real(self, file)

    monkeypatch.setattr(cap.Fetcher, "__call__", change_then_read)
    result = engine.search(engine.call(bundle), {"query": "alpha"})
    assert state["done"]
    (hit,) = result["hits"]
    assert "two two" in hit["snippet"]
    import hashlib

    assert hit["content_sha256"] == hashlib.sha256(b"# A\nalpha two two\n").hexdigest()


def test_requests_that_arrived_before_a_capture_share_it(make_bundle, monkeypatch) -> None:
    """A capture that started after a request arrived is as fresh as the request's own:
    requests waiting together (for the warm-up, say) walk the workspace once. One that
    arrives after the capture started gets its own."""
    import threading

    from citeline.engine import core

    bundle = make_bundle({"a.md": "# A\nalpha\n", "b.md": "beta\n"})
    engine = Engine()
    real = core.capture
    walks: list[float] = []

    def slow_capture(*args, **kwargs):
        walks.append(time.monotonic())
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "capture", slow_capture)
    arrived = time.monotonic()
    results: list[dict] = []

    def ask(query: str, fresh_after: float | None) -> None:
        results.append(
            engine.search(engine.call(bundle, fresh_after=fresh_after), {"query": query})
        )

    threads = [threading.Thread(target=ask, args=(q, arrived)) for q in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(walks) == 1  # one walk for both
    assert sorted(r["hits"][0]["path"] for r in results) == ["a.md", "b.md"]
    assert results[0]["snapshot_revision"] == results[1]["snapshot_revision"]

    # arriving after a capture started, or without an arrival time: a capture of its own
    walks.clear()
    first = threading.Thread(target=ask, args=("alpha", time.monotonic()))
    first.start()
    time.sleep(0.1)
    ask("beta", time.monotonic())  # arrived after the other's capture began
    first.join()
    ask("beta", None)
    assert len(walks) == 3


def test_a_finished_capture_serves_requests_that_arrived_before_it_started(
    make_bundle, monkeypatch
) -> None:
    """The warm-up's capture, finished while requests waited for it, answers those that
    arrived before it started; a request that arrived after it started, or after an editor
    reported a change, captures again and sees what changed."""
    from citeline.engine import core

    bundle = make_bundle({"a.md": "# A\nalpha\n", "b.md": "beta\n"})
    engine = Engine()
    real = core.capture
    walks: list[float] = []

    def counted(*args, **kwargs):
        walks.append(time.monotonic())
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "capture", counted)
    waiting = time.monotonic()  # a request arrives, then the warm-up starts
    engine.prepare(engine.call(bundle, fresh_after=time.monotonic()))
    assert len(walks) == 1
    first = engine.search(engine.call(bundle, fresh_after=waiting), {"query": "alpha"})
    assert len(walks) == 1  # the warm-up's snapshot
    assert [h["path"] for h in first["hits"]] == ["a.md"]
    # kept without the bytes it read (a big workspace's bytes are not kept alive by it)
    (landed,) = engine.flights.landed.values()
    assert landed.snapshot is not None and len(landed.snapshot.files) == 2
    assert all(f.data is None for f in landed.snapshot.files)

    (bundle / "c.md").write_text("alpha again\n")
    later = engine.search(engine.call(bundle, fresh_after=time.monotonic()), {"query": "alpha"})
    assert len(walks) == 2  # arrived after the capture began: its own, which sees c.md
    assert sorted(h["path"] for h in later["hits"]) == ["a.md", "c.md"]
    assert later["snapshot_revision"] != first["snapshot_revision"]

    # the request that arrived first may use the newest finished capture, never an older one
    again = engine.search(engine.call(bundle, fresh_after=waiting), {"query": "alpha"})
    assert len(walks) == 2
    assert again["snapshot_revision"] == later["snapshot_revision"]

    engine.changed(bundle, ["a.md"])
    engine.search(engine.call(bundle, fresh_after=waiting), {"query": "alpha"})
    assert len(walks) == 3  # a change was reported: the finished captures are forgotten


def test_finished_captures_are_kept_per_bundle_and_settings(make_bundle, monkeypatch) -> None:
    from citeline.engine import core
    from citeline.engine.base.limits import Settings
    from citeline.engine.capture import flights

    one = make_bundle({"a.md": "alpha\n"}, name="one")
    two = make_bundle({"b.md": "alpha\n"}, name="two")
    engine = Engine()
    real = core.capture
    walks: list[str] = []

    def counted(root, *args, **kwargs):
        walks.append(str(root))
        return real(root, *args, **kwargs)

    monkeypatch.setattr(core, "capture", counted)
    waiting = time.monotonic()
    engine.prepare(engine.call(one, fresh_after=waiting))
    hits = engine.search(engine.call(two, fresh_after=waiting), {"query": "alpha"})["hits"]
    assert [h["path"] for h in hits] == ["b.md"]  # not the other bundle's snapshot
    strict = Settings(reserved=("a.md",))
    engine.search(engine.call(one, settings=strict, fresh_after=waiting), {"query": "alpha"})
    assert walks == [str(one), str(two), str(one)]  # other settings: another capture
    for _ in range(flights.LANDED_KEPT + 3):
        engine.prepare(
            engine.call(make_bundle({"x.md": "x\n"}, name=f"b{len(walks)}"), fresh_after=waiting)
        )
    assert len(engine.flights.landed) == flights.LANDED_KEPT


def test_a_shared_capture_reads_the_bytes_again_when_none_are_held(make_bundle) -> None:
    """With no bytes held in memory, a request answered from a finished capture reads the
    files it cites again and checks them against the snapshot's digests."""
    bundle = make_bundle({"a.md": "# A\nalpha one\n", "b.md": "beta\n"})
    engine = Engine(hold_bytes=0)
    waiting = time.monotonic()
    engine.prepare(engine.call(bundle, fresh_after=time.monotonic()))
    (hit,) = engine.search(engine.call(bundle, fresh_after=waiting), {"query": "alpha"})["hits"]
    assert hit["snippet"] == "# A\nalpha one"
    # changed after that capture, before the request read it: the request captures again
    (bundle / "a.md").write_text("# A\nalpha two, longer\n")
    (hit,) = engine.search(engine.call(bundle, fresh_after=waiting), {"query": "alpha"})["hits"]
    assert hit["snippet"] == "# A\nalpha two, longer"


def test_fingerprints_of_one_device_share_its_number(tmp_path: Path) -> None:
    """The stat index keeps a fingerprint per file: one int object for the device in a
    capture's states, not one per stat (1.2 MiB at 38k files; stats.interned)."""
    from citeline.engine.capture.stats import fingerprint, interned

    for i in range(5):
        (tmp_path / f"{i}.md").write_text(f"# {i}\n", encoding="utf-8")
    a, b = (fingerprint(os.stat(tmp_path / name)) for name in ("0.md", "1.md"))
    assert a[0] == b[0] == os.stat(tmp_path).st_dev
    devices: dict[int, int] = {}
    assert interned(a, devices) is a and interned(b, devices) == b
    assert interned(b, devices)[0] is a[0]
    engine = Engine(cache=None)
    snap = engine.capture(engine.call(str(tmp_path)))
    devs = [state.stat[0] for state in snap.known.files.values()]
    assert len(devs) == 5 and all(d is devs[0] for d in devs)
