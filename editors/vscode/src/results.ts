/**
 * The Citeline results view without VS Code: search and line-search results
 * (SPEC §6, §8) → tree nodes with highlighted labels, and where a hit's snippet
 * and spans, or a match, lie in a document's text.
 *
 * Offsets: the server gives match_spans as UTF-8 byte offsets into the snippet
 * (§7) and line-match columns in code points (§8); tree labels
 * (TreeItemLabel.highlights) and documents count UTF-16 units. Lines are the
 * server's: only LF ends one (§3), so a lone CR is text inside a line here,
 * whatever the editor makes of it; document offsets are UTF-16 offsets into the
 * whole text, which the extension turns into positions with
 * TextDocument.positionAt.
 *
 * This module must not import `vscode`: it is unit-tested under plain node.
 */

import {
  LineMatch,
  LinesMode,
  LinesResult,
  SearchHit,
  SearchResult,
  escapeRegExp,
  flattenWithSpans,
  hitLabels,
  hitToItemFields,
  isUnsaved,
  linesSummary,
  oneLine,
  searchSummary,
  UNSAVED_MARK,
} from "./mapping";
import { OffsetMap, Span, normalizeSpans } from "./offsets";

/** TreeItemLabel.highlights: [start, end) pairs in UTF-16 units of the label. */
export type Highlight = [number, number];

export interface NodeLabel {
  label: string;
  highlights: Highlight[];
}

/** Longest label of a snippet line or a line match, in UTF-16 units. */
export const LINE_LABEL_UNITS = 240;

const toHighlights = (spans: readonly Span[]): Highlight[] => spans.map((s) => [s.start, s.end]);

/** Between a hit row's `path:lines` and its heading. */
export const HIT_LABEL_SEPARATOR = " — ";

// -------------------------------------------------------------- section hits

/** A line of a hit's snippet that holds matched spans (a child of the hit). */
export interface SnippetLineNode {
  kind: "snippetLine";
  id: string;
  /** The hit's node id. */
  parentId: string;
  /** 0-based index of the line in the snippet (lines end at LF only). */
  index: number;
  /** The line's UTF-16 range [from, to) in the snippet (without LF or a CR before it). */
  from: number;
  to: number;
  label: NodeLabel;
  /** 1-based document line, once the file was read (see snippetLineNumbers). */
  line?: number;
}

export interface HitNode {
  kind: "hit";
  id: string;
  /** 1-based rank in the server's order. */
  rank: number;
  hit: SearchHit;
  /**
   * `path:start-end — heading`, the heading's matched words highlighted; for the text before
   * a file's first heading `path:start-end — title` (the server's `x-labels`), or
   * `path:start-end` alone when the file has no title.
   */
  label: NodeLabel;
  /** The server's name for the hit (`x-labels`), when it gave one. */
  name?: string;
  /** `[unsaved]` for a hit from unsaved editor text, else empty. */
  description: string;
  tooltip: string;
  unsaved: boolean;
  /** match_spans as UTF-16 ranges of the snippet. */
  spans: Span[];
  /** The snippet's lines that hold spans, in order; empty when none does. */
  lines: SnippetLineNode[];
}

/**
 * The snippet's lines that hold matched spans, each a label with its own
 * highlights (the spans cut to the line, relative to the label).
 */
export function snippetLines(snippet: string, spans: readonly Span[], parentId: string): SnippetLineNode[] {
  const out: SnippetLineNode[] = [];
  let from = 0;
  for (let index = 0; from <= snippet.length; index++) {
    const lf = snippet.indexOf("\n", from);
    const end = lf < 0 ? snippet.length : lf;
    const to = end > from && snippet[end - 1] === "\r" && lf >= 0 ? end - 1 : end;
    const mine = spans.filter((s) => s.start < to && s.end > from);
    if (mine.length > 0) {
      const flat = flattenWithSpans(snippet, mine, { from, to, maxUnits: LINE_LABEL_UNITS });
      out.push({
        kind: "snippetLine",
        id: `${parentId}/l${index}`,
        parentId,
        index,
        from,
        to,
        label: { label: flat.text, highlights: toHighlights(flat.highlights) },
      });
    }
    if (lf < 0) break;
    from = lf + 1;
  }
  return out;
}

