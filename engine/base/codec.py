"""A small, safe binary format for what the cache and the worker processes exchange.

Nothing is ever unpickled or executed: a blob is a magic, a kind, a format version, the
byte order, a CRC-32 of the payload and then a sequence of typed fields (integer arrays,
string lists, raw bytes). A reader checks every header field and every length before it
takes a value, and raises Corrupt on anything unexpected, so a truncated, corrupt or
foreign blob is refused as a whole instead of being half-trusted.
"""

from __future__ import annotations

import bisect
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence

MAGIC = b"CTL"
FORMAT = 3  # bumped whenever the layout of any blob changes
_ORDER = b"L" if sys.byteorder == "little" else b"B"
_HEADER = len(MAGIC) + 1 + 1 + 1 + 4  # magic, kind, format, byte order, crc32
_SEP = "\x00"

# 32- and 64-bit signed integer arrays with the same item size everywhere we run.
I32 = "i" if array("i").itemsize == 4 else "l"
I64 = "q"
_SIZES = {I32: 4, I64: 8}
_CODES = {b"i": I32, b"q": I64}
_TAGS = {I32: b"i", I64: b"q"}


class Corrupt(Exception):
    """A blob that is not exactly what this version of citeline writes."""


class StringTable(Sequence[str]):
    """Many strings held as one: their concatenation and where each starts.

    A block's terms, paths, headings… are read a few at a time (a binary search, a hit), so
    one string and an array cost far less memory than an object per string (a big workspace
    has hundreds of thousands), and decoding one from a blob makes no objects at all.
    """

    __slots__ = ("offsets", "text")

    def __init__(self, text: str, offsets: array) -> None:
        self.text = text
        self.offsets = offsets  # I64, len + 1 entries, from 0 to len(text)

    @classmethod
    def of(cls, values: Iterable[str]) -> StringTable:
        values = list(values)
        offsets = array(I64, [0])
        total = 0
        for value in values:
            total += len(value)
            offsets.append(total)
        return cls("".join(values), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        offsets = self.offsets
        if i < 0:
            i += len(offsets) - 1
        return self.text[offsets[i] : offsets[i + 1]]

    def __iter__(self) -> Iterator[str]:
        text = self.text
        offsets = self.offsets
        for i in range(len(offsets) - 1):
            yield text[offsets[i] : offsets[i + 1]]

    def between(self, i: int, j: int) -> list[str]:
        """Strings i to j (excluded), in one comprehension rather than a call each."""
        text, offsets = self.text, self.offsets
        return [text[offsets[k] : offsets[k + 1]] for k in range(i, j)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringTable):
            return self.text == other.text and self.offsets == other.offsets
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"StringTable({list(self)!r})"


# Every SAMPLE-th word of a sorted table (a block's vocabulary, a lexicon) is held as a
# string: a look-up bisects those in C, then at most SAMPLE words of the table (each a
# Python-level slice).
SAMPLE, _LAST = 64, chr(0x10FFFF)


def sample_of(table: StringTable) -> list[str]:
    """Every SAMPLE-th string of a sorted table, for first_at_least."""
    return [table[i] for i in range(0, len(table), SAMPLE)]


def first_at_least(table: StringTable, sample: list[str], term: str) -> int:
    """Where `term` is or would go in a sorted table (bisect_left's answer)."""
    j = bisect.bisect_left(sample, term)
    # sample[j - 1] < term <= sample[j]: the answer lies in ((j - 1)·SAMPLE, j·SAMPLE].
    lo = (j - 1) * SAMPLE if j else 0
    return bisect.bisect_left(table, term, lo, min(j * SAMPLE, len(table)))


def prefix_range(table: StringTable, sample: list[str], prefix: str) -> tuple[int, int]:
    """The strings of a sorted table that start with `prefix`: table[i:j]."""
    i = first_at_least(table, sample, prefix)
    # They end before prefix + the last code point, but for those continuing with it.
    j = first_at_least(table, sample, prefix + _LAST)
    while j < len(table) and table[j].startswith(prefix):
        j += 1
    return i, j


class Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def ints(self, values: Iterable[int], code: str = I32) -> Writer:
        data = values if isinstance(values, array) and values.typecode == code else None
        if data is None:
            data = array(code, values)
        raw = data.tobytes()
        self._parts += [_TAGS[code], len(data).to_bytes(8, "little"), raw]
        return self

    def strs(self, values: Sequence[str]) -> Writer:
        """Strings, joined by NUL when none holds one (fast to split), else length-prefixed."""
        joined = _SEP.join(values)
        if joined.count(_SEP) == max(len(values) - 1, 0):
            body = joined.encode("utf-8", "surrogatepass")
            self._parts += [b"S", len(values).to_bytes(8, "little")]
            self._parts += [len(body).to_bytes(8, "little"), body]
        else:
            lengths = array(I64, map(len, values))
            body = "".join(values).encode("utf-8", "surrogatepass")
            self._parts += [b"T", len(values).to_bytes(8, "little"), lengths.tobytes()]
            self._parts += [len(body).to_bytes(8, "little"), body]
        return self

    def table(self, values: StringTable | Sequence[str]) -> Writer:
        table = values if isinstance(values, StringTable) else StringTable.of(values)
        body = table.text.encode("utf-8", "surrogatepass")
        self._parts += [b"L", len(table).to_bytes(8, "little"), table.offsets.tobytes()]
        self._parts += [len(body).to_bytes(8, "little"), body]
        return self

    def text(self, value: str) -> Writer:
        return self.strs([value])

    def raw(self, value: bytes) -> Writer:
        self._parts += [b"B", len(value).to_bytes(8, "little"), value]
        return self

    def finish(self, kind: bytes) -> bytes:
        payload = b"".join(self._parts)
        crc = zlib.crc32(payload).to_bytes(4, "little")
        return MAGIC + kind + bytes([FORMAT]) + _ORDER + crc + payload


class Reader:
    def __init__(self, blob: bytes | memoryview, kind: bytes) -> None:
        view = memoryview(blob)
        if len(view) < _HEADER:
            raise Corrupt("truncated header")
        if bytes(view[:3]) != MAGIC or bytes(view[3:4]) != kind:
            raise Corrupt("not a blob of this kind")
        if view[4] != FORMAT or bytes(view[5:6]) != _ORDER:
            raise Corrupt("another format version or byte order")
        payload = view[_HEADER:]
        if zlib.crc32(payload) != int.from_bytes(view[6:10], "little"):
            raise Corrupt("checksum mismatch")
        self._view = payload
        self._pos = 0

    def _take(self, n: int) -> memoryview:
        end = self._pos + n
        if n < 0 or end > len(self._view):
            raise Corrupt("truncated field")
        out = self._view[self._pos : end]
        self._pos = end
        return out

    def _count(self) -> int:
        return int.from_bytes(self._take(8), "little")

    def _tag(self, expected: bytes | tuple[bytes, ...]) -> bytes:
        tag = bytes(self._take(1))
        if tag not in (expected if isinstance(expected, tuple) else (expected,)):
            raise Corrupt(f"expected field {expected!r}, found {tag!r}")
        return tag

    def ints(self, code: str = I32) -> array:
        self._tag(_TAGS[code])
        n = self._count()
        out = array(code)
        out.frombytes(self._take(n * _SIZES[code]))
        return out

    def strs(self) -> list[str]:
        tag = self._tag((b"S", b"T"))
        n = self._count()
        if tag == b"S":
            body = self._take(self._count())
            try:
                text = str(body, "utf-8", "surrogatepass")
            except UnicodeDecodeError as exc:
                raise Corrupt("bad text") from exc
            if n == 0:
                if text:
                    raise Corrupt("text without strings")
                return []
            values = text.split(_SEP)
            if len(values) != n:
                raise Corrupt("string count mismatch")
            return values
        lengths = array(I64)
        lengths.frombytes(self._take(n * 8))
        body = self._take(self._count())
        try:
            text = str(body, "utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise Corrupt("bad text") from exc
        if sum(lengths) != len(text) or min(lengths, default=0) < 0:
            raise Corrupt("string lengths mismatch")
        out = []
        pos = 0
        for length in lengths:
            out.append(text[pos : pos + length])
            pos += length
        return out

    def table(self) -> StringTable:
        self._tag(b"L")
        n = self._count()
        offsets = array(I64)
        offsets.frombytes(self._take((n + 1) * 8))
        body = self._take(self._count())
        try:
            text = str(body, "utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise Corrupt("bad text") from exc
        if offsets[0] != 0 or offsets[-1] != len(text):
            raise Corrupt("string table offsets")
        return StringTable(text, offsets)

    def text(self) -> str:
        values = self.strs()
        if len(values) != 1:
            raise Corrupt("expected one string")
        return values[0]

    def raw(self) -> bytes:
        self._tag(b"B")
        return bytes(self._take(self._count()))

    def end(self) -> None:
        if self._pos != len(self._view):
            raise Corrupt("trailing bytes")


def expect(condition: bool, what: str) -> None:
    """Raise Corrupt unless a decoded value is consistent."""
    if not condition:
        raise Corrupt(what)
