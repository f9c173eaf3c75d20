// The chat's state and the one reducer that changes it. The extension host and the webview both
// run `apply` over the same event stream, so a reopened webview rebuilds from a snapshot and then
// follows the live events. Only type imports from the SDK: this file is bundled into the webview.
import type * as acp from "@agentclientprotocol/sdk";

export type ConnectionPhase = "stopped" | "starting" | "ready" | "failed" | "exited";

export interface ToolCallView {
  toolCallId: string;
  title: string;
  kind?: string | null;
  status: acp.ToolCallStatus;
  content: acp.ToolCallContent[];
  locations: acp.ToolCallLocation[];
  rawInput?: unknown;
  /** A command's exit code from the agent's `rawOutput` (`{ exitCode }`): what the card still
   * says once its terminal is gone (a reopened session's earlier command). */
  exitCode?: number;
  /** The key of the latest permission request about this call (`ChatState.permissions`). */
  permission?: number;
}

export type AnswerState = "pending" | "answered" | "cancelled";

/** A permission request. Its buttons are drawn on the tool card it is about: the announced card
 * (updated with the request's fields), or a card made from the request when none was announced. */
export interface PermissionView {
  key: number;
  toolCallId: string;
  options: acp.PermissionOption[];
  state: AnswerState;
  chosen?: acp.PermissionOption;
}

export interface ElicitationView {
  key: number;
  request: acp.CreateElicitationRequest;
  state: AnswerState;
  action?: string;
  /** What the user sent, shown in the answered form. */
  content?: Record<string, unknown> | null;
}

export interface TerminalView {
  terminalId: string;
  command: string;
  output: string;
  truncated: boolean;
  exitStatus?: acp.TerminalExitStatus | null;
}

export type ErrorAction = "restart" | "settings" | "log";

interface ItemBase {
  id: string;
  rev: number;
}

export type Item = ItemBase &
  (
    | { kind: "user"; text: string }
    | { kind: "agent"; text: string; messageId?: string | null }
    | { kind: "thought"; text: string; messageId?: string | null }
    | { kind: "tool"; call: ToolCallView }
    | { kind: "elicitation"; elicitation: ElicitationView }
    | { kind: "notice"; severity: string; title: string; description?: string | null }
    | { kind: "error"; message: string; actions: ErrorAction[] }
    | { kind: "stop"; reason: string; text: string }
  );

export type Activity = "waiting" | "thinking" | "writing" | "tools";

export interface Capabilities {
  list: boolean;
  load: boolean;
  resume: boolean;
  close: boolean;
  image: boolean;
}

export interface HistoryView {
  open: boolean;
  loading: boolean;
  sessions: acp.SessionInfo[];
  nextCursor?: string | null;
  error?: string;
}

export interface ChatState {
  connection: { phase: ConnectionPhase; message?: string; agent?: string };
  session: { id?: string; title?: string | null; cwd?: string; loading?: boolean };
  capabilities: Capabilities;
  turn: { running: boolean; activity: Activity; lastActivityAt?: number; lastStop?: string };
  items: Item[];
  permissions: Record<string, PermissionView>;
  plan: acp.PlanEntry[];
  modes?: acp.SessionModeState | null;
  configOptions: acp.SessionConfigOption[];
  commands: acp.AvailableCommand[];
  usage?: { used: number; size: number; cost?: acp.Cost | null };
  terminals: Record<string, TerminalView>;
  history: HistoryView;
  seq: number;
}

export type ChatEvent =
  | { type: "connection"; phase: ConnectionPhase; message?: string; agent?: string }
  | { type: "capabilities"; capabilities: Capabilities }
  | {
      type: "session";
      id: string;
      cwd: string;
      title?: string | null;
      modes?: acp.SessionModeState | null;
      configOptions?: acp.SessionConfigOption[] | null;
      loading?: boolean;
    }
  | { type: "sessionLoaded" }
  | { type: "update"; update: acp.SessionUpdate; at: number }
  | { type: "userPrompt"; text: string; at: number }
  | { type: "turnEnded"; stopReason?: string }
  | { type: "permission"; key: number; request: acp.RequestPermissionRequest; at: number }
  | { type: "permissionResolved"; key: number; optionId?: string }
  | { type: "elicitation"; key: number; request: acp.CreateElicitationRequest; at: number }
  | { type: "elicitationResolved"; key: number; action: string; content?: Record<string, unknown> | null }
  | { type: "terminal"; terminal: TerminalView }
  | { type: "configOptions"; configOptions: acp.SessionConfigOption[] }
  | { type: "mode"; modeId: string }
  | { type: "history"; history: Partial<HistoryView>; append?: boolean }
  | { type: "error"; message: string; actions?: ErrorAction[] }
  | { type: "notice"; severity: string; title: string; description?: string | null };

