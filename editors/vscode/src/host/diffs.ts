// "Open diff": VS Code's diff editor between the old text and the agent's new text. Both sides
// are virtual documents (`tether-diff:` URIs, named after the file so the language is detected),
// except that the right side is the real file once it holds exactly the new text.
import * as path from "node:path";
import type * as acp from "@agentclientprotocol/sdk";
import * as vscode from "vscode";

export const DIFF_SCHEME = "tether-diff";
const KEEP = 100; // texts of the last KEEP diffs opened

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private seq = 0;

  constructor(private readonly current: (filePath: string) => Promise<string | undefined>) {}

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? "";
  }

  private virtual(side: string, id: number, filePath: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${id}/${side}/${path.basename(filePath)}` });
    this.texts.set(uri.path, text);
    while (this.texts.size > KEEP * 2) this.texts.delete(this.texts.keys().next().value as string);
    return uri;
  }

  async open(diff: acp.Diff): Promise<void> {
    const id = ++this.seq;
    const name = path.basename(diff.path);
    const left = this.virtual("before", id, diff.path, diff.oldText ?? "");
    const applied = (await this.current(diff.path)) === diff.newText;
    const right = applied ? vscode.Uri.file(diff.path) : this.virtual("proposed", id, diff.path, diff.newText);
    const label = diff.oldText == null ? "new file" : applied ? "applied" : "proposed";
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (tether: ${label})`, {
      preview: true,
    });
  }
}
