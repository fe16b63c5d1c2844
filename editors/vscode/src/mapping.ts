/**
 * Server results (SPEC §6, §8) → QuickPick item fields, and the requests the
 * pickers send. Pure functions: this module must not import `vscode`.
 */

import { OffsetMap, Span, byteSpansToUtf16, normalizeSpans } from "./offsets";

// ---------------------------------------------------------------- wire types

export interface SearchHit {
  concept_id: string;
  path: string;
  heading: string | null;
  locator: string;
  line_start: number;
  line_end: number;
  content_sha256: string;
  /** Of the section's text (SPEC §6): what `citeline.verify` checks a hit by. */
  section_sha256?: string;
  snippet: string;
  score: number;
  matched_terms: string[];
  match_spans: Span[];
  /** From an open document's unsaved text (server setting `unsaved`, SPEC §11). */
  unsaved?: boolean;
}

export interface SearchResult {
  query: string;
  terms: string[];
  snapshot_revision: string;
  total: number;
  truncated: boolean;
  hits: SearchHit[];
  options?: Record<string, unknown>;
  /**
   * With `labels: true` in the request: one name per hit, in order, as workspace/symbol
   * names the section (the heading on one line; for the text before a file's first
   * heading the file's title, else its path). The language server's extension (docs/lsp.md).
   */
  "x-labels"?: string[];
}

export interface LineMatch {
  path: string;
  line: number;
  column: number;
  text: string;
  context?: { before?: string[]; after?: string[] };
  unsaved?: boolean;
  /** Line matches may only carry extra fields as `x-…` keys (SPEC §8). */
  "x-unsaved"?: boolean;
}

export interface LinesResult {
  pattern: string;
  mode: string;
  snapshot_revision: string;
  total: number;
  truncated: boolean;
  matches: LineMatch[];
}

export type Profile = "recall" | "contract" | "hybrid";
export type LinesMode = "exact" | "regex";

export interface SearchRequest {
  query: string;
  limit?: number;
  profile?: Profile;
  root?: string;
  /** Ask for `x-labels` (the language server's own key, like `root`). */
  labels?: boolean;
}

export interface LinesRequest {
  pattern: string;
  mode: LinesMode;
  case_sensitive: boolean;
  limit?: number;
  context?: number;
  root?: string;
}

// ------------------------------------------------------------------ requests

export function buildSearchRequest(
  query: string,
  opts: { limit?: number; profile?: Profile; root?: string; labels?: boolean } = {},
): SearchRequest {
  const req: SearchRequest = { query };
  if (opts.limit !== undefined) req.limit = opts.limit;
  if (opts.profile !== undefined) req.profile = opts.profile;
  if (opts.root !== undefined) req.root = opts.root;
  if (opts.labels === true) req.labels = true;
  return req;
}

/** The same request without the `labels` key (for a server that does not know it). */
export function withoutLabels<T extends object>(request: T): T {
  if (!("labels" in request)) return request;
  const { labels: _dropped, ...rest } = request as T & { labels?: unknown };
  return rest as T;
}

/**
 * The server's name for each hit (`x-labels`, asked for with `labels: true`), by index;
 * undefined for a hit it does not name (an answer without labels, or a list that does not
 * match the hits), which is then named by its heading or path.
 */
export function hitLabels(result: SearchResult | undefined): (string | undefined)[] {
  const hits = Array.isArray(result?.hits) ? result.hits : [];
  const labels = result?.["x-labels"];
  if (!Array.isArray(labels) || labels.length !== hits.length) return hits.map(() => undefined);
  return labels.map((l) => (typeof l === "string" && l.trim().length > 0 ? l : undefined));
}

export function buildLinesRequest(
  pattern: string,
  opts: { mode?: LinesMode; caseSensitive?: boolean; limit?: number; context?: number; root?: string } = {},
): LinesRequest {
  const req: LinesRequest = {
    pattern,
    mode: opts.mode ?? "exact",
    case_sensitive: opts.caseSensitive ?? true,
  };
  if (opts.limit !== undefined) req.limit = opts.limit;
  if (opts.context !== undefined) req.context = opts.context;
  if (opts.root !== undefined) req.root = opts.root;
  return req;
}

/** Whether typed input is worth a server round-trip (blank input is not). */
export function isBlankQuery(text: string): boolean {
  return text.trim().length === 0;
}

// ------------------------------------------------------------- text helpers

/** Shown with a hit or match that comes from an open document's unsaved text. */
export const UNSAVED_MARK = "[unsaved]";

