/**
 * citeline for VS Code: starts `citeline lsp` for Markdown workspaces and adds
 * "citeline: Search Sections", "citeline: Search Lines" (QuickPicks for quick
 * jumps), the Citeline results view (resultsView.ts) and "citeline: Restart
 * Server". Everything that can be tested without VS Code lives in the pure
 * modules (offsets, mapping, results, resultsTree, latest, settings, errors);
 * this file is the glue.
 */

import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  ExecutableOptions,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  WorkDoneProgress,
} from "vscode-languageclient/node";

import { describeError, isStartFailureReport, rejectsLabels, startFailureMessage } from "./errors";
import { LiveQuery } from "./latest";
import {
  LinesMode,
  LinesResult,
  SearchHit,
  SearchResult,
  buildLinesRequest,
  buildSearchRequest,
  bundlePathSegments,
  escapeIconsWithSpans,
  hitLabels,
  hitToItemFields,
  isBlankQuery,
  lineMatchToItemFields,
  linesSummary,
  searchSummary,
  withoutLabels,
  LineMatch,
} from "./mapping";
import { codePointColumnToUtf16 } from "./offsets";
import { showTarget } from "./open";
import type { LinesQuery } from "./results";
import { columnTarget, sectionTarget } from "./results";
import type { ResultNode } from "./resultsTree";
import { ResultsView } from "./resultsView";
import type { SemanticQuery, WorkDoneValue } from "./semantic";
import { buildSemanticRequest } from "./semantic";
import { ClientSettings, needsRestart, readSettings, serverSettingsChanged } from "./settings";
import { serverLaunch } from "./spawn";

const SECTION = "citeline";

let output: vscode.LogOutputChannel;
let settings: ClientSettings;
let client: LanguageClient | undefined;
let results: ResultsView | undefined;
let starting: Promise<LanguageClient | undefined> | undefined;
/** Last failed start: requests within RETRY_AFTER_MS fail fast instead of respawning (and re-toasting). */
let lastFailure: { at: number; message: string } | undefined;
const RETRY_AFTER_MS = 10_000;

// ------------------------------------------------------------- activation

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("citeline", { log: true });
  context.subscriptions.push(output);
  settings = currentSettings();

  const view = new ResultsView({
    execute: (command, arg, signal, onProgress) =>
      command === "citeline.search" ? searchCommand(arg, signal) : executeServerCommand(command, arg, signal, onProgress),
    describe: (error) => {
      const d = describeError(error);
      if (d.cancelled) return undefined;
      output.error(`${d.message}${d.details !== undefined ? ` ${JSON.stringify(d.details)}` : ""}`);
      return d.message;
    },
    // Unknown until the server answered initialize: then its list decides.
    supports: (command) => client?.initializeResult?.capabilities.executeCommandProvider?.commands.includes(command) ?? true,
  });
  results = view;
  context.subscriptions.push(
    view,
    vscode.commands.registerCommand("citeline.ui.searchSections", () => searchSections()),
    vscode.commands.registerCommand("citeline.ui.searchLines", () => searchLines()),
    vscode.commands.registerCommand("citeline.ui.searchInView", () => searchInView()),
    vscode.commands.registerCommand("citeline.ui.searchLinesInView", () => searchLinesInView()),
    vscode.commands.registerCommand("citeline.ui.searchSemantic", () => searchSemanticInView()),
    vscode.commands.registerCommand("citeline.ui.refreshResults", () => view.refresh()),
    vscode.commands.registerCommand("citeline.ui.clearResults", () => view.clear()),
    vscode.commands.registerCommand("citeline.ui.openResult", (node: ResultNode) => view.open(node)),
    vscode.commands.registerCommand("citeline.ui.reanchorResult", (node: ResultNode) => view.reanchor(node)),
    vscode.commands.registerCommand("citeline.ui.verifyResults", () => view.verify()),
    // A hit's file may have changed since the search: check the shown rows after a save,
    // and when the window gets focus back (an edit made in another program, a git checkout).
    vscode.workspace.onDidSaveTextDocument((doc) => {
      if (doc.languageId === "markdown") view.verifySoon();
    }),
    vscode.window.onDidChangeWindowState((state) => {
      if (state.focused) view.verifySoon();
    }),
    vscode.commands.registerCommand("citeline.ui.restartServer", () => restartServer()),
    vscode.commands.registerCommand("citeline.ui.showOutput", () => output.show(true)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SECTION)) void onConfigurationChanged();
    }),
    { dispose: () => void stopClient() },
  );

  void ensureClient();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

