// ACP `terminal/*` as VS Code terminals: each command runs as a child process whose output is
// kept for the agent (trimmed to `outputByteLimit` from the front) and shown in a terminal
// (a Pseudoterminal; what the user types there goes to the command's stdin).
import { spawn, type ChildProcess } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk";
import * as vscode from "vscode";
import type { TerminalView } from "../chat/model";

const KILL_GRACE_MS = 2000;

/** Keeps the last `limit` bytes of `text`, cut at a character boundary. */
export function trimToBytes(text: string, limit: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= limit) return { text, truncated: false };
  let start = bytes.length - limit;
  while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++; // skip continuation bytes
  return { text: bytes.subarray(start).toString("utf8"), truncated: true };
}

// tether starts a command through a one-use launcher (`.../run/sandboxed-N`, or
// `.../run/unconfined-N` for one allowed outside the sandbox): the terminal names what runs,
// and where, rather than the launcher's path.
const LAUNCHER = /\/(sandboxed|unconfined)-\d+$/;

export function display(p: acp.CreateTerminalRequest): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
  const args = (p.args ?? []).map(quote);
  const kind = LAUNCHER.exec(p.command)?.[1];
  if (kind && args.length > 0) return `${args.join(" ")}  (${kind})`;
  return [p.command, ...args].join(" ");
}

class RunningCommand {
  output = "";
  truncated = false;
  exitStatus: acp.TerminalExitStatus | null = null;
  readonly exited: Promise<acp.TerminalExitStatus>;
  readonly terminal: vscode.Terminal;
  private readonly write = new vscode.EventEmitter<string>();
  private opened = false;
  private backlog = "";

  constructor(
    readonly id: string,
    readonly command: string,
    private readonly child: ChildProcess,
    private readonly limit: number | null | undefined,
    private readonly changed: () => void,
  ) {
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.write.event,
      open: () => {
        this.opened = true;
        this.write.fire(this.backlog);
        this.backlog = "";
      },
      close: () => this.kill(),
      handleInput: (data: string) => {
        if (this.exitStatus) return;
        const text = data.replace(/\r/g, "\n");
        this.child.stdin?.write(text);
        this.show(text);
      },
    };
    this.terminal = vscode.window.createTerminal({ name: `tether: ${command}`.slice(0, 60), pty });
    this.show(`$ ${command}\n`);
    for (const stream of [child.stdout, child.stderr]) {
      const decoder = new TextDecoder();
      stream?.on("data", (chunk: Buffer) => this.append(decoder.decode(chunk, { stream: true })));
    }
    child.stdin?.on("error", () => {});
    this.exited = new Promise((resolve) => {
      child.once("error", (error) => {
        this.append(`${error.message}\n`);
        this.finish({ exitCode: 127, signal: null }, resolve);
      });
      child.once("close", (code, signal) => this.finish({ exitCode: code, signal }, resolve));
    });
  }

  private finish(status: acp.TerminalExitStatus, resolve: (s: acp.TerminalExitStatus) => void): void {
    if (this.exitStatus) return;
    this.exitStatus = status;
    this.show(status.signal ? `\n[killed by ${status.signal}]\n` : `\n[exited with ${status.exitCode}]\n`);
    this.changed();
    resolve(status);
  }

  private show(text: string): void {
    const crlf = text.replace(/\r?\n/g, "\r\n");
    if (this.opened) this.write.fire(crlf);
    else this.backlog += crlf;
  }

  private append(text: string): void {
    if (!text) return;
    this.show(text);
    const kept = this.limit == null ? { text: this.output + text, truncated: false } : trimToBytes(this.output + text, this.limit);
    this.output = kept.text;
    this.truncated ||= kept.truncated;
    this.changed();
  }

  kill(): void {
    if (this.exitStatus) return;
    this.child.kill("SIGTERM");
    setTimeout(() => {
      if (!this.exitStatus) this.child.kill("SIGKILL");
    }, KILL_GRACE_MS).unref();
  }

  view(): TerminalView {
    return { terminalId: this.id, command: this.command, output: this.output, truncated: this.truncated, exitStatus: this.exitStatus };
  }
}

export class Terminals {
  private readonly running = new Map<string, RunningCommand>();
  private readonly windows = new Map<string, vscode.Terminal>();
  private seq = 0;

  /** `changed` is called (often) as output arrives; `defaultCwd` gives the session's folder. */
  constructor(
    private readonly changed: (view: TerminalView) => void,
    private readonly defaultCwd: () => string | undefined,
  ) {}

  private get(terminalId: string): RunningCommand {
    const term = this.running.get(terminalId);
    if (!term) throw acp.RequestError.resourceNotFound(terminalId);
    return term;
  }

  create(p: acp.CreateTerminalRequest): acp.CreateTerminalResponse {
    const id = `term_${++this.seq}`;
    const env: Record<string, string> = {};
    for (const v of p.env ?? []) env[v.name] = v.value;
    const args = p.args ?? [];
    // No args: the command is a shell line (`npm test && npm run lint`); with args: run it as is.
    const child = spawn(p.command, args, {
      cwd: p.cwd ?? this.defaultCwd(),
      env: { ...process.env, ...env },
      shell: args.length === 0,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let term: RunningCommand | undefined = undefined;
    term = new RunningCommand(id, display(p), child, p.outputByteLimit, () => {
      if (term) this.changed(term.view());
    });
    this.running.set(id, term);
    this.windows.set(id, term.terminal);
    this.changed(term.view());
    return { terminalId: id };
  }

  output(p: acp.TerminalOutputRequest): acp.TerminalOutputResponse {
    const term = this.get(p.terminalId);
    return { output: term.output, truncated: term.truncated, exitStatus: term.exitStatus };
  }

  async waitForExit(p: acp.WaitForTerminalExitRequest, signal: AbortSignal): Promise<acp.WaitForTerminalExitResponse> {
    const term = this.get(p.terminalId);
    const aborted = new Promise<never>((_, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    const status = await Promise.race([term.exited, aborted]);
    return { exitCode: status.exitCode, signal: status.signal };
  }

  kill(p: acp.KillTerminalRequest): acp.KillTerminalResponse {
    this.get(p.terminalId).kill();
    return {};
  }

  /** Kills the command if it still runs; the VS Code terminal stays open with its output. */
  release(p: acp.ReleaseTerminalRequest): acp.ReleaseTerminalResponse {
    this.get(p.terminalId).kill();
    this.running.delete(p.terminalId);
    return {};
  }

  /** Reveals a command's VS Code terminal (released ones too, while the terminal is open). */
  show(terminalId: string): boolean {
    const terminal = this.windows.get(terminalId);
    terminal?.show(true);
    return terminal !== undefined;
  }

  disposeAll(): void {
    for (const term of this.running.values()) term.kill();
    this.running.clear();
  }
}
