import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { LineMatch, LinesResult, SearchResult } from "../src/mapping";
import {
  LinesQuery,
  caret,
  columnTarget,
  findMatch,
  hitDocumentSpans,
  lineOfOffset,
  lineRange,
  lineStartOffset,
  linesMessage,
  linesNodes,
  locateSnippet,
  matchDocumentRange,
  matchHighlight,
  matchOffsetInText,
  matchTarget,
  matcher,
  rankingProfile,
  searchMessage,
  searchNodes,
  sectionTarget,
  snippetLineNumbers,
  snippetLineTarget,
  snippetLines,
} from "../src/results";
import { byteSpans, makeHit } from "./helpers";

const marked = (label: { label: string; highlights: [number, number][] }) => label.highlights.map(([a, b]) => label.label.slice(a, b));

function searchResult(hits: ReturnType<typeof makeHit>[], extra: Partial<SearchResult> = {}): SearchResult {
  return {
    query: "q",
    terms: [],
    snapshot_revision: "abcdef0123456789",
    total: hits.length,
    truncated: false,
    hits,
    ...extra,
  };
}

describe("snippetLines: a child per snippet line holding spans, highlights per line", () => {
  test("UTF-8 byte spans become UTF-16 highlights relative to each line", () => {
    // "é" is 2 bytes / 1 unit, "🚀" 4 bytes / 2 units, "网" 3 bytes / 1 unit.
    const snippet = "# Café 🚀 hashtable\n\nplain line\r\n  网关 hashtable and café\nno match here";
    const spans = byteSpans(snippet, ["hashtable", "café", "Café", "网关"]);
    const hit = makeHit({ heading: "Café 🚀 hashtable", snippet, match_spans: spans });
    const [node] = searchNodes(searchResult([hit]), "g1");
    const lines = node.lines;
    assert.deepEqual(
      lines.map((l) => l.index),
      [0, 3],
    );
    assert.equal(lines[0].label.label, "# Café 🚀 hashtable");
    assert.deepEqual(marked(lines[0].label), ["Café", "hashtable"]);
    // Leading blanks are dropped from the label; highlights move with the text.
    assert.equal(lines[1].label.label, "网关 hashtable and café");
    assert.deepEqual(marked(lines[1].label), ["网关", "hashtable", "café"]);
    assert.deepEqual(lines[1].label.highlights, [
      [0, 2],
      [3, 12],
      [17, 21],
    ]);
    assert.deepEqual(
      lines.map((l) => l.id),
      ["g1/h1/l0", "g1/h1/l3"],
    );
    assert.ok(lines.every((l) => l.parentId === "g1/h1"));
    // The line's range in the snippet excludes its LF.
    assert.equal(snippet.slice(lines[1].from, lines[1].to), "  网关 hashtable and café");
  });

  test("CRLF lines end before the CR; a lone CR stays inside the line, shown as a space", () => {
    const snippet = "alpha\r\nbeta\rgamma beta\r\n";
    const utf16 = [
      { start: 7, end: 11 },
      { start: 18, end: 22 },
    ];
    const lines = snippetLines(snippet, utf16, "p");
    assert.equal(lines.length, 1);
    assert.equal(lines[0].index, 1);
    assert.equal(lines[0].label.label, "beta gamma beta");
    assert.deepEqual(marked(lines[0].label), ["beta", "beta"]);
    assert.equal(snippet.slice(lines[0].from, lines[0].to), "beta\rgamma beta");
  });

  test("a span across a line break is cut into each line's part", () => {
    const lines = snippetLines("ab\ncd", [{ start: 1, end: 4 }], "p");
    assert.deepEqual(
      lines.map((l) => [l.label.label, marked(l.label)]),
      [
        ["ab", ["b"]],
        ["cd", ["c"]],
      ],
    );
  });

  test("no spans: no children", () => {
    assert.deepEqual(snippetLines("some text\nmore", [], "p"), []);
  });

  test("a very long line is cut, and highlights past the cut are dropped", () => {
    const snippet = "x".repeat(300) + " needle";
    const lines = snippetLines(snippet, [{ start: 301, end: 307 }], "p");
    assert.equal(lines.length, 1);
    assert.ok(lines[0].label.label.length <= 240);
    assert.ok(lines[0].label.label.endsWith("…"));
    assert.deepEqual(lines[0].label.highlights, []);
  });
});