function currentSettings(): ClientSettings {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const s = readSettings((key) => cfg.get(key));
  for (const p of s.problems) output.warn(p);
  return s;
}

async function onConfigurationChanged(): Promise<void> {
  const before = settings;
  settings = currentSettings();
  if (needsRestart(before, settings)) {
    output.info("Server command changed: restarting the citeline server.");
    await restartServer();
    return;
  }
  if (serverSettingsChanged(before, settings) && client?.isRunning()) {
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { [SECTION]: settings.server },
    });
  }
}

// ----------------------------------------------------------------- client

/**
 * The language client, without its generic toast for a server that did not start: the
 * extension tells the user itself, once, what failed and what to do (ensureClient). The
 * report still goes to the output channel.
 */
class CitelineClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    super.error(message, data, isStartFailureReport(message) ? false : showNotification);
  }
}

function createClient(): LanguageClient {
  // A .cmd/.bat on Windows goes through cmd.exe, quoted (spawn.ts: Node refuses it otherwise).
  const launch = serverLaunch(settings.command, settings.args);
  const serverOptions: ServerOptions = {
    command: launch.command,
    args: launch.args,
    // (vscode-languageclient hands these options to child_process.spawn as they are)
    options: {
      env: { ...process.env },
      ...(launch.windowsVerbatimArguments ? { windowsVerbatimArguments: true } : {}),
    } as ExecutableOptions,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "markdown" },
      { scheme: "untitled", language: "markdown" },
    ],
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: () => settings.server,
    // A server that fails to initialize is not retried: ensureClient reports it.
    initializationFailedHandler: () => false,
    middleware: {
      workspace: {
        // Answer the server's pull requests for our section from the mapped settings.
        configuration: async (params, token, next) => {
          const fromVsCode = await next(params, token);
          if (!Array.isArray(fromVsCode)) return fromVsCode;
          return params.items.map((item, i) => (item.section === SECTION ? settings.server : fromVsCode[i]));
        },
      },
    },
  };
  return new CitelineClient("citeline", "citeline", serverOptions, clientOptions);
}

/** The running client, starting it when needed; undefined (after telling the user) when it cannot start. */
async function ensureClient(): Promise<LanguageClient | undefined> {
  // A client that is starting (or restarting after a crash) queues requests itself.
  if (client !== undefined && client.state !== State.Stopped) return client;
  if (starting !== undefined) return starting;
  if (lastFailure !== undefined && Date.now() - lastFailure.at < RETRY_AFTER_MS) return undefined;
  starting = (async () => {
    if (client !== undefined) {
      const old = client;
      client = undefined;
      try {
        await old.dispose(2000);
      } catch {
        // already stopped
      }
    }
    let c: LanguageClient | undefined;
    try {
      c = createClient();
      await c.start();
      client = c;
      lastFailure = undefined;
      output.info(`citeline server started: ${[settings.command, ...settings.args].join(" ")}`);
      return c;
    } catch (error) {
      const message = startFailureMessage(settings.command, error);
      lastFailure = { at: Date.now(), message };
      output.error(message);
      try {
        await c?.dispose(1000);
      } catch {
        // never started
      }
      void vscode.window.showErrorMessage(message, "Open Settings", "Show Log").then((choice) => {
        if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "citeline.server");
        if (choice === "Show Log") output.show(true);
      });
      return undefined;
    } finally {
      starting = undefined;
    }
  })();
  return starting;
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c === undefined) return;
  try {
    await c.dispose(2000);
  } catch (error) {
    output.warn(`Stopping the citeline server: ${describeError(error).message}`);
  }
}

async function restartServer(): Promise<void> {
  if (starting !== undefined) await starting;
  lastFailure = undefined;
  labelsUnsupported = false; // perhaps an upgraded server
  await stopClient();
  settings = currentSettings();
  const c = await ensureClient();
  if (c !== undefined) void vscode.window.setStatusBarMessage("citeline: server restarted", 3000);
}

let progressTokens = 0;

