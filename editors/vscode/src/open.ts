/**
 * Showing a result in an editor: the glue between an OpenTarget (results.ts, computed
 * without VS Code) and VS Code's editor.
 */

import * as vscode from "vscode";

import type { OpenTarget } from "./results";

/**
 * Shows `doc` with the target's selection and reveals its range. showTextDocument takes
 * its `selection` option as a Range, so a selection whose cursor is at its start (a
 * section selected from its end back to its heading) would arrive with the cursor at the
 * end: the editor opens at the cursor, and the selection, with its direction, is set on
 * the editor afterwards.
 */
export async function showTarget(
  doc: vscode.TextDocument,
  target: OpenTarget,
  options: { preview: boolean; reveal: vscode.TextEditorRevealType },
): Promise<vscode.TextEditor> {
  const active = doc.positionAt(target.active);
  const editor = await vscode.window.showTextDocument(doc, {
    selection: new vscode.Range(active, active),
    preview: options.preview,
    preserveFocus: false,
  });
  editor.selection = new vscode.Selection(doc.positionAt(target.anchor), active);
  editor.revealRange(new vscode.Range(doc.positionAt(target.reveal.start), doc.positionAt(target.reveal.end)), options.reveal);
  return editor;
}
