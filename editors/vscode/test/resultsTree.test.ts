import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { LinesResult, SearchResult } from "../src/mapping";
import type { HitNode, MatchNode, SnippetLineNode } from "../src/results";
import { ResultsTree } from "../src/resultsTree";
import type { SemanticResult } from "../src/semantic";
import type { VerifyEntry } from "../src/verify";
import { marksOf } from "../src/verify";
import { byteSpans, makeHit } from "./helpers";

const ROOT = "file:///ws";

const FILES: Record<string, string> = {
  "guide.md": "# Intro\n\nWelcome.\n\n## Ordered hashtable\n\nAn ordered hashtable keeps insertion order.\nIt hashes keys.\n",
  "notes.md": "# Notes\n\nThe hashtable costs nothing.\n",
};

function reader(reads: string[]) {
  return async (root: string, path: string): Promise<string | undefined> => {
    reads.push(`${root} ${path}`);
    return FILES[path];
  };
}

function searchResult(): SearchResult {
  const s1 = "## Ordered hashtable\n\nAn ordered hashtable keeps insertion order.\nIt hashes keys.";
  const s2 = "# Notes\n\nThe hashtable costs nothing.";
  return {
    query: "ordered hashtable",
    terms: ["order", "hashtabl"],
    snapshot_revision: "0123456789abcdef",
    total: 2,
    truncated: false,
    options: { profile: "recall" },
    hits: [
      makeHit({
        path: "guide.md",
        heading: "Ordered hashtable",
        line_start: 5,
        line_end: 8,
        snippet: s1,
        match_spans: byteSpans(s1, ["Ordered", "ordered", "hashtable"]),
      }),
      makeHit({ path: "notes.md", heading: "Notes", line_start: 1, line_end: 3, snippet: s2, match_spans: byteSpans(s2, ["hashtable"]), unsaved: true }),
    ],
  };
}

function linesResult(): LinesResult {
  return {
    pattern: "hashtable",
    mode: "exact",
    snapshot_revision: "r",
    total: 3,
    truncated: false,
    matches: [
      { path: "guide.md", line: 5, column: 12, text: "## Ordered hashtable" },
      { path: "guide.md", line: 7, column: 12, text: "An ordered hashtable keeps insertion order." },
      { path: "notes.md", line: 3, column: 5, text: "The hashtable costs nothing." },
    ],
  };
}