/** The server rejected `labels` (a citeline older than the extension): searches go without it. */
let labelsUnsupported = false;

/**
 * citeline.search with the extension's `labels: true`; a server that does not know the key
 * is asked again without it, once, and from then on until it restarts (its hits are then
 * named by heading or path).
 */
async function searchCommand<T>(arg: object, signal?: AbortSignal): Promise<T> {
  if (labelsUnsupported) return executeServerCommand<T>("citeline.search", withoutLabels(arg), signal);
  try {
    return await executeServerCommand<T>("citeline.search", arg, signal);
  } catch (error) {
    if (!rejectsLabels(error)) throw error;
    labelsUnsupported = true;
    output.warn("This citeline server does not name hits (`labels`): the text before a file's first heading is shown by its path. Upgrade citeline to match the extension.");
    return executeServerCommand<T>("citeline.search", withoutLabels(arg), signal);
  }
}

/**
 * Runs a server command. With `onProgress`, the request carries a workDoneToken of its own
 * (the server reports a long request's stages on it, e.g. a first search by meaning
 * embedding its sections) and the $/progress notifications for that token go there.
 */
async function executeServerCommand<T>(command: string, arg: object, signal?: AbortSignal, onProgress?: (value: WorkDoneValue) => void): Promise<T> {
  const c = await ensureClient();
  if (c === undefined) throw new Error(lastFailure?.message ?? "the citeline server is not running");
  const cts = new vscode.CancellationTokenSource();
  const onAbort = () => cts.cancel();
  signal?.addEventListener("abort", onAbort);
  let token: string | undefined;
  let listening: vscode.Disposable | undefined;
  if (onProgress !== undefined) {
    progressTokens += 1;
    token = `citeline-${process.pid}-${progressTokens}`;
    listening = c.onProgress(WorkDoneProgress.type, token, (value) => onProgress(value as WorkDoneValue));
  }
  try {
    const params = token !== undefined ? { command, arguments: [arg], workDoneToken: token } : { command, arguments: [arg] };
    return (await c.sendRequest(ExecuteCommandRequest.type, params, cts.token)) as T;
  } finally {
    listening?.dispose();
    signal?.removeEventListener("abort", onAbort);
    cts.dispose();
  }
}

// ------------------------------------------------------------------- roots

/** The workspace folder to search: the active editor's, else the first. */
function chooseRoot(): vscode.WorkspaceFolder | undefined {
  const folders = vscode.workspace.workspaceFolders;
  if (folders === undefined || folders.length === 0) return undefined;
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active !== undefined) {
    const f = vscode.workspace.getWorkspaceFolder(active);
    if (f !== undefined) return f;
  }
  return folders[0];
}

function requireRoot(): vscode.WorkspaceFolder | undefined {
  const root = chooseRoot();
  if (root === undefined) {
    void vscode.window.showErrorMessage("citeline: open a folder (a Markdown workspace) to search it.");
  }
  return root;
}

// -------------------------------------------------------------- open file

async function openRange(root: vscode.Uri, path: string, startLine: number, endLine: number, character?: (line: string) => number): Promise<void> {
  let uri: vscode.Uri;
  try {
    uri = vscode.Uri.joinPath(root, ...bundlePathSegments(path));
  } catch (error) {
    void vscode.window.showErrorMessage(`citeline: cannot open ${path}: ${describeError(error).message}`);
    return;
  }
  try {
    const doc = await vscode.workspace.openTextDocument(uri);
    // Lines as the server counts them (LF only; the editor also breaks at a lone CR).
    const text = doc.getText();
    if (character !== undefined) {
      await showTarget(doc, columnTarget(text, startLine, character), { preview: false, reveal: vscode.TextEditorRevealType.InCenterIfOutsideViewport });
    } else {
      // The section selected, the cursor on its heading: the heading stays in view.
      await showTarget(doc, sectionTarget(text, startLine, endLine), { preview: false, reveal: vscode.TextEditorRevealType.AtTop });
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`citeline: cannot open ${path}: ${describeError(error).message}`);
  }
}

// ------------------------------------------------------- error reporting

