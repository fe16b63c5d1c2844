// The part of VS Code's Markdown extension that answers its language server's `markdown/*`
// requests (extensions/markdown-language-features/src/client/client.ts), for the side-by-side
// benchmark (tests/benchmarks/side_by_side.py). The Python harness is the LSP client; it
// hands each `markdown/*` request to this process as one JSON line on stdin and writes the
// JSON-RPC response this process prints (one line each) back to the server. Node does the
// work VS Code's extension host does in Node: reading files, and markdown-it's parse.
//
// As the extension does:
// - markdown/parse {uri, text?}: markdown-it (html, linkify without fuzzy links, the front
//   matter plugin, the `data-line` source map of every block token) of `text`, else of the
//   file's text (UTF-8, U+2028/U+2029 removed as the extension's engine removes them);
//   the server asks once per document version and keeps what it derives;
// - markdown/fs/readFile {uri}: the bytes as an array of numbers (Array.from(Uint8Array));
// - markdown/fs/stat {uri}: {isDirectory}, or null when it does not exist;
// - markdown/fs/readDirectory {uri}: [[name, {isDirectory}], ...];
// - markdown/findMarkdownFilesInWorkspace: vscode.workspace.findFiles of the Markdown
//   extensions, excluding **/node_modules/** and files.exclude's defaults (.git, .svn, .hg,
//   CVS, .DS_Store, Thumbs.db), links not followed;
// - markdown/fs/watcher/create|delete: accepted (nothing changes during the benchmark).
import { promises as fs, readFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import MarkdownIt from "markdown-it";
import frontMatter from "markdown-it-front-matter";

const roots = process.argv.slice(2);
const EXTENSIONS = new Set([
  "md", "mkd", "mdwn", "mdown", "markdown", "markdn", "mdtxt", "mdtext", "workbook",
]);
const EXCLUDED = new Set([".git", ".svn", ".hg", "CVS", ".DS_Store", "Thumbs.db", "node_modules"]);
const UNICODE_NEWLINES = /\u2028|\u2029/g;

const md = MarkdownIt({ html: true, linkify: true, typographer: false, breaks: false });
md.linkify.set({ fuzzyLink: false });
md.use(frontMatter, () => {});
// The extension's pluginSourceMap: every block token with a line map gets data-line.
md.core.ruler.push("source_map_data_attribute", (state) => {
  for (const token of state.tokens) {
    if (token.map && token.type !== "inline") {
      token.attrSet("data-line", String(token.map[0]));
      token.attrJoin("class", "code-line");
    }
  }
});

function parse(params) {
  let text = params.text;
  if (typeof text !== "string") {
    try {
      text = readFileSync(fileURLToPath(params.uri), "utf8");
    } catch {
      return "[]";
    }
  }
  return JSON.stringify(md.parse(text.replace(UNICODE_NEWLINES, ""), {}));
}

async function findFiles() {
  const found = [];
  async function walk(dir) {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (EXCLUDED.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        await walk(full);
      } else if (entry.isFile()) {
        const ext = path.extname(entry.name).slice(1).toLowerCase();
        if (EXTENSIONS.has(ext)) found.push(pathToFileURL(full).toString());
      }
    }
  }
  for (const root of roots) await walk(root);
  return JSON.stringify(found);
}

async function answer(method, params) {
  switch (method) {
    case "markdown/parse":
      return parse(params);
    case "markdown/fs/readFile":
      return JSON.stringify(Array.from(await fs.readFile(fileURLToPath(params.uri))));
    case "markdown/fs/stat":
      try {
        const st = await fs.stat(fileURLToPath(params.uri));
        return JSON.stringify({ isDirectory: st.isDirectory() });
      } catch {
        return "null";
      }
    case "markdown/fs/readDirectory": {
      const entries = await fs.readdir(fileURLToPath(params.uri), { withFileTypes: true });
      return JSON.stringify(entries.map((e) => [e.name, { isDirectory: e.isDirectory() }]));
    }
    case "markdown/findMarkdownFilesInWorkspace":
      return findFiles();
    default: // the watchers, and anything else: accepted
      return "null";
  }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", async (line) => {
  const { id, method, params } = JSON.parse(line);
  let body;
  try {
    body = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${await answer(method, params ?? {})}}`;
  } catch (err) {
    const error = { code: -32603, message: String(err?.message ?? err) };
    body = JSON.stringify({ jsonrpc: "2.0", id, error });
  }
  process.stdout.write(body + "\n");
});
lines.on("close", () => process.exit(0));
