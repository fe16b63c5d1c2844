import type { SearchHit } from "../src/mapping";

/** Byte spans of every occurrence of each word in `snippet` (as the server would send). */
export function byteSpans(snippet: string, words: string[]): { start: number; end: number }[] {
  const buf = Buffer.from(snippet, "utf8");
  const spans: { start: number; end: number }[] = [];
  for (const w of words) {
    const needle = Buffer.from(w, "utf8");
    for (let at = buf.indexOf(needle); at >= 0; at = buf.indexOf(needle, at + needle.length)) {
      spans.push({ start: at, end: at + needle.length });
    }
  }
  return spans.sort((a, b) => a.start - b.start);
}

export function makeHit(over: Partial<SearchHit> & { snippet: string }): SearchHit {
  return {
    concept_id: "docs/guide",
    path: "docs/guide.md",
    heading: null,
    locator: "docs/guide.md#L1-L5",
    line_start: 1,
    line_end: 5,
    content_sha256: "0".repeat(64),
    score: 1.5,
    matched_terms: [],
    match_spans: [],
    ...over,
  };
}
