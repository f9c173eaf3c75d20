// The extension (built bundle, `vscode` stub) against the real `python -m tether acp` running the
// shared fixture editors/fixtures/session.json: thought, text, plan, two edits in one round
// permission, a command (`python3 check.py`, asked for) run in a VS Code terminal that its card
// embeds, a final answer. What the webview would show is rebuilt from the posted messages.
// The round's card is the one the permission request names: tether announces it as a tool call
// first (an agent that does not is handled too: the request makes the card).
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { spawnSync } from "node:child_process";
import { Memento, REPO, fixtureProject, lastOf, python, startExtension, tetherSettings, vscode, waitReady } from "./helpers.mjs";

const NEW_APP = 'def greet(name):\n    return f"Hello, {name}!"\n';
const NOTES = "# Notes\n\ngreet() now says Hello, NAME!\n";

function pendingPermission(state) {
  return Object.values(state.permissions).find((p) => p.state === "pending");
}

/** The command's permission: the one asked after the round's (`round`) was answered. */
function commandPermission(ext, round) {
  return ext.page.waitFor(
    (s) => Object.values(s.permissions).find((p) => p.state === "pending" && p.key !== round.key),
    "the command's permission",
  );
}

/** The next pending form (an elicitation not yet answered). */
function pendingForm(ext, what) {
  return ext.page.waitFor((s) => s.items.find((i) => i.kind === "elicitation" && i.elicitation.state === "pending"), what);
}

function cardOf(state, toolCallId) {
  return state.items.find((i) => i.kind === "tool" && i.call.toolCallId === toolCallId);
}

function optionOfKind(permission, kind) {
  const option = permission.options.find((o) => o.kind === kind);
  assert.ok(option, `no ${kind} option among ${JSON.stringify(permission.options)}`);
  return option;
}

async function promptUntilPermission(ext, text = "fix greet") {
  await waitReady(ext.page);
  ext.send({ type: "prompt", text });
  return ext.page.waitFor(pendingPermission, "the round permission");
}

function turnEnded(ext) {
  return ext.page.waitFor((s) => !s.turn.running && s.turn.lastStop !== undefined && s, "the end of the turn");
}

