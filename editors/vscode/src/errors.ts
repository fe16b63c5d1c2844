/**
 * Server errors → readable messages. The server answers a failed command with a
 * JSON-RPC error (-32602 schema_validation, -32800 cancelled, -32803 the rest)
 * whose `data` is the envelope's error object `{code, message, details}`
 * (SPEC §10). Pure: this module must not import `vscode`.
 */

export const RPC_INVALID_PARAMS = -32602;
export const RPC_REQUEST_CANCELLED = -32800;
export const RPC_REQUEST_FAILED = -32803;

export interface DescribedError {
  /** One line for window.showErrorMessage. */
  message: string;
  /** The envelope's code (schema_validation, resource_limit, …) when known. */
  code?: string;
  /** Cancelled requests are not errors for the user: callers stay silent. */
  cancelled: boolean;
  details?: unknown;
}

const CODE_TITLES: Record<string, string> = {
  schema_validation: "invalid request",
  resource_limit: "limit reached",
  bundle_not_found: "workspace folder not found",
  bundle_invalid: "workspace cannot be searched",
  parse_error: "a file cannot be parsed",
  cancelled: "cancelled",
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

/** First line of a message, without a stack trace. */
function firstLine(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim().length > 0) ?? "";
  return line.trim();
}

export function describeError(error: unknown): DescribedError {
  if (isObject(error)) {
    const rpcCode = typeof error.code === "number" ? error.code : undefined;
    const data = error.data;
    // The envelope may come as data itself or as data.error.
    const envelope = isObject(data) && isObject(data.error) ? data.error : data;
    if (isObject(envelope) && typeof envelope.message === "string") {
      const code = typeof envelope.code === "string" ? envelope.code : undefined;
      const cancelled = code === "cancelled" || rpcCode === RPC_REQUEST_CANCELLED;
      // An optional extra the server lacks (`details.install`, e.g. the semantic extra for a
      // search by meaning or the hybrid profile): the request was fine, the server's message
      // says what to install, and "invalid request" would mislead.
      const missingExtra = isObject(envelope.details) && typeof envelope.details.install === "string";
      const title = code !== undefined && !missingExtra ? CODE_TITLES[code] ?? code : undefined;
      const text = firstLine(envelope.message) || "the server reported an error";
      return {
        message: title !== undefined ? `citeline: ${title}: ${text}` : `citeline: ${text}`,
        code,
        cancelled,
        details: envelope.details,
      };
    }
    if (rpcCode === RPC_REQUEST_CANCELLED) {
      return { message: "citeline: cancelled", code: "cancelled", cancelled: true };
    }
    if (typeof error.message === "string") {
      // Messages this extension composed already carry the prefix.
      const text = firstLine(error.message).replace(/^citeline:\s*/, "") || "unknown error";
      return { message: `citeline: ${text}`, cancelled: error.name === "AbortError" };
    }
  }
  if (typeof error === "string" && error.trim().length > 0) {
    return { message: `citeline: ${firstLine(error)}`, cancelled: false };
  }
  return { message: "citeline: unknown error", cancelled: false };
}

/** Message when the server executable cannot be started. */
export function startFailureMessage(command: string, error: unknown): string {
  const reason = describeError(error).message.replace(/^citeline: /, "");
  const notFound = /ENOENT|not found|spawn/i.test(reason);
  const hint = notFound
    ? `Install it (\`pip install citeline\`) or set "citeline.server.command" to its full path.`
    : `See the "citeline" output channel for the server's log.`;
  return `citeline: the language server (${command}) could not be started: ${reason}. ${hint}`;
}

/**
 * Whether a message of vscode-languageclient is its own report of a server that did not
 * start ("… client: couldn't create connection to server.", "Server initialization
 * failed."). The client shows the first as a toast whatever its options say; the
 * extension shows its own message for the same failure (startFailureMessage, with Open
 * Settings and Show Log), so these go to the log only: one failure, one message.
 */
export function isStartFailureReport(message: string): boolean {
  return /couldn't create connection to server|^Server initialization failed/i.test(message);
}

/**
 * Whether a search failed only because the server does not know the language server's
 * `labels` key (a citeline older than the extension: its engine lists unknown fields under
 * `details.fields`). The extension then searches without it and names hits by heading.
 */
export function rejectsLabels(error: unknown): boolean {
  const d = describeError(error);
  const fields = isObject(d.details) ? d.details.fields : undefined;
  return d.code === "schema_validation" && Array.isArray(fields) && fields.includes("labels");
}
