// The chat panel: applies the extension's events to its copy of the state and redraws what
// changed once per animation frame. Transcript items are redrawn only when their `rev` moves.
import type * as acp from "@agentclientprotocol/sdk";
import { apply, describeStatus, initialState, type ChatState } from "../chat/model";
import type { FromWebview, ToWebview } from "../chat/protocol";
import { h } from "./dom";
import { renderItem, type Send } from "./items";

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };

const vscode = acquireVsCodeApi();
const send: Send = (message: FromWebview) => vscode.postMessage(message);

let state: ChatState = initialState();
let scheduled = false;
const drawn = new Map<string, { rev: number; el: HTMLElement }>();

// ---- the fixed parts of the page

const title = h("div", { class: "title", text: "tether" });
const newButton = h("button", { class: "icon-button", id: "new-session", title: "New session", text: "New", onclick: () => send({ type: "newSession" }) });
const historyButton = h("button", {
  class: "icon-button",
  id: "history-button",
  title: "Session history",
  text: "History",
  onclick: () => send({ type: "history", open: !state.history.open }),
});
const statusText = h("span", { class: "status-text" });
const statusTime = h("span", { class: "status-time" });
const status = h("div", { class: "status", role: "status", "aria-live": "polite" }, h("span", { class: "spinner" }), statusText, statusTime);
const pickers = h("div", { class: "pickers" });
const usage = h("div", { class: "usage" });
const plan = h("section", { class: "plan", hidden: true });
const items = h("div", { class: "items" });
const empty = h("div", { class: "empty" });
const transcript = h("main", { class: "transcript" }, plan, empty, items);
const history = h("section", { class: "history", hidden: true });
const commands = h("div", { class: "commands", hidden: true });
const input = h("textarea", {
  id: "prompt",
  rows: 3,
  placeholder: "Ask tether to read, explain or change code… (/ for commands)",
}) as HTMLTextAreaElement;
const sendButton = h("button", { class: "send", id: "send" }) as HTMLButtonElement;

document.getElementById("app")!.append(
  h("header", { class: "bar" }, title, h("div", { class: "actions" }, newButton, historyButton)),
  status,
  h("div", { class: "toolbar" }, pickers, usage),
  transcript,
  history,
  h("footer", { class: "composer" }, commands, input, sendButton),
);

// ---- input

function submit(): void {
  const text = input.value.trim();
  if (!text || state.turn.running || state.connection.phase !== "ready") return;
  send({ type: "prompt", text });
  input.value = "";
  drawCommands();
}

sendButton.addEventListener("click", () => (state.turn.running ? send({ type: "cancel" }) : submit()));
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  } else if (e.key === "Escape" && state.turn.running) send({ type: "cancel" });
});
input.addEventListener("input", () => drawCommands());

// ---- drawing

function drawStatus(): void {
  const s = describeStatus(state);
  status.dataset.tone = s.tone;
  statusText.textContent = s.text;
  const seconds = s.since ? Math.floor((Date.now() - s.since) / 1000) : 0;
  statusTime.textContent = seconds >= 2 ? ` · ${seconds} s` : "";
}

function selectOptions(option: acp.SessionConfigOption & { type: "select" }): HTMLElement[] {
  const flat = (opts: acp.SessionConfigSelectOption[]) =>
    opts.map((o) => h("option", { value: o.value, text: o.name, selected: o.value === option.currentValue }));
  const groups = option.options as (acp.SessionConfigSelectOption | acp.SessionConfigSelectGroup)[];
  return groups.map((entry) =>
    "group" in entry ? h("optgroup", { label: entry.name }, flat(entry.options)) : flat([entry])[0],
  );
}

function drawPickers(): void {
  const busy = state.connection.phase !== "ready" || !state.session.id;
  const fields: HTMLElement[] = state.configOptions.map((option) => {
    const id = `config-${option.id}`;
    const control =
      option.type === "boolean"
        ? h("input", {
            id,
            type: "checkbox",
            checked: option.currentValue,
            disabled: busy,
            onchange: (e: Event) => send({ type: "setConfigOption", configId: option.id, value: (e.target as HTMLInputElement).checked }),
          })
        : h(
            "select",
            {
              id,
              disabled: busy,
              onchange: (e: Event) => send({ type: "setConfigOption", configId: option.id, value: (e.target as HTMLSelectElement).value }),
            },
            selectOptions(option as acp.SessionConfigOption & { type: "select" }),
          );
    return h("label", { class: "picker", title: option.description ?? option.name }, h("span", { text: option.name }), control);
  });
  if (fields.length === 0 && state.modes) {
    const modes = state.modes;
    fields.push(
      h(
        "label",
        { class: "picker" },
        h("span", { text: "Mode" }),
        h(
          "select",
          { id: "config-mode", disabled: busy, onchange: (e: Event) => send({ type: "setMode", modeId: (e.target as HTMLSelectElement).value }) },
          modes.availableModes.map((m) => h("option", { value: m.id, text: m.name, selected: m.id === modes.currentModeId })),
        ),
      ),
    );
  }
  if (fields.length === 0 && state.connection.phase !== "ready") {
    // tether is not running (it failed to start, exited, or is starting): the pickers stay in
    // place, empty and disabled, rather than showing an earlier session's values
    for (const [id, name] of [["mode", "Mode"], ["model", "Model"]]) {
      fields.push(
        h(
          "label",
          { class: "picker", title: "tether is not running" },
          h("span", { text: name }),
          h("select", { id: `config-${id}`, disabled: true }, h("option", { value: "", text: "—", selected: true })),
        ),
      );
    }
  }
  pickers.replaceChildren(...fields);
  const u = state.usage;
  const cost = u?.cost ? ` · ${u.cost.amount.toFixed(4)} ${u.cost.currency}` : "";
  usage.textContent = u ? `${compact(u.used)} / ${compact(u.size)} tokens${cost}` : "";
  usage.title = u ? `Context window: ${u.used} of ${u.size} tokens used` : "";
}

