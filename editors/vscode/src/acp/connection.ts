// The agent process and the ACP connection to it, through the official SDK (NDJSON on stdio).
// No `vscode` import: everything editor-specific arrives as `ClientHandlers`.
import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/** What the editor answers when the agent asks. Each maps to one ACP client method. */
export interface ClientHandlers {
  readTextFile(p: acp.ReadTextFileRequest, signal: AbortSignal): Promise<acp.ReadTextFileResponse>;
  writeTextFile(p: acp.WriteTextFileRequest, signal: AbortSignal): Promise<acp.WriteTextFileResponse>;
  requestPermission(
    p: acp.RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<acp.RequestPermissionResponse>;
  createElicitation(
    p: acp.CreateElicitationRequest,
    signal: AbortSignal,
  ): Promise<acp.CreateElicitationResponse>;
  createTerminal(p: acp.CreateTerminalRequest): Promise<acp.CreateTerminalResponse>;
  terminalOutput(p: acp.TerminalOutputRequest): Promise<acp.TerminalOutputResponse>;
  waitForTerminalExit(
    p: acp.WaitForTerminalExitRequest,
    signal: AbortSignal,
  ): Promise<acp.WaitForTerminalExitResponse>;
  killTerminal(p: acp.KillTerminalRequest): Promise<acp.KillTerminalResponse>;
  releaseTerminal(p: acp.ReleaseTerminalRequest): Promise<acp.ReleaseTerminalResponse>;
  sessionUpdate(p: acp.SessionNotification): void;
}

export interface Logger {
  line(text: string): void;
  /** Called for every ACP message when tracing is on. */
  frame?(direction: "→" | "←", message: unknown): void;
}

export interface ExitInfo {
  code: number | null;
  signal: string | null;
  /** The last lines the agent wrote to stderr. */
  stderr: string;
}

/** Why the agent could not be started, in words a user can act on. */
export class StartError extends Error {}

const STDERR_KEEP = 4000;
const EXIT_GRACE_MS = 3000;

export const CLIENT_INFO = { name: "tether-vscode", title: "tether for VS Code", version: "0.1.0" };

export const CLIENT_CAPABILITIES: acp.ClientCapabilities = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  elicitation: { form: {} },
  session: { configOptions: { boolean: {} }, notices: {} },
};

function describeSpawnError(launch: Launch, error: NodeJS.ErrnoException): string {
  const what = `“${launch.command}”`;
  if (error.code === "ENOENT") {
    return `Could not start tether: ${what} was not found. Set “tether.path” to the tether executable (for example /path/to/.venv/bin/tether).`;
  }
  if (error.code === "EACCES") {
    return `Could not start tether: ${what} is not executable. Check “tether.path”.`;
  }
  return `Could not start tether (${what}): ${error.message}`;
}

function tap(direction: "→" | "←", log: Logger): TransformStream<acp.AnyMessage, acp.AnyMessage> {
  return new TransformStream({
    transform(message, controller) {
      log.frame?.(direction, message);
      controller.enqueue(message);
    },
  });
}

export class AgentConnection {
  private constructor(
    private readonly child: ChildProcess,
    private readonly connection: acp.ClientConnection,
    readonly exited: Promise<ExitInfo>,
    private readonly stderrTail: { text: string },
  ) {}

