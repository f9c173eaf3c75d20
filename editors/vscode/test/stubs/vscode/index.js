// A stand-in for the `vscode` module (VS Code itself cannot be installed offline): the subset of
// the API the extension uses, backed by the real file system, with in-memory text documents
// (so "unsaved changes" exist) and recorders the tests read through `__test`.
// Resolved as the bare specifier `vscode` via NODE_PATH=test/stubs.
"use strict";

const fs = require("node:fs");
const nodePath = require("node:path");

// ---- basic types

class Uri {
  constructor(scheme, path, query = "", fragment = "") {
    this.scheme = scheme;
    this.path = path;
    this.query = query;
    this.fragment = fragment;
  }
  static file(p) {
    return new Uri("file", nodePath.resolve(p));
  }
  static from({ scheme, path = "", query = "", fragment = "" }) {
    return new Uri(scheme, path, query, fragment);
  }
  static joinPath(base, ...segments) {
    return new Uri(base.scheme, nodePath.posix.join(base.path, ...segments), base.query, base.fragment);
  }
  get fsPath() {
    return this.path;
  }
  with(change) {
    return new Uri(change.scheme ?? this.scheme, change.path ?? this.path, change.query ?? this.query, change.fragment ?? this.fragment);
  }
  toString() {
    return `${this.scheme}://${this.path}${this.query ? `?${this.query}` : ""}`;
  }
}

class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
}

class Range {
  constructor(a, b, c, d) {
    if (a instanceof Position) {
      this.start = a;
      this.end = b;
    } else {
      this.start = new Position(a, b);
      this.end = new Position(c, d);
    }
  }
}

class Disposable {
  constructor(fn = () => {}) {
    this._fn = fn;
  }
  dispose() {
    this._fn();
  }
  static from(...items) {
    return new Disposable(() => items.forEach((d) => d.dispose()));
  }
}

class EventEmitter {
  constructor() {
    this._listeners = new Set();
    this.event = (listener) => {
      this._listeners.add(listener);
      return new Disposable(() => this._listeners.delete(listener));
    };
  }
  fire(value) {
    for (const listener of [...this._listeners]) listener(value);
  }
  dispose() {
    this._listeners.clear();
  }
}

class FileSystemError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
  static FileNotFound(what) {
    return new FileSystemError(`file not found: ${what}`, "FileNotFound");
  }
}

const StatusBarAlignment = { Left: 1, Right: 2 };

// ---- documents

class TextDocument {
  constructor(uri, text, dirty) {
    this.uri = uri;
    this._text = text;
    this.isDirty = dirty;
    this.isClosed = false;
    this.version = 1;
    this.languageId = "plaintext";
  }
  get fileName() {
    return this.uri.fsPath;
  }
  get lineCount() {
    return this._text.split("\n").length;
  }
  getText() {
    return this._text;
  }
  offsetAt(pos) {
    const lines = this._text.split("\n");
    let offset = 0;
    for (let i = 0; i < pos.line && i < lines.length; i++) offset += lines[i].length + 1;
    return Math.min(offset + pos.character, this._text.length);
  }
  positionAt(offset) {
    const before = this._text.slice(0, Math.max(0, Math.min(offset, this._text.length)));
    const lines = before.split("\n");
    return new Position(lines.length - 1, lines[lines.length - 1].length);
  }
  _replace(range, text) {
    const start = this.offsetAt(range.start);
    const end = this.offsetAt(range.end);
    this._text = this._text.slice(0, start) + text + this._text.slice(end);
    this.isDirty = true;
    this.version += 1;
  }
  async save() {
    if (this.uri.scheme !== "file") return false;
    fs.mkdirSync(nodePath.dirname(this.uri.fsPath), { recursive: true });
    fs.writeFileSync(this.uri.fsPath, this._text);
    this.isDirty = false;
    record(recorded.saves, this.uri.fsPath);
    return true;
  }
}

