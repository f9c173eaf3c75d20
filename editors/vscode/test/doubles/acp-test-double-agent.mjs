#!/usr/bin/env node
// TEST DOUBLE, not tether: a small ACP v1 agent (NDJSON on stdio, built on the SDK's agent side)
// for the client features the fixture session does not show: session/load (with a replayed
// history), session/resume, terminals (input, kill, byte limit), form elicitation, a round
// permission whose options use each kind once, a permission the agent withdraws, a config option
// `approvals`, and an error answer.
// The first word of a prompt picks the scenario:
//   terminal <command>   run <command> in a client terminal (args: ["-e", rest] on node when it
//                        starts with "node:"), wait for it, report exit and output
//   interactive          run a node program that reads one line from stdin, report it
//   kill                 start a command that never ends, kill it, report the signal
//   round                ask one permission for two edits (allow_once / allow_always /
//                        reject_once / reject_always), report the option chosen
//   form                 ask with a form elicitation, report the answer
//   withdraw             ask permission, then cancel the request ($/cancel_request)
//   read <path> [line limit]  fs/read_text_file, report the content or the error
//   write <path> <text>  fs/write_text_file, report "written" or the error
//   stream <n>           n text chunks "0 1 2 … " in one message
//   slow                 wait until the client cancels (session/cancel)
//   fail                 answer the prompt with an internal error
//   crash                say something, then die mid-turn (exit 3, a last word on stderr)
//   garbage              write a line that is not JSON to stdout, then answer normally
// With --no-load it offers session/resume but not session/load.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const OLD = "old-session";
const sessions = new Map(); // id -> {cwd, title, cancel: AbortController | null}
let counter = 0;

const configOptions = (approvals = "round") => [
  {
    type: "select",
    id: "mode",
    name: "Mode",
    category: "mode",
    currentValue: "ask",
    options: [
      { value: "ask", name: "Ask" },
      { value: "code", name: "Code" },
    ],
  },
  {
    type: "select",
    id: "approvals",
    name: "Approvals",
    currentValue: approvals,
    options: [
      { value: "round", name: "One per round" },
      { value: "per_call", name: "Each call" },
    ],
  },
];

function update(client, sessionId, u) {
  return client.notify(acp.methods.client.session.update, { sessionId, update: u });
}

function say(client, sessionId, text) {
  return update(client, sessionId, {
    sessionUpdate: "agent_message_chunk",
    content: { type: "text", text },
  });
}

async function runInTerminal(ctx, sessionId, command, args, input) {
  const cwd = sessions.get(sessionId).cwd;
  const terminal = await ctx.client.createTerminal({ sessionId, command, args, cwd, outputByteLimit: 4096 });
  await update(ctx.client, sessionId, {
    sessionUpdate: "tool_call",
    toolCallId: "run1",
    title: `Run ${[command, ...args].join(" ").slice(0, 40)}`,
    kind: "execute",
    status: "in_progress",
    content: [{ type: "terminal", terminalId: terminal.id }],
  });
  if (input === "kill") await terminal.kill();
  const exit = await terminal.waitForExit();
  const output = await terminal.currentOutput();
  await update(ctx.client, sessionId, {
    sessionUpdate: "tool_call_update",
    toolCallId: "run1",
    status: exit.exitCode === 0 ? "completed" : "failed",
  });
  await terminal.release();
  return { exit, output };
}