/** Whether a hit or line match comes from unsaved editor text (setting `unsaved`). */
export function isUnsaved(item: { unsaved?: unknown; "x-unsaved"?: unknown } | null | undefined): boolean {
  return item !== null && typeof item === "object" && (item.unsaved === true || item["x-unsaved"] === true);
}

/**
 * Text for a one-line display: each line break (CRLF, LF or a lone CR) becomes one
 * space. Headings may hold them (a Setext heading over two lines, SPEC §3), and so
 * may titles. UTF-16 `spans` over `text` are carried over (a CRLF shrinks to one unit).
 */
export function oneLine(text: string, spans: readonly Span[] = []): { text: string; spans: Span[] } {
  // pos[i] = output index of input index i (i in [0, text.length]).
  const pos: number[] = new Array(text.length + 1);
  let out = "";
  for (let i = 0; i < text.length; i++) {
    pos[i] = out.length;
    const ch = text[i];
    if (ch === "\r" && text[i + 1] === "\n") {
      pos[i + 1] = out.length;
      out += " ";
      i += 1;
    } else {
      out += ch === "\r" || ch === "\n" ? " " : ch;
    }
  }
  pos[text.length] = out.length;
  const mapped = spans
    .map((s) => ({ start: pos[Math.max(0, Math.min(s.start, text.length))], end: pos[Math.max(0, Math.min(s.end, text.length))] }))
    .filter((s) => s.end > s.start);
  return { text: out, spans: normalizeSpans(mapped) };
}

const ICON_SYNTAX = /\$\([a-z0-9-]+?(?:~[a-z0-9-]*?)?\)/gi;

/**
 * QuickPick labels, descriptions and details render `$(name)` as an icon.
 * Escapes every such sequence with a backslash (as VS Code's own escapeIcons
 * does) so the text shows verbatim, and shifts UTF-16 highlight spans to match.
 */
export function escapeIconsWithSpans(text: string, spans: readonly Span[]): { text: string; spans: Span[] } {
  const inserts: number[] = []; // source offsets where a backslash goes
  let escaped = "";
  let last = 0;
  for (const m of text.matchAll(ICON_SYNTAX)) {
    const at = m.index ?? 0;
    escaped += text.slice(last, at) + "\\" + m[0];
    inserts.push(at);
    last = at + m[0].length;
  }
  escaped += text.slice(last);
  if (inserts.length === 0) return { text, spans: spans.map((s) => ({ ...s })) };
  const shift = (offset: number, isEnd: boolean): number => {
    let n = 0;
    for (const at of inserts) if (at < offset || (!isEnd && at === offset)) n += 1;
    return offset + n;
  };
  return { text: escaped, spans: spans.map((s) => ({ start: shift(s.start, false), end: shift(s.end, true) })) };
}

export interface Flattened {
  text: string;
  /** Highlights in UTF-16 units of `text`, sorted, disjoint, non-empty. */
  highlights: Span[];
  /** True when the text was cut at maxUnits. */
  truncated: boolean;
}

/**
 * Turns a multi-line piece of `source` (UTF-16 range [from, to)) into one line:
 * every run of whitespace (line breaks included) becomes one space, leading and
 * trailing whitespace goes, and the result is cut at `maxUnits` UTF-16 units
 * (never inside a surrogate pair) with "…" appended. `spans` (UTF-16, over the
 * whole source) are carried over to the result.
 */
export function flattenWithSpans(
  source: string,
  spans: readonly Span[],
  opts: { from?: number; to?: number; maxUnits?: number } = {},
): Flattened {
  const from = Math.max(0, opts.from ?? 0);
  const to = Math.min(source.length, opts.to ?? source.length);
  const maxUnits = opts.maxUnits ?? Number.POSITIVE_INFINITY;
  // pos[i - from] = output index of source index i, for i in [from, to].
  const pos: number[] = new Array(Math.max(0, to - from) + 1);
  let out = "";
  let pendingSpace = false;
  for (let i = from; i < to; i++) {
    const ch = source[i];
    if (/\s/.test(ch)) {
      pos[i - from] = out.length;
      if (out.length > 0) pendingSpace = true;
      continue;
    }
    if (pendingSpace) {
      out += " ";
      pendingSpace = false;
    }
    pos[i - from] = out.length;
    out += ch;
  }
  pos[Math.max(0, to - from)] = out.length;

  let truncated = false;
  let limit = out.length;
  if (out.length > maxUnits) {
    truncated = true;
    limit = Math.max(0, maxUnits - 1);
    const c = out.charCodeAt(limit - 1);
    if (limit > 0 && c >= 0xd800 && c <= 0xdbff) limit -= 1; // keep pairs whole
    out = out.slice(0, limit).trimEnd() + "…";
    limit = Math.min(limit, out.length - 1);
  }

  const mapped: Span[] = [];
  for (const s of spans) {
    const a = Math.max(s.start, from);
    const b = Math.min(s.end, to);
    if (b <= a) continue;
    const start = pos[a - from];
    let end = pos[b - from];
    // A span ending on collapsed whitespace must not include the inserted space.
    while (end > start && out[end - 1] === " ") end -= 1;
    const clippedEnd = Math.min(end, limit);
    if (clippedEnd > start) mapped.push({ start, end: clippedEnd });
  }
  return { text: out, highlights: normalizeSpans(mapped), truncated };
}