class WorkspaceEdit {
  constructor() {
    this._edits = [];
  }
  replace(uri, range, text) {
    this._edits.push({ uri, range, text });
  }
  insert(uri, position, text) {
    this._edits.push({ uri, range: new Range(position, position), text });
  }
  entries() {
    return this._edits.map((e) => [e.uri, [e]]);
  }
}

// ---- recorders and test controls

const recorded = {
  commands: [], // [id, ...args] of executeCommand
  messages: [], // {level, text, items}
  output: [], // lines written to output channels
  saves: [], // paths saved through TextDocument.save
  edits: [], // WorkspaceEdits applied
  terminals: [], // {name, pty, written, shown, input(data)}
  shown: [], // documents shown with showTextDocument
};
const changed = new EventEmitter(); // fires whenever something is recorded
function record(list, entry) {
  list.push(entry);
  changed.fire();
}

const state = {
  folders: [],
  settings: {},
  documents: [],
  viewProviders: new Map(),
  contentProviders: new Map(),
  registeredCommands: new Map(),
  configListeners: new EventEmitter(),
  messageAnswer: undefined, // what showInformationMessage resolves to
};

function findDocument(fsPath) {
  return state.documents.find((d) => !d.isClosed && d.uri.scheme === "file" && d.uri.fsPath === fsPath);
}

function readDisk(uri) {
  try {
    return fs.readFileSync(uri.fsPath);
  } catch (error) {
    if (error.code === "ENOENT") throw FileSystemError.FileNotFound(uri.fsPath);
    throw new FileSystemError(error.message, "Unknown");
  }
}

const workspace = {
  get workspaceFolders() {
    return state.folders.map((p, index) => ({ uri: Uri.file(p), name: nodePath.basename(p), index }));
  },
  get textDocuments() {
    return state.documents.filter((d) => !d.isClosed);
  },
  fs: {
    async readFile(uri) {
      return new Uint8Array(readDisk(uri));
    },
    async writeFile(uri, bytes) {
      fs.writeFileSync(uri.fsPath, bytes);
    },
    async createDirectory(uri) {
      fs.mkdirSync(uri.fsPath, { recursive: true });
    },
    async stat(uri) {
      const s = fs.statSync(uri.fsPath);
      return { type: s.isDirectory() ? 2 : 1, size: s.size, ctime: s.ctimeMs, mtime: s.mtimeMs };
    },
  },
  async openTextDocument(uri) {
    const existing = findDocument(uri.fsPath);
    if (existing) return existing;
    const doc = new TextDocument(uri, readDisk(uri).toString("utf8"), false);
    state.documents.push(doc);
    return doc;
  },
  async applyEdit(edit) {
    record(recorded.edits, edit);
    for (const e of edit._edits) {
      const doc = await workspace.openTextDocument(e.uri);
      doc._replace(e.range, e.text);
    }
    return true;
  },
  getConfiguration(section) {
    return {
      get(key, fallback) {
        const full = section ? `${section}.${key}` : key;
        return Object.prototype.hasOwnProperty.call(state.settings, full) ? state.settings[full] : fallback;
      },
    };
  },
  registerTextDocumentContentProvider(scheme, provider) {
    state.contentProviders.set(scheme, provider);
    return new Disposable(() => state.contentProviders.delete(scheme));
  },
  onDidChangeConfiguration: (listener) => state.configListeners.event(listener),
};

class OutputChannel {
  constructor(name) {
    this.name = name;
  }
  appendLine(line) {
    record(recorded.output, line);
  }
  append(text) {
    record(recorded.output, text);
  }
  show() {}
  dispose() {}
}

function message(level) {
  return async (text, ...items) => {
    record(recorded.messages, { level, text, items });
    return state.messageAnswer;
  };
}