function reporter(): (error: unknown) => string | undefined {
  const shown = new Set<string>();
  return (error) => {
    const d = describeError(error);
    if (d.cancelled) return undefined;
    output.error(`${d.message}${d.details !== undefined ? ` ${JSON.stringify(d.details)}` : ""}`);
    // Once per picker session: typing on would otherwise repeat the same toast.
    if (!shown.has(d.message)) {
      shown.add(d.message);
      void vscode.window.showErrorMessage(d.message);
    }
    return d.message;
  };
}

interface MessageItem extends vscode.QuickPickItem {
  kind?: undefined;
  message: true;
}

function messageItem(text: string, icon: string): MessageItem {
  return { label: `$(${icon}) ${escapeIconsWithSpans(text, []).text}`, alwaysShow: true, message: true };
}

/** Turns off the QuickPick's own re-sorting where VS Code supports it (proposed API). */
function keepServerOrder(qp: vscode.QuickPick<vscode.QuickPickItem>): void {
  qp.matchOnDescription = false;
  qp.matchOnDetail = false;
  (qp as unknown as { sortByLabel?: boolean }).sortByLabel = false;
}

// -------------------------------------------------------- Search Sections

interface HitItem extends vscode.QuickPickItem {
  hit: SearchHit;
  root: vscode.Uri;
  /**
   * UTF-16 ranges of the match spans in label and detail. The stable QuickPick
   * API cannot render them (only TreeItemLabel has highlights); they are kept
   * here, in the TreeItemLabel tuple shape, for VS Code versions that do.
   */
  highlights: { label: [number, number][]; detail: [number, number][] };
}

async function searchSections(): Promise<void> {
  const folder = requireRoot();
  if (folder === undefined) return;
  const root = folder.uri;
  const report = reporter();
  const qp = vscode.window.createQuickPick<HitItem | MessageItem>();
  qp.title = "citeline: Search Sections";
  qp.placeholder = `Search the Markdown sections of ${folder.name} (profile ${settings.server.profile})`;
  qp.buttons = [VIEW_BUTTON()];
  keepServerOrder(qp as vscode.QuickPick<vscode.QuickPickItem>);
  qp.onDidTriggerButton(() => {
    if (isBlankQuery(qp.value)) return;
    const query = qp.value;
    qp.hide();
    void showSearchInView(query, folder);
  });

  const live = new LiveQuery<string, SearchResult>({
    fetch: (query, signal) =>
      searchCommand<SearchResult>(
        buildSearchRequest(query, { limit: settings.searchLimit, profile: settings.server.profile, root: root.toString(), labels: true }),
        signal,
      ),
    isEmpty: isBlankQuery,
    onEmpty: () => {
      qp.items = [];
      qp.title = "citeline: Search Sections";
    },
    onBusy: (busy) => (qp.busy = busy),
    onResult: (_query, result) => {
      const hits = Array.isArray(result?.hits) ? result.hits : [];
      qp.title = `citeline: Search Sections — ${searchSummary({ ...result, hits })}`;
      const names = hitLabels(result);
      qp.items = hits.length === 0 ? [messageItem("No section matches.", "info")] : hits.map((hit, i) => hitItem(hit, root, names[i]));
    },
    onError: (_query, error) => {
      const message = report(error);
      if (message !== undefined) qp.items = [messageItem(message, "error")];
    },
  });

  qp.onDidChangeValue((value) => live.update(value));
  qp.onDidAccept(() => {
    const item = qp.selectedItems[0] ?? qp.activeItems[0];
    if (item === undefined || "message" in item) return;
    qp.hide();
    const { target } = hitToItemFields(item.hit);
    void openRange(item.root, target.path, target.startLine, target.endLine);
  });
  qp.onDidHide(() => {
    live.dispose();
    qp.dispose();
  });
  qp.show();
  void ensureClient();
}

function hitItem(hit: SearchHit, root: vscode.Uri, name: string | undefined): HitItem {
  const f = hitToItemFields(hit, { name });
  const label = escapeIconsWithSpans(f.label, f.labelHighlights);
  const detail = escapeIconsWithSpans(f.detail, f.detailHighlights);
  return {
    label: label.text,
    description: f.description,
    detail: detail.text,
    alwaysShow: true,
    hit,
    root,
    highlights: {
      label: label.spans.map((s) => [s.start, s.end]),
      detail: detail.spans.map((s) => [s.start, s.end]),
    },
  };
}

// ----------------------------------------------------------- Search Lines