export const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Where `heading` stands at the start of `snippet`: after up to three spaces and
 * an ATX marker (`## `), its words separated by any whitespace, followed by the
 * line's end (or an ATX closing sequence). UTF-16 range, and whether it is ATX.
 */
function headingRegion(snippet: string, heading: string): { start: number; end: number; atx: boolean } | undefined {
  const words = heading.split(/\s+/).filter((w) => w.length > 0);
  if (words.length === 0) return undefined;
  const body = words.map(escapeRegExp).join("\\s+");
  const re = new RegExp(`^([ \\t]{0,3}(#{1,6}[ \\t]+)?)(${body})(?=[ \\t]*(?:#+[ \\t]*)?(?:\\r?\\n|$))`);
  const m = re.exec(snippet);
  if (m === null) return undefined;
  return { start: m[1].length, end: m[1].length + m[3].length, atx: m[2] !== undefined };
}

/**
 * Carries UTF-16 spans from `source[region]` over to `target`, which holds the same
 * non-whitespace characters with possibly other whitespace runs between them.
 */
function alignSpans(source: string, region: Span, target: string, spans: readonly Span[]): Span[] {
  const pos: number[] = new Array(region.end - region.start + 1);
  const isSpace = (ch: string | undefined) => ch !== undefined && /\s/.test(ch);
  let i = region.start;
  let j = 0;
  while (i < region.end) {
    if (isSpace(source[i])) {
      const at = j;
      for (; i < region.end && isSpace(source[i]); i++) pos[i - region.start] = at;
      while (j < target.length && isSpace(target[j])) j++;
    } else {
      pos[i - region.start] = j;
      i++;
      j++;
    }
  }
  pos[region.end - region.start] = Math.min(j, target.length);
  const out: Span[] = [];
  for (const s of spans) {
    const a = Math.max(s.start, region.start);
    const b = Math.min(s.end, region.end);
    if (b > a) out.push({ start: pos[a - region.start], end: pos[b - region.start] });
  }
  return normalizeSpans(out);
}

// ------------------------------------------------------------ search → item

export interface HitItemFields {
  /**
   * The heading on one line; for the text before a file's first heading the server's name
   * for it (the file's title, `x-labels`) when given, else the path.
   */
  label: string;
  description: string;
  detail: string;
  /** Highlights of the label (UTF-16), where the heading appears in the snippet. */
  labelHighlights: Span[];
  /** Highlights of the detail line (UTF-16). */
  detailHighlights: Span[];
  /** match_spans converted to UTF-16 offsets over the whole snippet. */
  snippetHighlights: Span[];
  /** Where accepting the item goes (0-based lines, inclusive). */
  target: { path: string; startLine: number; endLine: number };
  /** The hit comes from unsaved editor text; the description starts with UNSAVED_MARK. */
  unsaved: boolean;
}

export const DEFAULT_DETAIL_UNITS = 200;

/**
 * Maps one search hit to QuickPick fields: label = heading on one line (the path
 * for a body section without one), description = `path:start-end` (after
 * `[unsaved]` for a hit from unsaved text), detail = the snippet flattened to one
 * line (without the heading's lines when the snippet starts with them), highlights
 * from match_spans.
 */
