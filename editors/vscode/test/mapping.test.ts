import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  isUnsaved,
  oneLine,
  buildLinesRequest,
  buildSearchRequest,
  bundlePathSegments,
  escapeIconsWithSpans,
  flattenWithSpans,
  hitLabels,
  hitToItemFields,
  withoutLabels,
  isBlankQuery,
  lineMatchToItemFields,
  linesSummary,
  searchSummary,
} from "../src/mapping";
import { byteSpans, makeHit } from "./helpers";

const cut = (text: string, spans: { start: number; end: number }[]) => spans.map((s) => text.slice(s.start, s.end));

describe("hitToItemFields", () => {
  test("heading as label, path:start-end as description, body as detail, highlights in both", () => {
    const snippet = "## Ordered hashtable\n\nAn ordered hashtable keeps\ninsertion order.";
    const hit = makeHit({
      heading: "Ordered hashtable",
      path: "docs/data structures.md",
      line_start: 12,
      line_end: 30,
      snippet,
      match_spans: byteSpans(snippet, ["Ordered", "ordered", "hashtable"]),
    });
    const f = hitToItemFields(hit);
    assert.equal(f.label, "Ordered hashtable");
    assert.equal(f.description, "docs/data structures.md:12-30");
    assert.equal(f.detail, "An ordered hashtable keeps insertion order.");
    assert.deepEqual(cut(f.label, f.labelHighlights), ["Ordered", "hashtable"]);
    assert.deepEqual(f.labelHighlights, [
      { start: 0, end: 7 },
      { start: 8, end: 17 },
    ]);
    assert.deepEqual(cut(f.detail, f.detailHighlights), ["ordered", "hashtable"]);
    assert.deepEqual(cut(snippet, f.snippetHighlights), ["Ordered", "hashtable", "ordered", "hashtable"]);
    assert.deepEqual(f.target, { path: "docs/data structures.md", startLine: 11, endLine: 29 });
  });

  test("CJK and emoji: byte spans become UTF-16 highlights", () => {
    const snippet = "# 网关配置 🚀\n配置 apisix网关 的路由 🚀 网关。";
    const hit = makeHit({
      heading: "网关配置 🚀",
      snippet,
      match_spans: byteSpans(snippet, ["网关", "🚀"]),
    });
    const f = hitToItemFields(hit);
    assert.deepEqual(cut(f.label, f.labelHighlights), ["网关", "🚀"]);
    assert.equal(f.detail, "配置 apisix网关 的路由 🚀 网关。");
    assert.deepEqual(cut(f.detail, f.detailHighlights), ["网关", "🚀", "网关"]);
  });

  test("a body section without heading is labelled with its path", () => {
    const f = hitToItemFields(makeHit({ heading: null, path: "README.md", snippet: "Intro text" }));
    assert.equal(f.label, "README.md");
    assert.equal(f.detail, "Intro text");
    assert.deepEqual(f.labelHighlights, []);
    const g = hitToItemFields(makeHit({ heading: "", path: "a/b.md", snippet: "x" }));
    assert.equal(g.label, "a/b.md");
  });

  test("a snippet that starts mid-section keeps its first line in the detail", () => {
    const snippet = "tail of a sentence about caching.\nMore caching.";
    const f = hitToItemFields(
      makeHit({ heading: "Caching", snippet, match_spans: byteSpans(snippet, ["caching"]) }),
    );
    assert.equal(f.detail, "tail of a sentence about caching. More caching.");
    assert.deepEqual(f.labelHighlights, []);
    assert.deepEqual(cut(f.detail, f.detailHighlights), ["caching", "caching"]);
  });

  test("setext headings and CRLF line endings", () => {
    const snippet = "Install guide\r\n=============\r\n\r\nRun the install script.";
    const f = hitToItemFields(
      makeHit({ heading: "Install guide", snippet, match_spans: byteSpans(snippet, ["Install", "install"]) }),
    );
    assert.equal(f.detail, "Run the install script.");
    assert.deepEqual(cut(f.label, f.labelHighlights), ["Install"]);
    assert.deepEqual(cut(f.detail, f.detailHighlights), ["install"]);
  });

  test("a heading-only snippet shows the heading line as detail", () => {
    const snippet = "### Only a heading";
    const f = hitToItemFields(makeHit({ heading: "Only a heading", snippet, match_spans: byteSpans(snippet, ["heading"]) }));
    assert.equal(f.detail, "### Only a heading");
    assert.deepEqual(cut(f.detail, f.detailHighlights), ["heading"]);
    assert.deepEqual(cut(f.label, f.labelHighlights), ["heading"]);
  });

  test("long details are cut (not inside a surrogate pair) and highlights clipped", () => {
    const snippet = "word ".repeat(10) + "😀😀 target " + "x".repeat(50);
    const f = hitToItemFields(
      makeHit({ heading: null, snippet, match_spans: byteSpans(snippet, ["target", "word"]) }),
      { maxDetailUnits: 52 },
    );
    assert.ok(f.detail.endsWith("…"));
    assert.ok(f.detail.length <= 52);
    for (let i = 0; i < f.detail.length; i++) {
      const c = f.detail.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff) assert.ok(f.detail.charCodeAt(i + 1) >= 0xdc00, "no split pair");
    }
    assert.deepEqual(cut(f.detail, f.detailHighlights), Array(10).fill("word"));
    for (const h of f.detailHighlights) assert.ok(h.end <= f.detail.length - 1);
  });

  test("tolerates missing or malformed span arrays", () => {
    const f = hitToItemFields(makeHit({ snippet: "abc", match_spans: undefined as never }));
    assert.deepEqual(f.snippetHighlights, []);
    const g = hitToItemFields(makeHit({ snippet: "abc", match_spans: [{ start: 2, end: 1 }] }));
    assert.deepEqual(g.snippetHighlights, []);
  });

  test("a Setext heading over two lines: one label line, highlights, detail after the underline", () => {
    const snippet = "Ordered\nhashtable\n=========\n\nThe hashtable keeps order.";
    const f = hitToItemFields(makeHit({ heading: "Ordered\nhashtable", snippet, match_spans: byteSpans(snippet, ["hashtable"]) }));
    assert.equal(f.label, "Ordered hashtable");
    assert.deepEqual(cut(f.label, f.labelHighlights), ["hashtable"]);
    assert.equal(f.detail, "The hashtable keeps order.");
    assert.deepEqual(cut(f.detail, f.detailHighlights), ["hashtable"]);
  });

  test("a two-line Setext heading the server joined with a space still finds its words", () => {
    const snippet = "Gateway\nrouting rules\n=====\n\nThe gateway.";
    const f = hitToItemFields(makeHit({ heading: "Gateway routing rules", snippet, match_spans: byteSpans(snippet, ["Gateway", "routing", "gateway"]) }));
    assert.deepEqual(cut(f.label, f.labelHighlights), ["Gateway", "routing"]);
    assert.equal(f.detail, "The gateway.");
  });

  test("a heading that is only a prefix of the first line is not taken for it", () => {
    const snippet = "# Introduction\n\nIntro text";
    const f = hitToItemFields(makeHit({ heading: "Intro", snippet, match_spans: byteSpans(snippet, ["Intro"]) }));
    assert.deepEqual(f.labelHighlights, []);
    assert.equal(f.detail, "# Introduction Intro text");
  });

  test("CRLF inside a heading and a lone CR show as one space each", () => {
    const crlf = "Two\r\nlines\r\n---\r\nbody lines";
    const f = hitToItemFields(makeHit({ heading: "Two\r\nlines", snippet: crlf, match_spans: byteSpans(crlf, ["lines"]) }));
    assert.equal(f.label, "Two lines");
    assert.deepEqual(cut(f.label, f.labelHighlights), ["lines"]);
    assert.equal(f.detail, "body lines");
    const cr = "# lone\rCR title\n\nbody";
    const g = hitToItemFields(makeHit({ heading: "lone\rCR title", snippet: cr, match_spans: byteSpans(cr, ["title"]) }));
    assert.equal(g.label, "lone CR title");
    assert.deepEqual(cut(g.label, g.labelHighlights), ["title"]);
    assert.equal(g.detail, "body");
  });

  test("a hit from unsaved text says so in its description", () => {
    const f = hitToItemFields(makeHit({ snippet: "x", line_start: 3, line_end: 4, unsaved: true }));
    assert.equal(f.description, "[unsaved] docs/guide.md:3-4");
    assert.equal(f.unsaved, true);
    const g = hitToItemFields(makeHit({ snippet: "x", line_start: 3, line_end: 4, unsaved: "yes" as unknown as boolean }));
    assert.equal(g.description, "docs/guide.md:3-4");
    assert.equal(g.unsaved, false);
  });

  test("one-line sections", () => {
    const f = hitToItemFields(makeHit({ snippet: "x", line_start: 7, line_end: 7 }));
    assert.equal(f.description, "docs/guide.md:7-7");
    assert.deepEqual(f.target, { path: "docs/guide.md", startLine: 6, endLine: 6 });
  });
});