const scenarios = {
  async terminal(ctx, sessionId, rest) {
    const [command, args] = rest.startsWith("node:")
      ? [process.execPath, ["-e", rest.slice(5)]]
      : [rest, []];
    const { exit, output } = await runInTerminal(ctx, sessionId, command, args);
    await say(ctx.client, sessionId, `exit=${exit.exitCode} output=${JSON.stringify(output.output)} truncated=${output.truncated}`);
  },
  async interactive(ctx, sessionId) {
    const program = "process.stdin.once('data', d => { console.log('got ' + String(d).trim()); process.exit(0); })";
    const { output } = await runInTerminal(ctx, sessionId, process.execPath, ["-e", program]);
    await say(ctx.client, sessionId, `interactive output=${JSON.stringify(output.output)}`);
  },
  async kill(ctx, sessionId) {
    const { exit } = await runInTerminal(ctx, sessionId, process.execPath, ["-e", "setInterval(() => {}, 1000)"], "kill");
    await say(ctx.client, sessionId, `killed signal=${exit.signal} code=${exit.exitCode}`);
  },
  async round(ctx, sessionId) {
    const cwd = sessions.get(sessionId).cwd;
    const diffs = [
      { type: "diff", path: `${cwd}/a.txt`, oldText: "one\n", newText: "one\ntwo\n" },
      { type: "diff", path: `${cwd}/b.txt`, oldText: null, newText: "new file\n" },
    ];
    for (const [i, diff] of diffs.entries()) {
      await update(ctx.client, sessionId, {
        sessionUpdate: "tool_call",
        toolCallId: `edit${i}`,
        title: `Edit ${diff.path.split("/").pop()}`,
        kind: "edit",
        status: "pending",
        content: [diff],
        locations: [{ path: diff.path }],
      });
    }
    const answer = await ctx.client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: "round_1", title: "Approve 2 tool calls", kind: "other", status: "pending", content: diffs },
      options: [
        { optionId: "round-allow", name: "Allow all 2 (this round)", kind: "allow_once" },
        { optionId: "round-always", name: "Always allow these", kind: "allow_always" },
        { optionId: "round-reject", name: "Reject all", kind: "reject_once" },
        { optionId: "round-never", name: "Always reject these", kind: "reject_always" },
      ],
    });
    const chosen = answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled";
    await say(ctx.client, sessionId, `chose ${chosen}`);
  },
  async form(ctx, sessionId) {
    const answer = await ctx.client.request(acp.methods.client.elicitation.create, {
      sessionId,
      mode: "form",
      message: "Choose which of this round's tool calls may run",
      requestedSchema: {
        type: "object",
        title: "Approve tool calls",
        properties: {
          call_0: { type: "boolean", title: "Replace app.py", default: true },
          call_1: { type: "boolean", title: "Create notes.md", default: true },
          reason: { type: "string", title: "Why", enum: ["looks right", "not now"], default: "looks right" },
          note: { type: "string", title: "Note" },
        },
        required: ["reason", "note"],
      },
    });
    await say(ctx.client, sessionId, `form ${answer.action} ${JSON.stringify(answer.content ?? null)}`);
  },
  async withdraw(ctx, sessionId) {
    const abort = new AbortController();
    const asked = ctx.client.request(
      acp.methods.client.session.requestPermission,
      {
        sessionId,
        toolCall: { toolCallId: "w1", title: "Delete everything", kind: "delete", status: "pending" },
        options: [{ optionId: "ok", name: "Allow", kind: "allow_once" }],
      },
      { cancellationSignal: abort.signal },
    );
    setTimeout(() => abort.abort(), 200);
    const answer = await asked;
    await say(ctx.client, sessionId, `withdrawn: ${answer.outcome.outcome}`);
  },
  async read(ctx, sessionId, rest) {
    const [path, line, limit] = rest.split(" ");
    const params = { sessionId, path, ...(line ? { line: Number(line), limit: Number(limit) } : {}) };
    try {
      const { content } = await ctx.client.request(acp.methods.client.fs.readTextFile, params);
      await say(ctx.client, sessionId, `content=${JSON.stringify(content)}`);
    } catch (error) {
      await say(ctx.client, sessionId, `error=${error.code} ${error.message}`);
    }
  },
  async write(ctx, sessionId, rest) {
    const [path, ...words] = rest.split(" ");
    try {
      await ctx.client.request(acp.methods.client.fs.writeTextFile, { sessionId, path, content: words.join(" ") });
      await say(ctx.client, sessionId, "written");
    } catch (error) {
      await say(ctx.client, sessionId, `error=${error.code} ${error.message}`);
    }
  },
  async stream(ctx, sessionId, rest) {
    for (let i = 0; i < Number(rest); i++) {
      void update(ctx.client, sessionId, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `${i} ` },
        messageId: "m1",
      });
    }
  },
  async slow(ctx, sessionId) {
    await say(ctx.client, sessionId, "Working on it…");
    await new Promise((resolve) => sessions.get(sessionId).cancel.signal.addEventListener("abort", resolve));
  },
  async crash(ctx, sessionId) {
    await say(ctx.client, sessionId, "About to fail…");
    process.stderr.write("boom: the double crashed on purpose\n", () => process.exit(3));
    await new Promise(() => {});
  },
  async garbage(ctx, sessionId) {
    process.stdout.write("this is not JSON\n");
    await say(ctx.client, sessionId, "still here");
  },
  async fail() {
    throw acp.RequestError.internalError(undefined, "the double was told to fail");
  },
};