/** One node per hit, in the server's order. `prefix` makes ids unique per query. */
export function searchNodes(result: SearchResult, prefix: string): HitNode[] {
  const hits = Array.isArray(result?.hits) ? result.hits : [];
  const names = hitLabels(result);
  return hits.map((hit, i) => hitNode(hit, i + 1, `${prefix}/h${i + 1}`, names[i]));
}

/**
 * One hit's node (also a hit re-anchored to where its text is now, under the same id);
 * `name`: the server's name for it (`x-labels`).
 */
export function hitNode(hit: SearchHit, rank: number, id: string, name?: string): HitNode {
  const f = hitToItemFields(hit, { name });
  const snippet = typeof hit.snippet === "string" ? hit.snippet : "";
  const terms = Array.isArray(hit.matched_terms) ? hit.matched_terms.join(", ") : "";
  const tooltip = [
    `${f.label}`,
    `${hit.path}, lines ${hit.line_start}–${hit.line_end}`,
    typeof hit.score === "number" ? `score ${hit.score}${terms ? ` · matched: ${terms}` : ""}` : "",
    f.unsaved ? "from the editor's unsaved text" : "",
  ]
    .filter((line) => line.length > 0)
    .join("\n");
  // `path:lines` first: a sidebar cuts a row's end, and where the section is matters
  // as much as its heading (the tooltip has the whole row). A section without a heading
  // (text before the first one) is named by its file's title; without one it is its location
  // alone: its label would be the path again.
  const location = `${hit.path}:${hit.line_start}-${hit.line_end}`;
  const headed = (typeof hit.heading === "string" && hit.heading.trim().length > 0) || f.label !== hit.path;
  const where = headed ? location + HIT_LABEL_SEPARATOR : location;
  const shifted = headed ? f.labelHighlights.map((s) => ({ start: s.start + where.length, end: s.end + where.length })) : [];
  return {
    kind: "hit",
    id,
    rank,
    hit,
    ...(name !== undefined ? { name } : {}),
    label: { label: headed ? where + f.label : where, highlights: toHighlights(shifted) },
    description: f.unsaved ? UNSAVED_MARK : "",
    tooltip,
    unsaved: f.unsaved,
    spans: f.snippetHighlights,
    lines: snippetLines(snippet, f.snippetHighlights, id),
  };
}

/** The profile that ranked a result: the server's report, else what was asked. */
export function rankingProfile(result: SearchResult, requested?: string): string | undefined {
  const reported = result?.options?.profile;
  if (typeof reported === "string" && reported.length > 0) return reported;
  return requested;
}

/** The view's message for a search: the query, counts, profile and snapshot. */
export function searchMessage(query: string, result: SearchResult, requestedProfile?: string): string {
  const hits = Array.isArray(result?.hits) ? result.hits : [];
  const profile = rankingProfile(result, requestedProfile);
  const ranked = profile !== undefined ? ` · ranked by the ${profile} profile` : "";
  return `“${oneLine(query).text}”: ${searchSummary({ ...result, hits })}${ranked}`;
}

// ------------------------------------------------------------- line matches

export interface LinesQuery {
  pattern: string;
  mode: LinesMode;
  caseSensitive: boolean;
}

export interface MatchNode {
  kind: "match";
  id: string;
  parentId: string;
  match: LineMatch;
  label: NodeLabel;
  /** `line:column` (after `[unsaved]` for a match in unsaved text). */
  description: string;
  tooltip: string;
  unsaved: boolean;
}

/** A file of a line search, holding its matches (server order is path, then line). */
export interface FileNode {
  kind: "file";
  id: string;
  path: string;
  label: NodeLabel;
  description: string;
  matches: MatchNode[];
}

