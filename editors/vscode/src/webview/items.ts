// One element per transcript item. Buttons send `FromWebview` messages through `send`.
import type * as acp from "@agentclientprotocol/sdk";
import type { ChatState, ElicitationView, Item, PermissionView, ToolCallView } from "../chat/model";
import type { FromWebview } from "../chat/protocol";
import { hunks, lineDiff } from "./diff";
import { basename, h, html } from "./dom";
import { renderMarkdown } from "./markdown";

export type Send = (message: FromWebview) => void;

const PREVIEW_LINES = 40;
const TERMINAL_LINES = 30;

const STATUS_WORDS: Record<acp.ToolCallStatus, string> = {
  pending: "pending",
  in_progress: "running",
  completed: "done",
  failed: "failed",
};

const KIND_LABELS: Record<string, string> = {
  read: "read",
  edit: "edit",
  delete: "delete",
  move: "move",
  search: "search",
  execute: "run",
  think: "plan",
  fetch: "fetch",
  switch_mode: "mode",
  other: "tool",
};

function diffCard(diff: acp.Diff, itemId: string, index: number, send: Send): HTMLElement {
  const lines = hunks(lineDiff(diff.oldText, diff.newText));
  const shown = lines.slice(0, PREVIEW_LINES);
  const isNew = diff.oldText == null;
  const added = lines.filter((l) => l?.op === "+").length;
  const removed = lines.filter((l) => l?.op === "-").length;
  return h(
    "div",
    { class: "diff", "data-path": diff.path },
    h(
      "div",
      { class: "diff-head" },
      h("span", { class: "diff-path", title: diff.path, text: basename(diff.path) }),
      h("span", { class: "diff-stat", text: isNew ? `new file, +${added}` : `+${added} −${removed}` }),
      h("button", {
        class: "link open-diff",
        text: "Open diff",
        title: `Compare ${diff.path} in VS Code's diff editor`,
        onclick: () => send({ type: "openDiff", itemId, index }),
      }),
    ),
    h(
      "pre",
      { class: "diff-body" },
      shown.map((line) =>
        line === null
          ? h("span", { class: "gap", text: "⋯\n" })
          : h("span", { class: line.op === "+" ? "add" : line.op === "-" ? "del" : "ctx", text: `${line.op} ${line.text}\n` }),
      ),
      lines.length > shown.length ? h("span", { class: "gap", text: `⋯ ${lines.length - shown.length} more lines\n` }) : null,
    ),
  );
}

function terminalBlock(state: ChatState, terminalId: string, send: Send, call: ToolCallView): HTMLElement {
  const finished = call.status === "completed" || call.status === "failed";
  const term = state.terminals[terminalId];
  // a finished call whose terminal this window never had: a reopened session's earlier command
  const gone = !term && finished;
  const output = term?.output ?? "";
  const tail = output.split("\n").slice(-TERMINAL_LINES).join("\n");
  const exit = term?.exitStatus;
  const status = gone
    ? `${call.exitCode != null ? `exited with ${call.exitCode}; ` : ""}its terminal is gone (an earlier window)`
    : !term
      ? "starting…"
      : exit == null
        ? "running…"
        : exit.signal
          ? `killed (${exit.signal})`
          : `exited with ${exit.exitCode}`;
  return h(
    "div",
    { class: "terminal", "data-terminal": terminalId },
    h(
      "div",
      { class: "terminal-head" },
      h("span", { class: "terminal-command", text: term ? `$ ${term.command}` : "$ …" }),
      h("span", { class: "terminal-status", text: status }),
      gone
        ? null
        : h("button", {
            class: "link",
            text: "Show terminal",
            onclick: () => send({ type: "showTerminal", terminalId }),
          }),
    ),
    h("pre", { class: "terminal-output", text: (term?.truncated ? "…\n" : "") + tail }),
  );
}

function toolContent(
  state: ChatState,
  content: acp.ToolCallContent[],
  itemId: string,
  send: Send,
  call: ToolCallView,
): HTMLElement[] {
  return content.map((block, index) => {
    if (block.type === "diff") return diffCard(block, itemId, index, send);
    if (block.type === "terminal") return terminalBlock(state, block.terminalId, send, call);
    if (block.content.type === "text") return html("div", "tool-text", renderMarkdown(block.content.text));
    return h("div", { class: "tool-text", text: `[${block.content.type}]` });
  });
}