interface LineItem extends vscode.QuickPickItem {
  match: LineMatch;
  root: vscode.Uri;
}

async function searchLines(): Promise<void> {
  const folder = requireRoot();
  if (folder === undefined) return;
  const root = folder.uri;
  const report = reporter();
  let mode: LinesMode = "exact";
  let caseSensitive = true;

  const qp = vscode.window.createQuickPick<LineItem | MessageItem>();
  keepServerOrder(qp as vscode.QuickPick<vscode.QuickPickItem>);
  const regexButton = (): vscode.QuickInputButton => ({
    iconPath: new vscode.ThemeIcon("regex"),
    tooltip: mode === "regex" ? "Regular expression (RE2): on — click for exact text" : "Exact text — click for a regular expression (RE2)",
  });
  const caseButton = (): vscode.QuickInputButton => ({
    iconPath: new vscode.ThemeIcon("case-sensitive"),
    tooltip: caseSensitive ? "Case sensitive: on — click to ignore case" : "Ignoring case — click for case sensitive",
  });
  const refreshChrome = (summary?: string) => {
    const flags = `${mode}${caseSensitive ? "" : ", ignore case"}`;
    qp.title = `citeline: Search Lines (${flags})${summary ? ` — ${summary}` : ""}`;
    qp.placeholder = mode === "regex" ? "RE2 regular expression, matched line by line" : "Text to find, matched line by line";
    qp.buttons = [regexButton(), caseButton(), VIEW_BUTTON()];
  };
  refreshChrome();

  const live = new LiveQuery<string, LinesResult>({
    fetch: (pattern, signal) =>
      executeServerCommand<LinesResult>(
        "citeline.lines",
        buildLinesRequest(pattern, { mode, caseSensitive, limit: settings.linesLimit, context: 0, root: root.toString() }),
        signal,
      ),
    isEmpty: (p) => p.length === 0,
    onEmpty: () => {
      qp.items = [];
      refreshChrome();
    },
    onBusy: (busy) => (qp.busy = busy),
    onResult: (_pattern, result) => {
      const matches = Array.isArray(result?.matches) ? result.matches : [];
      refreshChrome(linesSummary({ ...result, matches }));
      qp.items = matches.length === 0 ? [messageItem("No line matches.", "info")] : matches.map((m) => lineItem(m, root));
    },
    onError: (_pattern, error) => {
      const message = report(error);
      if (message !== undefined) qp.items = [messageItem(message, "error")];
    },
  });

  qp.onDidTriggerButton((button) => {
    if (button === VIEW_BUTTON()) {
      if (qp.value.length === 0) return;
      const query: LinesQuery = { pattern: qp.value, mode, caseSensitive };
      qp.hide();
      void showLinesInView(query, folder);
      return;
    }
    if (button.iconPath instanceof vscode.ThemeIcon && button.iconPath.id === "regex") {
      mode = mode === "exact" ? "regex" : "exact";
    } else {
      caseSensitive = !caseSensitive;
    }
    refreshChrome();
    void live.flush(qp.value);
  });
  qp.onDidChangeValue((value) => live.update(value));
  qp.onDidAccept(() => {
    const item = qp.selectedItems[0] ?? qp.activeItems[0];
    if (item === undefined || "message" in item) return;
    qp.hide();
    const { target } = lineMatchToItemFields(item.match);
    void openRange(item.root, target.path, target.line, target.line, (text) => codePointColumnToUtf16(text, target.codePointColumn));
  });
  qp.onDidHide(() => {
    live.dispose();
    qp.dispose();
  });
  qp.show();
  void ensureClient();
}

function lineItem(m: LineMatch, root: vscode.Uri): LineItem {
  const f = lineMatchToItemFields(m);
  return {
    label: escapeIconsWithSpans(f.label, []).text,
    description: escapeIconsWithSpans(f.description, []).text,
    alwaysShow: true,
    match: m,
    root,
  };
}

// ------------------------------------------------------------ results view

let viewButton: vscode.QuickInputButton | undefined;

/** The pickers' button that sends their query to the results view (one object: buttons are compared by identity). */
function VIEW_BUTTON(): vscode.QuickInputButton {
  viewButton ??= {
    iconPath: new vscode.ThemeIcon("list-tree"),
    tooltip: "Show the results in the Citeline view (stays open, highlights the matches)",
  };
  return viewButton;
}

