"""The English stemmer: Snowball's algorithm in C (PyStemmer), checked against the
pure-Python Snowball implementation it replaces for speed.

Stems are part of every `recall` index (and of the cache's blocks), so the C stemmer must
give the very stems the pure-Python one gives: any difference would change rankings.
"""

from __future__ import annotations

import re
import threading

from snowballstemmer import english_stemmer

from citeline.engine.text import terms
from tests.needs import corpus

WORD = re.compile(r"\w+")


def test_the_stemmer_in_use_is_the_c_one() -> None:
    # snowballstemmer hands out PyStemmer's stemmer when it is installed; without it a
    # `recall` analysis of a big workspace takes twice as long (docs/performance.md).
    import Stemmer

    assert isinstance(terms._english(), Stemmer.Stemmer)


def test_c_and_python_snowball_agree_on_the_corpora_vocabulary() -> None:
    words: set[str] = set()
    folders = [corpus("powershell-docs") / "reference/docs-conceptual", corpus("tldr") / "pages"]
    for folder in folders:
        for path in sorted(folder.rglob("*.md")):
            words.update(WORD.findall(path.read_text("utf-8", "replace").casefold()))
    vocabulary = sorted(words)
    assert len(vocabulary) > 20_000
    python = english_stemmer.EnglishStemmer()
    expected = [python.stemWord(w) for w in vocabulary]
    got = [terms._english().stemWord(w) for w in vocabulary]
    differ = [(w, e, g) for w, e, g in zip(vocabulary, expected, got, strict=True) if e != g]
    assert differ == []
    # the check can fail: stemming changes a good share of the words
    assert sum(e != w for w, e in zip(vocabulary, expected, strict=True)) > len(vocabulary) // 5


def test_each_thread_has_its_own_stemmer() -> None:
    # A stemmer object keeps the word it works on: threads must not share one.
    seen: list[object] = []

    def grab() -> None:
        seen.append(terms._english())

    threads = [threading.Thread(target=grab) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in seen}) == 3
