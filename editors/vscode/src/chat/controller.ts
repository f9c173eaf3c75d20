// The chat's logic: runs the agent, keeps the chat state, answers the agent's requests and the
// webview's messages. Editor-specific work goes through `EditorHost`, so no `vscode` import here.
import * as acp from "@agentclientprotocol/sdk";
import { AgentConnection, StartError, type ClientHandlers, type Launch, type Logger } from "../acp/connection";
import { apply, describeStatus, initialState, type ChatEvent, type ChatState, type ErrorAction, type Status, type TerminalView } from "./model";
import type { FromWebview, ToWebview } from "./protocol";

export interface FileAccess {
  read(p: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse>;
  write(p: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse>;
}

export interface TerminalAccess {
  create(p: acp.CreateTerminalRequest): acp.CreateTerminalResponse;
  output(p: acp.TerminalOutputRequest): acp.TerminalOutputResponse;
  waitForExit(p: acp.WaitForTerminalExitRequest, signal: AbortSignal): Promise<acp.WaitForTerminalExitResponse>;
  kill(p: acp.KillTerminalRequest): acp.KillTerminalResponse;
  release(p: acp.ReleaseTerminalRequest): acp.ReleaseTerminalResponse;
  show(terminalId: string): boolean;
  disposeAll(): void;
}

export interface EditorHost {
  files: FileAccess;
  terminals: TerminalAccess;
  /** The workspace folders; a new session starts in the first. */
  folders(): string[];
  /** The agent command from the settings (the cwd is the session's). */
  launch(): Omit<Launch, "cwd">;
  openDiff(diff: acp.Diff): Promise<void>;
  openLocation(path: string, line?: number | null): Promise<void>;
  /** Shows the status outside the panel (the status bar). */
  status(status: Status): void;
  /** Asks for the user's attention when the panel is not visible. */
  attention(text: string): void;
  openSettings(): void;
  showLog(): void;
  log: Logger;
  /** The workspace's last session: a reloaded window reopens it instead of starting anew. */
  lastSession: { get(): SavedSession | undefined; set(session: SavedSession): void };
}

/** The session a workspace had open last (kept across window reloads). */
export interface SavedSession {
  id: string;
  cwd: string;
}

export interface ViewPort {
  post(message: ToWebview): void;
  readonly visible: boolean;
}

const FLUSH_MS = 16;

function errorText(error: unknown): string {
  if (error instanceof acp.RequestError) {
    const detail = typeof error.data === "string" ? error.data : error.data ? JSON.stringify(error.data) : "";
    return `${error.message} (error ${error.code})${detail && !error.message.includes(detail) ? `: ${detail}` : ""}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function exitWords(code: number | null, signal: string | null): string {
  return signal ? `was stopped by ${signal}` : `exited with code ${code}`;
}

/** The SDK handles each incoming message in its own promise chain, and a request's or a
 * response's chain can overtake the notifications read just before it: one macrotask later they
 * have all been applied. So a permission card lands after the tool cards it is about, and a turn
 * ends after its last words. */
function afterEarlierMessages(run: () => void): void {
  setImmediate(run);
}

const earlierMessagesApplied = () => new Promise<void>((resolve) => afterEarlierMessages(resolve));

interface Pending<T> {
  finish(answer?: T): void;
}

export class ChatController {
  readonly state: ChatState = initialState();
  private agent?: AgentConnection;
  private starting?: Promise<AgentConnection | undefined>;
  private opening?: Promise<void>;
  private stopping = new WeakSet<AgentConnection>();
  private view?: ViewPort;
  private outbox: ChatEvent[] = [];
  private terminalViews = new Map<string, TerminalView>();
  private flushTimer?: ReturnType<typeof setTimeout>;
  private readonly permissions = new Map<number, Pending<string> & { options: acp.PermissionOption[] }>();
  private readonly elicitations = new Map<number, Pending<acp.CreateElicitationResponse>>();
  private keys = 0;
  private lastStatus = "";
  private disposed?: Promise<void>;

  constructor(private readonly host: EditorHost) {}

  // ---- the view

  attach(view: ViewPort): void {
    this.view = view;
  }

  detach(view: ViewPort): void {
    if (this.view === view) this.view = undefined;
  }

  private dispatch(event: ChatEvent): void {
    apply(this.state, event);
    this.outbox.push(event);
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Sends the queued events to the webview now (also used by tests to settle). */
  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    for (const terminal of this.terminalViews.values()) {
      const event: ChatEvent = { type: "terminal", terminal };
      apply(this.state, event);
      this.outbox.push(event);
    }
    this.terminalViews.clear();
    const events = this.outbox;
    this.outbox = [];
    if (events.length > 0) this.view?.post({ type: "events", events });
    const status = describeStatus(this.state);
    if (status.text !== this.lastStatus) {
      this.lastStatus = status.text;
      this.host.status(status);
    }
  }

  private error(message: string, actions: ErrorAction[] = []): void {
    this.host.log.line(`error: ${message}`);
    this.dispatch({ type: "error", message, actions });
  }

  terminalChanged(view: TerminalView): void {
    this.terminalViews.set(view.terminalId, view);
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  async handle(message: FromWebview): Promise<void> {
    try {
      await this.route(message);
    } catch (error) {
      this.error(errorText(error));
    }
  }

  private async route(m: FromWebview): Promise<void> {
    switch (m.type) {
      case "ready":
        this.outbox = []; // the snapshot holds them
        this.view?.post({ type: "reset", state: this.state });
        if (this.state.connection.phase === "stopped") await this.ensureSession();
        return;
      case "prompt":
        return this.prompt(m.text);
      case "cancel":
        return this.cancel();
      case "newSession":
        return this.newSession();
      case "restart":
        return this.restart();
      case "openSettings":
        return this.host.openSettings();
      case "showLog":
        return this.host.showLog();
      case "permission":
        return this.answerPermission(m.key, m.optionId);
      case "elicitation":
        return this.answerElicitation(m.key, m.action, m.content);
      case "setConfigOption":
        return this.setConfigOption(m.configId, m.value);
      case "setMode":
        return this.setMode(m.modeId);
      case "openDiff":
        return this.openDiff(m.itemId, m.index);
      case "openLocation":
        return this.host.openLocation(m.path, m.line);
      case "showTerminal":
        if (!this.host.terminals.show(m.terminalId)) this.error("That terminal is gone: it was closed.");
        return;
      case "history":
        return this.history(m.open);
      case "historyMore":
        return this.history(true, this.state.history.nextCursor);
      case "openSession":
        return this.openSession(m.sessionId, m.cwd);
    }
  }

  // ---- the agent process

  private handlers(): ClientHandlers {
    const files = this.host.files;
    const terms = this.host.terminals;
    return {
      readTextFile: (p) => files.read(p),
      writeTextFile: (p) => files.write(p),
      requestPermission: (p, signal) => this.requestPermission(p, signal),
      createElicitation: (p, signal) => this.createElicitation(p, signal),
      createTerminal: async (p) => terms.create(p),
      terminalOutput: async (p) => terms.output(p),
      waitForTerminalExit: (p, signal) => terms.waitForExit(p, signal),
      killTerminal: async (p) => terms.kill(p),
      releaseTerminal: async (p) => terms.release(p),
      sessionUpdate: (p) => {
        if (p.sessionId === this.state.session.id) {
          this.dispatch({ type: "update", update: p.update, at: Date.now() });
        }
      },
    };
  }

  private cwd(): string | undefined {
    return this.host.folders()[0];
  }

  private connect(): Promise<AgentConnection | undefined> {
    if (this.agent) return Promise.resolve(this.agent);
    this.starting ??= this.spawnAgent().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async spawnAgent(): Promise<AgentConnection | undefined> {
    const cwd = this.cwd();
    if (!cwd) {
      this.dispatch({ type: "connection", phase: "failed", message: "Open a folder first: tether works inside a workspace folder." });
      return undefined;
    }
    const launch: Launch = { ...this.host.launch(), cwd };
    this.host.log.line(`starting: ${[launch.command, ...launch.args].join(" ")} (in ${cwd})`);
    this.dispatch({ type: "connection", phase: "starting" });
    let agent: AgentConnection;
    try {
      agent = await AgentConnection.start(launch, this.handlers(), this.host.log);
    } catch (error) {
      const message = error instanceof StartError ? error.message : `Could not start tether: ${errorText(error)}`;
      this.dispatch({ type: "connection", phase: "failed", message });
      this.error(message, ["settings", "restart"]);
      return undefined;
    }
    void agent.exited.then((info) => this.onExit(agent, info.code, info.signal, info.stderr));
    try {
      const init = await agent.initialize();
      const caps = init.agentCapabilities ?? {};
      const sessions = caps.sessionCapabilities ?? {};
      this.dispatch({
        type: "capabilities",
        capabilities: {
          list: sessions.list != null,
          load: caps.loadSession === true,
          resume: sessions.resume != null,
          close: sessions.close != null,
          image: caps.promptCapabilities?.image === true,
        },
      });
      const name = init.agentInfo?.title ?? init.agentInfo?.name ?? "tether";
      this.dispatch({ type: "connection", phase: "ready", agent: name });
    } catch (error) {
      const exited = await Promise.race([agent.exited, new Promise<undefined>((r) => setTimeout(r, 300))]);
      if (!exited) {
        this.error(`tether did not start the protocol: ${errorText(error)}`, ["log", "restart"]);
        this.dispatch({ type: "connection", phase: "failed", message: "tether did not answer initialize" });
        this.stopping.add(agent);
        void agent.dispose();
      }
      return undefined; // onExit reports a process that died
    }
    this.agent = agent;
    return agent;
  }

  private onExit(agent: AgentConnection, code: number | null, signal: string | null, stderr: string): void {
    if (this.agent === agent) this.agent = undefined;
    this.cancelPending();
    if (this.stopping.has(agent)) return;
    const message = `tether ${exitWords(code, signal)}.`;
    const tail = stderr.trim().split("\n").slice(-12).join("\n");
    this.dispatch({ type: "connection", phase: "exited", message });
    this.error(tail ? `${message} Its last output:\n${tail}` : message, ["restart", "log"]);
    this.host.terminals.disposeAll();
    this.flush();
  }

  private async restart(): Promise<void> {
    const agent = this.agent;
    this.agent = undefined;
    this.cancelPending();
    if (agent) {
      this.stopping.add(agent);
      await agent.dispose();
    }
    this.host.terminals.disposeAll();
    this.dispatch({ type: "connection", phase: "stopped" });
    await this.ensureSession(true);
  }

  /** Ends the agent and its commands; every call returns the same promise. */
  dispose(): Promise<void> {
    this.disposed ??= this.shutdown();
    return this.disposed;
  }

  private async shutdown(): Promise<void> {
    this.cancelPending();
    this.host.terminals.disposeAll();
    const agent = this.agent;
    this.agent = undefined;
    if (agent) {
      this.stopping.add(agent);
      await agent.dispose();
    }
    if (this.flushTimer) clearTimeout(this.flushTimer);
  }

  // ---- sessions

  /** The window's session, opened once however many callers ask at the same time (the panel's
   * `ready` and a first prompt); `fresh`: a new one whatever is open (a restart). */
  private async ensureSession(fresh = false): Promise<AgentConnection | undefined> {
    const agent = await this.connect();
    if (!agent) return undefined;
    if (!this.state.session.id || fresh) {
      this.opening ??= this.firstSession(agent, fresh).finally(() => (this.opening = undefined));
      await this.opening;
    }
    return this.state.session.id ? agent : undefined;
  }

  /** A window's first session: the workspace's last one when the agent can reopen it (a reloaded
   * window goes on where it was), else a new one. */
  private async firstSession(agent: AgentConnection, fresh: boolean): Promise<void> {
    const last = fresh ? undefined : this.host.lastSession.get();
    const { load, resume } = this.state.capabilities;
    if (!last || !(load || resume)) return this.startSession(agent);
    try {
      await this.reopen(agent, last.id, last.cwd);
      return;
    } catch (error) {
      this.host.log.line(`could not reopen the last session ${last.id}: ${errorText(error)}`);
      await this.startSession(agent);
      this.dispatch({
        type: "notice",
        severity: "info",
        title: "The last session could not be reopened",
        description: `${errorText(error)}; a new session started.`,
      });
    }
  }

  private async startSession(agent: AgentConnection): Promise<void> {
    const cwd = this.cwd()!;
    const created = await agent.newSession(cwd);
    this.dispatch({
      type: "session",
      id: created.sessionId,
      cwd,
      modes: created.modes,
      configOptions: created.configOptions,
    });
    this.host.lastSession.set({ id: created.sessionId, cwd });
  }

  private async closeCurrent(agent: AgentConnection): Promise<void> {
    const id = this.state.session.id;
    if (!id || !this.state.capabilities.close) return;
    try {
      await agent.closeSession(id);
    } catch (error) {
      this.host.log.line(`session/close ${id} failed: ${errorText(error)}`);
    }
  }

  private async newSession(): Promise<void> {
    if (this.state.turn.running) await this.cancel();
    const agent = await this.connect();
    if (!agent) return;
    await this.closeCurrent(agent);
    await this.startSession(agent);
  }

  private async history(open: boolean, cursor?: string | null): Promise<void> {
    if (!open) {
      this.dispatch({ type: "history", history: { open: false } });
      return;
    }
    const agent = await this.connect();
    if (!agent) return;
    if (!this.state.capabilities.list) {
      const error = "This version of tether does not list sessions (it does not offer session/list).";
      this.dispatch({ type: "history", history: { open: true, loading: false, sessions: [], error } });
      return;
    }
    const append = cursor != null;
    this.dispatch({ type: "history", history: { open: true, loading: true, error: undefined } });
    try {
      const page = await agent.listSessions(this.cwd()!, cursor);
      this.dispatch({
        type: "history",
        history: { loading: false, sessions: page.sessions, nextCursor: page.nextCursor },
        append,
      });
    } catch (error) {
      this.dispatch({ type: "history", history: { loading: false, error: `Could not list sessions: ${errorText(error)}` } });
    }
  }

  private async openSession(sessionId: string, cwd: string): Promise<void> {
    if (sessionId === this.state.session.id) {
      this.dispatch({ type: "history", history: { open: false } });
      return;
    }
    if (this.state.turn.running) {
      this.error("A turn is running: stop it before opening another session.");
      return;
    }
    const agent = await this.connect();
    if (!agent) return;
    const { load, resume } = this.state.capabilities;
    if (!load && !resume) {
      this.error("This version of tether cannot reopen a session (it offers neither session/load nor session/resume).");
      return;
    }
    await this.closeCurrent(agent);
    const title = this.state.history.sessions.find((s) => s.sessionId === sessionId)?.title;
    try {
      await this.reopen(agent, sessionId, cwd, title);
    } catch (error) {
      this.error(`Could not open the session: ${errorText(error)}`);
    }
  }

  /** A stored session in this window: session/load (its conversation replayed) or, when that is
   * all the agent offers, session/resume. Throws what the agent answered when it cannot. */
  private async reopen(agent: AgentConnection, sessionId: string, cwd: string, title?: string | null): Promise<void> {
    const load = this.state.capabilities.load;
    this.dispatch({ type: "session", id: sessionId, cwd, title, loading: true });
    try {
      // session/load replays the conversation as session/update notifications before answering
      const opened = load ? await agent.loadSession(sessionId, cwd) : await agent.resumeSession(sessionId, cwd);
      await earlierMessagesApplied();
      if (opened.configOptions) this.dispatch({ type: "configOptions", configOptions: opened.configOptions });
      if (opened.modes) this.dispatch({ type: "mode", modeId: opened.modes.currentModeId });
      if (!load) {
        this.dispatch({
          type: "notice",
          severity: "info",
          title: "Session resumed",
          description: "tether keeps its history; earlier messages are not shown here because the agent does not replay them.",
        });
      }
      this.host.lastSession.set({ id: sessionId, cwd });
    } finally {
      this.dispatch({ type: "sessionLoaded" });
    }
  }

  // ---- turns

  private async prompt(text: string): Promise<void> {
    if (this.state.turn.running) {
      this.error("A turn is already running: wait for it, or press Stop.");
      return;
    }
    if (this.state.session.loading) {
      this.error("The session is still loading: send the message again in a moment.");
      return;
    }
    const agent = await this.ensureSession();
    const sessionId = this.state.session.id;
    if (!agent || !sessionId) return;
    this.dispatch({ type: "userPrompt", text, at: Date.now() });
    this.flush();
    try {
      const result = await agent.prompt(sessionId, [{ type: "text", text }]);
      await earlierMessagesApplied();
      if (this.state.session.id === sessionId) this.dispatch({ type: "turnEnded", stopReason: result.stopReason });
    } catch (error) {
      const died = await Promise.race([agent.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 300))]);
      if (this.state.session.id !== sessionId) return;
      this.dispatch({ type: "turnEnded" });
      if (!died) this.error(`tether could not finish the turn: ${errorText(error)}`, ["log"]);
    } finally {
      this.flush();
    }
  }

  private async cancel(): Promise<void> {
    const sessionId = this.state.session.id;
    if (!this.agent || !sessionId) return;
    await this.agent.cancel(sessionId);
    this.cancelPending(); // the spec: answer open permission requests with "cancelled"
  }

  private cancelPending(): void {
    for (const pending of [...this.permissions.values()]) pending.finish();
    for (const pending of [...this.elicitations.values()]) pending.finish({ action: "cancel" });
  }

  private async setConfigOption(configId: string, value: string | boolean): Promise<void> {
    const agent = this.agent;
    const sessionId = this.state.session.id;
    if (!agent || !sessionId) return;
    try {
      const result = await agent.setConfigOption(sessionId, configId, value);
      this.dispatch({ type: "configOptions", configOptions: result.configOptions });
    } catch (error) {
      this.error(`Could not change ${configId}: ${errorText(error)}`);
      this.dispatch({ type: "configOptions", configOptions: this.state.configOptions }); // redraw the old value
    }
  }

  private async setMode(modeId: string): Promise<void> {
    const agent = this.agent;
    const sessionId = this.state.session.id;
    if (!agent || !sessionId) return;
    try {
      await agent.setMode(sessionId, modeId);
      this.dispatch({ type: "mode", modeId });
    } catch (error) {
      this.error(`Could not switch the mode: ${errorText(error)}`);
    }
  }

  private async openDiff(itemId: string, index: number): Promise<void> {
    const item = this.state.items.find((i) => i.id === itemId);
    const block = item?.kind === "tool" ? item.call.content[index] : undefined;
    if (block?.type !== "diff") {
      this.error("That diff is no longer available.");
      return;
    }
    await this.host.openDiff(block);
  }

  // ---- the agent's questions

  private requestPermission(params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
    const key = ++this.keys;
    return new Promise((resolve) => {
      const finish = (optionId?: string) => {
        if (!this.permissions.delete(key)) return;
        this.dispatch({ type: "permissionResolved", key, optionId });
        this.flush();
        resolve(optionId ? { outcome: { outcome: "selected", optionId } } : { outcome: { outcome: "cancelled" } });
      };
      this.permissions.set(key, { finish, options: params.options });
      signal.addEventListener("abort", () => finish(), { once: true });
      afterEarlierMessages(() => {
        if (!this.permissions.has(key)) return;
        this.dispatch({ type: "permission", key, request: params, at: Date.now() });
        this.flush();
        if (!this.view?.visible) this.host.attention(`tether is waiting for your approval: ${params.toolCall.title ?? "a tool call"}`);
      });
    });
  }

  private answerPermission(key: number, optionId: string): void {
    const pending = this.permissions.get(key);
    if (!pending) return; // answered already, or cancelled by the agent
    if (!pending.options.some((o) => o.optionId === optionId)) {
      this.error(`“${optionId}” is not one of the options tether offered.`);
      return;
    }
    pending.finish(optionId);
  }

  private createElicitation(params: acp.CreateElicitationRequest, signal: AbortSignal): Promise<acp.CreateElicitationResponse> {
    if (params.mode !== "form") return Promise.resolve({ action: "decline" });
    const key = ++this.keys;
    return new Promise((resolve) => {
      const finish = (answer: acp.CreateElicitationResponse = { action: "cancel" }) => {
        if (!this.elicitations.delete(key)) return;
        const content = "content" in answer ? (answer.content as Record<string, unknown> | null) : undefined;
        this.dispatch({ type: "elicitationResolved", key, action: answer.action, content });
        this.flush();
        resolve(answer);
      };
      this.elicitations.set(key, { finish });
      signal.addEventListener("abort", () => finish(), { once: true });
      afterEarlierMessages(() => {
        if (!this.elicitations.has(key)) return;
        this.dispatch({ type: "elicitation", key, request: params, at: Date.now() });
        this.flush();
        if (!this.view?.visible) this.host.attention(`tether is asking: ${params.message}`);
      });
    });
  }

  private answerElicitation(key: number, action: "accept" | "decline" | "cancel", content?: Record<string, unknown>): void {
    const answer: acp.CreateElicitationResponse =
      action === "accept" ? { action, content: (content ?? {}) as Record<string, acp.ElicitationContentValue> } : { action };
    this.elicitations.get(key)?.finish(answer);
  }
}
