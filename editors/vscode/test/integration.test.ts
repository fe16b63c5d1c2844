/**
 * End-to-end: spawns the real `citeline lsp`, speaks LSP to it with
 * vscode-languageserver-protocol (the library under vscode-languageclient), and
 * runs the extension's own request builders and result mapping on real answers.
 *
 * Skips (with a message) when `citeline` is not on PATH or does not start,
 * unless CITELINE_REQUIRE_EDITORS=1, in which case that is a failure.
 * CITELINE_COMMAND overrides the executable (default "citeline").
 */

import assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";

import {
  DidChangeConfigurationNotification,
  DidCloseTextDocumentNotification,
  DidOpenTextDocumentNotification,
  ShowMessageNotification,
  ExecuteCommandRequest,
  ExitNotification,
  InitializeRequest,
  InitializedNotification,
  ProtocolConnection,
  ResponseError,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";

import { describeError, rejectsLabels } from "../src/errors";
import {
  LinesResult,
  SearchResult,
  buildLinesRequest,
  buildSearchRequest,
  hitLabels,
  hitToItemFields,
  lineMatchToItemFields,
} from "../src/mapping";
import { codePointColumnToUtf16 } from "../src/offsets";
import { hitDocumentSpans, matchDocumentRange, matcher } from "../src/results";
import type { HitNode, MatchNode, SnippetLineNode } from "../src/results";
import { ResultsTree } from "../src/resultsTree";
import { readSettings } from "../src/settings";
import type { VerifyResult } from "../src/verify";
import { marksOf } from "../src/verify";

const REQUIRE = process.env.CITELINE_REQUIRE_EDITORS === "1";
const COMMAND = process.env.CITELINE_COMMAND ?? "citeline";
const START_TIMEOUT_MS = 30_000;

const FILES: Record<string, string> = {
  "guide.md": [
    "# Ordered hashtable",
    "",
    "An ordered hashtable keeps insertion order.",
    "",
    "## Eviction",
    "",
    "Least recently used entries leave first.",
    "",
  ].join("\n"),
  "docs/网关.md": ["# 网关配置", "", "配置 apisix 网关 的路由 🚀 然后 重启 网关。", ""].join("\n"),
  "setext.md": ["Preamble text.", "", "Gateway", "routing rules", "=============", "", "The café gateway routes 🚀 requests.", ""].join("\n"),
};

let dir = "";
let rootUri = "";
let proc: ChildProcess | undefined;
let conn: ProtocolConnection | undefined;
let skipReason: string | undefined;
const stderr: string[] = [];
const shown: string[] = []; // window/showMessage texts

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what}: no answer after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

async function start(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), "citeline-vscode-it-"));
  for (const [rel, text] of Object.entries(FILES)) {
    const path = join(dir, ...rel.split("/"));
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, text, "utf8");
  }
  rootUri = pathToFileURL(dir).href;

  const child = spawn(COMMAND, ["lsp"], { cwd: dir, stdio: ["pipe", "pipe", "pipe"] });
  proc = child;
  child.stderr?.on("data", (d: Buffer) => stderr.push(d.toString("utf8")));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once("spawn", () => resolve());
    child.once("error", (e) => reject(e));
  });
  await spawned;
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code, signal) => reject(new Error(`citeline lsp exited (${code ?? signal}) ${stderr.join("").slice(-500)}`))),
  );
  exited.catch(() => undefined);

  const c = createProtocolConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  c.onNotification(ShowMessageNotification.method, (p: { message: string }) => {
    shown.push(p.message);
  });
  c.listen();
  conn = c;
  const settings = readSettings(() => undefined).server; // the extension's defaults
  const init = c.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri,
    workspaceFolders: [{ uri: rootUri, name: "fixture" }],
    capabilities: { workspace: { configuration: false, workspaceFolders: true } },
    initializationOptions: settings,
  });
  const result = await withTimeout(Promise.race([init, exited]), START_TIMEOUT_MS, "initialize");
  const commands = result.capabilities.executeCommandProvider?.commands ?? [];
  assert.ok(commands.includes("citeline.search"), `executeCommandProvider lacks citeline.search: ${JSON.stringify(commands)}`);
  await c.sendNotification(InitializedNotification.type, {});
}

