/**
 * The Citeline results view's tree provider, without VS Code: what the view
 * holds (the last query's result), its nodes, their parents and children, and a
 * plain description of each tree item. `resultsView.ts` turns these into
 * vscode.TreeItem objects; everything here is unit-tested under plain node.
 *
 * This module must not import `vscode`.
 */

import type { LinesResult, SearchResult } from "./mapping";
import { oneLine } from "./mapping";
import {
  FileNode,
  HitNode,
  hitNode,
  LinesQuery,
  MatchNode,
  NodeLabel,
  SnippetLineNode,
  linesMessage,
  linesNodes,
  rankingProfile,
  searchMessage,
  searchNodes,
  snippetLineNumbers,
} from "./results";
import type { SectionNode, SemanticQuery, SemanticResult } from "./semantic";
import { sectionNode, semanticMessage, semanticNodes } from "./semantic";
import type { Citation, Mark, Place } from "./verify";
import { hitCitation, lineCitation, reanchoredHit, reanchoredMatch, reanchoredSection, sectionCitation, verifyRequests } from "./verify";

export type ResultNode = HitNode | SnippetLineNode | FileNode | MatchNode | SectionNode;

/** What the view shows: nothing yet, a section search, a line search, a search by meaning, or an error. */
export type TreeContent =
  | { kind: "empty" }
  | { kind: "search"; query: string; root: string; profile?: string; result: SearchResult; nodes: HitNode[] }
  | { kind: "lines"; query: LinesQuery; root: string; result: LinesResult; nodes: FileNode[] }
  | { kind: "semantic"; query: SemanticQuery; root: string; result: SemanticResult; nodes: SectionNode[] }
  | { kind: "error"; title: string; message: string };

/** A tree item, described without VS Code types. */
export interface ItemDescription {
  id: string;
  label: NodeLabel;
  description?: string;
  tooltip?: string;
  collapsible: "none" | "collapsed" | "expanded";
  /**
   * `citeline.hit`, `citeline.snippetLine`, `citeline.file`, `citeline.match` or
   * `citeline.section`; a row whose text moved or changed since the search ends in
   * `.reanchor` (the Re-anchor action), one that is stale or missing in `.marked`.
   */
  contextValue: string;
  /** A verdict's icon (codicon id) and its theme colour id; undefined keeps the file's icon. */
  icon?: { id: string; color: string };
  /** The workspace file the node is about (its icon), as root URI + bundle-relative path. */
  resource?: { root: string; path: string };
  /** Whether selecting the item opens it in an editor. */
  opens: boolean;
}

/**
 * Reads a workspace file's current text: the open document's text when there is
 * one (what the editor shows), else the file's; undefined when it cannot be read.
 */
export type TextReader = (root: string, path: string) => Promise<string | undefined>;

/** What a check of the shown rows sends: the rows' citations, one request per 100 rows. */
export interface Verification {
  /** The content the rows belong to: an answer for an older content is dropped. */
  generation: number;
  groups: { ids: string[]; request: { citations: Citation[]; root?: string } }[];
}

export class ResultsTree {
  private generation = 0;
  private content: TreeContent = { kind: "empty" };
  private texts = new Map<string, Promise<string | undefined>>();
  private readonly byId = new Map<string, ResultNode>();
  /** The rows that are no longer `valid`, by id (citeline.verify's verdicts). */
  private readonly marks = new Map<string, Mark>();

  constructor(
    private readonly readText: TextReader,
    /** Called after the content changed (the view refreshes from the root). */
    private readonly changed: () => void = () => undefined,
    /** Called after rows were marked, unmarked or re-anchored (the same content, refreshed). */
    private readonly marked: () => void = () => undefined,
  ) {}

  get state(): TreeContent {
    return this.content;
  }

  /** Shows a section search's result: one node per hit in the server's order. */
  showSearch(query: string, root: string, result: SearchResult, requestedProfile?: string): void {
    const nodes = searchNodes(result, this.nextPrefix());
    this.set({ kind: "search", query, root, profile: rankingProfile(result, requestedProfile), result, nodes });
  }

  /** Shows a line search's result: files, each with its matches. */
  showLines(query: LinesQuery, root: string, result: LinesResult): void {
    const nodes = linesNodes(result, query, this.nextPrefix());
    this.set({ kind: "lines", query, root, result, nodes });
  }

  /** Shows a search by meaning: one node per section, in the server's order (by score). */
  showSemantic(query: SemanticQuery, root: string, result: SemanticResult): void {
    const nodes = semanticNodes(result, this.nextPrefix());
    this.set({ kind: "semantic", query, root, result, nodes });
  }

  showError(title: string, message: string): void {
    this.nextPrefix();
    this.set({ kind: "error", title, message });
  }

  clear(): void {
    this.nextPrefix();
    this.set({ kind: "empty" });
  }

  /** The line above the tree: what was asked, how many results, which profile ranked them (and how many changed since). */
  get message(): string | undefined {
    const base = this.baseMessage;
    const n = this.marks.size;
    if (base === undefined || n === 0) return base;
    return `${base} · ${n} no longer where ${n === 1 ? "it was" : "they were"} (hover for details)`;
  }

