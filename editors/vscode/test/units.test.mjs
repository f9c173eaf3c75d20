// The pure pieces: the chat reducer and status line, the Markdown renderer's escaping, the
// preview diff, line slicing for fs/read_text_file, byte trimming for terminal output.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { testing } from "./helpers.mjs";

const { apply, describeStatus, display, initialState, renderMarkdown, lineDiff, hunks, sliceLines, trimToBytes } = testing;

function ready() {
  const state = initialState();
  apply(state, { type: "connection", phase: "ready" });
  apply(state, { type: "session", id: "s1", cwd: "/p", configOptions: [] });
  return state;
}

const chunk = (sessionUpdate, text, messageId) => ({
  type: "update",
  at: 1,
  update: { sessionUpdate, content: { type: "text", text }, messageId },
});

describe("the chat reducer", () => {
  test("chunks of one message join; a new message id or kind starts a new item", () => {
    const state = ready();
    apply(state, { type: "userPrompt", text: "hi", at: 0 });
    apply(state, chunk("agent_thought_chunk", "think ", "m1"));
    apply(state, chunk("agent_thought_chunk", "more", "m1"));
    apply(state, chunk("agent_message_chunk", "Hel", "m1"));
    apply(state, chunk("agent_message_chunk", "lo", "m1"));
    apply(state, chunk("agent_message_chunk", "Next", "m2"));
    assert.deepEqual(
      state.items.map((i) => [i.kind, i.text]),
      [
        ["user", "hi"],
        ["thought", "think more"],
        ["agent", "Hello"],
        ["agent", "Next"],
      ],
    );
  });

  test("tool_call_update merges into the announced card; an unknown id makes a card", () => {
    const state = ready();
    apply(state, { type: "userPrompt", text: "go", at: 0 });
    apply(state, { type: "update", at: 1, update: { sessionUpdate: "tool_call", toolCallId: "c1", title: "Read a", kind: "read", status: "pending" } });
    assert.equal(describeStatus(state).text, "Preparing Read a");
    apply(state, { type: "update", at: 2, update: { sessionUpdate: "tool_call_update", toolCallId: "c1", status: "in_progress" } });
    assert.equal(describeStatus(state).text, "Running Read a");
    apply(state, { type: "update", at: 3, update: { sessionUpdate: "tool_call_update", toolCallId: "c2", status: "completed" } });
    const tools = state.items.filter((i) => i.kind === "tool").map((i) => [i.call.toolCallId, i.call.title, i.call.status]);
    assert.deepEqual(tools, [
      ["c1", "Read a", "in_progress"],
      ["c2", "Tool call", "completed"],
    ]);
  });

  test("the status says what is going on at every step", () => {
    const state = initialState();
    assert.equal(describeStatus(state).text, "Not started");
    apply(state, { type: "connection", phase: "starting" });
    assert.deepEqual(describeStatus(state), { text: "Starting tether…", tone: "busy" });
    apply(state, { type: "connection", phase: "ready" });
    assert.equal(describeStatus(state).text, "Creating a session…");
    apply(state, { type: "session", id: "s", cwd: "/p" });
    assert.equal(describeStatus(state).text, "Ready");
    apply(state, { type: "userPrompt", text: "x", at: 5 });
    assert.deepEqual(describeStatus(state), { text: "Waiting for the model…", tone: "busy", since: 5 });
    apply(state, chunk("agent_thought_chunk", "hmm"));
    assert.equal(describeStatus(state).text, "Thinking…");
    const request = { sessionId: "s", toolCall: { toolCallId: "r", title: "Approve 2 tool calls" }, options: [] };
    apply(state, { type: "permission", key: 1, request, at: 6 });
    assert.deepEqual(describeStatus(state), { text: "Waiting for your approval: Approve 2 tool calls", tone: "attention" });
    apply(state, { type: "permissionResolved", key: 1 });
    apply(state, { type: "turnEnded", stopReason: "max_tokens" });
    assert.equal(state.items.at(-1).text, "Stopped: the model reached its output limit.");
    apply(state, { type: "connection", phase: "exited", message: "tether exited with code 1." });
    assert.deepEqual(describeStatus(state), { text: "tether exited with code 1.", tone: "error" });
  });

  test("a permission about an announced call is drawn on its card; an unknown id makes a card", () => {
    const state = ready();
    apply(state, { type: "update", at: 1, update: { sessionUpdate: "tool_call", toolCallId: "c1", title: "Edit a" } });
    const options = [{ optionId: "ok", name: "Allow", kind: "allow_once" }];
    apply(state, { type: "permission", key: 7, request: { sessionId: "s1", toolCall: { toolCallId: "c1" }, options }, at: 2 });
    assert.equal(state.items.length, 1);
    const card = state.items[0];
    assert.equal(card.call.permission, 7);
    assert.equal(card.call.title, "Edit a", "a request without a title keeps the card's");
    assert.equal(describeStatus(state).text, "Waiting for your approval: Edit a");
    const rev = card.rev;
    apply(state, { type: "permissionResolved", key: 7, optionId: "ok" });
    assert.ok(card.rev > rev, "the card is redrawn");
    assert.equal(state.permissions[7].chosen.name, "Allow");
    assert.equal(describeStatus(state).text, "Ready");
    const round = { toolCallId: "round_1", title: "Approve 2", content: [{ type: "diff", path: "/p/x", newText: "x" }] };
    apply(state, { type: "permission", key: 8, request: { sessionId: "s1", toolCall: round, options }, at: 3 });
    assert.deepEqual(state.items.map((i) => i.call.title), ["Edit a", "Approve 2"]);
    apply(state, { type: "permissionResolved", key: 8 });
    assert.equal(state.permissions[8].state, "cancelled");
  });

  test("a failed start clears the previous session's mode, model and commands; the transcript stays", () => {
    const state = ready();
    const mode = { id: "mode", name: "Mode", category: "mode", type: "select", currentValue: "code", options: [{ value: "code", name: "Code" }] };
    const model = { id: "model", name: "Model", category: "model", type: "select", currentValue: "m1", options: [{ value: "m1", name: "M1" }] };
    apply(state, { type: "session", id: "s1", cwd: "/p", configOptions: [mode, model], modes: { currentModeId: "code", availableModes: [{ id: "code", name: "Code" }] } });
    apply(state, { type: "update", at: 1, update: { sessionUpdate: "available_commands_update", availableCommands: [{ name: "model", description: "pick" }] } });
    apply(state, { type: "userPrompt", text: "hi", at: 2 });
    for (const phase of ["stopped", "starting", "failed"]) apply(state, { type: "connection", phase, message: phase === "failed" ? "Could not start tether" : undefined });
    assert.deepEqual(state.configOptions, []);
    assert.equal(state.modes, undefined);
    assert.deepEqual(state.commands, []);
    assert.deepEqual(state.items.map((i) => i.kind), ["user"]);
    // a start that ends with tether exiting is cleared alike
    apply(state, { type: "connection", phase: "ready" });
    apply(state, { type: "session", id: "s2", cwd: "/p", configOptions: [mode, model] });
    apply(state, { type: "connection", phase: "exited", message: "tether exited with code 2." });
    assert.deepEqual(state.configOptions, []);
  });

  test("history pages append without changing the event", () => {
    const state = ready();
    apply(state, { type: "history", history: { open: true, sessions: [{ sessionId: "a", cwd: "/" }] } });
    const event = { type: "history", history: { sessions: [{ sessionId: "b", cwd: "/" }] }, append: true };
    apply(state, event);
    assert.deepEqual(state.history.sessions.map((s) => s.sessionId), ["a", "b"]);
    assert.equal(event.history.sessions.length, 1);
  });
});

