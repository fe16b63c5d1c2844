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

interface CreatedView {
  id: string;
  options: { treeDataProvider: { getChildren(node?: unknown): unknown; getTreeItem(node: unknown): unknown } };
  view: Record<string, unknown>;
}

/** The listeners the extension subscribes to the events that check the results view's rows. */
interface CheckTriggers {
  save: ((doc: { languageId: string }) => void)[];
  windowState: ((state: { focused: boolean }) => void)[];
}

function makeVscodeStub(registered: string[], errors: string[], views: CreatedView[] = [], triggers: CheckTriggers = { save: [], windowState: [] }) {
  const disposable = { dispose() {} };
  // esbuild's ESM interop copies the module's own properties, so the classes and
  // enums the extension uses at activation must really be there.
  class EventEmitter {
    private listeners: ((v: unknown) => void)[] = [];
    event = (listener: (v: unknown) => void) => {
      this.listeners.push(listener);
      return disposable;
    };
    fire(v: unknown) {
      for (const l of this.listeners) l(v);
    }
    dispose() {}
  }
  class ThemeColor {
    constructor(readonly id: string) {}
  }
  class ThemeIcon {
    constructor(readonly id: string) {}
  }
  class TreeItem {
    constructor(
      readonly label: unknown,
      readonly collapsibleState?: number,
    ) {}
  }
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
      createTreeView: (id: string, options: CreatedView["options"]) => {
        const view: Record<string, unknown> = { dispose() {} };
        views.push({ id, options, view });
        return view;
      },
      createTextEditorDecorationType: () => disposable,
      onDidChangeVisibleTextEditors: () => disposable,
      onDidChangeWindowState: (l: CheckTriggers["windowState"][number]) => {
        triggers.windowState.push(l);
        return disposable;
      },
      visibleTextEditors: [],
    },
    workspace: {
      getConfiguration: () => ({ get: () => undefined, has: () => false }),
      onDidChangeConfiguration: () => disposable,
      onDidChangeTextDocument: () => disposable,
      onDidSaveTextDocument: (l: CheckTriggers["save"][number]) => {
        triggers.save.push(l);
        return disposable;
      },
      workspaceFolders: undefined,
    },
  };
  const tolerant = (o: Record<string, unknown>): Record<string, unknown> =>
    new Proxy(o, { get: (t, prop) => (prop in t ? t[prop as string] : prop === "then" ? undefined : anything()) });
  return tolerant({
    commands: tolerant(stub.commands),
    window: tolerant(stub.window),
    workspace: tolerant(stub.workspace),
    EventEmitter,
    ThemeColor,
    ThemeIcon,
    TreeItem,
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    OverviewRulerLane: { Left: 1, Center: 2, Right: 4, Full: 7 },
  });
}

test("the bundle activates and registers exactly the contributed UI commands", async (t) => {
  if (!existsSync(bundle)) return t.skip("dist/extension.js not built; run `npm run build`");
  const registered: string[] = [];
  const errors: string[] = [];
  const views: CreatedView[] = [];
  const triggers: CheckTriggers = { save: [], windowState: [] };
  const stub = makeVscodeStub(registered, errors, views, triggers);
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
    // The results view: one tree view, the one package.json contributes, empty at first.
    assert.deepEqual(
      views.map((v) => v.id),
      ["citeline.results"],
    );
    const contributedViews = (manifest.contributes.views.citeline as { id: string }[]).map((v) => v.id);
    assert.deepEqual(contributedViews, ["citeline.results"]);
    assert.deepEqual(await views[0].options.treeDataProvider.getChildren(), []);
    // The results view's rows are checked after a save and when the window gets focus
    // (issue 53): one listener each; with nothing shown, firing them sends nothing.
    assert.deepEqual([triggers.save.length, triggers.windowState.length], [1, 1]);
    triggers.save[0]({ languageId: "markdown" });
    triggers.windowState[0]({ focused: true });
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
  assert.equal(props["citeline.skipInvalid"].default, true); // the server's editor default (SPEC §11)
  assert.equal(props["citeline.unsaved"].default, false);
  assert.equal(props["citeline.backgroundEmbedding"].default, true); // the server's default
  // The view container, its icon (shipped: not in .vscodeignore) and the view's toolbar.
  const container = manifest.contributes.viewsContainers.activitybar[0];
  assert.equal(container.id, "citeline");
  assert.ok(existsSync(join(root, container.icon)), container.icon);
  const titleMenu = (manifest.contributes.menus["view/title"] as { command: string; when: string }[]).map((m) => m.command);
  assert.deepEqual(titleMenu, [
    "citeline.ui.searchInView",
    "citeline.ui.searchLinesInView",
    "citeline.ui.searchSemantic",
    "citeline.ui.refreshResults",
    "citeline.ui.clearResults",
    "citeline.ui.verifyResults",
  ]);
  // Re-anchor: on the rows whose text moved or changed (resultsTree.ts's `.reanchor`
  // contextValue), inline and in the context menu; not in the palette (it needs a row).
  const rowMenu = manifest.contributes.menus["view/item/context"] as { command: string; when: string; group: string }[];
  assert.deepEqual(
    rowMenu.map((m) => [m.command, m.group]),
    [
      ["citeline.ui.reanchorResult", "inline"],
      ["citeline.ui.reanchorResult", "navigation@1"],
    ],
  );
  for (const m of rowMenu) {
    const rule = /viewItem =~ \/(.*)\/$/.exec(m.when);
    assert.ok(rule, m.when);
    const re = new RegExp(rule[1]);
    assert.ok(re.test("citeline.hit.reanchor") && re.test("citeline.section.reanchor") && re.test("citeline.match.reanchor"));
    assert.ok(!re.test("citeline.hit") && !re.test("citeline.hit.marked"));
  }
  const palette = manifest.contributes.menus.commandPalette as { command: string; when: string }[];
  assert.ok(palette.some((m) => m.command === "citeline.ui.reanchorResult" && m.when === "false"));
  // The profiles the server knows (SPEC §15: hybrid needs its semantic extra, and says so),
  // and the threshold of a search by meaning, SPEC §15's default in [0, 1].
  assert.deepEqual(props["citeline.profile"].enum, ["recall", "contract", "hybrid"]);
  assert.equal(props["citeline.profile"].enumDescriptions.length, 3);
  assert.match(props["citeline.profile"].enumDescriptions[2], /pip install 'citeline\[semantic\]'/);
  assert.deepEqual(
    [props["citeline.semanticThreshold"].default, props["citeline.semanticThreshold"].minimum, props["citeline.semanticThreshold"].maximum],
    [0.5, 0, 1],
  );
  assert.ok(manifest.activationEvents.includes("onView:citeline.results"));
  const ignored = readFileSync(join(root, ".vscodeignore"), "utf8");
  assert.ok(!/^media/m.test(ignored));
  for (const name of ["max_files", "max_tokens", "max_sections", "max_total_bytes", "max_file_bytes"]) {
    assert.ok(props[`citeline.limits.${name}`], name);
  }
});
