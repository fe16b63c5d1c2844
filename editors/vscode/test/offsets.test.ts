import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  OffsetMap,
  byteSpansToUtf16,
  codePointColumnToUtf16,
  normalizeSpans,
  utf16OffsetToUtf8Byte,
  utf8ByteOffsetToUtf16,
  utf8Length,
} from "../src/offsets";

/** Reference: UTF-16 length of the first `b` bytes (only valid at boundaries). */
function refUtf16(text: string, b: number): number {
  return Buffer.from(text, "utf8").subarray(0, b).toString("utf8").length;
}

/** All UTF-8 byte offsets that start a character, plus the end. */
function boundaries(text: string): number[] {
  const out = [0];
  let b = 0;
  for (const ch of text) {
    b += Buffer.byteLength(ch, "utf8");
    out.push(b);
  }
  return out;
}

describe("utf8ByteOffsetToUtf16", () => {
  test("ASCII: bytes and UTF-16 units coincide", () => {
    const t = "hello world";
    for (let i = 0; i <= t.length; i++) assert.equal(utf8ByteOffsetToUtf16(t, i), i);
  });

  test("two-byte Latin-1 characters", () => {
    const t = "café au lait"; // é = 2 bytes
    assert.equal(utf8ByteOffsetToUtf16(t, 3), 3);
    assert.equal(utf8ByteOffsetToUtf16(t, 5), 4); // after é
    assert.equal(utf8ByteOffsetToUtf16(t, 6), 5);
  });

  test("CJK: 3 bytes, 1 UTF-16 unit each", () => {
    const t = "网关配置 apisix";
    assert.equal(utf8ByteOffsetToUtf16(t, 0), 0);
    assert.equal(utf8ByteOffsetToUtf16(t, 3), 1);
    assert.equal(utf8ByteOffsetToUtf16(t, 6), 2);
    assert.equal(utf8ByteOffsetToUtf16(t, 12), 4);
    assert.equal(utf8ByteOffsetToUtf16(t, 13), 5); // "a"
    assert.equal(utf8ByteOffsetToUtf16(t, utf8Length(t)), t.length);
  });

  test("emoji: 4 bytes, 2 UTF-16 units (a surrogate pair)", () => {
    const t = "a😀b🎉";
    assert.equal(utf8Length(t), 10);
    assert.equal(utf8ByteOffsetToUtf16(t, 1), 1);
    assert.equal(utf8ByteOffsetToUtf16(t, 5), 3);
    assert.equal(utf8ByteOffsetToUtf16(t, 6), 4);
    assert.equal(utf8ByteOffsetToUtf16(t, 10), 6);
  });

  test("combining marks are code points of their own (boundaries are code points, not graphemes)", () => {
    const t = "e\u0301te\u0301"; // é (decomposed) t é
    assert.equal(utf8ByteOffsetToUtf16(t, 1), 1); // between e and U+0301
    assert.equal(utf8ByteOffsetToUtf16(t, 3), 2); // after U+0301 (2 bytes)
    assert.equal(utf8ByteOffsetToUtf16(t, 4), 3);
    assert.equal(utf8ByteOffsetToUtf16(t, 7), 5);
    // A span over the whole first grapheme:
    assert.deepEqual(byteSpansToUtf16(t, [{ start: 0, end: 3 }]), [{ start: 0, end: 2 }]);
  });

  test("offsets at the end of the string", () => {
    for (const t of ["", "abc", "日本", "x😀", "e\u0301"]) {
      assert.equal(utf8ByteOffsetToUtf16(t, utf8Length(t)), t.length, JSON.stringify(t));
      assert.equal(utf8ByteOffsetToUtf16(t, utf8Length(t), "up"), t.length);
    }
  });

  test("mid-character offsets round down by default and up on request", () => {
    const t = "a日b😀c";
    // 日 occupies bytes 1..3, 😀 bytes 5..8
    assert.equal(utf8ByteOffsetToUtf16(t, 2), 1);
    assert.equal(utf8ByteOffsetToUtf16(t, 2, "up"), 2);
    assert.equal(utf8ByteOffsetToUtf16(t, 3, "up"), 2);
    assert.equal(utf8ByteOffsetToUtf16(t, 6), 3);
    assert.equal(utf8ByteOffsetToUtf16(t, 6, "up"), 5);
    assert.equal(utf8ByteOffsetToUtf16(t, 8), 3);
    assert.equal(utf8ByteOffsetToUtf16(t, 8, "up"), 5); // never between the surrogates
  });

  test("out-of-range offsets clamp; non-integers are rejected", () => {
    const t = "日本";
    assert.equal(utf8ByteOffsetToUtf16(t, -5), 0);
    assert.equal(utf8ByteOffsetToUtf16(t, 99), 2);
    assert.throws(() => utf8ByteOffsetToUtf16(t, 1.5), RangeError);
    assert.throws(() => utf8ByteOffsetToUtf16(t, Number.NaN), RangeError);
    assert.throws(() => utf8ByteOffsetToUtf16(t, Number.POSITIVE_INFINITY), RangeError);
  });

  test("lone surrogates count as U+FFFD (3 bytes), like Buffer/TextEncoder", () => {
    const t = "a\ud800b";
    assert.equal(utf8Length(t), Buffer.byteLength(t, "utf8"));
    assert.equal(utf8ByteOffsetToUtf16(t, 4), 2);
  });

  test("agrees with Buffer at every boundary of random mixed text", () => {
    const pool = ["a", "Z", " ", "\n", "é", "ß", "日", "网", "ア", "한", "😀", "🎉", "\u0301", "\u200d", "𝄞", "€"];
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      let t = "";
      const len = rand(40);
      for (let i = 0; i < len; i++) t += pool[rand(pool.length)];
      const map = new OffsetMap(t);
      assert.equal(map.byteLength, Buffer.byteLength(t, "utf8"));
      for (const b of boundaries(t)) {
        const u = map.byteToUtf16(b);
        assert.equal(u, refUtf16(t, b), `${JSON.stringify(t)} @${b}`);
        assert.equal(map.byteToUtf16(b, "up"), u);
        assert.equal(map.utf16ToByte(u), b);
      }
    }
  });
});

