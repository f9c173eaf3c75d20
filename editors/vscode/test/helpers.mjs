// Shared test setup: loads the built extension against the `vscode` stub, resolves its chat
// view into a fake webview, and mirrors what the webview would hold by applying every posted
// message with the same reducer the webview bundle uses.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
export const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = path.resolve(EXT, "..", "..");
export const FIXTURE = path.join(REPO, "editors", "fixtures", "session.json");
export const DOUBLE = path.join(EXT, "test", "doubles", "acp-test-double-agent.mjs");

assert.ok(
  require.resolve("vscode").startsWith(path.join(EXT, "test", "stubs")),
  "run the tests with NODE_PATH=test/stubs so `vscode` resolves to the stub",
);
export const vscode = require("vscode");
export const testing = require(path.join(EXT, "out", "testing.js"));

/** The Python that runs tether: $TETHER_PYTHON, else the repository's .venv, else python3. */
export function python() {
  if (process.env.TETHER_PYTHON) return process.env.TETHER_PYTHON;
  const venv = path.join(REPO, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

/** A fresh copy of editors/fixtures/project plus an empty TETHER_HOME; `cleanup()` removes both. */
export async function fixtureProject() {
  const root = await mkdtemp(path.join(tmpdir(), "tether-vscode-"));
  const dir = path.join(root, "project");
  const home = path.join(root, "home");
  await cp(path.join(REPO, "editors", "fixtures", "project"), dir, { recursive: true });
  return { dir, home, root, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/** Settings that spawn the real `python -m tether acp --script editors/fixtures/session.json`. */
export function tetherSettings(home, extraArgs = []) {
  return {
    "tether.path": python(),
    "tether.args": ["-m", "tether", "acp", "--script", FIXTURE, ...extraArgs],
    "tether.env": { PYTHONPATH: REPO, TETHER_HOME: home },
  };
}

/** Settings that spawn the test-only ACP agent (features the server does not have yet). */
export function doubleSettings(extraArgs = []) {
  return { "tether.path": process.execPath, "tether.args": [DOUBLE, ...extraArgs], "tether.env": {} };
}

// The SDK logs, and drops, messages that fail its schema (zod) checks: any such line fails the test.
const SDK_REJECTIONS = ["Error handling notification", "Invalid message", "Got response to unknown request"];
export const sdkRejections = [];
const consoleError = console.error;
console.error = (...args) => {
  if (SDK_REJECTIONS.includes(args[0])) sdkRejections.push(args);
  consoleError(...args);
};

export class PageModel {
  constructor(view) {
    this.state = testing.initialState();
    this.waiters = new Set();
    view.onPost((message) => {
      if (message.type === "reset") this.state = message.state;
      else for (const event of message.events) testing.apply(this.state, event);
      for (const waiter of [...this.waiters]) waiter();
    });
  }

  status() {
    return testing.describeStatus(this.state);
  }

  items(kind) {
    return this.state.items.filter((i) => i.kind === kind);
  }

  /** Resolves with `predicate(state)`'s first truthy value, checked after every post. */
  waitFor(predicate, what, timeoutMs = 60_000) {
    return new Promise((resolve, reject) => {
      const check = () => {
        let value;
        try {
          value = predicate(this.state);
        } catch {
          value = undefined;
        }
        if (value) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve(value);
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const tail = JSON.stringify(this.state.items.slice(-4), null, 1).slice(0, 3000);
        reject(new Error(`timed out waiting for ${what}; status: ${this.status().text}; last items: ${tail}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}

/** A workspace's stored state (`vscode.Memento`): one instance passed to two activations is
 * what VS Code keeps across a window reload. */
export class Memento {
  #values = new Map();
  keys() {
    return [...this.#values.keys()];
  }
  get(key, fallback) {
    return this.#values.has(key) ? structuredClone(this.#values.get(key)) : fallback;
  }
  update(key, value) {
    if (value === undefined) this.#values.delete(key);
    else this.#values.set(key, structuredClone(value));
    return Promise.resolve();
  }
}

/** Activates the extension with these workspace folders and settings and opens its chat view;
 * `workspaceState`: the workspace's stored state (a fresh one by default: a first start). */
export function startExtension({ folders, settings, webviewUri, cspSource, ready = true, workspaceState = new Memento() }) {
  vscode.__test.reset();
  vscode.__test.setFolders(folders);
  vscode.__test.setSettings(settings);
  const extension = require(path.join(EXT, "out", "extension.js"));
  const context = { subscriptions: [], extensionUri: vscode.Uri.file(EXT), extensionPath: EXT, workspaceState };
  const api = extension.activate(context);
  const view = new vscode.__test.FakeWebviewView(webviewUri, cspSource);
  const page = new PageModel(view);
  vscode.__test.state.viewProviders.get("tether.chat").resolveWebviewView(view, {}, {});
  if (ready) view.send({ type: "ready" });
  return {
    api,
    controller: api.controller,
    view,
    page,
    send: (message) => view.send(message),
    async dispose() {
      for (const d of context.subscriptions) d.dispose();
      await api.controller.dispose();
      assert.deepEqual(sdkRejections.splice(0), [], "the SDK rejected messages");
    },
  };
}

export async function waitReady(page) {
  return page.waitFor((s) => s.connection.phase === "ready" && s.session.id, "a ready session");
}

export function lastOf(page, kind) {
  const items = page.items(kind);
  return items[items.length - 1];
}
