/**
 * Checking the results view's hits against the files as they are now (SPEC §18,
 * `citeline.verify`): the view's rows → citations, and the server's verdicts → marks on
 * the rows (a description, an icon, a tooltip line) and, for text that moved or changed,
 * the place "Re-anchor" opens.
 *
 * A section hit of §6 is a citation as it is (path, lines, `section_sha256`,
 * `content_sha256`, heading); a section found by meaning carries the same fields under
 * `x-` names and is sent with them renamed; a line match is a line citation (path, line,
 * text). The server answers one result per citation, in order.
 *
 * This module must not import `vscode`: it is unit-tested under plain node.
 */

import type { LineMatch, SearchHit } from "./mapping";
import { oneLine } from "./mapping";
import type { SemanticMatch } from "./semantic";

/** The most citations one `citeline.verify` request may hold (SPEC §18). */
export const MAX_CITATIONS = 100;

export type VerifyStatus = "valid" | "moved" | "changed" | "stale" | "missing";

/** One result of `citeline.verify` (the `verify.result` contract), as it arrives. */
export interface VerifyEntry {
  status: VerifyStatus;
  citation?: unknown;
  path: string | null;
  line_start?: number | null;
  line_end?: number | null;
  line?: number | null;
  text?: string | null;
  locator?: string | null;
  content_sha256?: string | null;
  section_sha256?: string | null;
  heading?: string | null;
  similarity?: number | null;
  others?: number;
  file_exists?: boolean;
}

export interface VerifyResult {
  snapshot_revision: string;
  total: number;
  results: VerifyEntry[];
}

/** A section citation (SPEC §18). */
export interface SectionCitation {
  path: string;
  line_start: number;
  line_end: number;
  section_sha256?: string;
  content_sha256?: string;
  heading?: string;
}

/** A line citation (a Match of SPEC §8). */
export interface LineCitation {
  path: string;
  line: number;
  text: string;
}

export type Citation = SectionCitation | LineCitation | SearchHit;

const SHA = /^[0-9a-f]{64}$/;
const isLine = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1;
const sha = (v: unknown): string | undefined => (typeof v === "string" && SHA.test(v) ? v : undefined);

/** A section hit as its citation: the hit itself (§18 accepts a §6 hit as it is); undefined when it cannot be checked. */
export function hitCitation(hit: SearchHit): Citation | undefined {
  const ok = typeof hit?.path === "string" && isLine(hit.line_start) && isLine(hit.line_end);
  return ok && (sha(hit.section_sha256) ?? sha(hit.content_sha256)) !== undefined ? hit : undefined;
}

/** A section found by meaning, as a section citation: its `x-` fields under their §6 names. */
export function sectionCitation(m: SemanticMatch): SectionCitation | undefined {
  const start = m?.["x-line_start"];
  const end = m?.["x-line_end"];
  if (typeof m?.path !== "string" || !isLine(start) || !isLine(end)) return undefined;
  const section = sha(m["x-section_sha256"]);
  const content = sha(m["x-content_sha256"]);
  if (section === undefined && content === undefined) return undefined;
  const c: SectionCitation = { path: m.path, line_start: start, line_end: end };
  if (section !== undefined) c.section_sha256 = section;
  if (content !== undefined) c.content_sha256 = content;
  if (typeof m["x-heading"] === "string") c.heading = m["x-heading"];
  return c;
}

/** A line match as a line citation. */
export function lineCitation(m: LineMatch): LineCitation | undefined {
  if (typeof m?.path !== "string" || !isLine(m.line) || typeof m.text !== "string") return undefined;
  return { path: m.path, line: m.line, text: m.text };
}

/**
 * The requests that check `citations` (keyed by the view's row ids), in order: one per
 * MAX_CITATIONS rows (a section search or a search by meaning shows at most 100, so one).
 * Rows without a citation are left out.
 */
export function verifyRequests(rows: readonly { id: string; citation: Citation | undefined }[], root?: string): { ids: string[]; request: { citations: Citation[]; root?: string } }[] {
  const usable = rows.filter((r): r is { id: string; citation: Citation } => r.citation !== undefined);
  const out: { ids: string[]; request: { citations: Citation[]; root?: string } }[] = [];
  for (let i = 0; i < usable.length; i += MAX_CITATIONS) {
    const part = usable.slice(i, i + MAX_CITATIONS);
    const request: { citations: Citation[]; root?: string } = { citations: part.map((r) => r.citation) };
    if (root !== undefined) request.root = root;
    out.push({ ids: part.map((r) => r.id), request });
  }
  return out;
}

/** Where the cited text is today: what Re-anchor opens and puts in the row. */
export interface Place {
  path: string;
  line_start: number;
  line_end: number;
  /** A line citation's line (line_start = line_end = line). */
  line?: number;
  locator?: string;
  section_sha256?: string;
  content_sha256?: string;
  heading?: string;
}

/** A row's mark: what the server said about a hit that is no longer `valid`. */
export interface Mark {
  status: Exclude<VerifyStatus, "valid">;
  /** For the row's description: `moved → b.md:40-48`, `changed → a.md:10-19 (87% kept)`, `stale`, `missing`. */
  text: string;
  /** A sentence for the row's tooltip. */
  tooltip: string;
  /** A codicon id (ThemeIcon) and a theme colour id (ThemeColor) for the row. */
  icon: string;
  color: string;
  /** Where the text is now (moved, changed): Re-anchor goes there; undefined otherwise. */
  now?: Place;
}

const ICONS: Record<Mark["status"], { icon: string; color: string }> = {
  moved: { icon: "arrow-swap", color: "list.warningForeground" },
  changed: { icon: "diff-modified", color: "list.warningForeground" },
  stale: { icon: "history", color: "list.warningForeground" },
  missing: { icon: "circle-slash", color: "list.errorForeground" },
};