describe("searchNodes: one node per hit in the server's order", () => {
  test("label = path:lines, then the heading with its highlights; ids unique per query", () => {
    const s1 = "## Ordered hashtable\n\nAn ordered hashtable keeps order.";
    const s2 = "# Zeta\n\nhashtable again";
    const hits = [
      makeHit({ heading: "Zeta", path: "z.md", line_start: 1, line_end: 3, snippet: s2, match_spans: byteSpans(s2, ["hashtable"]), score: 2.5 }),
      makeHit({
        heading: "Ordered hashtable",
        path: "docs/a.md",
        line_start: 10,
        line_end: 12,
        snippet: s1,
        match_spans: byteSpans(s1, ["Ordered", "ordered", "hashtable"]),
        matched_terms: ["ordered", "hashtable"],
        score: 1.25,
      }),
    ];
    const nodes = searchNodes(searchResult(hits), "g7");
    assert.deepEqual(
      nodes.map((n) => [n.rank, n.id, n.label.label, n.description]),
      [
        [1, "g7/h1", "z.md:1-3 — Zeta", ""],
        [2, "g7/h2", "docs/a.md:10-12 — Ordered hashtable", ""],
      ],
    );
    assert.deepEqual(marked(nodes[1].label), ["Ordered", "hashtable"]);
    assert.deepEqual(
      nodes[1].lines.map((l) => l.label.label),
      ["## Ordered hashtable", "An ordered hashtable keeps order."],
    );
    assert.match(nodes[1].tooltip, /docs\/a\.md, lines 10–12/);
    assert.match(nodes[1].tooltip, /score 1\.25 · matched: ordered, hashtable/);
    assert.equal(nodes[0].unsaved, false);
  });

  test("a Setext heading over two lines is one label line with its highlights", () => {
    const snippet = "Ordered\nhashtable\n=====\n\nbody about hashtable";
    const hit = makeHit({ heading: "Ordered\nhashtable", snippet, match_spans: byteSpans(snippet, ["hashtable"]) });
    const [node] = searchNodes(searchResult([hit]), "g");
    assert.equal(node.label.label, "docs/guide.md:1-5 — Ordered hashtable");
    assert.deepEqual(marked(node.label), ["hashtable"]);
    assert.deepEqual(node.label.highlights, [[28, 37]]);
  });

  test("headings with CRLF or a lone CR show spaces", () => {
    const crlf = makeHit({ heading: "Two\r\nlines", snippet: "Two\r\nlines\r\n---\r\nbody", match_spans: [] });
    const cr = makeHit({ heading: "lone\rCR", snippet: "# lone\rCR\n\ntext", match_spans: byteSpans("# lone\rCR\n\ntext", ["CR"]) });
    const nodes = searchNodes(searchResult([crlf, cr]), "g");
    assert.deepEqual(
      nodes.map((n) => n.label.label),
      ["docs/guide.md:1-5 — Two lines", "docs/guide.md:1-5 — lone CR"],
    );
    assert.deepEqual(marked(nodes[1].label), ["CR"]);
    assert.ok(nodes.every((n) => !/[\r\n]/.test(n.label.label)));
  });

  test("a section without a heading is labelled by its location alone", () => {
    const snippet = "Text before any heading about hashtable.";
    const hit = makeHit({ heading: null, path: "notes/a.md", line_start: 1, line_end: 2, snippet, match_spans: byteSpans(snippet, ["hashtable"]) });
    const [node] = searchNodes(searchResult([hit]), "g");
    assert.equal(node.label.label, "notes/a.md:1-2");
    assert.deepEqual(node.label.highlights, []);
    assert.deepEqual(marked(node.lines[0].label), ["hashtable"]);
    const blank = searchNodes(searchResult([makeHit({ heading: "  ", path: "b.md", line_start: 3, line_end: 3, snippet: "x" })]), "g");
    assert.equal(blank[0].label.label, "b.md:3-3");
  });

  test("x-labels name the text before a file's first heading by the file's title (issue 51)", () => {
    const titled = makeHit({ heading: "", path: "notes/a.md", line_start: 1, line_end: 2, snippet: "Text before any heading." });
    const bare = makeHit({ heading: "", path: "b.md", line_start: 1, line_end: 1, snippet: "x" });
    const headed = makeHit({ heading: "Setup", path: "c.md", line_start: 3, line_end: 5, snippet: "## Setup" });
    const nodes = searchNodes(searchResult([titled, bare, headed], { "x-labels": ["Deploying to Pages", "b.md", "Setup"] }), "g");
    assert.deepEqual(
      nodes.map((n) => [n.label.label, n.name]),
      [
        ["notes/a.md:1-2 — Deploying to Pages", "Deploying to Pages"],
        ["b.md:1-1", "b.md"], // no title: the location alone, not the path twice
        ["c.md:3-5 — Setup", "Setup"],
      ],
    );
    assert.match(nodes[0].tooltip, /^Deploying to Pages\n/);
  });

  test("a hit from unsaved text is marked in its description and tooltip", () => {
    const hit = makeHit({ heading: "Draft", path: "d.md", line_start: 2, line_end: 4, snippet: "# Draft", unsaved: true });
    const [node] = searchNodes(searchResult([hit]), "g");
    assert.equal(node.unsaved, true);
    assert.equal(node.description, "[unsaved]");
    assert.equal(node.label.label, "d.md:2-4 — Draft");
    assert.match(node.tooltip, /unsaved text/);
  });

  test("the message names the query, the counts, the profile that ranked it and the snapshot", () => {
    const hit = makeHit({ heading: "A", snippet: "# A" });
    const result = searchResult([hit], { total: 57, truncated: true, options: { profile: "recall" } });
    assert.equal(searchMessage("ordered hashtable", result, "contract"), "“ordered hashtable”: 57 sections (1 shown) · snapshot abcdef012345 · ranked by the recall profile");
    assert.equal(rankingProfile(searchResult([]), "contract"), "contract");
    assert.equal(rankingProfile(searchResult([])), undefined);
    assert.equal(searchMessage("q", searchResult([])), "“q”: 0 sections · snapshot abcdef012345");
  });

  test("a malformed result gives no nodes, not an exception", () => {
    assert.deepEqual(searchNodes({} as SearchResult, "g"), []);
    assert.deepEqual(searchNodes(null as unknown as SearchResult, "g"), []);
  });
});