export function initialState(): ChatState {
  return {
    connection: { phase: "stopped" },
    session: {},
    capabilities: { list: false, load: false, resume: false, close: false, image: false },
    turn: { running: false, activity: "waiting" },
    items: [],
    permissions: {},
    plan: [],
    configOptions: [],
    commands: [],
    terminals: {},
    history: { open: false, loading: false, sessions: [] },
    seq: 0,
  };
}

function nextId(state: ChatState, prefix: string): string {
  state.seq += 1;
  return `${prefix}${state.seq}`;
}

function push(state: ChatState, item: Item): void {
  state.items.push(item);
}

function touch(item: Item): void {
  item.rev += 1;
}

function findTool(state: ChatState, toolCallId: string): (Item & { kind: "tool" }) | undefined {
  const id = `tool:${toolCallId}`;
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.id === id && item.kind === "tool") return item;
  }
  return undefined;
}

function findElicitation(state: ChatState, key: number): (Item & { kind: "elicitation" }) | undefined {
  const id = `elicitation:${key}`;
  return state.items.find((item): item is Item & { kind: "elicitation" } => item.id === id);
}

/** The text a content block shows in the transcript. */
export function blockText(block: acp.ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "image":
      return "[image]";
    case "audio":
      return "[audio]";
    case "resource_link":
      return `[${block.title ?? block.name}](${block.uri})`;
    case "resource":
      return "text" in block.resource ? block.resource.text : `[${block.resource.uri}]`;
    default:
      return "";
  }
}

function appendChunk(
  state: ChatState,
  kind: "user" | "agent" | "thought",
  text: string,
  messageId?: string | null,
): void {
  const last = state.items[state.items.length - 1];
  if (last && last.kind === kind) {
    const same =
      kind === "user" ||
      messageId == null ||
      !("messageId" in last) ||
      last.messageId == null ||
      last.messageId === messageId;
    if (same) {
      last.text += text;
      touch(last);
      return;
    }
  }
  if (kind === "user") push(state, { kind, id: nextId(state, "u"), rev: 0, text });
  else push(state, { kind, id: nextId(state, kind[0]), rev: 0, text, messageId });
}

function rawExitCode(raw: unknown): number | undefined {
  const code = raw !== null && typeof raw === "object" ? (raw as { exitCode?: unknown }).exitCode : undefined;
  return typeof code === "number" ? code : undefined;
}

function upsertTool(state: ChatState, fields: acp.ToolCallUpdate, replace: boolean): Item & { kind: "tool" } {
  const existing = findTool(state, fields.toolCallId);
  if (!existing) {
    const call: ToolCallView = {
      toolCallId: fields.toolCallId,
      title: fields.title ?? "Tool call",
      kind: fields.kind,
      status: fields.status ?? "pending",
      content: fields.content ?? [],
      locations: fields.locations ?? [],
      rawInput: fields.rawInput,
      exitCode: rawExitCode(fields.rawOutput),
    };
    const item: Item & { kind: "tool" } = { kind: "tool", id: `tool:${fields.toolCallId}`, rev: 0, call };
    push(state, item);
    return item;
  }
  const call = existing.call;
  if (replace || fields.title != null) call.title = fields.title ?? call.title;
  if (fields.kind != null) call.kind = fields.kind;
  if (fields.status != null) call.status = fields.status;
  if (fields.content != null) call.content = fields.content;
  if (fields.locations != null) call.locations = fields.locations;
  if (fields.rawInput !== undefined) call.rawInput = fields.rawInput;
  if (fields.rawOutput !== undefined) call.exitCode = rawExitCode(fields.rawOutput);
  touch(existing);
  return existing;
}

function applyUpdate(state: ChatState, update: acp.SessionUpdate, at: number): void {
  switch (update.sessionUpdate) {
    case "user_message_chunk":
      appendChunk(state, "user", blockText(update.content));
      return;
    case "agent_message_chunk":
      appendChunk(state, "agent", blockText(update.content), update.messageId);
      state.turn.activity = "writing";
      break;
    case "agent_thought_chunk":
      appendChunk(state, "thought", blockText(update.content), update.messageId);
      state.turn.activity = "thinking";
      break;
    case "tool_call":
      upsertTool(state, update, true);
      state.turn.activity = "tools";
      break;
    case "tool_call_update":
      upsertTool(state, update, false);
      state.turn.activity = "tools";
      break;
    case "plan":
      state.plan = update.entries;
      break;
    case "available_commands_update":
      state.commands = update.availableCommands;
      return;
    case "current_mode_update":
      setMode(state, update.currentModeId);
      return;
    case "config_option_update":
      state.configOptions = update.configOptions;
      return;
    case "session_info_update":
      if (update.title !== undefined) state.session.title = update.title;
      return;
    case "usage_update":
      state.usage = { used: update.used, size: update.size, cost: update.cost };
      return;
    case "notice":
      push(state, {
        kind: "notice",
        id: nextId(state, "n"),
        rev: 0,
        severity: update.severity,
        title: update.title,
        description: update.description,
      });
      break;
    default:
      return;
  }
  state.turn.lastActivityAt = at;
}