describe("against the real tether acp", () => {
  let project;
  let ext;

  before(async () => {
    project = await fixtureProject();
  });

  after(async () => {
    await ext?.dispose();
    await project.cleanup();
  });

  test("a fixture turn: stream, plan, round permission with two diffs, allow, files written through the workspace API, the command in a VS Code terminal", async () => {
    // an editor holds app.py with unsaved changes: tether must see them
    ext = startExtension({ folders: [project.dir], settings: tetherSettings(project.home) });
    const unsaved = 'def greet(name):\n    return "hi " + name  # unsaved\n';
    const doc = vscode.__test.openDocument(path.join(project.dir, "app.py"), unsaved);
    assert.equal(doc.isDirty, true);
    const { page } = ext;

    await waitReady(page);
    assert.equal(page.status().text, "Ready");
    const ids = page.state.configOptions.map((o) => o.id);
    assert.ok(ids.includes("mode") && ids.includes("model"), `pickers: ${ids}`);
    assert.equal(page.state.capabilities.list, true);

    const permission = await promptUntilPermission(ext);
    const state = page.state;
    const round = cardOf(state, permission.toolCallId);
    // everything before the approval is on screen, in order, the round's card last
    assert.equal(page.status().text, `Waiting for your approval: ${round.call.title}`);
    assert.equal(page.status().tone, "attention");
    const kinds = state.items.map((i) => i.kind);
    // the todo_push card, the text, the todo_update card, the two edits, the round
    assert.deepEqual(kinds, ["user", "thought", "agent", "tool", "agent", "tool", "tool", "tool", "tool"]);
    assert.equal(state.items.at(-1), round);
    assert.match(lastOf(page, "thought").text, /greeting fix/);
    assert.equal(page.items("agent")[0].text, "I'll plan the work, then make two edits and check them.");
    // the todo_update waits in the round being asked, so every task is still pending
    assert.deepEqual(
      state.plan.map((e) => [e.content, e.status]),
      [
        ["Fix greet() punctuation", "pending"],
        ["Write notes.md", "pending"],
        ["Run check.py", "pending"],
      ],
    );
    const [edit1, edit2] = [cardOf(state, "edit1").call, cardOf(state, "edit2").call];
    assert.equal(edit1.title, "Replace app.py");
    assert.equal(edit1.content[0].type, "diff");
    assert.equal(edit1.content[0].oldText, unsaved, "the diff's old text is the unsaved editor text");
    assert.equal(edit2.content[0].oldText, null);
    // the round card: a title naming both files, both diffs, the agent's options (each kind once) by name
    assert.match(round.call.title, /app\.py.*notes\.md/);
    const diffs = round.call.content.filter((c) => c.type === "diff");
    assert.deepEqual(diffs.map((d) => path.basename(d.path)), ["app.py", "notes.md"]);
    assert.deepEqual(permission.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
    for (const option of permission.options) assert.ok(option.name.length > 0);
    assert.equal(ext.controller.state.turn.running, true);

    // "Open diff" on the round card opens VS Code's diff editor: before = unsaved text, after = proposal
    const index = round.call.content.findIndex((c) => c.type === "diff" && c.path.endsWith("app.py"));
    ext.send({ type: "openDiff", itemId: round.id, index });
    const diffCall = await waitForCommand("vscode.diff");
    const [, left, right, title] = diffCall;
    assert.equal(vscode.__test.provideText(left), unsaved);
    assert.equal(vscode.__test.provideText(right), NEW_APP);
    assert.match(title, /app\.py \(tether: proposed\)/);

    // allow the whole round: the option of kind allow_once
    ext.send({ type: "permission", key: permission.key, optionId: optionOfKind(permission, "allow_once").optionId });

    // then the command: running a script always asks; its card says why
    const command = await commandPermission(ext, permission);
    const check = cardOf(page.state, command.toolCallId);
    assert.equal(command.toolCallId, "check1");
    assert.equal(check.call.title, "python3 check.py");
    assert.equal(check.call.kind, "execute");
    assert.equal(page.status().text, "Waiting for your approval: python3 check.py");
    const [note] = check.call.content;
    assert.match(note.content.text, /^⚠ python3 runs the script check\.py\nruns in the sandbox: /);
    assert.deepEqual(vscode.__test.recorded.terminals, [], "nothing runs before it is allowed");
    ext.send({ type: "permission", key: command.key, optionId: optionOfKind(command, "allow_once").optionId });

    const ended = await turnEnded(ext);
    assert.equal(ended.turn.lastStop, "end_turn");
    assert.equal(page.status().text, "Ready");
    const answered = page.state.permissions[permission.key];
    assert.equal(answered.state, "answered");
    assert.equal(answered.chosen.kind, "allow_once");
    assert.equal(page.state.permissions[command.key].chosen.kind, "allow_once");
    assert.deepEqual(
      page.state.plan.map((e) => e.status),
      ["in_progress", "pending", "pending"],
      "the allowed round ran the todo_update",
    );
    assert.deepEqual(page.items("tool").map((i) => i.call.status), ["completed", "completed", "completed", "completed", "completed", "completed"]);

    // the command ran in a VS Code terminal, after the edits; the card embeds it with its output
    const ran = cardOf(page.state, "check1").call;
    assert.equal(ran.content[0].type, "terminal");
    // after the terminal, who allowed the call; the exit status is the terminal's to show (once)
    assert.deepEqual(ran.content.slice(1), [{ type: "content", content: { type: "text", text: "Allowed: user (once)" } }]);
    assert.equal(ran.exitCode, 0, "the exit code from rawOutput, for when the terminal is gone");
    const view = page.state.terminals[ran.content[0].terminalId];
    assert.deepEqual(
      { command: view.command, output: view.output, truncated: view.truncated, exitStatus: view.exitStatus },
      { command: "python3 check.py  (sandboxed)", output: "Hello, Ada!\n", truncated: false, exitStatus: { exitCode: 0, signal: null } },
    );
    const [terminal] = vscode.__test.recorded.terminals;
    assert.equal(terminal.name, "tether: python3 check.py  (sandboxed)");
    assert.equal(terminal.written, "$ python3 check.py  (sandboxed)\r\nHello, Ada!\r\n\r\n[exited with 0]\r\n");
    ext.send({ type: "showTerminal", terminalId: view.terminalId });
    await until(() => terminal.shown > 0);
    assert.match(lastOf(page, "agent").text, /^Done: `greet\(\)` now returns/);
    assert.equal(page.state.session.title, "fix greet");
    assert.ok(page.state.usage && page.state.usage.used > 0 && page.state.usage.size === 32000);

    // app.py was open: edited in the editor and saved; notes.md was not: written by workspace.fs
    assert.equal(doc.getText(), NEW_APP);
    assert.equal(doc.isDirty, false);
    assert.ok(vscode.__test.recorded.saves.includes(path.join(project.dir, "app.py")));
    assert.equal(readFileSync(path.join(project.dir, "app.py"), "utf8"), NEW_APP);
    assert.equal(readFileSync(path.join(project.dir, "notes.md"), "utf8"), NOTES);

    // the page's copy of the state is the extension's
    ext.controller.flush();
    const json = (value) => JSON.parse(JSON.stringify(value));
    assert.deepEqual(json(page.state), json(ext.controller.state));

    // "Open diff" once the change is applied: the right side is the real file
    const tool = page.state.items.find((i) => i.id === "tool:edit1");
    ext.send({ type: "openDiff", itemId: tool.id, index: 0 });
    const applied = await waitForCommand("vscode.diff", 2);
    assert.equal(applied[2].scheme, "file");
    assert.equal(applied[2].fsPath, path.join(project.dir, "app.py"));

    // clicking a location opens the file
    ext.send({ type: "openLocation", path: path.join(project.dir, "notes.md"), line: 2 });
    await until(() => vscode.__test.recorded.shown.length > 0);
    assert.equal(vscode.__test.recorded.shown[0].path, path.join(project.dir, "notes.md"));
    assert.equal(vscode.__test.recorded.shown[0].options.selection.start.line, 1);
  });

  test("a provider failure is shown in words", async () => {
    // the fixture holds four rounds, all used by the turn above: the next request fails
    ext.send({ type: "prompt", text: "and again" });
    const error = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "error"), "an error");
    assert.match(error.message, /^tether could not finish the turn: The model provider failed: .*no round 5/);
    assert.equal(ext.page.state.turn.running, false);
  });

  test("session history lists the finished session; the mode and model pickers set config options", async () => {
    const { page } = ext;
    ext.send({ type: "history", open: true });
    const listed = await page.waitFor((s) => !s.history.loading && s.history.sessions.length > 0 && s.history, "the session list");
    const mine = listed.sessions.find((s) => s.sessionId === page.state.session.id);
    assert.ok(mine, `the current session is listed: ${JSON.stringify(listed.sessions)}`);
    assert.equal(mine.title, "fix greet");
    ext.send({ type: "history", open: false });
    await page.waitFor((s) => !s.history.open, "history closed");

    ext.send({ type: "setConfigOption", configId: "mode", value: "code" });
    await page.waitFor((s) => s.configOptions.find((o) => o.id === "mode")?.currentValue === "code", "mode = code");
    ext.send({ type: "setConfigOption", configId: "model", value: "demo" });
    await page.waitFor((s) => s.configOptions.find((o) => o.id === "model")?.currentValue === "demo", "model = demo");
    // a value tether refuses is reported in words and the picker keeps its value
    ext.send({ type: "setConfigOption", configId: "model", value: "nope:missing" });
    const error = await page.waitFor(
      (s) => s.items.find((i) => i.kind === "error" && i.message.startsWith("Could not change")),
      "an error",
    );
    assert.match(error.message, /^Could not change model: .*nope:missing/);
    assert.equal(page.state.configOptions.find((o) => o.id === "model").currentValue, "demo");
  });

  test("a new session starts empty; rejecting the round and the command leaves the files alone and runs nothing", async () => {
    await ext.dispose();
    await project.cleanup();
    project = await fixtureProject();
    ext = startExtension({ folders: [project.dir], settings: tetherSettings(project.home) });
    const first = await waitReady(ext.page);
    ext.send({ type: "newSession" });
    await ext.page.waitFor((s) => s.session.id && s.session.id !== first, "a second session");
    const permission = await promptUntilPermission(ext);
    ext.send({ type: "permission", key: permission.key, optionId: optionOfKind(permission, "reject_once").optionId });
    // a rejection is followed by an optional note for the agent: given for the round, dismissed for the command
    const note = await pendingForm(ext, "the round's rejection note");
    assert.match(note.elicitation.request.message, /^Rejected: /);
    assert.equal(note.elicitation.request.requestedSchema.properties.note.type, "string");
    ext.send({ type: "elicitation", key: note.elicitation.key, action: "accept", content: { note: "leave greet alone" } });
    const command = await commandPermission(ext, permission);
    ext.send({ type: "permission", key: command.key, optionId: optionOfKind(command, "reject_once").optionId });
    const dismissed = await pendingForm(ext, "the command's rejection note");
    ext.send({ type: "elicitation", key: dismissed.elicitation.key, action: "cancel" });
    await turnEnded(ext);
    const answered = ext.page.state.permissions[permission.key];
    assert.equal(answered.chosen.kind, "reject_once");
    const statuses = ["edit1", "edit2", "check1"].map((id) => cardOf(ext.page.state, id).call.status);
    assert.deepEqual(statuses, ["failed", "failed", "failed"]);
    assert.deepEqual(vscode.__test.recorded.terminals, [], "a rejected command does not run");
    assert.equal(readFileSync(path.join(project.dir, "app.py"), "utf8"), 'def greet(name):\n    return "hello " + name\n');
    assert.equal(existsSync(path.join(project.dir, "notes.md")), false);
  });

  test("Stop while the approval is pending: the request is answered cancelled and the turn ends cancelled", async () => {
    await ext.dispose();
    ext = startExtension({ folders: [project.dir], settings: tetherSettings(project.home) });
    const permission = await promptUntilPermission(ext);
    ext.send({ type: "cancel" });
    const ended = await turnEnded(ext);
    assert.equal(ended.turn.lastStop, "cancelled");
    assert.equal(ext.page.state.permissions[permission.key].state, "cancelled");
    assert.equal(lastOf(ext.page, "stop").text, "Stopped: you cancelled the turn.");
    assert.equal(existsSync(path.join(project.dir, "notes.md")), false);
  });

  test("approvals = call: the round is a form with one checkbox per call; only the checked call runs", async () => {
    await ext.dispose();
    await project.cleanup();
    project = await fixtureProject();
    ext = startExtension({ folders: [project.dir], settings: tetherSettings(project.home) });
    await waitReady(ext.page);
    ext.send({ type: "setConfigOption", configId: "approvals", value: "call" });
    await ext.page.waitFor((s) => s.configOptions.find((o) => o.id === "approvals")?.currentValue === "call", "approvals = call");
    ext.send({ type: "prompt", text: "fix greet" });
    const form = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "elicitation" && i.elicitation.state === "pending"), "the form");
    assert.equal(ext.page.status().text, "Waiting for your answer");
    const properties = form.elicitation.request.requestedSchema.properties;
    const names = Object.keys(properties).filter((name) => name !== "note");
    assert.equal(names.length, 2, JSON.stringify(properties));
    for (const name of names) assert.equal(properties[name].type, "boolean");
    assert.equal(properties.note.type, "string", "an optional note for the rejected calls");
    const [app, notes] = names.sort((a, b) => (properties[a].title.includes("app.py") ? -1 : properties[b].title.includes("app.py") ? 1 : 0));
    assert.match(properties[app].title, /app\.py/);
    ext.send({ type: "elicitation", key: form.elicitation.key, action: "accept", content: { [app]: true, [notes]: false } });
    // a round of one call (the command) is a plain permission request
    const command = await ext.page.waitFor(pendingPermission, "the command's permission");
    assert.equal(command.toolCallId, "check1");
    ext.send({ type: "permission", key: command.key, optionId: optionOfKind(command, "allow_once").optionId });
    await turnEnded(ext);
    assert.equal(readFileSync(path.join(project.dir, "app.py"), "utf8"), NEW_APP);
    assert.equal(existsSync(path.join(project.dir, "notes.md")), false);
    assert.deepEqual(["edit1", "edit2", "check1"].map((id) => cardOf(ext.page.state, id).call.status), ["completed", "failed", "completed"]);
  });

  test("ask_user: tether's question is a form with the choices and a typed field", async () => {
    await ext?.dispose();
    const script = path.join(project.root, "ask.json");
    const ask = { question: "Which greeting?", options: ["Hello", "Hi"], fields: [{ name: "who", label: "Greet whom" }] };
    writeFileSync(
      script,
      JSON.stringify({
        model: { name: "Ask script", context_window: 32000, max_output_tokens: 4096 },
        rounds: [{ events: [{ tool_call: { id: "ask1", name: "ask_user", arguments: ask } }] }, { events: [{ text: "Thanks." }] }],
      }),
    );
    const settings = tetherSettings(project.home);
    settings["tether.args"] = ["-m", "tether", "acp", "--script", script];
    ext = startExtension({ folders: [project.dir], settings });
    await waitReady(ext.page);
    ext.send({ type: "prompt", text: "ask me" });
    const form = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "elicitation" && i.elicitation.state === "pending"), "the question");
    const request = form.elicitation.request;
    assert.equal(request.message, "Which greeting?");
    assert.equal(request.toolCallId, "ask1");
    const props = request.requestedSchema.properties;
    const choice = Object.keys(props).find((k) => props[k].oneOf);
    assert.deepEqual(props[choice].oneOf.map((o) => o.title), ["Hello", "Hi"]);
    assert.equal(props.who.title, "Greet whom");
    assert.ok(request.requestedSchema.required.includes("who"));
    ext.send({ type: "elicitation", key: form.elicitation.key, action: "accept", content: { [choice]: "Hi", who: "Ada" } });
    await turnEnded(ext);
    assert.equal(lastOf(ext.page, "agent").text, "Thanks.");
    const card = cardOf(ext.page.state, "ask1").call;
    assert.equal(card.status, "completed");
  });

  async function waitForCommand(id, count = 1) {
    await until(() => vscode.__test.recorded.commands.filter((c) => c[0] === id).length >= count);
    return vscode.__test.recorded.commands.filter((c) => c[0] === id)[count - 1];
  }
});

