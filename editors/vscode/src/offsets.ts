/**
 * Offset conversion between the server's units and VS Code's.
 *
 * The citeline server reports `match_spans` as UTF-8 *byte* offsets into the
 * snippet (SPEC §7) and line-search columns as 1-based *code point* indexes
 * (SPEC §8). VS Code (and every JavaScript string) counts UTF-16 code units.
 *
 * Policy for offsets that do not fall on a boundary (decided here, tested in
 * test/offsets.test.ts):
 *  - Non-integer or non-finite offsets are programming errors: RangeError.
 *  - Negative offsets clamp to 0; offsets past the end clamp to the end.
 *  - An offset inside a character's UTF-8 encoding is rounded to a character
 *    boundary: `down` (the default, right for a span's start) or `up` (right
 *    for a span's end), so a converted span always covers whole characters and
 *    never splits a surrogate pair.
 *  - A lone surrogate (never produced by the server, which only sends valid
 *    UTF-8) counts as U+FFFD, 3 bytes, like TextEncoder encodes it.
 *
 * This module must not import `vscode`: it is unit-tested under plain node.
 */

export type Rounding = "down" | "up";

/** A half-open range [start, end) in some unit. */
export interface Span {
  start: number;
  end: number;
}

/** UTF-8 length of the code point starting at `text[i]`, and its UTF-16 length. */
function charAt(text: string, i: number): { bytes: number; units: number } {
  const c = text.charCodeAt(i);
  if (c < 0x80) return { bytes: 1, units: 1 };
  if (c < 0x800) return { bytes: 2, units: 1 };
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return { bytes: 4, units: 2 };
  }
  return { bytes: 3, units: 1 };
}

/** Number of bytes of `text` encoded as UTF-8 (lone surrogates as U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; ) {
    const ch = charAt(text, i);
    bytes += ch.bytes;
    i += ch.units;
  }
  return bytes;
}

function checkOffset(offset: number, what: string): void {
  if (!Number.isInteger(offset)) {
    throw new RangeError(`${what} must be an integer, got ${String(offset)}`);
  }
}

/**
 * Precomputed boundaries of a string: for each character boundary, its UTF-16
 * index and its UTF-8 byte offset (both strictly increasing), end included.
 */
export class OffsetMap {
  readonly text: string;
  private readonly units: number[] = [0];
  private readonly bytes: number[] = [0];

  constructor(text: string) {
    this.text = text;
    let u = 0;
    let b = 0;
    while (u < text.length) {
      const ch = charAt(text, u);
      u += ch.units;
      b += ch.bytes;
      this.units.push(u);
      this.bytes.push(b);
    }
  }

  /** UTF-8 length of the text. */
  get byteLength(): number {
    return this.bytes[this.bytes.length - 1];
  }

  /** Number of code points of the text. */
  get codePointLength(): number {
    return this.units.length - 1;
  }

  /** UTF-8 byte offset → UTF-16 offset (see the module comment for the policy). */
  byteToUtf16(byteOffset: number, rounding: Rounding = "down"): number {
    checkOffset(byteOffset, "byte offset");
    if (byteOffset <= 0) return 0;
    if (byteOffset >= this.byteLength) return this.text.length;
    const k = boundaryIndex(this.bytes, byteOffset, rounding);
    return this.units[k];
  }

  /** UTF-16 offset → UTF-8 byte offset (an offset inside a surrogate pair is rounded). */
  utf16ToByte(utf16Offset: number, rounding: Rounding = "down"): number {
    checkOffset(utf16Offset, "UTF-16 offset");
    if (utf16Offset <= 0) return 0;
    if (utf16Offset >= this.text.length) return this.byteLength;
    const k = boundaryIndex(this.units, utf16Offset, rounding);
    return this.bytes[k];
  }

  /** 0-based code point index → UTF-16 offset, clamped to [0, length]. */
  codePointToUtf16(codePointIndex: number): number {
    checkOffset(codePointIndex, "code point index");
    if (codePointIndex <= 0) return 0;
    if (codePointIndex >= this.codePointLength) return this.text.length;
    return this.units[codePointIndex];
  }

  /** UTF-16 offset → 0-based code point index (inside a pair: rounded). */
  utf16ToCodePoint(utf16Offset: number, rounding: Rounding = "down"): number {
    checkOffset(utf16Offset, "UTF-16 offset");
    if (utf16Offset <= 0) return 0;
    if (utf16Offset >= this.text.length) return this.codePointLength;
    return boundaryIndex(this.units, utf16Offset, rounding);
  }
}

/** Index k of the boundary equal to `value`, or the one just below/above it. */
function boundaryIndex(sorted: number[], value: number, rounding: Rounding): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = sorted[mid];
    if (v === value) return mid;
    if (v < value) lo = mid + 1;
    else hi = mid - 1;
  }
  // Not a boundary: sorted[hi] < value < sorted[lo].
  return rounding === "down" ? hi : lo;
}

/** UTF-8 byte offset into `text` → UTF-16 offset. */
export function utf8ByteOffsetToUtf16(text: string, byteOffset: number, rounding: Rounding = "down"): number {
  return new OffsetMap(text).byteToUtf16(byteOffset, rounding);
}

/** UTF-16 offset into `text` → UTF-8 byte offset. */
export function utf16OffsetToUtf8Byte(text: string, utf16Offset: number, rounding: Rounding = "down"): number {
  return new OffsetMap(text).utf16ToByte(utf16Offset, rounding);
}

/** 1-based code point column (SPEC §8) → 0-based UTF-16 character for a VS Code Position. */
export function codePointColumnToUtf16(lineText: string, column: number): number {
  return new OffsetMap(lineText).codePointToUtf16(column - 1);
}

/**
 * Converts byte spans (SPEC §7) into UTF-16 spans over the same text.
 * Starts round down, ends round up, so every touched character is covered.
 * Spans with end <= start (before or after conversion) are dropped; the result
 * is sorted, and spans that overlap after rounding are merged, so it stays
 * sorted, disjoint and non-empty even when the input is not.
 */
export function byteSpansToUtf16(text: string, spans: readonly Span[]): Span[] {
  const map = new OffsetMap(text);
  const out: Span[] = [];
  for (const s of spans) {
    if (s === null || typeof s !== "object") continue;
    if (!Number.isInteger(s.start) || !Number.isInteger(s.end) || s.end <= s.start) continue;
    const start = map.byteToUtf16(s.start, "down");
    const end = map.byteToUtf16(s.end, "up");
    if (end > start) out.push({ start, end });
  }
  return normalizeSpans(out);
}

/** Sorts spans and merges the overlapping ones (touching spans stay apart, as in §7). */
export function normalizeSpans(spans: readonly Span[]): Span[] {
  const sorted = spans.filter((s) => s.end > s.start).map((s) => ({ ...s }));
  sorted.sort((a, b) => a.start - b.start || a.end - b.end);
  const out: Span[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && s.start < last.end) {
      last.end = Math.max(last.end, s.end);
    } else {
      out.push(s);
    }
  }
  return out;
}