describe("flattenWithSpans", () => {
  test("collapses whitespace runs and keeps spans on their words", () => {
    const src = "  alpha\n\n   beta\tgamma  ";
    const spans = [
      { start: src.indexOf("beta"), end: src.indexOf("beta") + 4 },
      { start: src.indexOf("gamma"), end: src.indexOf("gamma") + 5 },
    ];
    const r = flattenWithSpans(src, spans);
    assert.equal(r.text, "alpha beta gamma");
    assert.deepEqual(cut(r.text, r.highlights), ["beta", "gamma"]);
    assert.equal(r.truncated, false);
  });

  test("honours from/to", () => {
    const src = "skip this\nkeep that";
    const r = flattenWithSpans(src, [{ start: 0, end: 4 }, { start: 15, end: 19 }], { from: 10 });
    assert.equal(r.text, "keep that");
    assert.deepEqual(cut(r.text, r.highlights), ["that"]);
  });
});

describe("escapeIconsWithSpans", () => {
  test("escapes $(icon) sequences and shifts highlights", () => {
    const r = escapeIconsWithSpans("use $(gear) to fix $(x)", [
      { start: 0, end: 3 },
      { start: 4, end: 11 },
      { start: 15, end: 18 },
    ]);
    assert.equal(r.text, "use \\$(gear) to fix \\$(x)");
    assert.deepEqual(cut(r.text, r.spans), ["use", "$(gear)", "fix"]);
  });

  test("leaves ordinary dollars alone", () => {
    assert.equal(escapeIconsWithSpans("costs $5 (or $( )", []).text, "costs $5 (or $( )");
  });
});