describe("utf16OffsetToUtf8Byte and code point columns", () => {
  test("round trip and rounding inside a surrogate pair", () => {
    const t = "x😀y";
    assert.equal(utf16OffsetToUtf8Byte(t, 1), 1);
    assert.equal(utf16OffsetToUtf8Byte(t, 3), 5);
    assert.equal(utf16OffsetToUtf8Byte(t, 2), 1); // inside the pair: down
    assert.equal(utf16OffsetToUtf8Byte(t, 2, "up"), 5);
    assert.equal(utf16OffsetToUtf8Byte(t, 4), 6);
  });

  test("1-based code point column → UTF-16 character", () => {
    assert.equal(codePointColumnToUtf16("abc", 1), 0);
    assert.equal(codePointColumnToUtf16("abc", 3), 2);
    assert.equal(codePointColumnToUtf16("😀😀x", 3), 4);
    assert.equal(codePointColumnToUtf16("日本x", 3), 2);
    assert.equal(codePointColumnToUtf16("ab", 9), 2); // clamped to the end
    assert.equal(codePointColumnToUtf16("ab", 0), 0);
  });

  test("OffsetMap counts code points", () => {
    const m = new OffsetMap("a😀日");
    assert.equal(m.codePointLength, 3);
    assert.equal(m.utf16ToCodePoint(3), 2);
    assert.equal(m.utf16ToCodePoint(2), 1);
    assert.equal(m.utf16ToCodePoint(2, "up"), 2);
  });
});

describe("byteSpansToUtf16", () => {
  test("converts each span and keeps order", () => {
    const t = "use 网关 and 😀 here";
    const b = Buffer.from(t, "utf8");
    const s1 = b.indexOf(Buffer.from("网关"));
    const s2 = b.indexOf(Buffer.from("😀"));
    const s3 = b.indexOf(Buffer.from("here"));
    const spans = byteSpansToUtf16(t, [
      { start: s1, end: s1 + 6 },
      { start: s2, end: s2 + 4 },
      { start: s3, end: s3 + 4 },
    ]);
    assert.deepEqual(
      spans.map((s) => t.slice(s.start, s.end)),
      ["网关", "😀", "here"],
    );
  });

  test("mid-character spans widen to whole characters", () => {
    const t = "a日b";
    assert.deepEqual(byteSpansToUtf16(t, [{ start: 2, end: 3 }]), [{ start: 1, end: 2 }]);
  });

  test("drops empty, inverted and malformed spans; merges overlaps made by rounding", () => {
    const t = "a日b";
    const spans = byteSpansToUtf16(t, [
      { start: 2, end: 2 },
      { start: 3, end: 1 },
      { start: 1.5, end: 3 } as never,
      null as never,
      { start: 1, end: 2 },
      { start: 3, end: 4 },
      { start: 4, end: 5 },
    ]);
    assert.deepEqual(spans, [
      { start: 1, end: 2 },
      { start: 2, end: 3 },
    ]);
  });

  test("touching spans stay separate, overlapping ones merge, result sorted", () => {
    assert.deepEqual(
      normalizeSpans([
        { start: 5, end: 7 },
        { start: 0, end: 2 },
        { start: 2, end: 3 },
        { start: 6, end: 9 },
      ]),
      [
        { start: 0, end: 2 },
        { start: 2, end: 3 },
        { start: 5, end: 9 },
      ],
    );
  });

  test("spans beyond the end are clipped", () => {
    assert.deepEqual(byteSpansToUtf16("abc", [{ start: 1, end: 50 }]), [{ start: 1, end: 3 }]);
    assert.deepEqual(byteSpansToUtf16("abc", [{ start: 10, end: 50 }]), []);
  });
});