const window = {
  createOutputChannel: (name) => new OutputChannel(name),
  createStatusBarItem: () => ({ text: "", tooltip: "", command: undefined, show() {}, hide() {}, dispose() {} }),
  registerWebviewViewProvider(id, provider) {
    state.viewProviders.set(id, provider);
    return new Disposable(() => state.viewProviders.delete(id));
  },
  createTerminal(options) {
    const entry = { name: options.name, pty: options.pty, written: "", shown: 0, closed: false };
    options.pty.onDidWrite((data) => {
      entry.written += data;
      changed.fire();
    });
    entry.input = (data) => options.pty.handleInput?.(data);
    record(recorded.terminals, entry);
    const terminal = {
      name: options.name,
      show() {
        entry.shown += 1;
        changed.fire();
      },
      dispose() {
        entry.closed = true;
        options.pty.close();
      },
    };
    // VS Code opens the pseudoterminal once the terminal exists in the panel
    setImmediate(() => options.pty.open(undefined));
    return terminal;
  },
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async showTextDocument(doc, options) {
    record(recorded.shown, { path: doc.uri.fsPath, options });
    return {};
  },
};

const commands = {
  registerCommand(id, fn) {
    state.registeredCommands.set(id, fn);
    return new Disposable(() => state.registeredCommands.delete(id));
  },
  async executeCommand(id, ...args) {
    record(recorded.commands, [id, ...args]);
    const fn = state.registeredCommands.get(id);
    return fn ? fn(...args) : undefined;
  },
};

// ---- the test side

/** A WebviewView whose page is the test: it records posts and can send messages back. */
class FakeWebviewView {
  constructor(toWebviewUri, cspSource = "https://stub.vscode-cdn.invalid") {
    const received = new EventEmitter();
    const disposed = new EventEmitter();
    const posted = new EventEmitter();
    this.visible = true;
    this.posted = []; // every message the extension posted
    this.onPost = posted.event;
    this.webview = {
      options: {},
      html: "",
      cspSource,
      asWebviewUri: toWebviewUri ?? ((uri) => uri.with({ scheme: "https" })),
      postMessage: async (msg) => {
        const copy = JSON.parse(JSON.stringify(msg)); // what structured cloning would deliver
        this.posted.push(copy);
        posted.fire(copy);
        return true;
      },
      onDidReceiveMessage: received.event,
    };
    this.onDidDispose = disposed.event;
    this.onDidChangeVisibility = new EventEmitter().event;
    this.send = (msg) => received.fire(msg);
    this.dispose = () => disposed.fire();
    this.show = () => {};
  }
}

const __test = {
  recorded,
  /** Resolves once `predicate()` holds, checked now and after everything recorded. */
  until(predicate, what = "a condition", timeoutMs = 30_000) {
    return new Promise((resolve, reject) => {
      let listener;
      const timer = setTimeout(() => {
        listener.dispose();
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      const check = () => {
        const value = predicate();
        if (!value) return false;
        clearTimeout(timer);
        listener?.dispose();
        resolve(value);
        return true;
      };
      listener = changed.event(check);
      check();
    });
  },
  state,
  FakeWebviewView,
  reset() {
    for (const list of Object.values(recorded)) list.length = 0;
    state.folders = [];
    state.settings = {};
    state.documents = [];
    state.viewProviders.clear();
    state.contentProviders.clear();
    state.registeredCommands.clear();
    state.messageAnswer = undefined;
  },
  setFolders(folders) {
    state.folders = folders.map((p) => nodePath.resolve(p));
  },
  setSettings(settings) {
    state.settings = { ...settings };
  },
  /** Opens `path` as an editor would; `text` different from the disk makes it dirty. */
  openDocument(path, text) {
    const uri = Uri.file(path);
    const disk = fs.existsSync(uri.fsPath) ? fs.readFileSync(uri.fsPath, "utf8") : undefined;
    const doc = new TextDocument(uri, text ?? disk ?? "", text !== undefined && text !== disk);
    state.documents.push(doc);
    return doc;
  },
  /** The text of a virtual document, as VS Code would ask its content provider. */
  provideText(uri) {
    const provider = state.contentProviders.get(uri.scheme);
    if (!provider) throw new Error(`no content provider for ${uri.scheme}`);
    return provider.provideTextDocumentContent(uri);
  },
};

module.exports = {
  Uri,
  Position,
  Range,
  Disposable,
  EventEmitter,
  FileSystemError,
  StatusBarAlignment,
  WorkspaceEdit,
  workspace,
  window,
  commands,
  __test,
};