describe("locating a hit in its document", () => {
  const doc = "---\ntitle: T\n---\n# One\n\nalpha beta\r\n\n# Two\ngamma é beta\n";

  test("line offsets count LF only", () => {
    assert.equal(lineStartOffset(doc, 0), 0);
    assert.equal(lineStartOffset(doc, 3), doc.indexOf("# One"));
    assert.equal(lineStartOffset(doc, 99), undefined);
    assert.deepEqual(lineRange(doc, 5), { start: doc.indexOf("alpha"), end: doc.indexOf("\r\n") });
    assert.equal(lineOfOffset(doc, doc.indexOf("gamma")), 9);
    assert.equal(lineStartOffset("a\rb\nc", 1), 4); // a lone CR does not end a line
  });

  test("the snippet is found inside its section; spans land on the document's words", () => {
    const snippet = "alpha beta\r\n\n# Two"; // not a real section end, only for the search range
    const hit = makeHit({ snippet: "# One\n\nalpha beta", line_start: 4, line_end: 7, match_spans: byteSpans("# One\n\nalpha beta", ["beta"]) });
    const [node] = searchNodes(searchResult([hit]), "g");
    const spans = hitDocumentSpans(doc, node);
    assert.deepEqual(
      spans.map((s) => doc.slice(s.start, s.end)),
      ["beta"],
    );
    assert.equal(spans[0].start, doc.indexOf("beta"));
    const numbers = snippetLineNumbers(doc, node);
    assert.deepEqual([...(numbers ?? new Map()).entries()], [[2, 6]]);
    assert.equal(locateSnippet(doc, { snippet, line_start: 6, line_end: 8 }), doc.indexOf("alpha"));
  });

  test("a snippet starting mid-line and spans after a multi-byte character", () => {
    const hit = makeHit({ snippet: "amma é beta", line_start: 8, line_end: 9, match_spans: byteSpans("amma é beta", ["beta"]) });
    const [node] = searchNodes(searchResult([hit]), "g");
    const [span] = hitDocumentSpans(doc, node);
    assert.equal(doc.slice(span.start, span.end), "beta");
    assert.deepEqual([...(snippetLineNumbers(doc, node) ?? new Map()).entries()], [[0, 9]]);
  });

  test("text that no longer holds the snippet in the section: nothing to decorate", () => {
    const hit = makeHit({ snippet: "gamma é beta", line_start: 4, line_end: 7, match_spans: [{ start: 0, end: 5 }] });
    const [node] = searchNodes(searchResult([hit]), "g");
    assert.equal(locateSnippet(doc, hit), undefined); // it is in another section
    assert.deepEqual(hitDocumentSpans(doc, node), []);
    assert.equal(snippetLineNumbers(doc, node), undefined);
    assert.equal(locateSnippet("short", makeHit({ snippet: "x", line_start: 40, line_end: 41 })), undefined);
  });
});