/**
 * A JavaScript RegExp (sticky) for what the server matched: the escaped text in
 * exact mode, the pattern in regex mode. RE2 and JavaScript agree on the common
 * syntax; `(?P<name>` and a leading `(?i)` are translated; a pattern JavaScript
 * cannot compile gives undefined (the match then has no highlight). Case-insensitive
 * matching is Unicode simple case folding in both.
 */
export function matcher(query: LinesQuery): RegExp | undefined {
  let source = query.mode === "regex" ? query.pattern : escapeRegExp(query.pattern);
  let flags = "y";
  if (!query.caseSensitive) flags += "i";
  if (query.mode === "regex") {
    source = source.replace(/\(\?P</g, "(?<");
    const inline = /^\(\?([imsU]+)\)/.exec(source);
    if (inline) {
      source = source.slice(inline[0].length);
      if (inline[1].includes("i") && !flags.includes("i")) flags += "i";
      if (inline[1].includes("s")) flags += "s";
    }
  }
  for (const extra of ["u", ""]) {
    try {
      return new RegExp(source, flags + extra);
    } catch {
      // try without the `u` flag (some escapes are only valid without it)
    }
  }
  return undefined;
}

/**
 * The UTF-16 range of the match that starts at `at` (or, with `at` undefined, the
 * first one at or after `searchFrom`) in `text`; undefined when there is none or
 * it is empty.
 */
export function findMatch(text: string, re: RegExp | undefined, at: number | undefined, searchFrom = 0): Span | undefined {
  if (re === undefined) return undefined;
  const tryAt = (i: number): Span | undefined => {
    re.lastIndex = i;
    const m = re.exec(text);
    return m !== null && m[0].length > 0 ? { start: i, end: i + m[0].length } : undefined;
  };
  if (at !== undefined) return tryAt(at);
  for (let i = searchFrom; i < text.length; i++) {
    const found = tryAt(i);
    if (found !== undefined) return found;
  }
  return undefined;
}

const MAX_LINE_POINTS = 256;

/**
 * Where the match of `m` starts in `m.text`, in UTF-16 units, or undefined when
 * the text's window cannot tell. A line of at most 256 code points comes whole; a
 * longer one comes as a window of 256 code points starting 128 before the match
 * (moved to stay inside the line), with "…" before and/or after (SPEC §8).
 */
export function matchOffsetInText(m: LineMatch): number | undefined {
  const text = typeof m.text === "string" ? m.text : "";
  const col0 = Number.isInteger(m.column) && m.column >= 1 ? m.column - 1 : 0;
  const map = new OffsetMap(text);
  const points = map.codePointLength;
  if (points <= MAX_LINE_POINTS) return col0 < points ? map.codePointToUtf16(col0) : undefined;
  if (points === MAX_LINE_POINTS + 2) return map.codePointToUtf16(1 + 128); // "…" + 128 before the match
  if (!text.startsWith("…")) return col0 < MAX_LINE_POINTS ? map.codePointToUtf16(col0) : undefined; // window at the line's start
  return undefined; // window moved left to the line's end: the start is unknown
}

/** The highlight of a line match's label, in UTF-16 units of `m.text`. */
export function matchHighlight(m: LineMatch, query: LinesQuery, re: RegExp | undefined = matcher(query)): Span | undefined {
  const text = typeof m.text === "string" ? m.text : "";
  const at = matchOffsetInText(m);
  // JavaScript and RE2 may disagree at the very spot: then the first match after it.
  return findMatch(text, re, at) ?? findMatch(text, re, undefined, at ?? (text.startsWith("…") ? 1 : 0));
}

/** Files with their matches, in the server's order. */
export function linesNodes(result: LinesResult, query: LinesQuery, prefix: string): FileNode[] {
  const matches = Array.isArray(result?.matches) ? result.matches : [];
  const re = matcher(query);
  const files: FileNode[] = [];
  for (const m of matches) {
    let file = files[files.length - 1];
    if (file === undefined || file.path !== m.path) {
      file = {
        kind: "file",
        id: `${prefix}/f${files.length + 1}`,
        path: m.path,
        label: { label: m.path, highlights: [] },
        description: "",
        matches: [],
      };
      files.push(file);
    }
    const raw = typeof m.text === "string" ? m.text : "";
    const hl = matchHighlight(m, query, re);
    // The label: the line on one line, leading blanks dropped, highlight carried over.
    const flat = flattenWithSpans(raw, hl ? [hl] : [], { maxUnits: LINE_LABEL_UNITS });
    const column = Number.isInteger(m.column) && m.column >= 1 ? m.column : 1;
    const unsaved = isUnsaved(m);
    const where = `${m.line}:${column}`;
    file.matches.push({
      kind: "match",
      id: `${file.id}/m${file.matches.length + 1}`,
      parentId: file.id,
      match: m,
      label: { label: flat.text, highlights: toHighlights(flat.highlights) },
      description: unsaved ? `${UNSAVED_MARK} ${where}` : where,
      tooltip: `${m.path}, line ${m.line}, column ${column}${unsaved ? "\nfrom the editor's unsaved text" : ""}`,
      unsaved,
    });
  }
  for (const f of files) {
    const n = f.matches.length;
    const unsaved = f.matches.some((x) => x.unsaved);
    f.description = `${n} ${n === 1 ? "match" : "matches"}${unsaved ? ` ${UNSAVED_MARK}` : ""}`;
  }
  return files;
}

/** The view's message for a line search. */
export function linesMessage(query: LinesQuery, result: LinesResult): string {
  const matches = Array.isArray(result?.matches) ? result.matches : [];
  const flags = `${query.mode}${query.caseSensitive ? "" : ", ignoring case"}`;
  return `“${oneLine(query.pattern).text}” (${flags}): ${linesSummary({ ...result, matches })}`;
}

// -------------------------------------------------------- document offsets

/** UTF-16 offset where 0-based line `line` starts (lines end at LF only); undefined past the end. */
export function lineStartOffset(text: string, line: number): number | undefined {
  if (line < 0) return undefined;
  let at = 0;
  for (let i = 0; i < line; i++) {
    const lf = text.indexOf("\n", at);
    if (lf < 0) return undefined;
    at = lf + 1;
  }
  return at;
}

/** [start, end) of 0-based line `line`, without its LF and a CR before it. */
export function lineRange(text: string, line: number): Span | undefined {
  const start = lineStartOffset(text, line);
  if (start === undefined) return undefined;
  const lf = text.indexOf("\n", start);
  let end = lf < 0 ? text.length : lf;
  if (lf >= 0 && end > start && text[end - 1] === "\r") end -= 1;
  return { start, end };
}

/** 1-based line (LF-only lines) of a UTF-16 offset. */
export function lineOfOffset(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) line += 1;
  return line;
}