const app = acp
  .agent({ name: "acp-test-double-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: !process.argv.includes("--no-load"),
      sessionCapabilities: { list: {}, close: {}, resume: {} },
    },
    authMethods: [],
    agentInfo: { name: "acp-test-double-agent", title: "ACP test double", version: "0.0.0" },
  }))
  .onRequest(acp.methods.agent.session.new, (ctx) => {
    const sessionId = `double-${++counter}`;
    sessions.set(sessionId, { cwd: ctx.params.cwd, title: null, cancel: null });
    return { sessionId, configOptions: configOptions() };
  })
  .onRequest(acp.methods.agent.session.list, (ctx) => {
    const cwd = ctx.params.cwd ?? "/";
    const page = ctx.params.cursor === "page2";
    const listed = page
      ? [{ sessionId: "older-session", cwd, title: "Even older", updatedAt: "2026-01-01T10:00:00Z" }]
      : [
          ...[...sessions.entries()].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, title: s.title })),
          { sessionId: OLD, cwd, title: "Earlier work", updatedAt: "2026-02-01T10:00:00Z" },
        ];
    return { sessions: listed, nextCursor: page ? null : "page2" };
  })
  .onRequest(acp.methods.agent.session.load, async (ctx) => {
    const { sessionId, cwd } = ctx.params;
    if (sessionId !== OLD) throw acp.RequestError.resourceNotFound(sessionId);
    sessions.set(sessionId, { cwd, title: "Earlier work", cancel: null });
    const replay = [
      { sessionUpdate: "user_message_chunk", content: { type: "text", text: "What does greet do?" } },
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "It greets **by name**." } },
      {
        sessionUpdate: "tool_call",
        toolCallId: "old-read",
        title: "Read app.py",
        kind: "read",
        status: "completed",
        locations: [{ path: `${cwd}/app.py`, line: 1 }],
      },
      // a command that ran in a terminal of an earlier window: its exit code is in rawOutput
      {
        sessionUpdate: "tool_call",
        toolCallId: "old-run",
        title: "make check",
        kind: "execute",
        status: "completed",
        content: [{ type: "terminal", terminalId: "old-term" }],
        rawOutput: { exitCode: 2 },
      },
      { sessionUpdate: "plan", entries: [{ content: "Explain greet", priority: "medium", status: "completed" }] },
    ];
    for (const u of replay) await update(ctx.client, sessionId, u);
    return { configOptions: configOptions("per_call") };
  })
  .onRequest(acp.methods.agent.session.resume, (ctx) => {
    sessions.set(ctx.params.sessionId, { cwd: ctx.params.cwd, title: null, cancel: null });
    return { configOptions: configOptions() };
  })
  .onRequest(acp.methods.agent.session.close, (ctx) => {
    sessions.delete(ctx.params.sessionId);
    return {};
  })
  .onRequest(acp.methods.agent.session.setConfigOption, (ctx) => {
    const { configId, value } = ctx.params;
    if (configId !== "approvals" && configId !== "mode") throw acp.RequestError.invalidParams(undefined, `unknown option ${configId}`);
    const options = configOptions(configId === "approvals" ? value : "round");
    if (configId === "mode") options[0].currentValue = value;
    return { configOptions: options };
  })
  .onRequest(acp.methods.agent.session.prompt, async (ctx) => {
    const { sessionId, prompt } = ctx.params;
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.resourceNotFound(sessionId);
    const text = prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
    const [word, ...rest] = text.trim().split(" ");
    const scenario = scenarios[word];
    if (!scenario) throw acp.RequestError.invalidParams(undefined, `no scenario ${word}`);
    session.cancel = new AbortController();
    session.title ??= text.slice(0, 30);
    await scenario(ctx, sessionId, rest.join(" "));
    return { stopReason: session.cancel.signal.aborted ? "cancelled" : "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, (ctx) => {
    sessions.get(ctx.params.sessionId)?.cancel?.abort();
  });

const connection = app.connect(
  acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);
await connection.closed;
process.exit(0);