describe("a reloaded window goes on with the workspace's last session", () => {
  let project;
  let settings;

  before(async () => {
    project = await fixtureProject();
    const script = path.join(project.root, "hello.json");
    writeFileSync(
      script,
      JSON.stringify({
        model: { name: "Hello script", context_window: 32000, max_output_tokens: 4096 },
        rounds: [{ events: [{ text: "Hello from the first window." }] }],
      }),
    );
    settings = tetherSettings(project.home);
    settings["tether.args"] = ["-m", "tether", "acp", "--script", script];
  });

  after(() => project.cleanup());

  const reopened = (page) =>
    page.waitFor((s) => s.connection.phase === "ready" && s.session.id && !s.session.loading && s, "the window's session");

  test("session/load replays it: the same session, its conversation on screen, not a new session", async () => {
    const memory = new Memento();
    let ext = startExtension({ folders: [project.dir], settings, workspaceState: memory });
    try {
      const first = (await reopened(ext.page)).session.id;
      ext.send({ type: "prompt", text: "hello" });
      await turnEnded(ext);
      await ext.dispose(); // the window reloads: a new extension host, a new tether
      ext = startExtension({ folders: [project.dir], settings, workspaceState: memory });
      const state = await reopened(ext.page);
      assert.equal(state.session.id, first);
      assert.deepEqual(ext.page.items("user").map((i) => i.text), ["hello"]);
      assert.equal(lastOf(ext.page, "agent").text, "Hello from the first window.");
      assert.equal(state.session.title, "hello");
      assert.equal(ext.page.items("error").length, 0);
    } finally {
      await ext.dispose();
    }
  });

  test("a last session that is gone: a new session, and a notice says why", async () => {
    const memory = new Memento();
    let ext = startExtension({ folders: [project.dir], settings, workspaceState: memory });
    const first = (await reopened(ext.page)).session.id;
    await ext.dispose();
    // deleted meanwhile (another window, `tether sessions delete`)
    const done = spawnSync(python(), ["-m", "tether", "sessions", "delete", first], {
      env: { ...process.env, PYTHONPATH: REPO, TETHER_HOME: project.home },
      encoding: "utf8",
    });
    assert.equal(done.status, 0, done.stderr);
    ext = startExtension({ folders: [project.dir], settings, workspaceState: memory });
    try {
      const notice = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "notice"), "the notice");
      const state = await reopened(ext.page);
      assert.notEqual(state.session.id, first);
      assert.match(`${notice.title}: ${notice.description}`, /^The last session could not be reopened: .*a new session started/);
      assert.equal(ext.page.items("error").length, 0);
    } finally {
      await ext.dispose();
    }
  });
});