/**
 * Where the hit's snippet starts in the document `text` (UTF-16 offset), looked for
 * inside the hit's section; undefined when the text no longer holds it there (the
 * file changed since the search, or the hit came from other text).
 */
export function locateSnippet(text: string, hit: Pick<SearchHit, "snippet" | "line_start" | "line_end">): number | undefined {
  const snippet = typeof hit.snippet === "string" ? hit.snippet : "";
  const first = lineStartOffset(text, Math.max(0, hit.line_start - 1));
  if (first === undefined) return undefined;
  const last = lineRange(text, Math.max(hit.line_start, hit.line_end) - 1);
  const end = last === undefined ? text.length : last.end;
  const at = text.indexOf(snippet, first);
  return at >= 0 && at + snippet.length <= end ? at : undefined;
}

/** The hit's spans as UTF-16 ranges of the document `text`; empty when the snippet is not found. */
export function hitDocumentSpans(text: string, node: Pick<HitNode, "hit" | "spans">): Span[] {
  const at = locateSnippet(text, node.hit);
  if (at === undefined) return [];
  return normalizeSpans(node.spans.map((s) => ({ start: at + s.start, end: at + s.end })));
}

/** The 1-based document line of each snippet line, by index; undefined when the snippet is not found. */
export function snippetLineNumbers(text: string, node: Pick<HitNode, "hit" | "lines">): Map<number, number> | undefined {
  const at = locateSnippet(text, node.hit);
  if (at === undefined) return undefined;
  const base = lineOfOffset(text, at);
  return new Map(node.lines.map((l) => [l.index, base + l.index]));
}