/** `path:a-b` (`path:a` for one line of a line citation). */
export function placeText(p: Place): string {
  if (p.line !== undefined) return `${p.path}:${p.line}`;
  return `${p.path}:${p.line_start}-${p.line_end}`;
}

/** The entry's place today, when it gives one. */
export function placeOf(e: VerifyEntry): Place | undefined {
  if (typeof e?.path !== "string" || e.path.length === 0) return undefined;
  if (isLine(e.line)) return { path: e.path, line_start: e.line, line_end: e.line, line: e.line };
  if (!isLine(e.line_start) || !isLine(e.line_end)) return undefined;
  const p: Place = { path: e.path, line_start: e.line_start, line_end: e.line_end };
  if (typeof e.locator === "string") p.locator = e.locator;
  if (sha(e.section_sha256) !== undefined) p.section_sha256 = e.section_sha256 as string;
  if (sha(e.content_sha256) !== undefined) p.content_sha256 = e.content_sha256 as string;
  if (typeof e.heading === "string") p.heading = e.heading;
  return p;
}

/** A share in [0, 1] as a whole percentage, rounded half up as Neovim's and Emacs's lists round it. */
export function percent(share: number): string {
  const p = Math.max(0, Math.min(1, share));
  return `${Math.floor(p * 100 + 0.5)}%`;
}

/** The mark of one verdict; undefined for `valid` (and for a status this version does not know). */
export function markOf(e: VerifyEntry): Mark | undefined {
  const status = e?.status;
  if (status !== "moved" && status !== "changed" && status !== "stale" && status !== "missing") return undefined;
  const look = ICONS[status];
  const now = status === "moved" || status === "changed" ? placeOf(e) : undefined;
  switch (status) {
    case "moved": {
      if (now === undefined) return { status, ...look, text: "moved", tooltip: "Moved: the cited text is elsewhere now." };
      const others = typeof e.others === "number" && e.others > 0 ? ` (and ${e.others} more ${e.others === 1 ? "place" : "places"})` : "";
      return {
        status,
        ...look,
        now,
        text: `moved → ${placeText(now)}`,
        tooltip: `Moved: the cited text is now at ${placeText(now)}${others}. Re-anchor opens it there.`,
      };
    }
    case "changed": {
      if (now === undefined) return { status, ...look, text: "changed", tooltip: "Changed: the cited text was edited." };
      const share = typeof e.similarity === "number" && Number.isFinite(e.similarity) ? percent(e.similarity) : undefined;
      const heading = typeof e.heading === "string" && e.heading.trim().length > 0 ? ` “${oneLine(e.heading).text.trim()}”` : "";
      return {
        status,
        ...look,
        now,
        text: `changed → ${placeText(now)}${share !== undefined ? ` (${share} kept)` : ""}`,
        tooltip: `Changed: the cited text was edited; its section${heading} is at ${placeText(now)}${share !== undefined ? ` and keeps ${share} of the cited words` : ""}. Re-anchor opens it there.`,
      };
    }
    case "stale":
      return { status, ...look, text: "stale", tooltip: "Stale: the file changed since the search and nothing says where the cited text went. Search again (⟳)." };
    case "missing":
      return {
        status,
        ...look,
        text: e.file_exists === false ? "missing (file gone)" : "missing",
        tooltip:
          e.file_exists === false
            ? "Missing: the file is no longer in the workspace, and the cited text is nowhere else."
            : "Missing: neither the cited text nor its heading is in the workspace any more.",
      };
  }
}

/**
 * The marks of one answer, by row id: `ids` are the rows the request's citations came
 * from, in order. A row that is `valid` has no mark (an earlier one is lifted). An answer
 * whose length does not match the request says nothing about any row: undefined.
 */
export function marksOf(ids: readonly string[], result: VerifyResult | undefined): Map<string, Mark | undefined> | undefined {
  const results = Array.isArray(result?.results) ? result.results : undefined;
  if (results === undefined || results.length !== ids.length) return undefined;
  return new Map(ids.map((id, i) => [id, markOf(results[i])]));
}

/** A section hit re-anchored to where its text is now (the rest of the hit kept: snippet, score, spans). */
export function reanchoredHit(hit: SearchHit, now: Place): SearchHit {
  const moved: SearchHit = { ...hit, path: now.path, line_start: now.line_start, line_end: now.line_end };
  if (now.locator !== undefined) moved.locator = now.locator;
  if (now.section_sha256 !== undefined) moved.section_sha256 = now.section_sha256;
  if (now.content_sha256 !== undefined) moved.content_sha256 = now.content_sha256;
  if (now.heading !== undefined) moved.heading = now.heading;
  return moved;
}

/** A section found by meaning, re-anchored: its best line shifted with the section (kept inside it). */
export function reanchoredSection(m: SemanticMatch, now: Place): SemanticMatch {
  const oldStart = Number.isInteger(m["x-line_start"]) ? m["x-line_start"] : m.line;
  const line = Math.min(Math.max(now.line_start, m.line + (now.line_start - oldStart)), now.line_end);
  const moved: SemanticMatch = { ...m, path: now.path, line, "x-line_start": now.line_start, "x-line_end": now.line_end };
  if (now.section_sha256 !== undefined) moved["x-section_sha256"] = now.section_sha256;
  if (now.content_sha256 !== undefined) moved["x-content_sha256"] = now.content_sha256;
  if (now.heading !== undefined) moved["x-heading"] = now.heading;
  return moved;
}

/** A line match re-anchored to the line where its text is now. */
export function reanchoredMatch(m: LineMatch, now: Place): LineMatch {
  return { ...m, path: now.path, line: now.line ?? now.line_start };
}
