/**
 * Smoke test of the bundled extension (dist/extension.js) without VS Code: the
 * `vscode` module is replaced by a small recording stub, the bundle is loaded and
 * activated, and the commands it registers are compared with package.json.
 * Skips when the bundle has not been built (run `npm run build` first).
 */

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import Module from "node:module";
import { join } from "node:path";
import { test } from "node:test";

const root = join(__dirname, "..", "..");
const bundle = join(root, "dist", "extension.js");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** A value that tolerates any property access or call (but is not a thenable). */
function anything(): unknown {
  const fn = function () {
    return anything();
  };
  return new Proxy(fn, {
    get: (_t, prop) => (prop === "then" || typeof prop === "symbol" ? undefined : anything()),
    construct: () => anything() as object,
  });
}

function makeVscodeStub(registered: string[], errors: string[]) {
  const disposable = { dispose() {} };
  const channel = {
    info() {},
    warn() {},
    error() {},
    debug() {},
    trace() {},
    append() {},
    appendLine() {},
    replace() {},
    clear() {},
    show() {},
    hide() {},
    dispose() {},
    name: "citeline",
    logLevel: 2,
    onDidChangeLogLevel: () => disposable,
  };
  const stub = {
    commands: {
      registerCommand: (id: string) => {
        registered.push(id);
        return disposable;
      },
      executeCommand: async () => undefined,
    },
    window: {
      createOutputChannel: () => channel,
      showErrorMessage: async (m: string) => {
        errors.push(m);
        return undefined;
      },
      showWarningMessage: async () => undefined,
      showInformationMessage: async () => undefined,
      setStatusBarMessage: () => disposable,
    },
    workspace: {
      getConfiguration: () => ({ get: () => undefined, has: () => false }),
      onDidChangeConfiguration: () => disposable,
      workspaceFolders: undefined,
    },
  };
  const tolerant = (o: Record<string, unknown>): Record<string, unknown> =>
    new Proxy(o, { get: (t, prop) => (prop in t ? t[prop as string] : prop === "then" ? undefined : anything()) });
  return tolerant({
    commands: tolerant(stub.commands),
    window: tolerant(stub.window),
    workspace: tolerant(stub.workspace),
  });
}

test("the bundle activates and registers exactly the contributed UI commands", async (t) => {
  if (!existsSync(bundle)) return t.skip("dist/extension.js not built; run `npm run build`");
  const registered: string[] = [];
  const errors: string[] = [];
  const stub = makeVscodeStub(registered, errors);
  const M = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = M._load;
  M._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return stub;
    return original.call(this, request, ...rest);
  };
  try {
    const ext = require(bundle) as { activate: (ctx: unknown) => Promise<void>; deactivate: () => Promise<void> };
    assert.equal(typeof ext.activate, "function");
    assert.equal(typeof ext.deactivate, "function");
    const context = { subscriptions: [] as unknown[], extensionPath: root };
    await ext.activate(context);
    const contributed = (manifest.contributes.commands as { command: string }[]).map((c) => c.command).sort();
    assert.deepEqual([...registered].sort(), contributed);
    for (const id of ["citeline.search", "citeline.lines", "citeline.concepts"]) {
      assert.ok(!registered.includes(id), `${id} is the server's command; the UI must not register it`);
    }
    // Activation starts the client in the background; with this stub it cannot
    // start, which must end in a readable message, not an unhandled rejection.
    for (let i = 0; i < 50 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    t.diagnostic(`errors shown: ${JSON.stringify(errors)}`);
    await ext.deactivate();
  } finally {
    M._load = original;
  }
});

test("package.json: activation, engines and the pinned client agree", () => {
  assert.ok(manifest.activationEvents.includes("onLanguage:markdown"));
  for (const c of manifest.contributes.commands) {
    assert.ok(manifest.activationEvents.includes(`onCommand:${c.command}`), c.command);
    assert.equal(c.category, "citeline");
  }
  assert.equal(manifest.engines.vscode, "^1.91.0");
  assert.equal(manifest.devDependencies["@types/vscode"], "1.91.0");
  assert.match(manifest.dependencies["vscode-languageclient"], /^11\./);
  const props = manifest.contributes.configuration.properties;
  assert.equal(props["citeline.server.command"].default, "citeline");
  assert.deepEqual(props["citeline.server.args"].default, ["lsp"]);
  assert.equal(props["citeline.profile"].default, "recall");
  assert.equal(props["citeline.skipInvalid"].default, false);
  for (const name of ["max_files", "max_tokens", "max_sections", "max_total_bytes", "max_file_bytes"]) {
    assert.ok(props[`citeline.limits.${name}`], name);
  }
});