/** The match's range in the document `text` (UTF-16), or an empty range at its column. */
export function matchDocumentRange(text: string, m: LineMatch, re: RegExp | undefined): Span | undefined {
  const range = lineRange(text, Math.max(0, m.line - 1));
  if (range === undefined) return undefined;
  const line = text.slice(range.start, range.end);
  const col0 = Number.isInteger(m.column) && m.column >= 1 ? m.column - 1 : 0;
  const at = new OffsetMap(line).codePointToUtf16(col0);
  const found = findMatch(line, re, at);
  return found ? { start: range.start + found.start, end: range.start + found.end } : { start: range.start + at, end: range.start + at };
}

// --------------------------------------------------------- opening a result

/**
 * Where the editor's selection goes when a result opens, as UTF-16 offsets of the
 * document's text: the selection runs from `anchor` to `active` (the cursor, which the
 * status bar's "Ln, Col" reports), and `reveal` is the range to scroll into view.
 *
 * VS Code's showTextDocument takes its `selection` option as a Range, which has no
 * direction: a selection whose cursor sits at its start must be set on the editor
 * afterwards (TextEditor.selection), from these two offsets.
 */
export interface OpenTarget {
  anchor: number;
  active: number;
  reveal: Span;
}

/**
 * A section (0-based lines `first`..`last`, LF-only lines): selected whole, the cursor
 * at the start of its first line, the heading, so that the heading stays in view and
 * Escape leaves the cursor there. Lines past the end of the text fall back to its end.
 */
export function sectionTarget(text: string, first: number, last: number): OpenTarget {
  const start = lineStartOffset(text, Math.max(0, first)) ?? text.length;
  const end = lineRange(text, Math.max(first, last, 0))?.end ?? text.length;
  return { anchor: Math.max(start, end), active: start, reveal: { start, end: Math.max(start, end) } };
}

/**
 * A snippet line of a hit: the cursor on the line's first matched word, which is
 * selected (anchor at its end). The line is the UTF-16 range [from, to) of the snippet;
 * `spans` are the hit's spans in UTF-16 units of the snippet. Undefined when the text no
 * longer holds the snippet inside the section (the file changed since the search).
 */
export function snippetLineTarget(
  text: string,
  node: Pick<HitNode, "hit" | "spans">,
  line: { from: number; to: number },
): OpenTarget | undefined {
  const base = locateSnippet(text, node.hit);
  if (base === undefined) return undefined;
  const span = node.spans.find((s) => s.start < line.to && s.end > line.from);
  const start = base + (span ? Math.max(span.start, line.from) : line.from);
  const end = span ? base + Math.min(span.end, line.to) : start;
  return { anchor: end, active: start, reveal: { start, end } };
}

/**
 * A line match: the cursor at the match's column (where the server says it starts), the
 * matched text selected when the view could find its end. Undefined past the text's end.
 */
export function matchTarget(text: string, m: LineMatch, re: RegExp | undefined): OpenTarget | undefined {
  const r = matchDocumentRange(text, m, re);
  if (r === undefined) return undefined;
  return { anchor: r.end, active: r.start, reveal: { start: r.start, end: r.start } };
}

/** The cursor at one offset, nothing selected. */
export function caret(at: number): OpenTarget {
  return { anchor: at, active: at, reveal: { start: at, end: at } };
}

/**
 * The cursor at a column of 0-based line `line`: `column` gives its UTF-16 offset in the
 * line's text (clamped to the line); the text's end when the line is past it.
 */
export function columnTarget(text: string, line: number, column: (lineText: string) => number): OpenTarget {
  const range = lineRange(text, Math.max(0, line));
  if (range === undefined) return caret(text.length);
  return caret(range.start + Math.min(Math.max(0, column(text.slice(range.start, range.end))), range.end - range.start));
}