  private get baseMessage(): string | undefined {
    const c = this.content;
    switch (c.kind) {
      case "search": {
        const base = searchMessage(c.query, c.result, c.profile);
        return c.nodes.length === 0 ? `${base}. No section matches.` : base;
      }
      case "lines": {
        const base = linesMessage(c.query, c.result);
        return c.nodes.length === 0 ? `${base}. No line matches.` : base;
      }
      case "semantic": {
        const base = semanticMessage(c.query, c.result);
        return c.nodes.length === 0 ? `${base}. No section answers it above the threshold.` : base;
      }
      case "error":
        return `${c.title}: ${c.message}`;
      default:
        return undefined;
    }
  }

  /** Shown next to the view's title: the query. */
  get description(): string | undefined {
    const c = this.content;
    if (c.kind === "search") return oneLine(c.query).text;
    if (c.kind === "lines") return oneLine(c.query.pattern).text;
    if (c.kind === "semantic") return oneLine(c.query.query).text;
    return undefined;
  }

  /** Number of hits or matches shown (the view's badge). */
  get count(): number {
    const c = this.content;
    if (c.kind === "search") return c.nodes.length;
    if (c.kind === "lines") return c.nodes.reduce((n, f) => n + f.matches.length, 0);
    if (c.kind === "semantic") return c.nodes.length;
    return 0;
  }

  /** The workspace root URI of the shown result. */
  get root(): string | undefined {
    const c = this.content;
    return c.kind === "search" || c.kind === "lines" || c.kind === "semantic" ? c.root : undefined;
  }

  /**
   * Children in the server's order. A hit's children are its snippet lines that
   * hold matched spans; reading the file gives each its line number.
   */
  async children(node?: ResultNode): Promise<ResultNode[]> {
    const c = this.content;
    if (node === undefined) {
      if (c.kind === "search") return c.nodes;
      if (c.kind === "lines") return c.nodes;
      if (c.kind === "semantic") return c.nodes;
      return [];
    }
    if (!this.isCurrent(node)) return [];
    if (node.kind === "file") return node.matches;
    if (node.kind !== "hit" || node.lines.length === 0) return [];
    if (node.lines.every((l) => l.line === undefined) && c.kind === "search") {
      const text = await this.text(c.root, node.hit.path);
      const numbers = text === undefined ? undefined : snippetLineNumbers(text, node);
      for (const l of node.lines) l.line = numbers?.get(l.index);
    }
    return node.lines;
  }

  parent(node: ResultNode): ResultNode | undefined {
    if (node.kind === "snippetLine" || node.kind === "match") return this.byId.get(node.parentId);
    return undefined;
  }

  /** Whether the node belongs to what the view shows now (not to an older query). */
  isCurrent(node: ResultNode): boolean {
    return this.byId.get(node.id) === node;
  }

  /** The hits (or the matches) of the shown result in one file, for the editor's decorations (sections by meaning have none). */
  inFile(path: string): (HitNode | MatchNode)[] {
    const c = this.content;
    if (c.kind === "search") return c.nodes.filter((n) => n.hit.path === path);
    if (c.kind === "lines") return c.nodes.filter((f) => f.path === path).flatMap((f) => f.matches);
    return [];
  }

  /** The current text of a file of the shown result (read once per query). */
  text(root: string, path: string): Promise<string | undefined> {
    const key = `${root}\n${path}`;
    let found = this.texts.get(key);
    if (found === undefined) {
      found = this.readText(root, path).catch(() => undefined);
      this.texts.set(key, found);
    }
    return found;
  }

  /** The verdict on a row, when it is no longer `valid`. */
  mark(node: ResultNode): Mark | undefined {
    return this.isCurrent(node) ? this.marks.get(node.id) : undefined;
  }

  /** Number of marked rows. */
  get markCount(): number {
    return this.marks.size;
  }

  item(node: ResultNode): ItemDescription {
    const d = this.plainItem(node);
    const mark = this.marks.get(node.id);
    if (mark === undefined) return d;
    return {
      ...d,
      description: d.description ? `${d.description} ${mark.text}` : mark.text,
      tooltip: d.tooltip ? `${d.tooltip}\n${mark.tooltip}` : mark.tooltip,
      contextValue: `${d.contextValue}${mark.now !== undefined ? ".reanchor" : ".marked"}`,
      icon: { id: mark.icon, color: mark.color },
    };
  }

  /**
   * The shown rows as citations, to check against the files as they are now; undefined
   * when the view shows no rows.
   */
  verification(): Verification | undefined {
    const c = this.content;
    let rows: { id: string; citation: Citation | undefined }[] = [];
    if (c.kind === "search") rows = c.nodes.map((n) => ({ id: n.id, citation: hitCitation(n.hit) }));
    else if (c.kind === "semantic") rows = c.nodes.map((n) => ({ id: n.id, citation: sectionCitation(n.match) }));
    else if (c.kind === "lines") rows = c.nodes.flatMap((f) => f.matches.map((m) => ({ id: m.id, citation: lineCitation(m.match) })));
    const groups = verifyRequests(rows, this.root);
    return groups.length === 0 ? undefined : { generation: this.generation, groups };
  }