describe("line matches", () => {
  test("path:line:column label, trimmed text, 0-based target", () => {
    const f = lineMatchToItemFields({
      path: "docs/a.md",
      line: 42,
      column: 7,
      text: "\t  the 😀 needle here",
      context: { before: [], after: [] },
    });
    assert.equal(f.label, "docs/a.md:42:7");
    assert.equal(f.description, "the 😀 needle here");
    assert.deepEqual(f.target, { path: "docs/a.md", line: 41, codePointColumn: 7 });
  });

  test("a match in unsaved text is marked; a lone CR in the line shows as a space", () => {
    const f = lineMatchToItemFields({ path: "a.md", line: 2, column: 1, text: "one\rtwo", unsaved: true });
    assert.equal(f.label, "[unsaved] a.md:2:1");
    assert.equal(f.description, "one two");
    assert.equal(f.unsaved, true);
    assert.equal(lineMatchToItemFields({ path: "a.md", line: 2, column: 1, text: "x", "x-unsaved": true }).label, "[unsaved] a.md:2:1");
  });

  test("bad columns fall back to 1", () => {
    assert.equal(lineMatchToItemFields({ path: "a.md", line: 1, column: 0, text: "" }).label, "a.md:1:1");
  });

  test("summary", () => {
    assert.equal(
      linesSummary({ pattern: "x", mode: "exact", snapshot_revision: "ab", total: 150, truncated: true, matches: Array(100).fill(null) }),
      "150 lines (100 shown)",
    );
  });
});