function sectionRequest(query: string, root: string): object {
  return buildSearchRequest(query, { limit: settings.searchLimit, profile: settings.server.profile, root, labels: true });
}

function linesRequest(query: LinesQuery, root: string): object {
  return buildLinesRequest(query.pattern, { mode: query.mode, caseSensitive: query.caseSensitive, limit: settings.linesLimit, context: 0, root });
}

function semanticRequest(query: SemanticQuery, root: string): object {
  return buildSemanticRequest(query, { limit: settings.searchLimit, root });
}

async function showSearchInView(query: string, folder: vscode.WorkspaceFolder): Promise<void> {
  if (results === undefined) return;
  await results.focus();
  await results.search(query, folder, sectionRequest, settings.server.profile);
}

async function showLinesInView(query: LinesQuery, folder: vscode.WorkspaceFolder): Promise<void> {
  if (results === undefined) return;
  await results.focus();
  await results.lines(query, folder, linesRequest);
}

/** Asks for a query and shows its sections in the results view. */
async function searchInView(): Promise<void> {
  const folder = requireRoot();
  if (folder === undefined) return;
  const query = await vscode.window.showInputBox({
    title: "citeline: Search Sections (results view)",
    prompt: `Search the Markdown sections of ${folder.name} (profile ${settings.server.profile})`,
    value: results?.lastSearch,
    validateInput: (v) => (isBlankQuery(v) ? "Type a question or a few words." : undefined),
  });
  if (query === undefined || isBlankQuery(query)) return;
  void ensureClient();
  await showSearchInView(query, folder);
}

/** Asks for a text (or, with the regex button, an RE2 pattern) and shows the matching lines in the view. */
async function searchLinesInView(): Promise<void> {
  const folder = requireRoot();
  if (folder === undefined) return;
  const previous = results?.lastLines;
  let mode: LinesMode = previous?.mode ?? "exact";
  let caseSensitive = previous?.caseSensitive ?? true;
  const box = vscode.window.createInputBox();
  box.value = previous?.pattern ?? "";
  const chrome = () => {
    box.title = `citeline: Search Lines (results view) — ${mode}${caseSensitive ? "" : ", ignore case"}`;
    box.prompt = mode === "regex" ? "RE2 regular expression, matched line by line" : "Text to find, matched line by line";
    box.buttons = [
      { iconPath: new vscode.ThemeIcon("regex"), tooltip: mode === "regex" ? "Regular expression: on" : "Exact text — click for a regular expression" },
      { iconPath: new vscode.ThemeIcon("case-sensitive"), tooltip: caseSensitive ? "Case sensitive: on" : "Ignoring case" },
    ];
  };
  chrome();
  box.onDidTriggerButton((button) => {
    if (button.iconPath instanceof vscode.ThemeIcon && button.iconPath.id === "regex") mode = mode === "exact" ? "regex" : "exact";
    else caseSensitive = !caseSensitive;
    chrome();
  });
  box.onDidAccept(() => {
    if (box.value.length === 0) return;
    const query: LinesQuery = { pattern: box.value, mode, caseSensitive };
    box.hide();
    void ensureClient();
    void showLinesInView(query, folder);
  });
  box.onDidHide(() => box.dispose());
  box.show();
}

/**
 * Asks for a question in plain words (any language) and shows the sections that answer it
 * by meaning in the results view, each with its score (SPEC §15; the server needs its
 * semantic extra, and says so otherwise).
 */
async function searchSemanticInView(): Promise<void> {
  const folder = requireRoot();
  if (folder === undefined) return;
  const threshold = settings.semanticThreshold;
  const query = await vscode.window.showInputBox({
    title: "citeline: Search by Meaning (results view)",
    prompt: `Ask in plain words, in any language: the sections of ${folder.name} that answer it, scored 0–1 (shown from ${threshold}, setting citeline.semanticThreshold)`,
    value: results?.lastSemantic?.query,
    validateInput: (v) => (isBlankQuery(v) ? "Type a question or a few words." : undefined),
  });
  if (query === undefined || isBlankQuery(query) || results === undefined) return;
  void ensureClient();
  await results.focus();
  await results.semantic({ query, threshold }, folder, semanticRequest);
}
