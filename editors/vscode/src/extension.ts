// Activation: wires the VS Code side (files, terminals, diffs, status bar, the chat view) to the
// chat controller. The only module that registers anything with VS Code.
import * as vscode from "vscode";
import { ChatController, type EditorHost, type SavedSession } from "./chat/controller";
import type { Status } from "./chat/model";
import { ChatViewProvider, VIEW_ID } from "./chat/view";
import { readSettings } from "./config";
import { DIFF_SCHEME, DiffDocuments } from "./host/diffs";
import { Terminals } from "./host/terminals";
import { WorkspaceFiles } from "./host/workspaceFs";

const LAST_SESSION = "tether.lastSession"; // workspaceState: the session a reload reopens

const ICONS: Record<Status["tone"], string> = {
  idle: "$(comment-discussion)",
  busy: "$(sync~spin)",
  attention: "$(bell-dot)",
  error: "$(error)",
};

export interface TetherApi {
  controller: ChatController;
}

export function activate(context: vscode.ExtensionContext): TetherApi {
  const output = vscode.window.createOutputChannel("tether");
  const statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  statusItem.command = `${VIEW_ID}.focus`;
  statusItem.text = `${ICONS.idle} tether`;
  statusItem.show();

  const folders = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  let controller: ChatController | undefined = undefined;
  const files = new WorkspaceFiles(() => {
    const cwd = controller?.state.session.cwd;
    return cwd ? [...folders(), cwd] : folders();
  });
  const diffs = new DiffDocuments((p) => files.current(p));
  const terminals = new Terminals(
    (view) => controller?.terminalChanged(view),
    () => controller?.state.session.cwd ?? folders()[0],
  );
  let provider: ChatViewProvider | undefined = undefined;
  let trace = readSettings().trace; // read once per change, not once per message

  const host: EditorHost = {
    files,
    terminals,
    folders,
    launch: () => {
      const s = readSettings();
      return { command: s.command, args: s.args, env: s.env };
    },
    openDiff: (diff) => diffs.open(diff),
    openLocation: async (path, line) => {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
      const at = line ? new vscode.Range(line - 1, 0, line - 1, 0) : undefined;
      await vscode.window.showTextDocument(doc, { selection: at, preview: true });
    },
    status: (status) => {
      statusItem.text = `${ICONS[status.tone]} tether: ${status.text}`;
      statusItem.tooltip = status.text;
    },
    attention: (text) => {
      void vscode.window.showInformationMessage(text, "Show").then((choice) => {
        if (choice) provider?.reveal();
      });
    },
    openSettings: () => void vscode.commands.executeCommand("workbench.action.openSettings", "tether"),
    showLog: () => output.show(true),
    lastSession: {
      get: () => context.workspaceState.get<SavedSession>(LAST_SESSION),
      set: (session) => void context.workspaceState.update(LAST_SESSION, session),
    },
    log: {
      line: (text) => output.appendLine(text),
      frame: (direction, message) => {
        if (trace) output.appendLine(`${direction} ${JSON.stringify(message)}`);
      },
    },
  };
  controller = new ChatController(host);
  const chat = controller;
  active = chat;
  provider = new ChatViewProvider(context.extensionUri, chat);

  context.subscriptions.push(
    output,
    statusItem,
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, diffs),
    vscode.window.registerWebviewViewProvider(VIEW_ID, provider, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.commands.registerCommand("tether.newSession", () => chat.handle({ type: "newSession" })),
    vscode.commands.registerCommand("tether.history", () => {
      provider?.reveal();
      return chat.handle({ type: "history", open: true });
    }),
    vscode.commands.registerCommand("tether.cancel", () => chat.handle({ type: "cancel" })),
    vscode.commands.registerCommand("tether.restart", () => chat.handle({ type: "restart" })),
    vscode.commands.registerCommand("tether.showLog", () => output.show(true)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("tether.trace")) trace = readSettings().trace;
      if (!["tether.path", "tether.args", "tether.env"].some((key) => e.affectsConfiguration(key))) return;
      void vscode.window
        .showInformationMessage("tether's settings changed: restart it to use them.", "Restart tether")
        .then((choice) => choice && chat.handle({ type: "restart" }));
    }),
    { dispose: () => void chat.dispose() },
  );
  return { controller: chat };
}

let active: ChatController | undefined;

/** VS Code waits for this promise: tether gets its stdin closed and time to exit. */
export function deactivate(): Promise<void> | undefined {
  return active?.dispose();
}
