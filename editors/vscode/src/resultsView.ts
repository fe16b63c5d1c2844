/**
 * The Citeline results view (a TreeView in its own view container, like the
 * Search view): the glue between ResultsTree (resultsTree.ts, tested without VS
 * Code) and VS Code's tree, editors and decorations.
 */

import * as vscode from "vscode";

import type { LinesResult, SearchResult } from "./mapping";
import { bundlePathSegments } from "./mapping";
import { Span } from "./offsets";
import { showTarget } from "./open";
import {
  HitNode,
  LinesQuery,
  MatchNode,
  OpenTarget,
  caret,
  hitDocumentSpans,
  matchDocumentRange,
  matchTarget,
  matcher,
  sectionTarget,
  snippetLineTarget,
} from "./results";
import { ResultNode, ResultsTree } from "./resultsTree";
import type { SemanticQuery, SemanticResult, WorkDoneValue } from "./semantic";
import { progressText, semanticTarget } from "./semantic";
import type { VerifyResult } from "./verify";
import { marksOf } from "./verify";

export const VIEW_ID = "citeline.results";

export interface ResultsViewDeps {
  /**
   * Runs a server command (citeline.search, citeline.lines). With `onProgress`, the request
   * carries a workDoneToken and the server's $/progress for it arrive there.
   */
  execute<T>(command: string, arg: object, signal?: AbortSignal, onProgress?: (value: WorkDoneValue) => void): Promise<T>;
  /** A failure as one line for the view, or undefined for a cancelled request. */
  describe(error: unknown): string | undefined;
  /**
   * Whether the running server offers a command (its executeCommandProvider); false skips
   * the checks of a server older than citeline.verify instead of failing on every save.
   */
  supports?(command: string): boolean;
}

type LastQuery =
  | { kind: "search"; query: string; folder: vscode.WorkspaceFolder; request: (query: string, root: string) => object; profile?: string }
  | { kind: "lines"; query: LinesQuery; folder: vscode.WorkspaceFolder; request: (query: LinesQuery, root: string) => object }
  | { kind: "semantic"; query: SemanticQuery; folder: vscode.WorkspaceFolder; request: (query: SemanticQuery, root: string) => object };

/** Editor decorations of the shown result, kept per document so that they come back when its editor does. */
interface Decorated {
  version: number;
  spans: Span[];
}