describe("requests and paths", () => {
  test("search request carries query, limit, profile and root", () => {
    assert.deepEqual(buildSearchRequest("ordered hashtable", { limit: 20, profile: "recall", root: "file:///w" }), {
      query: "ordered hashtable",
      limit: 20,
      profile: "recall",
      root: "file:///w",
    });
    assert.deepEqual(buildSearchRequest("q"), { query: "q" });
    // The language server's `labels` key (issue 51): asked for, never sent as false.
    assert.deepEqual(buildSearchRequest("q", { labels: true, root: "file:///w" }), { query: "q", root: "file:///w", labels: true });
    assert.deepEqual(buildSearchRequest("q", { labels: false }), { query: "q" });
    // For a server that does not know the key: the same request without it, the original kept.
    const asked = buildSearchRequest("q", { labels: true, limit: 5 });
    assert.deepEqual(withoutLabels(asked), { query: "q", limit: 5 });
    assert.equal(asked.labels, true);
    const plain = { query: "q" };
    assert.equal(withoutLabels(plain), plain);
  });

  test("x-labels: one name per hit; an answer without them, or a list of another length, names none", () => {
    const hits = [makeHit({ snippet: "a" }), makeHit({ snippet: "b" }), makeHit({ snippet: "c" })];
    const result = { query: "q", terms: [], snapshot_revision: "r", total: 3, truncated: false, hits };
    assert.deepEqual(hitLabels({ ...result, "x-labels": ["Guide", " ", "docs/c.md"] }), ["Guide", undefined, "docs/c.md"]);
    assert.deepEqual(hitLabels({ ...result, "x-labels": ["Guide"] }), [undefined, undefined, undefined]);
    assert.deepEqual(hitLabels(result), [undefined, undefined, undefined]);
    assert.deepEqual(hitLabels({ ...result, "x-labels": [1, "B", null] as unknown as string[] }), [undefined, "B", undefined]);
    assert.deepEqual(hitLabels(undefined), []);
  });

  test("the text before a file's first heading is named by the server's name for it; a heading always wins", () => {
    const preamble = makeHit({ heading: "", path: "deploy.md", snippet: "Publish the site." });
    assert.equal(hitToItemFields(preamble, { name: "Deploying to Pages" }).label, "Deploying to Pages");
    assert.equal(hitToItemFields(preamble).label, "deploy.md");
    assert.equal(hitToItemFields(preamble, { name: "  " }).label, "deploy.md");
    assert.deepEqual(hitToItemFields(preamble, { name: "Deploying to Pages" }).labelHighlights, []);
    const headed = makeHit({ heading: "Install", snippet: "## Install\n\nrun it" });
    assert.equal(hitToItemFields(headed, { name: "Something else" }).label, "Install");
  });

  test("lines request defaults to exact, case sensitive", () => {
    assert.deepEqual(buildLinesRequest("foo"), { pattern: "foo", mode: "exact", case_sensitive: true });
    assert.deepEqual(buildLinesRequest("f.o", { mode: "regex", caseSensitive: false, limit: 100, context: 0 }), {
      pattern: "f.o",
      mode: "regex",
      case_sensitive: false,
      limit: 100,
      context: 0,
    });
  });

  test("blank queries are not sent", () => {
    assert.equal(isBlankQuery("   "), true);
    assert.equal(isBlankQuery(" a "), false);
  });

  test("bundle-relative paths only", () => {
    assert.deepEqual(bundlePathSegments("docs/sub dir/a b.md"), ["docs", "sub dir", "a b.md"]);
    assert.deepEqual(bundlePathSegments("网关.md"), ["网关.md"]);
    for (const bad of ["", "/etc/passwd", "../x.md", "a/../b.md", "a//b.md", "./a.md", "C:/x.md"]) {
      assert.throws(() => bundlePathSegments(bad), Error, bad);
    }
  });

  test("search summary", () => {
    const base = { query: "q", terms: ["q"], snapshot_revision: "0123456789abcdef0123", hits: [] };
    assert.equal(searchSummary({ ...base, total: 1, truncated: false }), "1 section · snapshot 0123456789ab");
    assert.equal(
      searchSummary({ ...base, total: 57, truncated: true, hits: Array(20).fill(null) }),
      "57 sections (20 shown) · snapshot 0123456789ab",
    );
  });
});

describe("oneLine", () => {
  test("CRLF, LF and lone CR become one space each; spans follow", () => {
    assert.deepEqual(oneLine("a\r\nb\nc\rd"), { text: "a b c d", spans: [] });
    const r = oneLine("ab\r\ncd", [{ start: 1, end: 5 }, { start: 6, end: 6 }]);
    assert.equal(r.text, "ab cd");
    assert.deepEqual(cut(r.text, r.spans), ["b c"]);
    assert.equal(oneLine("").text, "");
  });
});

describe("isUnsaved", () => {
  test("only a true `unsaved` (or `x-unsaved` on a line match) counts", () => {
    assert.equal(isUnsaved({ unsaved: true }), true);
    assert.equal(isUnsaved({ "x-unsaved": true }), true);
    assert.equal(isUnsaved({ unsaved: false }), false);
    assert.equal(isUnsaved({ unsaved: 1 }), false);
    assert.equal(isUnsaved({}), false);
    assert.equal(isUnsaved(null), false);
  });
});
