/**
 * Search by meaning (SPEC §15): `citeline.lines` with `mode: "semantic"` → the results
 * view's section rows, and the work-done progress of its first embedding → one line for
 * the status bar.
 *
 * A semantic match is a section (the agent-file-interface Match shape with a calibrated
 * `score` in [0, 1]): `path`, `line` (the section's line that best holds the query's
 * words, 1-based), `text` (that line), `x-line_start`/`x-line_end` (the section),
 * `x-heading`. The server only returns matches at or above the request's threshold.
 *
 * This module must not import `vscode`: it is unit-tested under plain node.
 */

import { UNSAVED_MARK, isUnsaved, oneLine } from "./mapping";
import type { NodeLabel } from "./results";
import { HIT_LABEL_SEPARATOR, lineRange, lineStartOffset, type OpenTarget } from "./results";

// ---------------------------------------------------------------- wire types

export interface SemanticMatch {
  path: string;
  line: number;
  column?: number;
  text: string;
  context?: { before?: string[]; after?: string[] };
  score: number;
  "x-line_start": number;
  "x-line_end": number;
  "x-heading": string;
  "x-content_sha256": string;
  "x-section_sha256"?: string;
  "x-unsaved"?: boolean;
}

export interface SemanticResult {
  pattern: string;
  mode: "semantic";
  threshold: number;
  model: string;
  snapshot_revision: string;
  total: number;
  truncated: boolean;
  matches: SemanticMatch[];
}

export interface SemanticQuery {
  query: string;
  /** The least score shown, in [0, 1] (setting citeline.semanticThreshold). */
  threshold: number;
}

/** SPEC §15's default threshold, and the setting's. */
export const DEFAULT_THRESHOLD = 0.5;

export interface SemanticRequest {
  mode: "semantic";
  query: string;
  threshold: number;
  limit?: number;
  context: number;
  root?: string;
}

export function buildSemanticRequest(query: SemanticQuery, opts: { limit?: number; root?: string } = {}): SemanticRequest {
  // No context lines: the view shows the section's row, and the editor its text.
  const req: SemanticRequest = { mode: "semantic", query: query.query, threshold: query.threshold, context: 0 };
  if (opts.limit !== undefined) req.limit = opts.limit;
  if (opts.root !== undefined) req.root = opts.root;
  return req;
}

/** A threshold setting's value: a number in [0, 1], else undefined. */
export function validThreshold(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 1 ? value : undefined;
}

// -------------------------------------------------------------------- scores

/** A score as the view shows it: two decimals (`0.87`); `?` for a value that is not a score. */
export function formatScore(score: unknown): string {
  if (typeof score !== "number" || !Number.isFinite(score)) return "?";
  return Math.min(1, Math.max(0, score)).toFixed(2);
}

// --------------------------------------------------------------------- nodes

/** A section that answers the query by meaning (a root row of the results view). */
export interface SectionNode {
  kind: "section";
  id: string;
  /** 1-based rank in the server's order (by score). */
  rank: number;
  match: SemanticMatch;
  /** `path:start-end — heading` (`path:start-end` alone without a heading). */
  label: NodeLabel;
  /** The score, `0.87` (after `[unsaved]` for a section of unsaved text). */
  description: string;
  tooltip: string;
  unsaved: boolean;
}

/** One row per match, in the server's order (score, then path, then line). */
export function semanticNodes(result: SemanticResult, prefix: string): SectionNode[] {
  const matches = Array.isArray(result?.matches) ? result.matches : [];
  return matches.map((m, i) => sectionNode(m, i + 1, `${prefix}/s${i + 1}`, result?.model));
}