export class ResultsView implements vscode.Disposable {
  readonly tree: ResultsTree;
  private readonly emitter = new vscode.EventEmitter<ResultNode | undefined>();
  private readonly view: vscode.TreeView<ResultNode>;
  private readonly decoration: vscode.TextEditorDecorationType;
  private readonly decorated = new Map<string, Decorated>();
  private readonly disposables: vscode.Disposable[] = [];
  private last: LastQuery | undefined;
  private running: AbortController | undefined;
  private verifying: AbortController | undefined;
  private verifyTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly deps: ResultsViewDeps) {
    this.tree = new ResultsTree(
      (root, path) => readText(vscode.Uri.parse(root), path),
      () => this.onContentChanged(),
      () => this.onMarksChanged(),
    );
    const provider: vscode.TreeDataProvider<ResultNode> = {
      onDidChangeTreeData: this.emitter.event,
      getTreeItem: (node) => this.treeItem(node),
      getChildren: (node) => this.tree.children(node),
      getParent: (node) => this.tree.parent(node),
    };
    this.view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: provider, showCollapseAll: true });
    this.decoration = vscode.window.createTextEditorDecorationType({
      backgroundColor: new vscode.ThemeColor("editor.findMatchHighlightBackground"),
      borderColor: new vscode.ThemeColor("editor.findMatchHighlightBorder"),
      borderStyle: "solid",
      borderWidth: "1px",
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.findMatchForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Center,
    });
    this.disposables.push(
      this.view,
      this.emitter,
      this.decoration,
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        for (const editor of editors) this.redecorate(editor);
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        // The editor moves its decorations with the edit; our offsets are stale.
        if (e.contentChanges.length > 0) this.decorated.delete(e.document.uri.toString());
      }),
    );
  }

  dispose(): void {
    this.running?.abort();
    this.verifying?.abort();
    if (this.verifyTimer !== undefined) clearTimeout(this.verifyTimer);
    for (const d of this.disposables) d.dispose();
  }

  // ------------------------------------------------------------ queries

  /** Runs a section search and shows its hits (a new query replaces the view's content). */
  async search(query: string, folder: vscode.WorkspaceFolder, request: (query: string, root: string) => object, profile?: string): Promise<void> {
    this.last = { kind: "search", query, folder, request, profile };
    const root = folder.uri.toString();
    await this.run("citeline search", async (signal) => {
      const result = await this.deps.execute<SearchResult>("citeline.search", request(query, root), signal);
      return () => this.tree.showSearch(query, root, result, profile);
    });
  }

  /** Runs a line search and shows its matches, grouped by file. */
  async lines(query: LinesQuery, folder: vscode.WorkspaceFolder, request: (query: LinesQuery, root: string) => object): Promise<void> {
    this.last = { kind: "lines", query, folder, request };
    const root = folder.uri.toString();
    await this.run("citeline lines", async (signal) => {
      const result = await this.deps.execute<LinesResult>("citeline.lines", request(query, root), signal);
      return () => this.tree.showLines(query, root, result);
    });
  }

  /**
   * Runs a search by meaning (citeline.lines, mode semantic) and shows its sections. The
   * first one on an empty cache embeds the candidate sections (seconds): the server's
   * progress for it is shown in the status bar.
   */
  async semantic(query: SemanticQuery, folder: vscode.WorkspaceFolder, request: (query: SemanticQuery, root: string) => object): Promise<void> {
    this.last = { kind: "semantic", query, folder, request };
    const root = folder.uri.toString();
    const title = "citeline by meaning";
    await this.run(title, async (signal) =>
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title }, async (progress) => {
        const onProgress = (value: WorkDoneValue) => {
          const message = progressText(value);
          if (message !== undefined) progress?.report({ message });
        };
        const result = await this.deps.execute<SemanticResult>("citeline.lines", request(query, root), signal, onProgress);
        return () => this.tree.showSemantic(query, root, result);
      }),
    );
  }

  /** Runs the last query again (the files may have changed). */
  async refresh(): Promise<void> {
    const last = this.last;
    if (last?.kind === "search") await this.search(last.query, last.folder, last.request, last.profile);
    else if (last?.kind === "lines") await this.lines(last.query, last.folder, last.request);
    else if (last?.kind === "semantic") await this.semantic(last.query, last.folder, last.request);
  }

  clear(): void {
    this.running?.abort();
    this.verifying?.abort();
    this.last = undefined;
    this.tree.clear();
  }

  /** The last section query, to offer it again. */
  get lastSearch(): string | undefined {
    return this.last?.kind === "search" ? this.last.query : undefined;
  }

  get lastLines(): LinesQuery | undefined {
    return this.last?.kind === "lines" ? this.last.query : undefined;
  }

  get lastSemantic(): SemanticQuery | undefined {
    return this.last?.kind === "semantic" ? this.last.query : undefined;
  }

  async focus(): Promise<void> {
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  // ------------------------------------------------------------ checking

  /**
   * Checks the shown rows against the files soon: saving several documents at once (Save
   * All) or a burst of focus changes sends one check.
   */
  verifySoon(delayMs = 250): void {
    if (this.verifyTimer !== undefined) clearTimeout(this.verifyTimer);
    this.verifyTimer = setTimeout(() => {
      this.verifyTimer = undefined;
      void this.verify();
    }, delayMs);
  }

  /**
   * Sends the shown rows to `citeline.verify` (one request for a section search or a search
   * by meaning; one per 100 rows of a line search) and marks the rows that are no longer
   * where the search found them. A query running, or a newer one shown, drops the answer.
   * True when every answer was applied.
   */
  async verify(): Promise<boolean> {
    if (this.running !== undefined) return false; // its answer will be fresh
    if (this.deps.supports?.("citeline.verify") === false) return false;
    const plan = this.tree.verification();
    if (plan === undefined) return false;
    this.verifying?.abort();
    const controller = new AbortController();
    this.verifying = controller;
    try {
      for (const group of plan.groups) {
        const result = await this.deps.execute<VerifyResult>("citeline.verify", group.request, controller.signal);
        if (controller.signal.aborted) return false;
        const marks = marksOf(group.ids, result);
        if (marks === undefined || !this.tree.applyMarks(plan.generation, marks)) return false;
      }
      return true;
    } catch (error) {
      // The rows keep what they showed; the failure goes to the log (describe), not a toast.
      if (!controller.signal.aborted) this.deps.describe(error);
      return false;
    } finally {
      if (this.verifying === controller) this.verifying = undefined;
    }
  }

  /** Re-anchor: the row takes the place where its text is now, and that place opens. */
  async reanchor(node: ResultNode): Promise<void> {
    const done = this.tree.reanchor(node);
    if (done === undefined) {
      void vscode.window.showInformationMessage("citeline: this result has nowhere to re-anchor to (its text is valid, stale or missing).");
      return;
    }
    await this.open(done.node);
  }

  /** Runs one query; only the latest one shows its answer (or its error). */
  private async run(title: string, job: (signal: AbortSignal) => Promise<() => void>): Promise<void> {
    this.running?.abort();
    this.verifying?.abort();
    const controller = new AbortController();
    this.running = controller;
    await vscode.window.withProgress({ location: { viewId: VIEW_ID }, title }, async () => {
      try {
        const show = await job(controller.signal);
        if (!controller.signal.aborted) show();
      } catch (error) {
        if (controller.signal.aborted) return; // a newer query took over
        const message = this.deps.describe(error);
        if (message !== undefined) this.tree.showError(title, message);
      } finally {
        if (this.running === controller) this.running = undefined;
      }
    });
  }

  // ------------------------------------------------------------- the tree

  private onContentChanged(): void {
    this.clearDecorations();
    this.view.message = this.tree.message;
    this.view.description = this.tree.description;
    const n = this.tree.count;
    this.view.badge = n > 0 ? { value: n, tooltip: this.tree.message ?? `${n} results` } : undefined;
    this.emitter.fire(undefined);
  }

  private onMarksChanged(): void {
    this.view.message = this.tree.message;
    this.emitter.fire(undefined);
  }

  private treeItem(node: ResultNode): vscode.TreeItem {
    const d = this.tree.item(node);
    const state =
      d.collapsible === "expanded"
        ? vscode.TreeItemCollapsibleState.Expanded
        : d.collapsible === "collapsed"
          ? vscode.TreeItemCollapsibleState.Collapsed
          : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem({ label: d.label.label, highlights: d.label.highlights }, state);
    item.id = d.id;
    item.description = d.description;
    item.tooltip = d.tooltip;
    item.contextValue = d.contextValue;
    if (d.resource !== undefined) {
      try {
        item.resourceUri = vscode.Uri.joinPath(vscode.Uri.parse(d.resource.root), ...bundlePathSegments(d.resource.path));
      } catch {
        // a path that is not bundle-relative gets no file icon
      }
    }
    if (d.icon !== undefined) item.iconPath = new vscode.ThemeIcon(d.icon.id, new vscode.ThemeColor(d.icon.color));
    if (d.opens) item.command = { command: "citeline.ui.openResult", title: "Open", arguments: [node] };
    return item;
  }

  // ------------------------------------------------------------ opening

  /** Opens a hit, one of its snippet lines, or a line match: reveals it and decorates the matched text. */
  async open(node: ResultNode): Promise<void> {
    if (!this.tree.isCurrent(node) || node.kind === "file") return;
    const root = this.tree.root;
    if (root === undefined) return;
    const hit = node.kind === "snippetLine" ? (this.tree.parent(node) as HitNode | undefined) : node.kind === "hit" ? node : undefined;
    const path = node.kind === "match" || node.kind === "section" ? node.match.path : hit?.hit.path;
    if (path === undefined) return;
    let uri: vscode.Uri;
    let doc: vscode.TextDocument;
    try {
      uri = vscode.Uri.joinPath(vscode.Uri.parse(root), ...bundlePathSegments(path));
      doc = await vscode.workspace.openTextDocument(uri);
    } catch (error) {
      void vscode.window.showErrorMessage(`citeline: cannot open ${path}: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const text = doc.getText();
    let target: OpenTarget | undefined;
    if (node.kind === "match") {
      target = matchTarget(text, node.match, matcher(this.linesQuery()));
    } else if (node.kind === "section") {
      // The section's best line: the cursor at its start, the section revealed from its heading.
      target = semanticTarget(text, node.match);
    } else {
      const h = hit as HitNode;
      // The section's lines, counted as the server counts them (LF only).
      const section = sectionTarget(text, h.hit.line_start - 1, h.hit.line_end - 1);
      if (node.kind === "snippetLine") {
        // The line's first matched word, found through the snippet's place in the text;
        // the section's first line when the text no longer holds the snippet.
        target = snippetLineTarget(text, h, node) ?? caret(section.active);
      } else {
        target = section;
      }
    }
    target ??= caret(text.length);
    const editor = await showTarget(doc, target, {
      preview: true,
      reveal: node.kind === "hit" || node.kind === "section" ? vscode.TextEditorRevealType.AtTop : vscode.TextEditorRevealType.InCenterIfOutsideViewport,
    });
    this.decorate(editor, path, text);
  }

  private linesQuery(): LinesQuery {
    const c = this.tree.state;
    return c.kind === "lines" ? c.query : { pattern: "", mode: "exact", caseSensitive: true };
  }

  /** Decorates every hit (or match) of the shown result that lies in the editor's file. */
  private decorate(editor: vscode.TextEditor, path: string, text: string): void {
    const spans: Span[] = [];
    const re = this.tree.state.kind === "lines" ? matcher(this.linesQuery()) : undefined;
    for (const n of this.tree.inFile(path)) {
      if (n.kind === "hit") spans.push(...hitDocumentSpans(text, n));
      else {
        const r = matchDocumentRange(text, (n as MatchNode).match, re);
        if (r !== undefined && r.end > r.start) spans.push(r);
      }
    }
    const key = editor.document.uri.toString();
    this.decorated.set(key, { version: editor.document.version, spans });
    this.apply(editor, spans);
  }

  private redecorate(editor: vscode.TextEditor): void {
    const d = this.decorated.get(editor.document.uri.toString());
    if (d !== undefined && d.version === editor.document.version) this.apply(editor, d.spans);
  }

  private apply(editor: vscode.TextEditor, spans: Span[]): void {
    const doc = editor.document;
    editor.setDecorations(
      this.decoration,
      spans.map((s) => new vscode.Range(doc.positionAt(s.start), doc.positionAt(s.end))),
    );
  }

  private clearDecorations(): void {
    this.decorated.clear();
    for (const editor of vscode.window.visibleTextEditors) editor.setDecorations(this.decoration, []);
  }
}

/**
 * The text of a workspace file as the editor would show it: the open document's
 * (unsaved edits included), else the file's on disk (UTF-8, a BOM dropped).
 */
async function readText(root: vscode.Uri, path: string): Promise<string | undefined> {
  const uri = vscode.Uri.joinPath(root, ...bundlePathSegments(path));
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open !== undefined) return open.getText();
  const bytes = await vscode.workspace.fs.readFile(uri);
  return new TextDecoder("utf-8").decode(bytes);
}