async function command<T>(name: string, arg: object): Promise<T> {
  return (await withTimeout(
    conn!.sendRequest(ExecuteCommandRequest.type, { command: name, arguments: [arg] }),
    20_000,
    name,
  )) as T;
}

describe("integration with the real citeline lsp", () => {
  before(async () => {
    try {
      await start();
    } catch (error) {
      const why = `citeline language server unavailable (${COMMAND} lsp): ${(error as Error).message}`;
      if (REQUIRE) throw new Error(`${why} — CITELINE_REQUIRE_EDITORS=1 demands it`);
      skipReason = why;
      console.log(`# SKIP integration: ${why}`);
    }
  });

  after(async () => {
    if (conn !== undefined) {
      try {
        await withTimeout(conn.sendRequest(ShutdownRequest.type), 5000, "shutdown");
        await conn.sendNotification(ExitNotification.type);
      } catch {
        // killed below
      }
      conn.dispose();
    }
    if (proc !== undefined && proc.exitCode === null) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          proc?.kill("SIGKILL");
          resolve();
        }, 3000);
        proc!.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
        proc!.kill("SIGTERM");
      });
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("citeline.search returns the section, and its spans map onto the heading and snippet", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const req = buildSearchRequest("ordered hashtable", { limit: 5, profile: "recall", root: rootUri });
    const result = await command<SearchResult>("citeline.search", req);
    assert.ok(result.hits.length >= 1, JSON.stringify(result));
    const hit = result.hits[0];
    assert.equal(hit.path, "guide.md");
    assert.equal(hit.heading, "Ordered hashtable");
    assert.equal(hit.line_start, 1);
    const f = hitToItemFields(hit);
    assert.equal(f.label, "Ordered hashtable");
    assert.match(f.description, /^guide\.md:1-\d+$/);
    const words = f.snippetHighlights.map((s) => hit.snippet.slice(s.start, s.end).toLowerCase());
    assert.ok(words.includes("ordered") && words.includes("hashtable"), JSON.stringify(words));
    assert.deepEqual(
      f.labelHighlights.map((s) => f.label.slice(s.start, s.end)),
      ["Ordered", "hashtable"],
    );
    assert.deepEqual(f.target.startLine, 0);
  });

  test("CJK and emoji: UTF-8 byte spans from the server land on the right characters", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const result = await command<SearchResult>(
      "citeline.search",
      buildSearchRequest("网关", { limit: 5, profile: "recall", root: rootUri }),
    );
    const hit = result.hits.find((h) => h.path === "docs/网关.md");
    assert.ok(hit, JSON.stringify(result));
    const f = hitToItemFields(hit);
    const marked = f.snippetHighlights.map((s) => hit.snippet.slice(s.start, s.end));
    assert.ok(marked.length >= 1, JSON.stringify(hit));
    for (const m of marked) assert.match(m, /网关/);
    for (const s of f.detailHighlights) assert.match(f.detail.slice(s.start, s.end), /网关/);
  });

  test("citeline.lines: exact match, mapped to path:line:column and a UTF-16 position", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const result = await command<LinesResult>(
      "citeline.lines",
      buildLinesRequest("路由 🚀", { mode: "exact", caseSensitive: true, limit: 10, context: 0, root: rootUri }),
    );
    assert.equal(result.matches.length, 1, JSON.stringify(result));
    const f = lineMatchToItemFields(result.matches[0]);
    assert.equal(f.label, "docs/网关.md:3:15");
    const line = FILES["docs/网关.md"].split("\n")[2];
    assert.equal(line.slice(codePointColumnToUtf16(line, f.target.codePointColumn)).startsWith("路由 🚀"), true);
  });

  test("results view: real hits become tree nodes whose spans land on the words in the files", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const read = async (_root: string, path: string) => readFileSync(join(dir, ...path.split("/")), "utf8");
    const tree = new ResultsTree(read);
    const result = await command<SearchResult>("citeline.search", buildSearchRequest("gateway routing", { limit: 5, profile: "contract", root: rootUri }));
    tree.showSearch("gateway routing", rootUri, result, "contract");
    assert.match(tree.message ?? "", /ranked by the contract profile$/);
    const hits = (await tree.children()) as HitNode[];
    assert.deepEqual(
      hits.map((h) => [h.hit.path, tree.item(h).label.label, tree.item(h).description]),
      [["setext.md", "setext.md:3-7 — Gateway routing rules", undefined]],
    );
    // The Setext heading over two lines is one label line, both words highlighted.
    const label = tree.item(hits[0]).label;
    assert.deepEqual(
      label.highlights.map(([a, b]) => label.label.slice(a, b)),
      ["Gateway", "routing"],
    );
    const lines = (await tree.children(hits[0])) as SnippetLineNode[];
    assert.deepEqual(
      lines.map((l) => [tree.item(l).description, l.label.label]),
      [
        ["L3", "Gateway"],
        ["L4", "routing rules"],
        ["L7", "The café gateway routes 🚀 requests."],
      ],
    );
    const text = FILES["setext.md"];
    const words = hitDocumentSpans(text, hits[0]).map((s) => text.slice(s.start, s.end).toLowerCase());
    assert.deepEqual(words, ["gateway", "routing", "gateway"]);
  });

  test("results view: real line matches, highlighted in the label and found in the file", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const tree = new ResultsTree(async () => undefined);
    const query = { pattern: "网关", mode: "exact" as const, caseSensitive: true };
    const result = await command<LinesResult>("citeline.lines", buildLinesRequest(query.pattern, { mode: "exact", caseSensitive: true, context: 0, root: rootUri }));
    tree.showLines(query, rootUri, result);
    const [file] = await tree.children();
    assert.equal(tree.item(file).label.label, "docs/网关.md");
    const matches = (await tree.children(file)) as MatchNode[];
    assert.deepEqual(
      matches.map((m) => [tree.item(m).description, m.label.highlights.map(([a, b]) => m.label.label.slice(a, b))]),
      [
        ["1:3", ["网关"]],
        ["3:11", ["网关"]],
      ],
    );
    const text = FILES["docs/网关.md"];
    for (const m of matches) {
      const r = matchDocumentRange(text, m.match, matcher(query));
      assert.ok(r);
      assert.equal(text.slice(r.start, r.end), "网关");
    }
  });

  test("an invalid regex comes back as a readable schema_validation error", async (t) => {
    if (skipReason) return t.skip(skipReason);
    await assert.rejects(
      command("citeline.lines", buildLinesRequest("(unclosed", { mode: "regex", root: rootUri })),
      (error: unknown) => {
        assert.ok(error instanceof ResponseError);
        assert.equal(error.code, -32602);
        const d = describeError(error);
        assert.equal(d.code, "schema_validation");
        assert.match(d.message, /^citeline: invalid request: /);
        assert.ok(!d.message.includes("\n"));
        return true;
      },
    );
  });

  test("citeline.unsaved: a word typed but not saved is found, and its hit is marked", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const on = readSettings((key) => (key === "unsaved" ? true : undefined)).server;
    assert.equal(on.unsaved, true);
    const before = shown.length;
    await conn!.sendNotification(DidChangeConfigurationNotification.type, { settings: { citeline: on } });
    const uri = pathToFileURL(join(dir, "guide.md")).href;
    const edited = `${FILES["guide.md"]}\nThe zebrafish entry is new.\n`;
    await conn!.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: "markdown", version: 2, text: edited },
    });
    try {
      const result = await command<SearchResult>("citeline.search", buildSearchRequest("zebrafish", { profile: "contract", root: rootUri }));
      if (shown.slice(before).some((m) => m.includes("unknown key(s) unsaved"))) {
        return t.skip("this server does not accept the `unsaved` setting yet (SPEC §11)");
      }
      assert.equal(result.hits.length, 1, JSON.stringify(result));
      const hit = result.hits[0];
      assert.equal(hit.unsaved, true);
      assert.equal(hitToItemFields(hit).description, `[unsaved] guide.md:${hit.line_start}-${hit.line_end}`);
      const tree = new ResultsTree(async () => edited);
      tree.showSearch("zebrafish", rootUri, result);
      const [node] = (await tree.children()) as HitNode[];
      assert.equal(tree.item(node).description, "[unsaved]");
      assert.match(tree.item(node).label.label, /^guide\.md:\d+-\d+ — /);
      const words = hitDocumentSpans(edited, node).map((s) => edited.slice(s.start, s.end));
      assert.deepEqual(words, ["zebrafish"]);
    } finally {
      await conn!.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
      await conn!.sendNotification(DidChangeConfigurationNotification.type, { settings: { citeline: readSettings(() => undefined).server } });
    }
    // Off again (the key left out): the disk's text, where the word is not.
    const off = await command<SearchResult>("citeline.search", buildSearchRequest("zebrafish", { profile: "contract", root: rootUri }));
    assert.equal(off.hits.length, 0);
  });

  test("results view: real edits after a search mark the hits through citeline.verify, and re-anchor follows the text", async (t) => {
    if (skipReason) return t.skip(skipReason);
    mkdirSync(join(dir, "kinkajou"), { recursive: true });
    const write = (rel: string, text: string) => writeFileSync(join(dir, ...rel.split("/")), text, "utf8");
    const read = async (_root: string, path: string) => readFileSync(join(dir, ...path.split("/")), "utf8");
    write("kinkajou/a.md", "# Kinkajou care\n\nA kinkajou sleeps by day.\n\n## Feeding\n\nThe kinkajou eats fruit and nectar.\n\n## Gone\n\nkinkajou trivia to delete\n");
    write("kinkajou/b.md", "# Kinkajou range\n\nThe kinkajou lives in forests.\n");
    const tree = new ResultsTree(read);
    const search = await command<SearchResult>("citeline.search", buildSearchRequest("kinkajou", { limit: 20, profile: "recall", root: rootUri }));
    tree.showSearch("kinkajou", rootUri, search);
    const where = () => (tree.state.kind === "search" ? tree.state.nodes : []).map((n) => `${n.hit.path}:${n.hit.line_start}-${n.hit.line_end}`);
    assert.deepEqual(where().sort(), ["kinkajou/a.md:1-4", "kinkajou/a.md:5-8", "kinkajou/a.md:9-11", "kinkajou/b.md:1-3"]);
    const check = async () => {
      const plan = tree.verification();
      assert.ok(plan);
      assert.equal(plan.groups.length, 1);
      const answer = await command<VerifyResult>("citeline.verify", plan.groups[0].request);
      const marks = marksOf(plan.groups[0].ids, answer);
      assert.ok(marks, JSON.stringify(answer));
      assert.equal(tree.applyMarks(plan.generation, marks), true);
    };
    await check();
    assert.equal(tree.markCount, 0); // nothing changed yet: every hit valid

    // Lines inserted above (moved), a word changed inside a section (changed), a section
    // deleted (missing), and a file renamed (moved across files).
    write("kinkajou/a.md", "# Kinkajou care\n\nA kinkajou sleeps by day.\nIt wakes at dusk.\n\n## Feeding\n\nThe kinkajou eats fruit and honey.\n");
    renameSync(join(dir, "kinkajou", "b.md"), join(dir, "kinkajou", "range.md"));
    await check();
    const nodes = (await tree.children()) as HitNode[];
    const byPlace = new Map(nodes.map((n) => [`${n.hit.path}:${n.hit.line_start}-${n.hit.line_end}`, tree.item(n).description]));
    assert.equal(byPlace.get("kinkajou/a.md:1-4"), "changed → kinkajou/a.md:1-5 (100% kept)"); // its snippet's words all kept
    assert.match(byPlace.get("kinkajou/a.md:5-8") ?? "", /^changed → kinkajou\/a\.md:6-8 \(\d\d% kept\)$/);
    assert.equal(byPlace.get("kinkajou/a.md:9-11"), "missing");
    assert.equal(byPlace.get("kinkajou/b.md:1-3"), "moved → kinkajou/range.md:1-3");
    assert.equal(tree.markCount, 4);

    // Re-anchor every row that has somewhere to go; then a check finds them all valid.
    for (const n of nodes) tree.reanchor(n);
    assert.deepEqual(where().sort(), ["kinkajou/a.md:1-5", "kinkajou/a.md:6-8", "kinkajou/a.md:9-11", "kinkajou/range.md:1-3"]);
    await check();
    const left = ((await tree.children()) as HitNode[]).filter((n) => tree.mark(n) !== undefined).map((n) => tree.item(n).description);
    assert.deepEqual(left, ["missing"]);
  });

  test("labels: the text before a file's first heading is named by the file's title, as the extension asks (issue 51)", async (t) => {
    if (skipReason) return t.skip(skipReason);
    mkdirSync(join(dir, "quetzal"), { recursive: true });
    writeFileSync(join(dir, "quetzal", "titled.md"), "---\ntitle: Quetzal field guide\n---\nA quetzal preamble.\n\n## Plumage\n\nquetzal feathers\n", "utf8");
    writeFileSync(join(dir, "quetzal", "h1.md"), "Quetzal notes first.\n\n# Quetzal diary\n\nmore\n", "utf8");
    writeFileSync(join(dir, "quetzal", "bare.md"), "Only a quetzal line.\n", "utf8");
    const request = buildSearchRequest("quetzal", { limit: 20, profile: "recall", root: rootUri, labels: true });
    const result = await command<SearchResult>("citeline.search", request);
    assert.equal(result["x-labels"]?.length, result.hits.length);
    const tree = new ResultsTree(async () => undefined);
    tree.showSearch("quetzal", rootUri, result);
    const rows = ((await tree.children()) as HitNode[]).map((n) => tree.item(n).label.label).sort();
    assert.deepEqual(rows, [
      "quetzal/bare.md:1-1",
      "quetzal/h1.md:1-2 — Quetzal diary",
      "quetzal/h1.md:3-5 — Quetzal diary",
      "quetzal/titled.md:4-5 — Quetzal field guide", // after the front matter
      "quetzal/titled.md:6-8 — Plumage",
    ]);
    // The Quick Pick's label for the same hits.
    // What a server that does not know `labels` answers (its engine's unknown-field error,
    // here from citeline.concepts, whose requests the server passes on with the key): the
    // extension recognises it and searches again without the key.
    await assert.rejects(command("citeline.concepts", { query: "quetzal", labels: true, root: rootUri }), (error: unknown) => rejectsLabels(error));
    await assert.rejects(command("citeline.concepts", { query: "quetzal", bogus: true, root: rootUri }), (error: unknown) => !rejectsLabels(error));
    const names = hitLabels(result);
    const picks = result.hits.map((h, i) => hitToItemFields(h, { name: names[i] }).label).sort();
    assert.deepEqual(picks, ["Plumage", "Quetzal diary", "Quetzal diary", "Quetzal field guide", "quetzal/bare.md"]);
  });

  test("settings changes reach the server (didChangeConfiguration, section citeline)", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const strict = readSettings((key) => (key === "limits.max_files" ? 1 : undefined)).server;
    await conn!.sendNotification(DidChangeConfigurationNotification.type, { settings: { citeline: strict } });
    await assert.rejects(command("citeline.search", buildSearchRequest("hashtable", { root: rootUri })), (error: unknown) => {
      const d = describeError(error);
      assert.equal(d.code, "resource_limit");
      assert.match(d.message, /limits\.max_files|max_files/);
      return true;
    });
    const relaxed = readSettings(() => undefined).server;
    await conn!.sendNotification(DidChangeConfigurationNotification.type, { settings: { citeline: relaxed } });
    const ok = await command<SearchResult>("citeline.search", buildSearchRequest("hashtable", { root: rootUri }));
    assert.ok(ok.total >= 1);
  });
});
