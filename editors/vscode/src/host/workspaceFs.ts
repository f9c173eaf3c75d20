// ACP `fs/*` through VS Code's workspace API: reads see unsaved editor text, writes to an open
// document go through a WorkspaceEdit (undoable) and are saved; other files use workspace.fs.
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import * as vscode from "vscode";

export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

function samePath(a: string, b: string): boolean {
  return process.platform === "win32" ? a.toLowerCase() === b.toLowerCase() : a === b;
}

export function openDocument(filePath: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find(
    (d) => !d.isClosed && d.uri.scheme === "file" && samePath(d.uri.fsPath, filePath),
  );
}

/** Lines `line` (1-based) .. `line + limit - 1` of `text`, keeping their line endings. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (line == null && limit == null) return text;
  const lines = text.split(/(?<=\n)/);
  const start = Math.max((line ?? 1) - 1, 0);
  const end = limit == null ? undefined : start + Math.max(limit, 0);
  return lines.slice(start, end).join("");
}

export class WorkspaceFiles {
  /** `roots()`: the folders the agent may touch (the workspace folders and the session's cwd). */
  constructor(private readonly roots: () => string[]) {}

  private check(filePath: string): vscode.Uri {
    if (!path.isAbsolute(filePath)) {
      throw acp.RequestError.invalidParams({ path: filePath }, `path must be absolute: ${filePath}`);
    }
    const resolved = path.resolve(filePath);
    if (!this.roots().some((root) => isInside(root, resolved))) {
      throw acp.RequestError.invalidParams(
        { path: filePath },
        `${filePath} is outside the workspace folders, so VS Code will not let the agent use it`,
      );
    }
    return vscode.Uri.file(resolved);
  }

  /** The text an editor shows for `filePath` (unsaved changes included), or undefined. */
  async current(filePath: string): Promise<string | undefined> {
    const doc = openDocument(path.resolve(filePath));
    if (doc) return doc.getText();
    try {
      const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(filePath));
      return new TextDecoder().decode(bytes);
    } catch {
      return undefined;
    }
  }

  async read(p: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const uri = this.check(p.path);
    const doc = openDocument(uri.fsPath);
    let text: string;
    if (doc) {
      text = doc.getText();
    } else {
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      } catch (error) {
        if (error instanceof vscode.FileSystemError && error.code === "FileNotFound") {
          throw acp.RequestError.resourceNotFound(p.path);
        }
        throw acp.RequestError.internalError({ path: p.path }, `could not read ${p.path}: ${String(error)}`);
      }
    }
    return { content: sliceLines(text, p.line, p.limit) };
  }

  async write(p: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse> {
    const uri = this.check(p.path);
    const doc = openDocument(uri.fsPath);
    if (doc) {
      if (doc.getText() !== p.content) {
        const edit = new vscode.WorkspaceEdit();
        const all = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
        edit.replace(uri, all, p.content);
        if (!(await vscode.workspace.applyEdit(edit))) {
          throw acp.RequestError.internalError({ path: p.path }, `VS Code refused the edit to ${p.path}`);
        }
      }
      if (doc.isDirty && !(await doc.save())) {
        throw acp.RequestError.internalError({ path: p.path }, `VS Code could not save ${p.path}`);
      }
      return {};
    }
    try {
      await vscode.workspace.fs.createDirectory(vscode.Uri.file(path.dirname(uri.fsPath)));
      await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(p.content));
    } catch (error) {
      throw acp.RequestError.internalError({ path: p.path }, `could not write ${p.path}: ${String(error)}`);
    }
    return {};
  }
}