function setMode(state: ChatState, modeId: string): void {
  if (state.modes) state.modes = { ...state.modes, currentModeId: modeId };
  for (const option of state.configOptions) {
    if (option.type === "select" && option.category === "mode") option.currentValue = modeId;
  }
}

const STOP_WORDS: Record<string, string> = {
  end_turn: "",
  cancelled: "Stopped: you cancelled the turn.",
  max_tokens: "Stopped: the model reached its output limit.",
  max_turn_requests: "Stopped: the turn used the most model requests one turn may make.",
  refusal: "Stopped: the model refused to continue.",
};

export function stopText(reason: string): string {
  return STOP_WORDS[reason] ?? `Stopped: ${reason}.`;
}

function startPermission(
  state: ChatState,
  key: number,
  request: acp.RequestPermissionRequest,
): void {
  // the request's toolCall is an update of the card it is about (a new id makes a card)
  const announced = findTool(state, request.toolCall.toolCallId) !== undefined;
  const fields = announced ? request.toolCall : { title: "Permission needed", ...request.toolCall };
  const card = upsertTool(state, fields, false);
  card.call.permission = key;
  state.permissions[key] = {
    key,
    toolCallId: request.toolCall.toolCallId,
    options: request.options,
    state: "pending",
  };
}

function resolvePermission(state: ChatState, key: number, optionId?: string): void {
  const permission = state.permissions[key];
  if (!permission || permission.state !== "pending") return;
  const chosen = permission.options.find((o) => o.optionId === optionId);
  permission.state = chosen ? "answered" : "cancelled";
  permission.chosen = chosen;
  const card = findTool(state, permission.toolCallId);
  if (card) touch(card);
}

/** Applies `event` to `state` in place. Never changes `event`: the same object is also posted. */
export function apply(state: ChatState, event: ChatEvent): void {
  switch (event.type) {
    case "connection":
      state.connection = { phase: event.phase, message: event.message, agent: event.agent };
      if (event.phase !== "ready") {
        state.turn.running = false;
        // no agent runs (or a new one starts): the old session's pickers and commands are gone;
        // the next session brings its own
        state.modes = undefined;
        state.configOptions = [];
        state.commands = [];
      }
      return;
    case "capabilities":
      state.capabilities = event.capabilities;
      return;
    case "session":
      state.session = { id: event.id, cwd: event.cwd, title: event.title, loading: event.loading };
      state.items = [];
      state.permissions = {};
      state.plan = [];
      state.commands = [];
      state.usage = undefined;
      state.modes = event.modes;
      state.configOptions = event.configOptions ?? [];
      state.turn = { running: false, activity: "waiting" };
      state.history.open = false;
      return;
    case "sessionLoaded":
      state.session.loading = false;
      return;
    case "update":
      applyUpdate(state, event.update, event.at);
      return;
    case "userPrompt":
      push(state, { kind: "user", id: nextId(state, "u"), rev: 0, text: event.text });
      state.turn = { running: true, activity: "waiting", lastActivityAt: event.at };
      return;
    case "turnEnded": {
      state.turn.running = false;
      state.turn.lastStop = event.stopReason;
      const text = event.stopReason ? stopText(event.stopReason) : "";
      if (text) {
        const reason = event.stopReason ?? "";
        push(state, { kind: "stop", id: nextId(state, "s"), rev: 0, reason, text });
      }
      return;
    }
    case "permission":
      startPermission(state, event.key, event.request);
      state.turn.lastActivityAt = event.at;
      return;
    case "permissionResolved":
      resolvePermission(state, event.key, event.optionId);
      return;
    case "elicitation": {
      const elicitation: ElicitationView = {
        key: event.key,
        request: event.request,
        state: "pending",
      };
      push(state, { kind: "elicitation", id: `elicitation:${event.key}`, rev: 0, elicitation });
      state.turn.lastActivityAt = event.at;
      return;
    }
    case "elicitationResolved": {
      const item = findElicitation(state, event.key);
      if (!item) return;
      item.elicitation.state = event.action === "cancel" ? "cancelled" : "answered";
      item.elicitation.action = event.action;
      item.elicitation.content = event.content;
      touch(item);
      return;
    }
    case "terminal": {
      state.terminals[event.terminal.terminalId] = event.terminal;
      for (const item of state.items) {
        if (item.kind !== "tool") continue;
        const shows = item.call.content.some(
          (c) => c.type === "terminal" && c.terminalId === event.terminal.terminalId,
        );
        if (shows) touch(item);
      }
      return;
    }
    case "configOptions":
      state.configOptions = event.configOptions;
      return;
    case "mode":
      setMode(state, event.modeId);
      return;
    case "history": {
      const sessions = event.append && event.history.sessions
        ? [...state.history.sessions, ...event.history.sessions]
        : (event.history.sessions ?? state.history.sessions);
      state.history = { ...state.history, ...event.history, sessions };
      return;
    }
    case "error":
      push(state, {
        kind: "error",
        id: nextId(state, "e"),
        rev: 0,
        message: event.message,
        actions: event.actions ?? [],
      });
      return;
    case "notice":
      push(state, {
        kind: "notice",
        id: nextId(state, "n"),
        rev: 0,
        severity: event.severity,
        title: event.title,
        description: event.description,
      });
      return;
  }
}