describe("line matches: grouped by file, the match highlighted, with columns", () => {
  const exact: LinesQuery = { pattern: "hashtable", mode: "exact", caseSensitive: true };

  function linesResult(matches: LineMatch[]): LinesResult {
    return { pattern: "p", mode: "exact", snapshot_revision: "r", total: matches.length, truncated: false, matches };
  }

  test("files in server order, matches under them with line:column, the match highlighted", () => {
    const result = linesResult([
      { path: "a.md", line: 1, column: 11, text: "# Ordered hashtable" },
      { path: "a.md", line: 3, column: 6, text: "\tThe hashtable keeps" },
      { path: "b/ü.md", line: 2, column: 8, text: "café 🚀 hashtable", unsaved: true },
    ]);
    const files = linesNodes(result, exact, "g2");
    assert.deepEqual(
      files.map((f) => [f.id, f.path, f.description]),
      [
        ["g2/f1", "a.md", "2 matches"],
        ["g2/f2", "b/ü.md", "1 match [unsaved]"],
      ],
    );
    const all = files.flatMap((f) => f.matches);
    assert.deepEqual(
      all.map((m) => [m.id, m.description, m.label.label, marked(m.label)]),
      [
        ["g2/f1/m1", "1:11", "# Ordered hashtable", ["hashtable"]],
        ["g2/f1/m2", "3:6", "The hashtable keeps", ["hashtable"]],
        ["g2/f2/m1", "[unsaved] 2:8", "café 🚀 hashtable", ["hashtable"]],
      ],
    );
    // Code-point column 8 (index 7) is UTF-16 offset 8: the emoji takes two units.
    assert.deepEqual(all[2].label.highlights, [[8, 17]]);
    assert.equal(all[2].unsaved, true);
    assert.match(all[2].tooltip, /column 8\nfrom the editor's unsaved text/);
  });

  test("case-insensitive exact and regex matches take their real length", () => {
    const m: LineMatch = { path: "a.md", line: 1, column: 5, text: "see HashTable here" };
    const hi = matchHighlight(m, { pattern: "hashtable", mode: "exact", caseSensitive: false });
    assert.deepEqual(hi, { start: 4, end: 13 });
    const re = matchHighlight({ ...m, column: 1 }, { pattern: "s\\w+", mode: "regex", caseSensitive: true });
    assert.deepEqual(re, { start: 0, end: 3 });
    const named = matcher({ pattern: "(?P<w>ab+)", mode: "regex", caseSensitive: true });
    assert.ok(named);
    assert.deepEqual(findMatch("xabbb", named, 1), { start: 1, end: 5 });
    const inline = matcher({ pattern: "(?i)abc", mode: "regex", caseSensitive: true });
    assert.deepEqual(findMatch("ABC", inline, 0), { start: 0, end: 3 });
    // A special character in an exact pattern is literal.
    assert.deepEqual(matchHighlight({ path: "a", line: 1, column: 3, text: "a a.b" }, { pattern: "a.b", mode: "exact", caseSensitive: true }), { start: 2, end: 5 });
  });

  test("a pattern JavaScript cannot compile, or an empty match, gives no highlight", () => {
    assert.equal(matcher({ pattern: "(?<!x", mode: "regex", caseSensitive: true }), undefined);
    assert.equal(matchHighlight({ path: "a", line: 1, column: 1, text: "abc" }, { pattern: "(?<!x", mode: "regex", caseSensitive: true }), undefined);
    assert.equal(matchHighlight({ path: "a", line: 1, column: 1, text: "abc" }, { pattern: "^", mode: "regex", caseSensitive: true }), undefined);
  });

  test("windowed text of a long line: the match is found in the window", () => {
    // Both ends cut: the window starts 128 code points before the match.
    const line = "é".repeat(300) + "needle" + "é".repeat(300);
    const col0 = 300;
    const window = "…" + [...line].slice(col0 - 128, col0 - 128 + 256).join("") + "…";
    const both: LineMatch = { path: "a", line: 1, column: col0 + 1, text: window };
    assert.equal(matchOffsetInText(both), 129);
    assert.deepEqual(matchHighlight(both, { pattern: "needle", mode: "exact", caseSensitive: true }), { start: 129, end: 135 });
    // Cut at the start only (window moved left to the line's end): found by searching.
    const tail = "…" + "x".repeat(250) + "needle";
    const left: LineMatch = { path: "a", line: 1, column: 400, text: tail };
    assert.equal(matchOffsetInText(left), undefined);
    assert.deepEqual(matchHighlight(left, { pattern: "needle", mode: "exact", caseSensitive: true }), { start: 251, end: 257 });
    // Cut at the end only: the window starts at the line's start.
    const head = "ab needle" + "x".repeat(247) + "…";
    assert.equal(matchOffsetInText({ path: "a", line: 1, column: 4, text: head }), 3);
    // A short line that happens to start with "…" is whole.
    assert.equal(matchOffsetInText({ path: "a", line: 1, column: 3, text: "… needle" }), 2);
  });

  test("the match's range in the document, from the real line (LF-only lines)", () => {
    const doc = "a\rb\nxx 🚀 needle\r\nend";
    const m: LineMatch = { path: "a", line: 2, column: 6, text: "xx 🚀 needle" };
    const re = matcher({ pattern: "needle", mode: "exact", caseSensitive: true });
    const r = matchDocumentRange(doc, m, re);
    assert.ok(r);
    assert.equal(doc.slice(r.start, r.end), "needle");
    // No JavaScript regex: an empty range at the column.
    const empty = matchDocumentRange(doc, m, undefined);
    assert.deepEqual(empty, { start: r.start, end: r.start });
    assert.equal(matchDocumentRange(doc, { ...m, line: 9 }, re), undefined);
  });

  test("the message names the pattern, mode, case and counts", () => {
    const result = linesResult([{ path: "a.md", line: 1, column: 1, text: "x" }]);
    assert.equal(linesMessage({ pattern: "x", mode: "regex", caseSensitive: false }, { ...result, total: 300, truncated: true }), "“x” (regex, ignoring case): 300 lines (1 shown)");
    assert.equal(linesMessage(exact, result), "“hashtable” (exact): 1 line");
  });
});

describe("open targets: where the cursor and the selection go when a result opens", () => {
  const text = "# Intro\n\ntext\n\n## Ordered hashtable\n\nThe café hashtable keeps order.\nlast line\n";

  test("a section: selected whole, the cursor at the start of its heading", () => {
    // 0-based lines 4..7: "## Ordered hashtable" .. "last line"
    const t = sectionTarget(text, 4, 7);
    assert.equal(t.active, text.indexOf("## Ordered"));
    assert.equal(t.anchor, text.indexOf("last line") + "last line".length);
    assert.ok(t.anchor > t.active, "the cursor is at the start, not at the end");
    assert.deepEqual(t.reveal, { start: t.active, end: t.anchor });
    assert.equal(text.slice(t.active, t.anchor), "## Ordered hashtable\n\nThe café hashtable keeps order.\nlast line");
  });

  test("a section: CRLF is not part of the last line; lines past the end fall back to the end", () => {
    const crlf = "# A\r\nbody\r\n# B\r\n";
    const t = sectionTarget(crlf, 0, 1);
    assert.equal(crlf.slice(t.active, t.anchor), "# A\r\nbody");
    const past = sectionTarget(crlf, 10, 12);
    assert.deepEqual([past.active, past.anchor], [crlf.length, crlf.length]);
    const one = sectionTarget("# Only", 0, 0);
    assert.deepEqual([one.active, one.anchor], [0, 6]);
  });

  test("a snippet line: the cursor on the line's first matched word, the word selected", () => {
    const snippet = "## Ordered hashtable\n\nThe café hashtable keeps order.";
    const hit = makeHit({ heading: "Ordered hashtable", line_start: 5, line_end: 8, snippet, match_spans: byteSpans(snippet, ["hashtable"]) });
    const [node] = searchNodes(searchResult([hit]), "g");
    const line = node.lines.find((l) => l.label.label.startsWith("The café"));
    assert.ok(line !== undefined);
    const t = snippetLineTarget(text, node, line);
    assert.ok(t !== undefined);
    assert.equal(t.active, text.indexOf("hashtable keeps"));
    assert.equal(text.slice(t.active, t.anchor), "hashtable");
    assert.deepEqual(t.reveal, { start: t.active, end: t.anchor });
    // The file no longer holds the snippet: no target (the caller opens the section)
    assert.equal(snippetLineTarget("# Changed\n", node, line), undefined);
  });

  test("a snippet line without a span of its own: the cursor at the line's start", () => {
    const snippet = "## Ordered hashtable\n\nThe café hashtable keeps order.";
    const hit = makeHit({ line_start: 5, line_end: 8, snippet, match_spans: [] });
    const [node] = searchNodes(searchResult([hit]), "g");
    const from = snippet.indexOf("The café");
    const t = snippetLineTarget(text, node, { from, to: snippet.length });
    assert.ok(t !== undefined);
    assert.deepEqual([t.active, t.anchor], [text.indexOf("The café"), text.indexOf("The café")]);
  });

  test("a line match: the cursor at its column, the match selected after it", () => {
    const m: LineMatch = { path: "a.md", line: 7, column: 10, text: "The café hashtable keeps order." };
    const t = matchTarget(text, m, matcher({ pattern: "HASHTABLE", mode: "exact", caseSensitive: false }));
    assert.ok(t !== undefined);
    assert.equal(t.active, text.indexOf("hashtable keeps"));
    assert.equal(text.slice(t.active, t.anchor), "hashtable");
    assert.equal(matchTarget(text, { ...m, line: 99 }, undefined), undefined);
  });

  test("a column: an empty selection there, clamped to the line; the text's end past it", () => {
    assert.deepEqual(columnTarget(text, 6, () => 4), caret(text.indexOf("café")));
    const lineEnd = text.indexOf("\nlast line");
    assert.deepEqual(columnTarget(text, 6, () => 999), caret(lineEnd));
    assert.deepEqual(columnTarget(text, 6, () => -3), caret(text.indexOf("The café")));
    assert.deepEqual(columnTarget(text, 40, () => 0), caret(text.length));
  });
});