describe("ResultsTree", () => {
  test("empty at first: no children, no message", async () => {
    const tree = new ResultsTree(reader([]));
    assert.deepEqual(await tree.children(), []);
    assert.equal(tree.message, undefined);
    assert.equal(tree.count, 0);
  });

  test("a search: hits in server order, expanded to their matched snippet lines with line numbers", async () => {
    const reads: string[] = [];
    let changes = 0;
    const tree = new ResultsTree(reader(reads), () => (changes += 1));
    tree.showSearch("ordered hashtable", ROOT, searchResult(), "contract");
    assert.equal(changes, 1);
    assert.equal(tree.message, "“ordered hashtable”: 2 sections · snapshot 0123456789ab · ranked by the recall profile");
    assert.equal(tree.description, "ordered hashtable");
    assert.equal(tree.count, 2);

    const hits = (await tree.children()) as HitNode[];
    assert.deepEqual(
      hits.map((h) => tree.item(h)).map((i) => [i.label.label, i.description, i.collapsible, i.contextValue, i.resource?.path, i.opens]),
      [
        ["guide.md:5-8 — Ordered hashtable", undefined, "expanded", "citeline.hit", "guide.md", true],
        ["notes.md:1-3 — Notes", "[unsaved]", "expanded", "citeline.hit", "notes.md", true],
      ],
    );
    assert.equal(tree.item(hits[0]).resource?.root, ROOT);

    const lines = (await tree.children(hits[0])) as SnippetLineNode[];
    const items = lines.map((l) => tree.item(l));
    assert.deepEqual(
      items.map((i) => [i.label.label, i.description, i.contextValue]),
      [
        ["## Ordered hashtable", "L5", "citeline.snippetLine"],
        ["An ordered hashtable keeps insertion order.", "L7", "citeline.snippetLine"],
      ],
    );
    assert.deepEqual(
      items[1].label.highlights.map(([a, b]) => items[1].label.label.slice(a, b)),
      ["ordered", "hashtable"],
    );
    assert.equal(tree.parent(lines[0]), hits[0]);
    assert.equal(tree.parent(hits[0]), undefined);
    // The file is read once per query, however often children are asked for.
    await tree.children(hits[0]);
    assert.deepEqual(reads, [`${ROOT} guide.md`]);
    assert.deepEqual(tree.inFile("notes.md"), [hits[1]]);
  });

  test("a file that no longer holds the snippet: children without line numbers", async () => {
    const tree = new ResultsTree(async () => "# Changed\n\nnothing here\n");
    tree.showSearch("q", ROOT, searchResult());
    const [hit] = (await tree.children()) as HitNode[];
    const lines = await tree.children(hit);
    assert.equal(lines.length, 2);
    assert.ok(lines.every((l) => tree.item(l).description === undefined));
    // An unreadable file too (the reader's error is not the view's).
    const broken = new ResultsTree(async () => {
      throw new Error("EACCES");
    });
    broken.showSearch("q", ROOT, searchResult());
    const [h] = (await broken.children()) as HitNode[];
    assert.equal((await broken.children(h)).length, 2);
  });

  test("a hit without spans in its snippet has no children", async () => {
    const tree = new ResultsTree(reader([]));
    const r = searchResult();
    r.hits = [makeHit({ heading: "Title only", snippet: "# Title only", match_spans: [] })];
    tree.showSearch("q", ROOT, r);
    const [hit] = (await tree.children()) as HitNode[];
    assert.equal(tree.item(hit).collapsible, "none");
    assert.deepEqual(await tree.children(hit), []);
  });

  test("a new query replaces the content; nodes of the old one are stale", async () => {
    const tree = new ResultsTree(reader([]));
    tree.showSearch("q", ROOT, searchResult());
    const [oldHit] = (await tree.children()) as HitNode[];
    tree.showSearch("q", ROOT, searchResult());
    const [newHit] = (await tree.children()) as HitNode[];
    assert.notEqual(oldHit.id, newHit.id);
    assert.equal(tree.isCurrent(oldHit), false);
    assert.equal(tree.isCurrent(newHit), true);
    assert.deepEqual(await tree.children(oldHit), []);
  });

  test("a line search: files in order with their matches (line:column, match highlighted)", async () => {
    const tree = new ResultsTree(reader([]));
    tree.showLines({ pattern: "hashtable", mode: "exact", caseSensitive: true }, ROOT, linesResult());
    assert.equal(tree.message, "“hashtable” (exact): 3 lines");
    assert.equal(tree.count, 3);
    const files = await tree.children();
    assert.deepEqual(
      files.map((f) => tree.item(f)).map((i) => [i.label.label, i.description, i.collapsible, i.opens]),
      [
        ["guide.md", "2 matches", "expanded", false],
        ["notes.md", "1 match", "expanded", false],
      ],
    );
    const matches = (await tree.children(files[0])) as MatchNode[];
    const items = matches.map((m) => tree.item(m));
    assert.deepEqual(
      items.map((i) => [i.label.label, i.description, i.opens]),
      [
        ["## Ordered hashtable", "5:12", true],
        ["An ordered hashtable keeps insertion order.", "7:12", true],
      ],
    );
    assert.deepEqual(
      items.map((i) => i.label.highlights.map(([a, b]) => i.label.label.slice(a, b))),
      [["hashtable"], ["hashtable"]],
    );
    assert.equal(tree.parent(matches[1]), files[0]);
    assert.deepEqual(tree.inFile("guide.md"), matches);
  });

  test("empty results and errors say so in the message", async () => {
    const tree = new ResultsTree(reader([]));
    tree.showSearch("zzz", ROOT, { ...searchResult(), hits: [], total: 0 });
    assert.match(tree.message ?? "", /0 sections .* No section matches\.$/);
    tree.showLines({ pattern: "zzz", mode: "regex", caseSensitive: false }, ROOT, { ...linesResult(), matches: [], total: 0 });
    assert.equal(tree.message, "“zzz” (regex, ignoring case): 0 lines. No line matches.");
    tree.showError("citeline search", "citeline: limit reached: too many files");
    assert.equal(tree.message, "citeline search: citeline: limit reached: too many files");
    assert.deepEqual(await tree.children(), []);
    assert.equal(tree.count, 0);
    tree.clear();
    assert.equal(tree.message, undefined);
  });
});

