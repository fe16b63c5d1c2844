/**
 * VS Code settings (`citeline.*`) → the server's settings object, sent as
 * initializationOptions and in workspace/didChangeConfiguration under the
 * section "citeline" (SPEC §11):
 *   { limits: {max_files, …}, reserved, use_ignore, skip_invalid,
 *     symbols: {cap, list_cap}, profile, unsaved, background_embedding }
 * Pure: this module must not import `vscode`; the extension passes a getter.
 */

import { DEFAULT_THRESHOLD, validThreshold } from "./semantic";

export const LIMIT_NAMES = [
  "max_files",
  "max_total_bytes",
  "max_file_bytes",
  "max_sections",
  "max_tokens",
  "max_path_components",
  "max_path_bytes",
  "max_response_bytes",
] as const;

export type LimitName = (typeof LIMIT_NAMES)[number];

export interface ServerSettings {
  limits: Partial<Record<LimitName, number>>;
  reserved?: string[];
  use_ignore: boolean;
  globs?: string[];
  skip_invalid: boolean;
  symbols: { cap: number; list_cap: number };
  /** `hybrid` needs the server's semantic extra; without it a search fails with an error naming it. */
  profile: Profile;
  /**
   * Search open documents' unsaved text (SPEC §11). Sent only when on: absent means
   * off, and every settings object the extension sends is complete, so turning it
   * off reaches the server too (a server without the setting keeps working).
   */
  unsaved?: true;
  /**
   * After a hybrid or semantic answer the server embeds the rest of the workspace in the
   * background (docs/semantic.md). Sent only when turned off: absent means the server's
   * default (on), so turning it on again reaches the server too.
   */
  background_embedding?: false;
  /**
   * The embedding model of a search by meaning and the hybrid profile (docs/semantic.md,
   * "Use your own model"): `{url, model, …}` (an OpenAI-compatible server such as Ollama)
   * or `{folder}` (a local ONNX model folder). Sent only when set; the server checks it
   * and keeps its previous model when it is invalid.
   */
  embedding?: Record<string, unknown>;
}

export const PROFILES = ["recall", "contract", "hybrid"] as const;
export type Profile = (typeof PROFILES)[number];

export interface ClientSettings {
  command: string;
  args: string[];
  server: ServerSettings;
  searchLimit: number;
  linesLimit: number;
  /** The least score of a search by meaning, in [0, 1] (SPEC §15). */
  semanticThreshold: number;
  /** Settings that were ignored, with the reason, for the output channel. */
  problems: string[];
}

/** Reads one `citeline.<key>` value; undefined when unset. */
export type Getter = (key: string) => unknown;

function positiveInt(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 1;
}

export function readSettings(get: Getter): ClientSettings {
  const problems: string[] = [];

  const rawCommand = get("server.command");
  let command = "citeline";
  if (typeof rawCommand === "string" && rawCommand.trim().length > 0) command = rawCommand.trim();
  else if (rawCommand !== undefined && rawCommand !== null) problems.push(`citeline.server.command must be a non-empty string; using "citeline".`);

  const rawArgs = get("server.args");
  let args = ["lsp"];
  if (Array.isArray(rawArgs) && rawArgs.every((a) => typeof a === "string")) args = rawArgs as string[];
  else if (rawArgs !== undefined && rawArgs !== null) problems.push(`citeline.server.args must be an array of strings; using ["lsp"].`);

  const limits: Partial<Record<LimitName, number>> = {};
  for (const name of LIMIT_NAMES) {
    const v = get(`limits.${name}`);
    if (v === undefined || v === null) continue;
    if (positiveInt(v)) limits[name] = v;
    else problems.push(`citeline.limits.${name} must be a positive integer; ignored (got ${JSON.stringify(v)}).`);
  }

  const rawProfile = get("profile");
  let profile: Profile = "recall";
  if ((PROFILES as readonly unknown[]).includes(rawProfile)) profile = rawProfile as Profile;
  else if (rawProfile !== undefined && rawProfile !== null) problems.push(`citeline.profile must be "recall", "contract" or "hybrid"; using "recall".`);

  const rawThreshold = get("semanticThreshold");
  let semanticThreshold = DEFAULT_THRESHOLD;
  const threshold = validThreshold(rawThreshold);
  if (threshold !== undefined) semanticThreshold = threshold;
  else if (rawThreshold !== undefined && rawThreshold !== null) problems.push(`citeline.semanticThreshold must be a number from 0 to 1; using ${DEFAULT_THRESHOLD}.`);

  const bool = (key: string, dflt: boolean): boolean => {
    const v = get(key);
    if (typeof v === "boolean") return v;
    if (v !== undefined && v !== null) problems.push(`citeline.${key} must be true or false; using ${dflt}.`);
    return dflt;
  };
  const int = (key: string, dflt: number, max?: number): number => {
    const v = get(key);
    if (positiveInt(v) && (max === undefined || v <= max)) return v;
    if (v !== undefined && v !== null) problems.push(`citeline.${key} must be an integer from 1${max !== undefined ? ` to ${max}` : ""}; using ${dflt}.`);
    return dflt;
  };

  const server: ServerSettings = {
    limits,
    use_ignore: bool("useIgnore", true),
    // The server's editor default (SPEC §11): unparsable files are skipped, not fatal.
    skip_invalid: bool("skipInvalid", true),
    symbols: { cap: int("symbols.cap", 100), list_cap: int("symbols.listCap", 1000) },
    profile,
  };
  if (bool("unsaved", false)) server.unsaved = true;
  if (!bool("backgroundEmbedding", true)) server.background_embedding = false;
  const rawGlobs = get("globs");
  if (Array.isArray(rawGlobs) && rawGlobs.every((g) => typeof g === "string")) {
    if (rawGlobs.length > 0) server.globs = rawGlobs as string[];
  } else if (rawGlobs !== undefined && rawGlobs !== null) problems.push(`citeline.globs must be an array of globs; ignored.`);
  const rawEmbedding = get("embedding");
  if (rawEmbedding !== null && typeof rawEmbedding === "object" && !Array.isArray(rawEmbedding)) {
    if (Object.keys(rawEmbedding).length > 0) server.embedding = { ...(rawEmbedding as Record<string, unknown>) };
  } else if (rawEmbedding !== undefined && rawEmbedding !== null) problems.push(`citeline.embedding must be an object such as {"url": "http://localhost:11434/v1", "model": "bge-m3"}; ignored.`);
  const rawReserved = get("reserved");
  if (Array.isArray(rawReserved) && rawReserved.every((r) => typeof r === "string")) server.reserved = rawReserved as string[];
  else if (rawReserved !== undefined && rawReserved !== null) problems.push(`citeline.reserved must be an array of paths; ignored.`);

  return {
    command,
    args,
    server,
    searchLimit: int("search.limit", 20, 100),
    linesLimit: int("lines.limit", 100, 1000),
    semanticThreshold,
    problems,
  };
}

/** A change of the executable or its arguments needs a new server process. */
export function needsRestart(before: ClientSettings, after: ClientSettings): boolean {
  return before.command !== after.command || JSON.stringify(before.args) !== JSON.stringify(after.args);
}

/** Whether the server-side settings changed (then didChangeConfiguration is sent). */
export function serverSettingsChanged(before: ClientSettings, after: ClientSettings): boolean {
  return JSON.stringify(before.server) !== JSON.stringify(after.server);
}
