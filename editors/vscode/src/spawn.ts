/**
 * How the server command is started on each platform (no `vscode` import: unit-tested).
 *
 * On Windows a `.cmd` or `.bat` (a wrapper script, a version manager's shim) cannot be
 * spawned directly: since Node 18.20.2 / 20.12.2 (CVE-2024-27980) `child_process.spawn`
 * refuses it with `spawn EINVAL` unless it runs through the shell. Node's own `shell: true`
 * joins the command and its arguments with spaces and quotes nothing, so a path with spaces
 * (`C:\Program Files\…`) or an argument holding `&` would be split or run as a second
 * command. Such a command is given to `cmd.exe /d /s /c "…"` here with every part quoted
 * and its metacharacters escaped for cmd.exe, as cross-spawn does (the escaping rules are
 * cross-spawn's, lib/util/escape.js, MIT): twice for a batch file, whose arguments cmd.exe
 * parses once more. An `.exe` (pip's `Scripts\citeline.exe`, `python.exe -m citeline`) and
 * every command elsewhere is spawned as it is.
 */

export interface Launch {
  command: string;
  args: string[];
  /** Node's option: the command line is passed to cmd.exe exactly as built here. */
  windowsVerbatimArguments?: boolean;
}

const META = /([()\][%!^"`<>&|;, *?])/g;

/** A batch file, which Windows runs only through cmd.exe. */
export function isBatchFile(command: string): boolean {
  return /\.(cmd|bat)$/i.test(command.trim());
}

/** The command itself (a path) for cmd.exe: its metacharacters escaped with `^`. */
export function escapeCommand(command: string): string {
  return command.replace(META, "^$1");
}

/**
 * One argument for cmd.exe and then the program's own parser (MSVCRT rules): backslashes
 * before a quote or the end doubled, quotes escaped, the whole quoted, and cmd.exe's
 * metacharacters escaped with `^` (twice for a batch file).
 */
export function escapeArgument(arg: string, batch: boolean): string {
  let out = arg.replace(/(\\*)"/g, '$1$1\\"');
  out = out.replace(/(\\*)$/, "$1$1");
  out = `"${out}"`;
  out = out.replace(META, "^$1");
  if (batch) out = out.replace(META, "^$1");
  return out;
}

/** What to spawn for the server command `command` with `args` on `platform`. */
export function serverLaunch(
  command: string,
  args: readonly string[],
  platform: NodeJS.Platform = process.platform,
  comspec: string | undefined = process.env.ComSpec,
): Launch {
  if (platform !== "win32" || !isBatchFile(command)) return { command, args: [...args] };
  const line = [escapeCommand(command.trim()), ...args.map((a) => escapeArgument(a, true))].join(" ");
  return {
    command: comspec || "cmd.exe",
    args: ["/d", "/s", "/c", `"${line}"`],
    windowsVerbatimArguments: true,
  };
}