export type StatusTone = "idle" | "busy" | "attention" | "error";

export interface Status {
  text: string;
  tone: StatusTone;
  /** When the current wait began (ms since epoch), so a view can show how long it has been. */
  since?: number;
}

/** The title of the card whose approval is awaited, if any. */
function pendingApproval(state: ChatState): string | undefined {
  const pending = Object.values(state.permissions).find((p) => p.state === "pending");
  if (!pending) return undefined;
  return findTool(state, pending.toolCallId)?.call.title ?? "a tool call";
}

function pendingElicitation(state: ChatState): ElicitationView | undefined {
  for (const item of state.items) {
    if (item.kind === "elicitation" && item.elicitation.state === "pending") {
      return item.elicitation;
    }
  }
  return undefined;
}

function runningCommand(state: ChatState): TerminalView | undefined {
  return Object.values(state.terminals).find((t) => t.exitStatus == null);
}

function toolsWith(state: ChatState, status: acp.ToolCallStatus): ToolCallView[] {
  const calls: ToolCallView[] = [];
  let start = 0; // this turn's calls only: an earlier, cancelled turn may have left some pending
  state.items.forEach((item, i) => {
    if (item.kind === "user") start = i;
  });
  for (const item of state.items.slice(start)) {
    if (item.kind === "tool" && item.call.status === status) calls.push(item.call);
  }
  return calls;
}

function names(calls: ToolCallView[]): string {
  return calls.length === 1 ? calls[0].title : `${calls.length} tools: ${calls.map((c) => c.title).join(", ")}`;
}

/** One sentence saying what the agent is doing now: the panel and the status bar show it. */
export function describeStatus(state: ChatState): Status {
  const { connection, turn } = state;
  if (connection.phase === "starting") return { text: "Starting tether…", tone: "busy" };
  if (connection.phase === "failed") {
    return { text: connection.message ?? "tether could not start", tone: "error" };
  }
  if (connection.phase === "exited") {
    return { text: connection.message ?? "tether stopped", tone: "error" };
  }
  if (connection.phase === "stopped") return { text: "Not started", tone: "idle" };
  if (state.session.loading) return { text: "Loading the session…", tone: "busy" };
  const approval = pendingApproval(state);
  if (approval) return { text: `Waiting for your approval: ${approval}`, tone: "attention" };
  if (pendingElicitation(state)) return { text: "Waiting for your answer", tone: "attention" };
  if (!turn.running) {
    if (!state.session.id) return { text: "Creating a session…", tone: "busy" };
    return { text: "Ready", tone: "idle" };
  }
  const since = turn.lastActivityAt;
  const command = runningCommand(state);
  if (command) return { text: `Running command: ${command.command}`, tone: "busy", since };
  const running = toolsWith(state, "in_progress");
  if (running.length > 0) return { text: `Running ${names(running)}`, tone: "busy", since };
  const pending = toolsWith(state, "pending");
  if (pending.length > 0) return { text: `Preparing ${names(pending)}`, tone: "busy", since };
  const words: Record<Activity, string> = {
    waiting: "Waiting for the model…",
    thinking: "Thinking…",
    writing: "Writing…",
    tools: "Waiting for the model…",
  };
  return { text: words[turn.activity], tone: "busy", since };
}