function locations(call: ToolCallView, send: Send): HTMLElement | null {
  const shown = call.locations.filter((l) => !call.content.some((c) => c.type === "diff" && c.path === l.path));
  if (shown.length === 0) return null;
  return h(
    "div",
    { class: "locations" },
    shown.map((loc) =>
      h("button", {
        class: "link location",
        title: loc.path,
        text: loc.line ? `${basename(loc.path)}:${loc.line}` : basename(loc.path),
        onclick: () => send({ type: "openLocation", path: loc.path, line: loc.line }),
      }),
    ),
  );
}

function approval(state: ChatState, call: ToolCallView, send: Send): HTMLElement | null {
  const p: PermissionView | undefined = call.permission === undefined ? undefined : state.permissions[call.permission];
  if (!p) return null;
  if (p.state !== "pending") {
    return h("div", { class: "answer", text: p.chosen ? `You chose: ${p.chosen.name}` : "Cancelled: no answer was given." });
  }
  return h(
    "div",
    { class: "options", role: "group", "aria-label": "Permission" },
    p.options.map((option) =>
      h("button", {
        class: `option kind-${option.kind}`,
        "data-option-id": option.optionId,
        "data-kind": option.kind,
        text: option.name,
        onclick: () => send({ type: "permission", key: p.key, optionId: option.optionId }),
      }),
    ),
  );
}

function toolCard(state: ChatState, item: Item & { kind: "tool" }, send: Send): HTMLElement {
  const call = item.call;
  const waiting = call.permission !== undefined && state.permissions[call.permission]?.state === "pending";
  const status = waiting ? "waiting for your approval" : STATUS_WORDS[call.status];
  return h(
    "div",
    {
      class: `card tool status-${waiting ? "awaiting" : call.status}`,
      "data-tool-call": call.toolCallId,
      role: waiting ? "alert" : undefined,
    },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: `kind${waiting ? " attention" : ""}`, text: KIND_LABELS[call.kind ?? "other"] ?? "tool" }),
      h("span", { class: "card-title", text: call.title }),
      h("span", { class: "badge", text: status }),
    ),
    locations(call, send),
    toolContent(state, call.content, item.id, send, call),
    approval(state, call, send),
  );
}

type PropertySchema = {
  type?: string;
  title?: string | null;
  description?: string | null;
  default?: unknown;
  enum?: string[] | null;
  oneOf?: { const: string; title: string }[] | null;
  items?: { enum?: string[]; anyOf?: { const: string; title: string }[] };
};

function choices(schema: PropertySchema): { value: string; label: string }[] | null {
  if (schema.oneOf) return schema.oneOf.map((o) => ({ value: o.const, label: o.title }));
  if (schema.enum) return schema.enum.map((v) => ({ value: v, label: v }));
  return null;
}

function field(name: string, schema: PropertySchema, value: unknown, required: boolean): HTMLElement {
  const label = `${schema.title ?? name}${required ? " *" : ""}`;
  const hint = schema.description ? h("span", { class: "hint", text: schema.description }) : null;
  if (schema.type === "boolean") {
    return h(
      "label",
      { class: "field check" },
      h("input", { type: "checkbox", name, "data-type": "boolean", checked: value === true }),
      h("span", { text: label }),
      hint,
    );
  }
  if (schema.type === "array") {
    const opts = schema.items?.anyOf?.map((o) => ({ value: o.const, label: o.title })) ??
      schema.items?.enum?.map((v) => ({ value: v, label: v })) ?? [];
    const chosen: unknown[] = Array.isArray(value) ? value : [];
    return h(
      "fieldset",
      { class: "field", "data-name": name, "data-type": "array" },
      h("legend", { text: label }),
      opts.map((o) =>
        h("label", { class: "check" }, h("input", { type: "checkbox", value: o.value, checked: chosen.includes(o.value) }), h("span", { text: o.label })),
      ),
      hint,
    );
  }
  const options = choices(schema);
  const input = options
    ? h(
        "select",
        { name, "data-type": "string" },
        value == null ? h("option", { value: "", text: "Choose…", selected: true }) : null,
        options.map((o) => h("option", { value: o.value, text: o.label, selected: o.value === value })),
      )
    : h("input", {
        name,
        "data-type": schema.type ?? "string",
        type: schema.type === "number" || schema.type === "integer" ? "number" : "text",
        value: value == null ? "" : String(value),
      });
  return h("label", { class: "field" }, h("span", { text: label }), input, hint);
}