/** One section's row (also a section re-anchored to where its text is now, under the same id). */
export function sectionNode(m: SemanticMatch, rank: number, id: string, model: unknown): SectionNode {
  const start = Number.isInteger(m["x-line_start"]) ? m["x-line_start"] : m.line;
  const end = Number.isInteger(m["x-line_end"]) ? m["x-line_end"] : start;
  const heading = typeof m["x-heading"] === "string" ? oneLine(m["x-heading"]).text.trim() : "";
  const location = `${m.path}:${start}-${end}`;
  const score = formatScore(m.score);
  const unsaved = isUnsaved(m);
  const text = oneLine(typeof m.text === "string" ? m.text : "").text.trim();
  const tooltip = [
    heading || m.path,
    `${m.path}, lines ${start}–${end}`,
    `score ${score} by meaning${typeof model === "string" ? ` (${model})` : ""}`,
    text.length > 0 ? `line ${m.line}: ${text}` : "",
    unsaved ? "from the editor's unsaved text" : "",
  ]
    .filter((line) => line.length > 0)
    .join("\n");
  return {
    kind: "section",
    id,
    rank,
    match: m,
    label: { label: heading ? location + HIT_LABEL_SEPARATOR + heading : location, highlights: [] },
    description: unsaved ? `${UNSAVED_MARK} ${score}` : score,
    tooltip,
    unsaved,
  };
}

/** The view's message: the query, how many sections, the threshold, the snapshot and the model. */
export function semanticMessage(query: SemanticQuery, result: SemanticResult): string {
  const matches = Array.isArray(result?.matches) ? result.matches : [];
  const total = typeof result?.total === "number" ? result.total : matches.length;
  const noun = total === 1 ? "section" : "sections";
  const more = result?.truncated ? ` (${matches.length} shown)` : "";
  const threshold = typeof result?.threshold === "number" ? result.threshold : query.threshold;
  const rev = typeof result?.snapshot_revision === "string" ? ` · snapshot ${result.snapshot_revision.slice(0, 12)}` : "";
  const model = typeof result?.model === "string" && result.model.length > 0 ? ` · ${result.model}` : "";
  return `“${oneLine(query.query).text}” by meaning: ${total} ${noun}${more} at score ≥ ${threshold}${rev}${model}`;
}

// ------------------------------------------------------------------- opening

/**
 * Where a section match opens: the cursor at the start of its `line` (LF-only lines, as
 * the server counts them), nothing selected, the section revealed from its first line.
 * The text's end when the line is past it (the file changed since the search).
 */
export function semanticTarget(text: string, m: Pick<SemanticMatch, "line" | "x-line_start" | "x-line_end">): OpenTarget {
  const line = Math.max(0, (Number.isInteger(m.line) ? m.line : 1) - 1);
  const at = lineStartOffset(text, line) ?? text.length;
  const first = Math.max(0, (Number.isInteger(m["x-line_start"]) ? m["x-line_start"] : line + 1) - 1);
  const last = Math.max(first, (Number.isInteger(m["x-line_end"]) ? m["x-line_end"] : first + 1) - 1);
  const start = Math.min(lineStartOffset(text, first) ?? at, at);
  const end = Math.max(lineRange(text, last)?.end ?? text.length, at);
  return { anchor: at, active: at, reveal: { start, end } };
}

// ------------------------------------------------------------------ progress

/** The LSP's work-done progress values (begin, report, end), as they arrive. */
export interface WorkDoneValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

/**
 * One line for the status bar from a work-done report of a semantic request: the server
 * reports `embed DONE/TOTAL` while it computes the passages' vectors (a first request on an
 * empty cache), and other stages (the workspace's capture) by their own names.
 * Undefined for what says nothing new (begin, end, a report without a message).
 */
export function progressText(value: WorkDoneValue | undefined): string | undefined {
  if (value === undefined || value.kind !== "report" || typeof value.message !== "string") return undefined;
  const message = value.message.trim();
  if (message.length === 0) return undefined;
  const embed = /^embed (\d+)\/(\d+)$/.exec(message);
  if (embed) return `embedding sections ${embed[1]}/${embed[2]}`;
  return message;
}