describe("ResultsTree: checking rows against the files (citeline.verify)", () => {
  const SHA = "c".repeat(64);
  const withHashes = (): SearchResult => {
    const r = searchResult();
    r.hits = r.hits.map((h, i) => ({ ...h, section_sha256: String(i + 1).repeat(64) }));
    return r;
  };

  test("a search's hits are one request of their own citations, for the shown content", () => {
    const tree = new ResultsTree(reader([]));
    assert.equal(tree.verification(), undefined);
    tree.showSearch("q", ROOT, withHashes());
    const plan = tree.verification();
    assert.ok(plan);
    assert.equal(plan.groups.length, 1);
    const [g] = plan.groups;
    assert.deepEqual(g.request.citations, tree.state.kind === "search" ? tree.state.result.hits : []);
    assert.equal(g.request.root, ROOT);
    assert.deepEqual(g.ids, tree.state.kind === "search" ? tree.state.nodes.map((n) => n.id) : []);
    tree.showError("x", "y");
    assert.equal(tree.verification(), undefined);
  });

  test("line matches and sections by meaning become line and section citations", () => {
    const tree = new ResultsTree(reader([]));
    tree.showLines({ pattern: "hashtable", mode: "exact", caseSensitive: true }, ROOT, linesResult());
    const lines = tree.verification();
    assert.deepEqual(
      lines?.groups[0].request.citations,
      linesResult().matches.map((m) => ({ path: m.path, line: m.line, text: m.text })),
    );
    const semantic: SemanticResult = {
      pattern: "q",
      mode: "semantic",
      threshold: 0.5,
      model: "m",
      snapshot_revision: "r",
      total: 1,
      truncated: false,
      matches: [{ path: "guide.md", line: 7, text: "x", score: 0.9, "x-line_start": 5, "x-line_end": 8, "x-heading": "Ordered hashtable", "x-content_sha256": SHA, "x-section_sha256": SHA }],
    };
    tree.showSemantic({ query: "q", threshold: 0.5 }, ROOT, semantic);
    assert.deepEqual(tree.verification()?.groups[0].request.citations, [
      { path: "guide.md", line_start: 5, line_end: 8, section_sha256: SHA, content_sha256: SHA, heading: "Ordered hashtable" },
    ]);
  });

  test("verdicts mark rows (description, tooltip, icon, context), valid lifts a mark, an old answer is dropped", async () => {
    let marked = 0;
    let changed = 0;
    const tree = new ResultsTree(reader([]), () => (changed += 1), () => (marked += 1));
    tree.showSearch("q", ROOT, withHashes());
    const plan = tree.verification();
    assert.ok(plan);
    const [h1, h2] = (await tree.children()) as HitNode[];
    const moved: VerifyEntry = { status: "moved", path: "guide.md", line_start: 9, line_end: 12, section_sha256: "1".repeat(64), heading: "Ordered hashtable" };
    const verdicts = marksOf(plan.groups[0].ids, { snapshot_revision: "r2", total: 2, results: [moved, { status: "missing", path: null, file_exists: true }] });
    assert.ok(verdicts);
    assert.equal(tree.applyMarks(plan.generation, verdicts), true);
    assert.equal(marked, 1);
    assert.equal(changed, 1); // only the search itself: marking keeps the content
    const [i1, i2] = [tree.item(h1), tree.item(h2)];
    assert.deepEqual(
      [i1.description, i1.contextValue, i1.icon?.id],
      ["moved → guide.md:9-12", "citeline.hit.reanchor", "arrow-swap"],
    );
    assert.match(i1.tooltip ?? "", /^Ordered hashtable\n[^]*\nMoved: the cited text is now at guide\.md:9-12/);
    assert.deepEqual([i2.description, i2.contextValue, i2.icon?.id], ["[unsaved] missing", "citeline.hit.marked", "circle-slash"]);
    assert.equal(tree.markCount, 2);
    assert.match(tree.message ?? "", / · 2 no longer where they were/);
    // The same verdicts again change nothing (no refresh); valid lifts the mark.
    tree.applyMarks(plan.generation, verdicts);
    assert.equal(marked, 1);
    tree.applyMarks(plan.generation, new Map([[h2.id, undefined]]));
    assert.equal(marked, 2);
    assert.equal(tree.item(h2).contextValue, "citeline.hit");
    assert.equal(tree.item(h2).icon, undefined);
    assert.match(tree.message ?? "", / · 1 no longer where it was/);
    // A new query: the old plan's answer is not applied, and nothing is marked.
    tree.showSearch("q", ROOT, withHashes());
    assert.equal(tree.applyMarks(plan.generation, verdicts), false);
    assert.equal(tree.markCount, 0);
  });

  test("re-anchoring a moved hit: same row, the new place, its lines numbered from the file now", async () => {
    const files: Record<string, string> = { ...FILES };
    const reads: string[] = [];
    const tree = new ResultsTree(async (root, path) => {
      reads.push(path);
      return files[path];
    });
    tree.showSearch("q", ROOT, withHashes());
    const [h1] = (await tree.children()) as HitNode[];
    assert.deepEqual(
      ((await tree.children(h1)) as SnippetLineNode[]).map((l) => l.line),
      [5, 7],
    );
    assert.equal(tree.reanchor(h1), undefined); // nothing to re-anchor to yet
    // Three lines above the section, saved; the server says it moved.
    files["guide.md"] = "one\ntwo\nthree\n" + FILES["guide.md"];
    const plan = tree.verification();
    assert.ok(plan);
    const moved: VerifyEntry = { status: "moved", path: "guide.md", line_start: 8, line_end: 11, locator: "guide.md#L8-L11", section_sha256: "1".repeat(64), heading: "Ordered hashtable" };
    tree.applyMarks(plan.generation, new Map([[h1.id, marksOf([h1.id], { snapshot_revision: "r", total: 1, results: [moved] })?.get(h1.id)]]));
    const done = tree.reanchor(h1);
    assert.ok(done && done.node.kind === "hit");
    assert.equal(done.node.id, h1.id);
    assert.deepEqual(done.place, { path: "guide.md", line_start: 8, line_end: 11, locator: "guide.md#L8-L11", section_sha256: "1".repeat(64), heading: "Ordered hashtable" });
    assert.equal(tree.isCurrent(done.node), true);
    assert.equal(tree.isCurrent(h1), false);
    const item = tree.item(done.node);
    assert.deepEqual([item.label.label, item.contextValue, item.icon], ["guide.md:8-11 — Ordered hashtable", "citeline.hit", undefined]);
    assert.equal(tree.markCount, 0);
    assert.equal(((await tree.children())[0] as HitNode).hit.locator, "guide.md#L8-L11");
    // The snippet lines are numbered again from the file as it is now.
    assert.deepEqual(
      ((await tree.children(done.node)) as SnippetLineNode[]).map((l) => l.line),
      [8, 10],
    );
    assert.deepEqual(reads, ["guide.md", "guide.md"]);
    // The next check sends the re-anchored hit.
    const again = tree.verification();
    assert.equal((again?.groups[0].request.citations[0] as { line_start: number }).line_start, 8);
  });

  test("re-anchoring keeps a title-named preamble's name in its file, and takes the heading or path elsewhere", async () => {
    const tree = new ResultsTree(reader([]));
    const result = withHashes();
    result.hits = [0, 1, 2].map((i) => makeHit({ heading: "", path: "deploy.md", line_start: 1, line_end: 2, snippet: `p${i}`, section_sha256: String(i + 1).repeat(64) }));
    result["x-labels"] = ["Deploying", "Deploying", "Deploying"];
    tree.showSearch("q", ROOT, result);
    const nodes = (await tree.children()) as HitNode[];
    const plan = tree.verification();
    assert.ok(plan);
    const to = (path: string, heading: string): VerifyEntry => ({ status: "moved", path, line_start: 3, line_end: 4, heading });
    const verdicts = marksOf(plan.groups[0].ids, { snapshot_revision: "r", total: 3, results: [to("deploy.md", ""), to("other.md", ""), to("other.md", "Setup")] });
    assert.ok(verdicts);
    tree.applyMarks(plan.generation, verdicts);
    const labels = nodes.map((n) => tree.item(tree.reanchor(n)?.node ?? n).label.label);
    assert.deepEqual(labels, ["deploy.md:3-4 — Deploying", "other.md:3-4", "other.md:3-4 — Setup"]);
  });

  test("re-anchoring a line match that moved to another file names the file", async () => {
    const tree = new ResultsTree(reader([]));
    tree.showLines({ pattern: "hashtable", mode: "exact", caseSensitive: true }, ROOT, linesResult());
    const [file] = await tree.children();
    const [m1] = (await tree.children(file)) as MatchNode[];
    const plan = tree.verification();
    assert.ok(plan);
    const verdicts = marksOf([m1.id], { snapshot_revision: "r", total: 1, results: [{ status: "moved", path: "other.md", line: 2, text: m1.match.text }] });
    assert.ok(verdicts);
    tree.applyMarks(plan.generation, verdicts);
    assert.equal(tree.item(m1).description, "5:12 moved → other.md:2");
    const done = tree.reanchor(m1);
    assert.ok(done && done.node.kind === "match");
    assert.deepEqual([done.node.match.path, done.node.match.line, tree.item(done.node).description], ["other.md", 2, "other.md:2:12"]);
    assert.equal(tree.parent(done.node), file);
    assert.deepEqual(((await tree.children(file)) as MatchNode[])[0], done.node);
  });
});