  /**
   * Applies verdicts (row id → mark, undefined for `valid`) of a check made for
   * `generation`; false, and nothing changes, when the view shows something else since.
   */
  applyMarks(generation: number, verdicts: ReadonlyMap<string, Mark | undefined>): boolean {
    if (generation !== this.generation) return false;
    let changed = false;
    for (const [id, mark] of verdicts) {
      if (!this.byId.has(id)) continue;
      const before = this.marks.get(id);
      if (mark === undefined) changed = this.marks.delete(id) || changed;
      else if (before?.text !== mark.text || before?.tooltip !== mark.tooltip) {
        this.marks.set(id, mark);
        changed = true;
      }
    }
    if (changed) {
      // The files changed: snippet line numbers are read again when next shown.
      this.texts = new Map();
      this.marked();
    }
    return true;
  }

  /**
   * Re-anchors a row whose text moved or changed: the row now names where the text is
   * (same id, mark lifted) and is returned, with that place, for the view to open;
   * undefined when the row has nowhere to go.
   */
  reanchor(node: ResultNode): { node: ResultNode; place: Place } | undefined {
    const c = this.content;
    const current = this.byId.get(node.id);
    const place = this.marks.get(node.id)?.now;
    if (current === undefined || place === undefined) return undefined;
    let fresh: ResultNode | undefined;
    if (current.kind === "hit" && c.kind === "search") {
      // A heading names the section wherever it went; the text before a first heading
      // keeps its file's title while it stays in that file.
      const headed = typeof place.heading === "string" && place.heading.trim().length > 0;
      const name = !headed && place.path === current.hit.path ? current.name : undefined;
      const made = hitNode(reanchoredHit(current.hit, place), current.rank, current.id, name);
      c.nodes[c.nodes.indexOf(current)] = made;
      for (const l of current.lines) this.byId.delete(l.id);
      for (const l of made.lines) this.byId.set(l.id, l);
      fresh = made;
    } else if (current.kind === "section" && c.kind === "semantic") {
      const made = sectionNode(reanchoredSection(current.match, place), current.rank, current.id, c.result?.model);
      c.nodes[c.nodes.indexOf(current)] = made;
      fresh = made;
    } else if (current.kind === "match" && c.kind === "lines") {
      const m = reanchoredMatch(current.match, place);
      const [file] = linesNodes({ ...c.result, total: 1, truncated: false, matches: [m] }, c.query, "reanchor");
      const one = file.matches[0];
      const description = m.path === current.match.path ? one.description : `${m.path}:${one.description}`;
      const made = { ...one, id: current.id, parentId: current.parentId, description };
      const parent = this.byId.get(current.parentId);
      if (parent?.kind === "file") parent.matches[parent.matches.indexOf(current)] = made;
      fresh = made;
    }
    if (fresh === undefined) return undefined;
    this.byId.set(fresh.id, fresh);
    this.marks.delete(fresh.id);
    this.texts = new Map();
    this.marked();
    return { node: fresh, place };
  }

  private plainItem(node: ResultNode): ItemDescription {
    const root = this.root ?? "";
    switch (node.kind) {
      case "hit":
        return {
          id: node.id,
          label: node.label,
          description: node.description || undefined,
          tooltip: node.tooltip,
          collapsible: node.lines.length > 0 ? "expanded" : "none",
          contextValue: "citeline.hit",
          resource: { root, path: node.hit.path },
          opens: true,
        };
      case "snippetLine":
        return {
          id: node.id,
          label: node.label,
          description: node.line !== undefined ? `L${node.line}` : undefined,
          collapsible: "none",
          contextValue: "citeline.snippetLine",
          opens: true,
        };
      case "file":
        return {
          id: node.id,
          label: node.label,
          description: node.description,
          tooltip: node.path,
          collapsible: "expanded",
          contextValue: "citeline.file",
          resource: { root, path: node.path },
          opens: false,
        };
      case "match":
        return {
          id: node.id,
          label: node.label,
          description: node.description,
          tooltip: node.tooltip,
          collapsible: "none",
          contextValue: "citeline.match",
          opens: true,
        };
      case "section":
        return {
          id: node.id,
          label: node.label,
          description: node.description,
          tooltip: node.tooltip,
          collapsible: "none",
          contextValue: "citeline.section",
          resource: { root, path: node.match.path },
          opens: true,
        };
    }
  }

  private nextPrefix(): string {
    this.generation += 1;
    return `q${this.generation}`;
  }

  private set(content: TreeContent): void {
    this.content = content;
    this.texts = new Map();
    this.byId.clear();
    this.marks.clear();
    if (content.kind === "search") {
      for (const h of content.nodes) {
        this.byId.set(h.id, h);
        for (const l of h.lines) this.byId.set(l.id, l);
      }
    } else if (content.kind === "lines") {
      for (const f of content.nodes) {
        this.byId.set(f.id, f);
        for (const m of f.matches) this.byId.set(m.id, m);
      }
    } else if (content.kind === "semantic") {
      for (const n of content.nodes) this.byId.set(n.id, n);
    }
    this.changed();
  }
}
