import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { LinesResult, SearchResult } from "../src/mapping";
import type { HitNode, MatchNode, SnippetLineNode } from "../src/results";
import { ResultsTree } from "../src/resultsTree";
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