  /** Spawns the agent and connects the SDK client to its stdio. Throws `StartError`. */
  static async start(
    launch: Launch,
    handlers: ClientHandlers,
    log: Logger,
  ): Promise<AgentConnection> {
    const child = spawn(launch.command, launch.args, {
      cwd: launch.cwd,
      env: { ...process.env, ...launch.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", reject);
      });
    } catch (error) {
      throw new StartError(describeSpawnError(launch, error as NodeJS.ErrnoException));
    }
    child.stdin?.on("error", () => {}); // EPIPE after the agent died: reported through `exited`
    const stderrTail = { text: "" };
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (text: string) => {
      stderrTail.text = (stderrTail.text + text).slice(-STDERR_KEEP);
      for (const line of text.split("\n")) if (line.trim()) log.line(`[tether] ${line}`);
    });
    const exited = new Promise<ExitInfo>((resolve) => {
      child.once("exit", (code, signal) => {
        // stderr may still be draining: give it a moment so the last words are kept
        setTimeout(() => resolve({ code, signal, stderr: stderrTail.text }), 50);
      });
    });
    const raw = acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    );
    const outgoing = tap("→", log);
    void outgoing.readable.pipeTo(raw.writable).catch(() => {});
    const stream: acp.Stream = {
      readable: raw.readable.pipeThrough(tap("←", log)),
      writable: outgoing.writable,
    };
    const connection = clientApp(handlers).connect(stream);
    return new AgentConnection(child, connection, exited, stderrTail);
  }

  get context(): acp.ClientContext {
    return this.connection.agent;
  }

  initialize(): Promise<acp.InitializeResponse> {
    return this.context.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: CLIENT_CAPABILITIES,
      clientInfo: CLIENT_INFO,
    });
  }

  newSession(cwd: string): Promise<acp.NewSessionResponse> {
    return this.context.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  }

  loadSession(sessionId: string, cwd: string): Promise<acp.LoadSessionResponse> {
    return this.context.request(acp.methods.agent.session.load, {
      sessionId,
      cwd,
      mcpServers: [],
    });
  }

  resumeSession(sessionId: string, cwd: string): Promise<acp.ResumeSessionResponse> {
    return this.context.request(acp.methods.agent.session.resume, {
      sessionId,
      cwd,
      mcpServers: [],
    });
  }

  listSessions(cwd: string, cursor?: string | null): Promise<acp.ListSessionsResponse> {
    return this.context.request(acp.methods.agent.session.list, { cwd, cursor });
  }

  closeSession(sessionId: string): Promise<acp.CloseSessionResponse> {
    return this.context.request(acp.methods.agent.session.close, { sessionId });
  }

  prompt(sessionId: string, prompt: acp.ContentBlock[]): Promise<acp.PromptResponse> {
    return this.context.request(acp.methods.agent.session.prompt, { sessionId, prompt });
  }

  cancel(sessionId: string): Promise<void> {
    return this.context.notify(acp.methods.agent.session.cancel, { sessionId });
  }

  setMode(sessionId: string, modeId: string): Promise<acp.SetSessionModeResponse> {
    return this.context.request(acp.methods.agent.session.setMode, { sessionId, modeId });
  }

  setConfigOption(
    sessionId: string,
    configId: string,
    value: string | boolean,
  ): Promise<acp.SetSessionConfigOptionResponse> {
    const params =
      typeof value === "boolean"
        ? { sessionId, configId, type: "boolean" as const, value }
        : { sessionId, configId, value };
    return this.context.request(acp.methods.agent.session.setConfigOption, params);
  }

  /** The agent's last stderr lines, for error messages. */
  get stderr(): string {
    return this.stderrTail.text;
  }

  /** Closes stdin (tether exits on EOF), then terminates the process if it lingers. */
  async dispose(): Promise<void> {
    this.connection.close();
    this.child.stdin?.end();
    const timer = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
    if (await Promise.race([this.exited.then(() => true), timer(EXIT_GRACE_MS)])) return;
    this.child.kill("SIGTERM");
    if (await Promise.race([this.exited.then(() => true), timer(EXIT_GRACE_MS)])) return;
    this.child.kill("SIGKILL");
    await this.exited;
  }
}

function clientApp(h: ClientHandlers): acp.ClientApp {
  const m = acp.methods.client;
  return acp
    .client({ name: CLIENT_INFO.name })
    .onRequest(m.fs.readTextFile, (c) => h.readTextFile(c.params, c.signal))
    .onRequest(m.fs.writeTextFile, (c) => h.writeTextFile(c.params, c.signal))
    .onRequest(m.session.requestPermission, (c) => h.requestPermission(c.params, c.signal))
    .onRequest(m.elicitation.create, (c) => h.createElicitation(c.params, c.signal))
    .onRequest(m.terminal.create, (c) => h.createTerminal(c.params))
    .onRequest(m.terminal.output, (c) => h.terminalOutput(c.params))
    .onRequest(m.terminal.waitForExit, (c) => h.waitForTerminalExit(c.params, c.signal))
    .onRequest(m.terminal.kill, (c) => h.killTerminal(c.params))
    .onRequest(m.terminal.release, (c) => h.releaseTerminal(c.params))
    .onNotification(m.session.update, (c) => h.sessionUpdate(c.params));
}
