import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { needsRestart, readSettings, serverSettingsChanged } from "../src/settings";

const getter = (values: Record<string, unknown>) => (key: string) => values[key];

/** What VS Code returns for untouched settings (the package.json defaults). */
const DEFAULTS: Record<string, unknown> = {
  "server.command": "citeline",
  "server.args": ["lsp"],
  profile: "recall",
  skipInvalid: true,
  unsaved: false,
  useIgnore: true,
  reserved: null,
  "symbols.cap": 100,
  "symbols.listCap": 1000,
  "search.limit": 20,
  "lines.limit": 100,
  "limits.max_files": null,
  "limits.max_tokens": null,
};

describe("readSettings", () => {
  test("defaults map to the server's settings object", () => {
    const s = readSettings(getter(DEFAULTS));
    assert.equal(s.command, "citeline");
    assert.deepEqual(s.args, ["lsp"]);
    assert.deepEqual(s.server, {
      limits: {},
      use_ignore: true,
      skip_invalid: true,
      symbols: { cap: 100, list_cap: 1000 },
      profile: "recall",
    });
    assert.deepEqual(s.problems, []);
  });

  test("backgroundEmbedding off is sent as background_embedding: false, on as nothing", () => {
    assert.equal(readSettings(getter({ ...DEFAULTS, backgroundEmbedding: true })).server.background_embedding, undefined);
    const off = readSettings(getter({ ...DEFAULTS, backgroundEmbedding: false }));
    assert.equal(off.server.background_embedding, false);
    assert.deepEqual(off.problems, []);
    const bad = readSettings(getter({ ...DEFAULTS, backgroundEmbedding: "no" }));
    assert.equal(bad.server.background_embedding, undefined);
    assert.equal(bad.problems.length, 1);
  });

  test("nothing set at all gives the same defaults", () => {
    const s = readSettings(() => undefined);
    assert.equal(s.command, "citeline");
    assert.equal(s.server.profile, "recall");
    assert.equal(s.searchLimit, 20);
    assert.equal(s.linesLimit, 100);
  });

  test("limits, reserved, profile and skipInvalid are passed through in server spelling", () => {
    const s = readSettings(
      getter({
        ...DEFAULTS,
        "limits.max_files": 50000,
        "limits.max_tokens": 5000000,
        reserved: ["AGENTS.md"],
        profile: "contract",
        skipInvalid: false,
        useIgnore: false,
        "symbols.listCap": 20,
      }),
    );
    assert.deepEqual(s.server, {
      limits: { max_files: 50000, max_tokens: 5000000 },
      reserved: ["AGENTS.md"],
      use_ignore: false,
      skip_invalid: false,
      symbols: { cap: 100, list_cap: 20 },
      profile: "contract",
    });
  });

  test("unsaved: sent as true when on, left out when off (absent means off)", () => {
    const on = readSettings(getter({ ...DEFAULTS, unsaved: true }));
    assert.equal(on.server.unsaved, true);
    const off = readSettings(getter({ ...DEFAULTS, unsaved: false }));
    assert.equal("unsaved" in off.server, false);
    assert.equal("unsaved" in readSettings(getter(DEFAULTS)).server, false);
    // Turning it on or off changes the server settings, so they are sent again.
    assert.equal(serverSettingsChanged(off, on), true);
    assert.equal(serverSettingsChanged(on, off), true);
    assert.equal(needsRestart(off, on), false);
    const bad = readSettings(getter({ ...DEFAULTS, unsaved: "yes" }));
    assert.equal("unsaved" in bad.server, false);
    assert.deepEqual(bad.problems, ["citeline.unsaved must be true or false; using false."]);
  });

  test("globs: sent as the server setting `globs` when any are given", () => {
    const on = readSettings(getter({ ...DEFAULTS, globs: ["!old/**", "*.md"] }));
    assert.deepEqual(on.server.globs, ["!old/**", "*.md"]);
    assert.equal("globs" in readSettings(getter({ ...DEFAULTS, globs: [] })).server, false);
    assert.equal("globs" in readSettings(getter(DEFAULTS)).server, false);
    assert.equal(serverSettingsChanged(readSettings(getter(DEFAULTS)), on), true);
    const bad = readSettings(getter({ ...DEFAULTS, globs: "!old/**" }));
    assert.equal("globs" in bad.server, false);
    assert.deepEqual(bad.problems, ["citeline.globs must be an array of globs; ignored."]);
  });

  test("bad values are ignored and reported", () => {
    const s = readSettings(
      getter({
        "server.command": "  ",
        "server.args": "lsp",
        "limits.max_files": -3,
        "limits.max_tokens": 2.5,
        profile: "fast",
        skipInvalid: "yes",
        "search.limit": 1000,
      }),
    );
    assert.equal(s.command, "citeline");
    assert.deepEqual(s.args, ["lsp"]);
    assert.deepEqual(s.server.limits, {});
    assert.equal(s.server.profile, "recall");
    assert.equal(s.server.skip_invalid, true);
    assert.equal(s.searchLimit, 20);
    assert.equal(s.problems.length, 7);
  });

  test("profile hybrid and the threshold of a search by meaning", () => {
    const s = readSettings(getter({ ...DEFAULTS, profile: "hybrid", semanticThreshold: 0.7 }));
    assert.equal(s.server.profile, "hybrid");
    assert.equal(s.semanticThreshold, 0.7);
    assert.deepEqual(s.problems, []);
    // 0 and 1 are thresholds too (SPEC §15: [0, 1])
    assert.equal(readSettings(getter({ ...DEFAULTS, semanticThreshold: 0 })).semanticThreshold, 0);
    assert.equal(readSettings(getter({ ...DEFAULTS, semanticThreshold: 1 })).semanticThreshold, 1);
    // unset: SPEC §15's default; the threshold is the extension's, not a server setting
    const d = readSettings(getter(DEFAULTS));
    assert.equal(d.semanticThreshold, 0.5);
    assert.equal("semanticThreshold" in d.server, false);
    for (const bad of [1.5, -0.1, "0.5", Number.NaN]) {
      const r = readSettings(getter({ ...DEFAULTS, semanticThreshold: bad }));
      assert.equal(r.semanticThreshold, 0.5, String(bad));
      assert.deepEqual(r.problems, ["citeline.semanticThreshold must be a number from 0 to 1; using 0.5."]);
    }
    const wrong = readSettings(getter({ ...DEFAULTS, profile: "semantic" }));
    assert.equal(wrong.server.profile, "recall");
    assert.deepEqual(wrong.problems, ['citeline.profile must be "recall", "contract" or "hybrid"; using "recall".']);
  });

  test("embedding: an object sent as the server setting `embedding` when set", () => {
    const none = readSettings(getter({ ...DEFAULTS, embedding: {} }));
    assert.equal(none.server.embedding, undefined);
    const ollama = { url: "http://localhost:11434/v1", model: "bge-m3" };
    const s = readSettings(getter({ ...DEFAULTS, embedding: ollama }));
    assert.deepEqual(s.server.embedding, ollama);
    assert.deepEqual(s.problems, []);
    const bad = readSettings(getter({ ...DEFAULTS, embedding: "http://localhost:11434/v1" }));
    assert.equal(bad.server.embedding, undefined);
    assert.equal(bad.problems.length, 1);
    assert.match(bad.problems[0], /citeline\.embedding must be an object/);
  });

  test("restart only when the command or its arguments change", () => {
    const a = readSettings(getter(DEFAULTS));
    const b = readSettings(getter({ ...DEFAULTS, profile: "contract" }));
    const c = readSettings(getter({ ...DEFAULTS, "server.command": "/venv/bin/citeline" }));
    const d = readSettings(getter({ ...DEFAULTS, "server.args": ["lsp", "--verbose"] }));
    assert.equal(needsRestart(a, b), false);
    assert.equal(serverSettingsChanged(a, b), true);
    assert.equal(needsRestart(a, c), true);
    assert.equal(needsRestart(a, d), true);
    assert.equal(serverSettingsChanged(a, c), false);
  });
});