function compact(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10_000 ? 0 : 1)}k` : String(n);
}

const PLAN_MARKS: Record<string, string> = { pending: "○", in_progress: "◐", completed: "●" };

function drawPlan(): void {
  plan.hidden = state.plan.length === 0;
  if (plan.hidden) return;
  const done = state.plan.filter((e) => e.status === "completed").length;
  plan.replaceChildren(
    h("div", { class: "plan-head" }, h("strong", { text: "Plan" }), h("span", { text: `${done}/${state.plan.length} done` })),
    h(
      "ol",
      {},
      state.plan.map((entry) =>
        h(
          "li",
          { class: `plan-entry ${entry.status} priority-${entry.priority}` },
          h("span", { class: "mark", text: PLAN_MARKS[entry.status] ?? "○" }),
          h("span", { text: entry.content }),
        ),
      ),
    ),
  );
}

function drawItems(): void {
  const keep = new Set<string>();
  const last = state.items[state.items.length - 1];
  let previous: HTMLElement | null = null;
  for (const item of state.items) {
    keep.add(item.id);
    let entry = drawn.get(item.id);
    if (!entry || entry.rev !== item.rev) {
      const wasOpen = entry?.el instanceof HTMLDetailsElement ? entry.el.open : undefined;
      const open = wasOpen ?? (item === last && state.turn.running);
      const el = renderItem(state, item, send, open);
      el.dataset.item = item.id;
      if (entry) entry.el.replaceWith(el);
      entry = { rev: item.rev, el };
      drawn.set(item.id, entry);
    }
    const expected: ChildNode | null = previous ? previous.nextSibling : items.firstChild;
    if (expected !== entry.el) items.insertBefore(entry.el, expected);
    previous = entry.el;
  }
  for (const [id, entry] of drawn) {
    if (!keep.has(id)) {
      entry.el.remove();
      drawn.delete(id);
    }
  }
  const cwd = state.session.cwd ? ` in ${state.session.cwd}` : "";
  empty.hidden = state.items.length > 0;
  empty.textContent = state.connection.phase === "ready" ? `Ask tether to read, explain or change code${cwd}.` : "";
}

function drawHistory(): void {
  const view = state.history;
  history.hidden = !view.open;
  transcript.hidden = view.open;
  historyButton.classList.toggle("active", view.open);
  if (!view.open) return;
  const rows = view.sessions.map((s) =>
    h(
      "button",
      { class: "session-row", "data-session-id": s.sessionId, onclick: () => send({ type: "openSession", sessionId: s.sessionId, cwd: s.cwd }) },
      h("span", { class: "session-title", text: s.title || s.sessionId }),
      h("span", { class: "session-meta", text: [s.updatedAt ? new Date(s.updatedAt).toLocaleString() : "", s.sessionId === state.session.id ? "current" : ""].filter(Boolean).join(" · ") }),
    ),
  );
  const parts: (HTMLElement | null)[] = [
    h("div", { class: "plan-head" }, h("strong", { text: "Sessions" }), h("button", { class: "link", text: "Close", onclick: () => send({ type: "history", open: false }) })),
    view.error ? h("div", { class: "error-text", text: view.error }) : null,
    view.loading ? h("div", { class: "muted", text: "Loading sessions…" }) : null,
    !view.loading && !view.error && rows.length === 0 ? h("div", { class: "muted", text: "No earlier sessions in this folder." }) : null,
    ...rows,
    view.nextCursor ? h("button", { class: "link", text: "Load more", onclick: () => send({ type: "historyMore" }) }) : null,
  ];
  history.replaceChildren(...parts.filter((p): p is HTMLElement => p !== null));
}

function drawCommands(): void {
  const text = input.value;
  const match = /^\/(\S*)$/.exec(text);
  const shown = match ? state.commands.filter((c) => c.name.startsWith(match[1])) : [];
  commands.hidden = shown.length === 0;
  commands.replaceChildren(
    ...shown.map((c) =>
      h(
        "button",
        {
          class: "command",
          onclick: () => {
            input.value = `/${c.name} `;
            input.focus();
            drawCommands();
          },
        },
        h("strong", { text: `/${c.name}` }),
        h("span", { text: ` ${c.description}` }),
        c.input && "hint" in c.input ? h("span", { class: "muted", text: ` ${c.input.hint}` }) : null,
      ),
    ),
  );
}

function draw(): void {
  scheduled = false;
  const nearBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80;
  title.textContent = state.session.title || (state.session.id ? "New session" : "tether");
  drawStatus();
  drawPickers();
  drawPlan();
  drawItems();
  drawHistory();
  drawCommands();
  const running = state.turn.running;
  sendButton.textContent = running ? "Stop" : "Send";
  sendButton.classList.toggle("stop", running);
  sendButton.disabled = !running && state.connection.phase !== "ready";
  input.disabled = state.connection.phase !== "ready";
  if (nearBottom) transcript.scrollTop = transcript.scrollHeight;
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(draw);
}

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  if (message.type === "reset") {
    state = message.state;
    drawn.forEach((entry) => entry.el.remove());
    drawn.clear();
  } else if (message.type === "events") {
    for (const e of message.events) apply(state, e);
  }
  schedule();
});

setInterval(drawStatus, 1000);
send({ type: "ready" });