export function hitToItemFields(hit: SearchHit, opts: { maxDetailUnits?: number; name?: string } = {}): HitItemFields {
  const snippet = typeof hit.snippet === "string" ? hit.snippet : "";
  const spans = byteSpansToUtf16(snippet, Array.isArray(hit.match_spans) ? hit.match_spans : []);
  const heading = typeof hit.heading === "string" ? hit.heading.trim() : "";
  // A heading names its section; the text before the first heading has none, and the
  // server names it (the file's title: front matter, else the first H1) when asked.
  const named = typeof opts.name === "string" && opts.name.trim().length > 0 ? opts.name.trim() : undefined;
  const label = heading.length > 0 ? heading : (named ?? hit.path);

  // Does the snippet start with the heading? Then highlight it in the label. The
  // heading's words are matched with any whitespace between them, so a Setext
  // heading over two lines is found whether its lines come joined by LF (SPEC §3)
  // or by a space, and a lone CR inside it is whitespace like any other.
  const labelText = oneLine(label).text;
  let labelHighlights: Span[] = [];
  let detailFrom = 0;
  const region = heading.length > 0 ? headingRegion(snippet, heading) : undefined;
  if (region !== undefined) {
    labelHighlights = alignSpans(snippet, region, labelText, spans);
    const lf = snippet.indexOf("\n", region.end);
    const rest = snippet.slice(lf < 0 ? snippet.length : lf + 1).replace(/^[\r\n]+/, "");
    // Skip the heading's line(s) (and a Setext underline) when there is more to show.
    if (rest.trim().length > 0) {
      detailFrom = snippet.length - rest.length;
      const underline = /^ {0,3}(=+|-+)[ \t]*(\r?\n|$)/.exec(rest);
      if (underline && !region.atx) detailFrom += underline[0].length;
    }
  }
  const flat = flattenWithSpans(snippet, spans, {
    from: detailFrom,
    maxUnits: opts.maxDetailUnits ?? DEFAULT_DETAIL_UNITS,
  });
  const unsaved = isUnsaved(hit);
  const where = `${hit.path}:${hit.line_start}-${hit.line_end}`;
  return {
    label: labelText,
    description: unsaved ? `${UNSAVED_MARK} ${where}` : where,
    detail: flat.text,
    labelHighlights,
    detailHighlights: flat.highlights,
    snippetHighlights: spans,
    target: {
      path: hit.path,
      startLine: Math.max(0, hit.line_start - 1),
      endLine: Math.max(0, Math.max(hit.line_start, hit.line_end) - 1),
    },
    unsaved,
  };
}

/** One line for the picker's title: how many of how many, and from which snapshot. */
export function searchSummary(result: SearchResult): string {
  const shown = result.hits.length;
  const noun = result.total === 1 ? "section" : "sections";
  const more = result.truncated ? ` (${shown} shown)` : "";
  const rev = typeof result.snapshot_revision === "string" ? ` · snapshot ${result.snapshot_revision.slice(0, 12)}` : "";
  return `${result.total} ${noun}${more}${rev}`;
}

// -------------------------------------------------------------- lines → item

export interface LineItemFields {
  label: string;
  description: string;
  detail?: string;
  /** 0-based line; the column is resolved against the document's real line text. */
  target: { path: string; line: number; codePointColumn: number };
  unsaved: boolean;
}

/**
 * Maps one line match to `path:line:column` (label, after `[unsaved]` for a match in
 * unsaved text) and the line text on one line (description).
 */
export function lineMatchToItemFields(m: LineMatch): LineItemFields {
  const column = Number.isInteger(m.column) && m.column >= 1 ? m.column : 1;
  const unsaved = isUnsaved(m);
  const where = `${m.path}:${m.line}:${column}`;
  return {
    label: unsaved ? `${UNSAVED_MARK} ${where}` : where,
    description: oneLine(typeof m.text === "string" ? m.text : "").text.replace(/\t/g, "  ").trim(),
    target: { path: m.path, line: Math.max(0, m.line - 1), codePointColumn: column },
    unsaved,
  };
}

export function linesSummary(result: LinesResult): string {
  const shown = result.matches.length;
  const noun = result.total === 1 ? "line" : "lines";
  const more = result.truncated ? ` (${shown} shown)` : "";
  return `${result.total} ${noun}${more}`;
}

// --------------------------------------------------------------------- paths

/**
 * Splits a bundle-relative path (`/` separators, SPEC §6) into segments for
 * Uri.joinPath, refusing anything that could leave the workspace folder.
 */
export function bundlePathSegments(path: string): string[] {
  if (typeof path !== "string" || path.length === 0) throw new Error("empty path");
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) throw new Error(`not a bundle-relative path: ${path}`);
  const segments = path.split("/");
  for (const s of segments) {
    if (s === "" || s === "." || s === ".." || s.includes("\0")) {
      throw new Error(`not a bundle-relative path: ${path}`);
    }
  }
  return segments;
}

/** Re-export for callers that only need the conversion. */
export { OffsetMap };