describe("when tether cannot run", () => {
  test("a missing executable: the panel says so and offers the settings", async () => {
    const project = await fixtureProject();
    const ext = startExtension({ folders: [project.dir], settings: { "tether.path": path.join(project.root, "no-such-tether") } });
    try {
      const state = await ext.page.waitFor((s) => s.connection.phase === "failed" && s, "the failure");
      assert.match(state.connection.message, /^Could not start tether: “.*no-such-tether” was not found\. Set “tether\.path”/);
      const error = ext.page.items("error")[0];
      assert.deepEqual(error.actions, ["settings", "restart"]);
      assert.equal(ext.page.status().tone, "error");
      // fix the setting, press Restart: tether starts
      vscode.__test.setSettings(tetherSettings(project.home));
      ext.send({ type: "restart" });
      await waitReady(ext.page);
    } finally {
      await ext.dispose();
      await project.cleanup();
    }
  });

  test("a failed restart clears the mode and model pickers of the session before it", async () => {
    const project = await fixtureProject();
    const ext = startExtension({ folders: [project.dir], settings: tetherSettings(project.home) });
    try {
      await waitReady(ext.page);
      const ids = ext.page.state.configOptions.map((o) => o.id);
      assert.ok(ids.includes("mode") && ids.includes("model"), `pickers: ${ids}`);
      assert.ok(ext.page.state.commands.length > 0);
      vscode.__test.setSettings({ "tether.path": path.join(project.root, "no-such-tether") });
      ext.send({ type: "restart" });
      const state = await ext.page.waitFor((s) => s.connection.phase === "failed" && s, "the failure");
      assert.match(state.connection.message, /no-such-tether” was not found/);
      assert.deepEqual(state.configOptions, [], "no picker keeps the old session's value");
      assert.equal(state.modes, undefined);
      assert.deepEqual(state.commands, []);
      // the extension's state says the same
      ext.controller.flush();
      assert.deepEqual(ext.controller.state.configOptions, []);
      // fixed and restarted: the new session brings its pickers
      vscode.__test.setSettings(tetherSettings(project.home));
      ext.send({ type: "restart" });
      await ext.page.waitFor((s) => s.connection.phase === "ready" && s.configOptions.some((o) => o.id === "model"), "the pickers back");
    } finally {
      await ext.dispose();
      await project.cleanup();
    }
  });

  test("tether exits at once: the exit code and its last words are shown, with Restart", async () => {
    const project = await fixtureProject();
    const ext = startExtension({ folders: [project.dir], settings: tetherSettings(project.home, ["--no-such-flag"]) });
    try {
      const state = await ext.page.waitFor((s) => s.connection.phase === "exited" && s, "the exit");
      assert.equal(state.connection.message, "tether exited with code 2.");
      const error = ext.page.items("error")[0];
      assert.match(error.message, /^tether exited with code 2\. Its last output:\n(.|\n)*no-such-flag/);
      assert.deepEqual(error.actions, ["restart", "log"]);
    } finally {
      await ext.dispose();
      await project.cleanup();
    }
  });

  test("no folder open: the panel asks for one", async () => {
    const ext = startExtension({ folders: [], settings: {} });
    try {
      const state = await ext.page.waitFor((s) => s.connection.phase === "failed" && s, "the failure");
      assert.equal(state.connection.message, "Open a folder first: tether works inside a workspace folder.");
    } finally {
      await ext.dispose();
    }
  });
});

const until = (predicate) => vscode.__test.until(predicate);
