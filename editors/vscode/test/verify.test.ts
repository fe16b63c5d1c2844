/**
 * src/verify.ts: the results view's rows → citeline.verify citations, and the server's
 * verdicts → the marks the rows show and the places Re-anchor opens.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { SemanticMatch } from "../src/semantic";
import {
  MAX_CITATIONS,
  VerifyEntry,
  hitCitation,
  lineCitation,
  markOf,
  marksOf,
  percent,
  placeOf,
  reanchoredHit,
  reanchoredMatch,
  reanchoredSection,
  sectionCitation,
  verifyRequests,
} from "../src/verify";
import { makeHit } from "./helpers";

const A = "a".repeat(64);
const B = "b".repeat(64);

function semantic(over: Partial<SemanticMatch> = {}): SemanticMatch {
  return {
    path: "docs/a.md",
    line: 7,
    text: "run the installer",
    score: 0.8,
    "x-line_start": 5,
    "x-line_end": 9,
    "x-heading": "Setup",
    "x-content_sha256": A,
    "x-section_sha256": B,
    ...over,
  };
}

describe("rows → citations", () => {
  test("a section hit is its own citation, when it can be checked", () => {
    const hit = makeHit({ snippet: "x", section_sha256: B });
    assert.equal(hitCitation(hit), hit);
    // content_sha256 alone is still a citation (it can only say valid or stale).
    const old = makeHit({ snippet: "x", content_sha256: A });
    assert.equal(hitCitation(old), old);
    assert.equal(hitCitation(makeHit({ snippet: "x", content_sha256: "nope" })), undefined);
    assert.equal(hitCitation(makeHit({ snippet: "x", section_sha256: B, line_start: 0 })), undefined);
  });

  test("a section by meaning is sent under the §6 names of its x- fields", () => {
    assert.deepEqual(sectionCitation(semantic()), {
      path: "docs/a.md",
      line_start: 5,
      line_end: 9,
      section_sha256: B,
      content_sha256: A,
      heading: "Setup",
    });
    const bare = sectionCitation(semantic({ "x-section_sha256": undefined, "x-heading": undefined as unknown as string }));
    assert.deepEqual(bare, { path: "docs/a.md", line_start: 5, line_end: 9, content_sha256: A });
    assert.equal(sectionCitation(semantic({ "x-section_sha256": undefined, "x-content_sha256": "" })), undefined);
    assert.equal(sectionCitation(semantic({ "x-line_start": undefined as unknown as number })), undefined);
  });

  test("a line match is a line citation: path, line, text (context and column dropped)", () => {
    assert.deepEqual(lineCitation({ path: "a.md", line: 3, column: 5, text: "the line", context: { before: ["x"] } }), {
      path: "a.md",
      line: 3,
      text: "the line",
    });
    assert.equal(lineCitation({ path: "a.md", line: 0, column: 1, text: "x" }), undefined);
  });

  test("one request per 100 citations, rows without one left out, ids in order, root kept", () => {
    const rows = Array.from({ length: 2 * MAX_CITATIONS + 5 }, (_, i) => ({
      id: `r${i}`,
      citation: i % 50 === 7 ? undefined : { path: "a.md", line: i + 1, text: `l${i}` },
    }));
    const groups = verifyRequests(rows, "file:///ws");
    const usable = rows.filter((r) => r.citation !== undefined);
    assert.deepEqual(
      groups.map((g) => g.ids.length),
      [MAX_CITATIONS, MAX_CITATIONS, usable.length - 2 * MAX_CITATIONS],
    );
    assert.deepEqual(
      groups.flatMap((g) => g.ids),
      usable.map((r) => r.id),
    );
    for (const g of groups) {
      assert.equal(g.request.root, "file:///ws");
      assert.equal(g.request.citations.length, g.ids.length);
    }
    assert.deepEqual(groups[0].request.citations[0], rows[0].citation);
    assert.deepEqual(verifyRequests([]), []);
    assert.equal("root" in verifyRequests([{ id: "x", citation: rows[0].citation }])[0].request, false);
  });
});

describe("verdicts → marks", () => {
  const moved: VerifyEntry = {
    status: "moved",
    path: "docs/b.md",
    line_start: 40,
    line_end: 48,
    locator: "docs/b.md#L40-L48",
    content_sha256: A,
    section_sha256: B,
    heading: "Setup",
    others: 2,
  };

  test("valid (or a status this version does not know) has no mark", () => {
    assert.equal(markOf({ ...moved, status: "valid" }), undefined);
    assert.equal(markOf({ ...moved, status: "renamed" as never }), undefined);
  });

  test("moved: where to, how many more places, and Re-anchor's place", () => {
    const m = markOf(moved);
    assert.ok(m);
    assert.equal(m.text, "moved → docs/b.md:40-48");
    assert.match(m.tooltip, /docs\/b\.md:40-48 \(and 2 more places\)/);
    assert.match(m.tooltip, /Re-anchor/);
    assert.deepEqual(m.now, { path: "docs/b.md", line_start: 40, line_end: 48, locator: "docs/b.md#L40-L48", section_sha256: B, content_sha256: A, heading: "Setup" });
    assert.equal(m.icon, "arrow-swap");
    assert.doesNotMatch(markOf({ ...moved, others: 0 })?.tooltip ?? "", /more place/);
    assert.match(markOf({ ...moved, others: 1 })?.tooltip ?? "", /and 1 more place\)/);
  });

  test("a moved line citation names its line", () => {
    const m = markOf({ status: "moved", path: "a.md", line: 12, text: "the line" });
    assert.equal(m?.text, "moved → a.md:12");
    assert.deepEqual(m?.now, { path: "a.md", line_start: 12, line_end: 12, line: 12 });
  });

  test("changed: the section today and how much of the cited words it keeps", () => {
    const m = markOf({ ...moved, status: "changed", path: "docs/a.md", line_start: 11, line_end: 13, similarity: 0.874, heading: "Set\nup" });
    assert.ok(m);
    assert.equal(m.text, "changed → docs/a.md:11-13 (87% kept)");
    assert.match(m.tooltip, /section “Set up” is at docs\/a\.md:11-13 and keeps 87% of the cited words/);
    assert.equal(m.now?.line_start, 11);
    assert.equal(markOf({ ...moved, status: "changed", similarity: null })?.text, "changed → docs/b.md:40-48");
  });

  test("percentages round half up (as in the Neovim and Emacs lists), clamped to 0–100%", () => {
    assert.deepEqual([0, 0.004, 0.005, 0.5, 0.714, 0.875, 0.996, 1, 1.5, -1].map(percent), ["0%", "0%", "1%", "50%", "71%", "88%", "100%", "100%", "100%", "0%"]);
  });

  test("stale and missing: no place to go", () => {
    const stale = markOf({ status: "stale", path: "a.md", content_sha256: A });
    assert.equal(stale?.text, "stale");
    assert.equal(stale?.now, undefined);
    assert.match(stale?.tooltip ?? "", /Search again/);
    const gone = markOf({ status: "missing", path: null, file_exists: false });
    assert.equal(gone?.text, "missing (file gone)");
    assert.equal(gone?.now, undefined);
    assert.equal(gone?.color, "list.errorForeground");
    assert.equal(markOf({ status: "missing", path: null, file_exists: true })?.text, "missing");
  });

  test("places: a range, a line, or none", () => {
    assert.equal(placeOf({ status: "missing", path: null }), undefined);
    assert.equal(placeOf({ status: "moved", path: "a.md", line_start: 0, line_end: 2 }), undefined);
    assert.deepEqual(placeOf({ status: "moved", path: "a.md", line_start: 2, line_end: 3, section_sha256: "short" }), { path: "a.md", line_start: 2, line_end: 3 });
  });

  test("an answer marks the rows in order; a wrong-sized answer marks none", () => {
    const answer = { snapshot_revision: "r", total: 3, results: [{ ...moved, status: "valid" as const }, moved, { status: "missing" as const, path: null }] };
    const marks = marksOf(["h1", "h2", "h3"], answer);
    assert.ok(marks);
    assert.deepEqual([...marks.keys()], ["h1", "h2", "h3"]);
    assert.deepEqual(
      [...marks.values()].map((m) => m?.status),
      [undefined, "moved", "missing"],
    );
    assert.equal(marksOf(["h1", "h2"], answer), undefined);
    assert.equal(marksOf(["h1"], undefined), undefined);
  });
});

describe("re-anchoring", () => {
  const now = { path: "docs/b.md", line_start: 40, line_end: 44, locator: "docs/b.md#L40-L44", section_sha256: B, content_sha256: A, heading: "Set up" };

  test("a hit takes the new place and keeps its snippet, score and spans", () => {
    const hit = makeHit({ snippet: "## Setup\n\nrun", heading: "Setup", line_start: 5, line_end: 9, score: 2.5, match_spans: [{ start: 3, end: 8 }] });
    const moved = reanchoredHit(hit, now);
    assert.deepEqual(
      [moved.path, moved.line_start, moved.line_end, moved.locator, moved.section_sha256, moved.content_sha256, moved.heading],
      ["docs/b.md", 40, 44, "docs/b.md#L40-L44", B, A, "Set up"],
    );
    assert.deepEqual([moved.snippet, moved.score, moved.match_spans], [hit.snippet, hit.score, hit.match_spans]);
    assert.equal(hit.path, "docs/guide.md"); // the old hit is not changed
  });

  test("a section by meaning moves its best line with it, kept inside the section", () => {
    const m = reanchoredSection(semantic(), now);
    assert.deepEqual([m.path, m.line, m["x-line_start"], m["x-line_end"], m["x-heading"], m["x-section_sha256"]], ["docs/b.md", 42, 40, 44, "Set up", B]);
    // The section shrank (changed): the line stays inside it.
    assert.equal(reanchoredSection(semantic({ line: 9 }), { ...now, line_end: 41 }).line, 41);
  });

  test("a line match takes its new line", () => {
    const m = reanchoredMatch({ path: "a.md", line: 3, column: 5, text: "t" }, { path: "a.md", line_start: 9, line_end: 9, line: 9 });
    assert.deepEqual(m, { path: "a.md", line: 9, column: 5, text: "t" });
  });
});