function formContent(form: HTMLElement): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const el of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>("input[name], select[name]")) {
    const type = el.dataset.type;
    if (type === "boolean") content[el.name] = (el as HTMLInputElement).checked;
    else if (el.value === "") continue; // left empty: not answered
    else if (type === "number") content[el.name] = Number(el.value);
    else if (type === "integer") content[el.name] = Math.trunc(Number(el.value));
    else content[el.name] = el.value;
  }
  form.querySelectorAll<HTMLElement>("fieldset[data-type=array]").forEach((set) => {
    const values = [...set.querySelectorAll<HTMLInputElement>("input:checked")].map((i) => i.value);
    content[set.dataset.name ?? ""] = values;
  });
  return content;
}

function elicitationCard(item: Item & { kind: "elicitation" }, send: Send): HTMLElement {
  const e: ElicitationView = item.elicitation;
  const request = e.request as acp.CreateElicitationRequest & { requestedSchema?: acp.ElicitationSchema };
  const properties = (request.requestedSchema?.properties ?? {}) as Record<string, PropertySchema>;
  const required = request.requestedSchema?.required ?? [];
  const form = h(
    "form",
    // Enter in a field must not submit the form: that would reload the webview
    { class: "fields", onsubmit: (event: Event) => event.preventDefault() },
    Object.entries(properties).map(([name, schema]) =>
      field(name, schema, e.state === "pending" || !e.content ? schema.default : e.content[name], required.includes(name)),
    ),
  );
  const problem = h("div", { class: "error-text", role: "alert" });
  const answer = (action: "accept" | "decline" | "cancel") => () => {
    const content = action === "accept" ? formContent(form) : undefined;
    const missing = content ? required.filter((name) => content[name] === undefined || content[name] === "") : [];
    if (missing.length > 0) {
      problem.textContent = `Fill in: ${missing.map((name) => properties[name]?.title ?? name).join(", ")}`;
      return;
    }
    send({ type: "elicitation", key: e.key, action, content });
  };
  const done = e.state !== "pending";
  if (done) form.querySelectorAll("input, select").forEach((el) => el.setAttribute("disabled", ""));
  return h(
    "div",
    { class: `card elicitation state-${e.state}` },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: "kind attention", text: "question" }),
      h("span", { class: "card-title", text: request.requestedSchema?.title ?? request.message }),
      done ? null : h("span", { class: "badge attention", text: "waiting for your answer" }),
    ),
    request.requestedSchema?.title ? h("div", { class: "tool-text", text: request.message }) : null,
    form,
    problem,
    done
      ? h("div", { class: "answer", text: e.action === "accept" ? "Answer sent." : e.action === "decline" ? "Declined." : "Cancelled." })
      : h(
          "div",
          { class: "options" },
          h("button", { class: "option kind-allow_once", text: "Submit", onclick: answer("accept") }),
          h("button", { class: "option kind-reject_once", text: "Decline", onclick: answer("decline") }),
          h("button", { class: "option", text: "Cancel", onclick: answer("cancel") }),
        ),
  );
}

function preview(text: string): string {
  const line = text.trim().replace(/\s+/g, " ");
  return line.length > 90 ? ` · ${line.slice(0, 90)}…` : ` · ${line}`;
}

const ACTION_LABELS = { restart: "Restart tether", settings: "Open Settings", log: "Show Log" } as const;

export function renderItem(state: ChatState, item: Item, send: Send, open: boolean): HTMLElement {
  switch (item.kind) {
    case "user":
      return h("div", { class: "msg user", text: item.text });
    case "agent":
      return html("div", "msg agent", renderMarkdown(item.text));
    case "thought":
      return h(
        "details",
        { class: "thought", open },
        h("summary", {}, h("span", { text: "Thinking" }), h("span", { class: "thought-preview", text: preview(item.text) })),
        h("div", { class: "thought-text", text: item.text }),
      );
    case "tool":
      return toolCard(state, item, send);
    case "elicitation":
      return elicitationCard(item, send);
    case "notice":
      return h(
        "div",
        { class: `notice severity-${item.severity}` },
        h("strong", { text: item.title }),
        item.description ? h("div", { text: item.description }) : null,
      );
    case "error":
      return h(
        "div",
        { class: "error", role: "alert" },
        h("div", { class: "error-text", text: item.message }),
        item.actions.length
          ? h(
              "div",
              { class: "options" },
              item.actions.map((action) =>
                h("button", {
                  class: "option",
                  text: ACTION_LABELS[action],
                  onclick: () =>
                    send({ type: action === "restart" ? "restart" : action === "settings" ? "openSettings" : "showLog" }),
                }),
              ),
            )
          : null,
      );
    case "stop":
      return h("div", { class: "stop", text: item.text });
  }
}