describe("markdown", () => {
  test("escapes everything the agent wrote", () => {
    const html = renderMarkdown('<img src=x onerror="alert(1)"> **b** `<i>` [x](javascript:alert(1))');
    assert.equal(html, '<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt; <strong>b</strong> <code>&lt;i&gt;</code> [x](javascript:alert(1))</p>');
  });

  test("fences, lists, headings, links", () => {
    assert.equal(renderMarkdown("# T\n\n- a\n- b\n\n```py\nx < 1\n```"), '<h1>T</h1><ul><li>a</li><li>b</li></ul><pre><code class="lang-py">x &lt; 1</code></pre>');
    assert.equal(renderMarkdown("see [docs](https://e.x/a)"), '<p>see <a href="https://e.x/a">docs</a></p>');
    assert.equal(renderMarkdown("```\nstill streaming"), "<pre><code>still streaming</code></pre>");
  });
});

describe("preview diff", () => {
  test("a changed line between unchanged ones", () => {
    assert.deepEqual(lineDiff("a\nb\nc\n", "a\nB\nc\n"), [
      { op: " ", text: "a" },
      { op: "-", text: "b" },
      { op: "+", text: "B" },
      { op: " ", text: "c" },
    ]);
    assert.deepEqual(lineDiff(null, "new\n"), [{ op: "+", text: "new" }]);
  });

  test("hunks keep context around changes and mark gaps", () => {
    const lines = lineDiff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\n5\n6\n7\nX\n");
    assert.deepEqual(hunks(lines, 1).map((l) => l && l.op + l.text), [" 7", "-8", "+X"]);
    const middle = lineDiff("1\n2\n3\n4\n5\n6\n", "1\nX\n3\n4\n5\nY\n");
    assert.deepEqual(hunks(middle, 0).map((l) => l && l.op + l.text), ["-2", "+X", null, "-6", "+Y"]);
  });
});

describe("fs and terminal helpers", () => {
  test("sliceLines: 1-based line, limit, past the end", () => {
    assert.equal(sliceLines("a\nb\nc", 2, 1), "b\n");
    assert.equal(sliceLines("a\nb\nc", 2), "b\nc");
    assert.equal(sliceLines("a\nb\n", 9, 2), "");
    assert.equal(sliceLines("a\r\nb\r\n", 1, 1), "a\r\n");
  });

  test("trimToBytes keeps the end and never splits a character", () => {
    assert.deepEqual(trimToBytes("abc", 5), { text: "abc", truncated: false });
    assert.deepEqual(trimToBytes("abcdef", 3), { text: "def", truncated: true });
    // "é" is two bytes: a cut through it drops the whole character
    assert.deepEqual(trimToBytes("aé", 1), { text: "", truncated: true });
    assert.deepEqual(trimToBytes("aéz", 3), { text: "éz", truncated: true });
  });
});

describe("a terminal's name", () => {
  test("names tether's launcher by what it is, sandboxed or not", () => {
    const run = "/tmp/tether-sandbox-x/run";
    assert.equal(display({ sessionId: "s", command: `${run}/sandboxed-3`, args: ["ls", "-la"] }), "ls -la  (sandboxed)");
    assert.equal(display({ sessionId: "s", command: `${run}/unconfined-4`, args: ["make", "push"] }), "make push  (unconfined)");
    assert.equal(display({ sessionId: "s", command: "ls", args: ["-la"] }), "ls -la");
  });
});
