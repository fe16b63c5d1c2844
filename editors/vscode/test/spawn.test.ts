import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";

import { escapeArgument, escapeCommand, isBatchFile, serverLaunch } from "../src/spawn";

const CMD = "C:\\Program Files\\citeline env\\Scripts\\citeline.cmd";

describe("serverLaunch", () => {
  test("a .cmd on Windows runs through cmd.exe, quoted, verbatim", () => {
    const launch = serverLaunch(CMD, ["lsp"], "win32", "C:\\Windows\\system32\\cmd.exe");
    assert.equal(launch.command, "C:\\Windows\\system32\\cmd.exe");
    assert.equal(launch.windowsVerbatimArguments, true);
    assert.deepEqual(launch.args, [
      "/d",
      "/s",
      "/c",
      '"C:\\Program^ Files\\citeline^ env\\Scripts\\citeline.cmd ^^^"lsp^^^""',
    ]);
  });

  test("without ComSpec, cmd.exe from the PATH; .BAT in any case", () => {
    const launch = serverLaunch("D:\\tools\\CITELINE.BAT", ["lsp"], "win32", undefined);
    assert.equal(launch.command, "cmd.exe");
    assert.equal(launch.args[3], '"D:\\tools\\CITELINE.BAT ^^^"lsp^^^""');
  });

  test("an .exe on Windows, and every command elsewhere, is spawned as it is", () => {
    const exe = "C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Scripts\\citeline.exe";
    assert.deepEqual(serverLaunch(exe, ["lsp"], "win32"), { command: exe, args: ["lsp"] });
    assert.deepEqual(serverLaunch("python", ["-m", "citeline", "lsp"], "win32"), {
      command: "python",
      args: ["-m", "citeline", "lsp"],
    });
    assert.deepEqual(serverLaunch("/opt/x/citeline.cmd", ["lsp"], "linux"), {
      command: "/opt/x/citeline.cmd",
      args: ["lsp"],
    });
    assert.deepEqual(serverLaunch("citeline", ["lsp"], "darwin"), { command: "citeline", args: ["lsp"] });
  });

  test("the arguments are copied, not shared", () => {
    const args = ["lsp"];
    const launch = serverLaunch("citeline", args, "linux");
    launch.args.push("x");
    assert.deepEqual(args, ["lsp"]);
  });
});

describe("escaping for cmd.exe (cross-spawn's rules)", () => {
  test("batch files", () => {
    assert.ok(isBatchFile("a.cmd") && isBatchFile("A.Bat ") && !isBatchFile("a.exe") && !isBatchFile("cmd"));
  });

  test("metacharacters cannot start another command", () => {
    // & | < > ^ and quotes are escaped; the argument stays one argument
    assert.equal(escapeArgument("a&b", false), '^"a^&b^"');
    assert.equal(escapeArgument("a&b", true), '^^^"a^^^&b^^^"');
    assert.equal(escapeArgument('say "hi"', false), '^"say^ \\^"hi\\^"^"');
    assert.equal(escapeArgument("C:\\dir\\", false), '^"C:\\dir\\\\^"'); // a trailing \ doubled
    assert.equal(escapeArgument("%PATH%", false), '^"^%PATH^%^"');
    assert.equal(escapeCommand("C:\\a (x86)\\b.cmd"), "C:\\a^ ^(x86^)\\b.cmd");
  });

  test("what a POSIX shell reads back from the escaped argument (the MSVCRT layer)", () => {
    // Without cmd.exe here, check the inner layer: the quoted argument, with cmd's ^
    // escapes removed, parses back to the original under MSVCRT rules, which /bin/sh's
    // double-quote rules match for backslashes before quotes.
    const dir = mkdtempSync(join(tmpdir(), "citeline-spawn-"));
    const echo = join(dir, "echo.sh");
    writeFileSync(echo, '#!/bin/sh\nprintf "%s\\n" "$@"\n');
    chmodSync(echo, 0o755);
    for (const arg of ['say "hi"', "C:\\dir\\", "plain", 'back\\"slash']) {
      const quoted = escapeArgument(arg, false).replace(/\^(.)/g, "$1");
      const got = spawnSync("/bin/sh", ["-c", `${echo} ${quoted}`], { encoding: "utf8" });
      assert.equal(got.stdout, `${arg}\n`, arg);
    }
  });
});
