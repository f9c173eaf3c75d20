// The chat webview in the tether activity-bar container. Messages go straight to the controller.
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import type { ChatController, ViewPort } from "./controller";
import type { FromWebview } from "./protocol";

export const VIEW_ID = "tether.chat";

export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri): string {
  const nonce = crypto.randomBytes(16).toString("base64");
  const asset = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "out", name));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset("webview.css")}">
<title>tether</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${asset("webview.js")}"></script>
</body>
</html>`;
}

export class ChatViewProvider implements vscode.WebviewViewProvider {
  private view?: vscode.WebviewView;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "out")],
    };
    const port: ViewPort = {
      post: (message) => void view.webview.postMessage(message),
      get visible() {
        return view.visible;
      },
    };
    this.controller.attach(port);
    view.webview.onDidReceiveMessage((message: FromWebview) => void this.controller.handle(message));
    view.onDidDispose(() => {
      this.controller.detach(port);
      if (this.view === view) this.view = undefined;
    });
    view.webview.html = webviewHtml(view.webview, this.extensionUri);
  }

  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }
}
