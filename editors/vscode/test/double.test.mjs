// The client side of what the fixture session does not show, against the test-only agent
// test/doubles/acp-test-double-agent.mjs: session/load and resume from the history, terminals
// (exit codes, shell lines, input, outputByteLimit, kill), form elicitation, a round permission
// using each option kind once, a permission the agent withdraws, an error answer, and fs edge
// cases.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { Memento, doubleSettings, fixtureProject, lastOf, startExtension, testing, vscode, waitReady } from "./helpers.mjs";

describe("against the ACP test double", () => {
  let project;
  let ext;

  before(async () => {
    project = await fixtureProject();
  });

  beforeEach(async () => {
    await ext?.dispose();
    ext = startExtension({ folders: [project.dir], settings: doubleSettings() });
    await waitReady(ext.page);
  });

  after(async () => {
    await ext?.dispose();
    await project.cleanup();
  });

  async function run(text) {
    const before = ext.page.items("agent").length;
    const asked = ext.page.items("user").length;
    ext.send({ type: "prompt", text });
    await ext.page.waitFor(
      (s) => s.items.filter((i) => i.kind === "user").length > asked && !s.turn.running,
      `the end of "${text}"`,
    );
    const answers = ext.page.items("agent");
    assert.equal(answers.length, before + 1, `one answer to "${text}": ${JSON.stringify(ext.page.state.items.slice(-3))}`);
    return answers[answers.length - 1].text;
  }

  test("history: list with paging, load replays the conversation, the pickers follow the loaded session", async () => {
    const { page } = ext;
    ext.send({ type: "history", open: true });
    await page.waitFor((s) => s.history.sessions.length > 0 && !s.history.loading, "the first page");
    assert.deepEqual(page.state.history.sessions.map((s) => s.title), [null, "Earlier work"]);
    assert.equal(page.state.history.nextCursor, "page2");
    ext.send({ type: "historyMore" });
    await page.waitFor((s) => s.history.sessions.length === 3, "the second page");
    assert.equal(page.state.history.sessions[2].title, "Even older");
    assert.equal(page.state.history.nextCursor, null);

    const current = page.state.session.id;
    ext.send({ type: "openSession", sessionId: "old-session", cwd: project.dir });
    await page.waitFor((s) => s.session.id === "old-session" && !s.session.loading, "the loaded session");
    assert.equal(page.state.history.open, false);
    assert.equal(page.state.session.title, "Earlier work");
    assert.deepEqual(
      page.state.items.map((i) => [i.kind, i.text ?? i.call?.title]),
      [
        ["user", "What does greet do?"],
        ["agent", "It greets **by name**."],
        ["tool", "Read app.py"],
        ["tool", "make check"],
      ],
    );
    assert.equal(page.state.items.at(-1).call.exitCode, 2, "what the card says once its terminal is gone");
    assert.equal(page.state.plan[0].content, "Explain greet");
    assert.equal(page.state.configOptions.find((o) => o.id === "approvals").currentValue, "per_call");
    assert.notEqual(current, "old-session");
    assert.equal(page.status().text, "Ready");
  });

  test("the approvals config option is a picker like any other", async () => {
    ext.send({ type: "setConfigOption", configId: "approvals", value: "per_call" });
    await ext.page.waitFor(
      (s) => s.configOptions.find((o) => o.id === "approvals").currentValue === "per_call",
      "approvals = per_call",
    );
  });

  test("terminal: a VS Code terminal shows the command; the agent gets its output and exit code", async () => {
    const answer = await run('terminal node:console.log("hello from the terminal"); process.exit(3)');
    assert.equal(answer, 'exit=3 output="hello from the terminal\\n" truncated=false');
    const [terminal] = vscode.__test.recorded.terminals;
    assert.match(terminal.name, /^tether: /);
    assert.match(terminal.written, /hello from the terminal\r\n/);
    assert.match(terminal.written, /\[exited with 3\]/);
    // the tool card embeds the terminal and shows its output and exit status
    const card = lastOf(ext.page, "tool").call;
    assert.equal(card.kind, "execute");
    assert.equal(card.status, "failed");
    const view = ext.page.state.terminals[card.content[0].terminalId];
    assert.equal(view.output, "hello from the terminal\n");
    assert.deepEqual(view.exitStatus, { exitCode: 3, signal: null });
    ext.send({ type: "showTerminal", terminalId: view.terminalId });
    await vscode.__test.until(() => terminal.shown > 0, "the terminal shown");
  });

  test("terminal: a command line without args runs in a shell", async () => {
    const answer = await run("terminal echo one && echo two");
    assert.equal(answer, 'exit=0 output="one\\ntwo\\n" truncated=false');
  });

  test("terminal: output past outputByteLimit is cut from the front", async () => {
    const answer = await run('terminal node:process.stdout.write("x".repeat(5000) + "END")');
    const match = /^exit=0 output="(x*END)" truncated=true$/.exec(answer);
    assert.ok(match, answer);
    assert.equal(match[1].length, 4096);
  });

  test("terminal: what the user types in the VS Code terminal reaches the command", async () => {
    ext.send({ type: "prompt", text: "interactive" });
    const terminal = await vscode.__test.until(() => vscode.__test.recorded.terminals[0], "the terminal");
    await ext.page.waitFor((s) => s.terminals && Object.keys(s.terminals).length > 0, "the terminal in the card");
    assert.match(ext.page.status().text, /^Running command: /);
    terminal.input("yes\r");
    await ext.page.waitFor((s) => !s.turn.running && s.turn.lastStop, "the end of the turn");
    assert.equal(lastOf(ext.page, "agent").text, 'interactive output="got yes\\n"');
  });

  test("terminal: terminal/kill stops the command", async () => {
    const answer = await run("kill");
    assert.equal(answer, "killed signal=SIGTERM code=null");
  });

  test("a round permission with each option kind once: buttons carry the agent's names; the choice goes back by id", async () => {
    ext.view.visible = false; // the panel is hidden: a notification asks for attention
    ext.send({ type: "prompt", text: "round" });
    const pending = await ext.page.waitFor(
      (s) => Object.values(s.permissions).find((p) => p.state === "pending"),
      "the permission",
    );
    assert.deepEqual(
      pending.options.map((o) => [o.kind, o.name]),
      [
        ["allow_once", "Allow all 2 (this round)"],
        ["allow_always", "Always allow these"],
        ["reject_once", "Reject all"],
        ["reject_always", "Always reject these"],
      ],
    );
    // this agent did not announce the round's card: the request makes it, after the calls' cards
    assert.deepEqual(ext.page.items("tool").map((i) => i.call.title), ["Edit a.txt", "Edit b.txt", "Approve 2 tool calls"]);
    const round = lastOf(ext.page, "tool").call;
    assert.equal(round.permission, pending.key);
    assert.deepEqual(round.content.map((c) => c.type), ["diff", "diff"]);
    assert.equal(ext.page.status().text, "Waiting for your approval: Approve 2 tool calls");
    const note = await vscode.__test.until(() => vscode.__test.recorded.messages.find((m) => m.text.includes("approval")), "the notification");
    assert.deepEqual(note, { level: "info", text: "tether is waiting for your approval: Approve 2 tool calls", items: ["Show"] });
    ext.view.visible = true;
    // the webview is rebuilt (hidden and shown again): it gets the whole state, question included
    ext.page.state = testing.initialState();
    ext.send({ type: "ready" });
    await ext.page.waitFor((s) => s.permissions[pending.key]?.state === "pending", "the snapshot");
    ext.controller.flush();
    assert.deepEqual(JSON.parse(JSON.stringify(ext.page.state)), JSON.parse(JSON.stringify(ext.controller.state)));
    // an id the agent did not offer is refused in words, and the request stays open
    ext.send({ type: "permission", key: pending.key, optionId: "made-up" });
    const error = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "error"), "the error");
    assert.equal(error.message, "“made-up” is not one of the options tether offered.");
    ext.send({ type: "permission", key: pending.key, optionId: "round-always" });
    await ext.page.waitFor((s) => !s.turn.running && s.turn.lastStop, "the end of the turn");
    assert.equal(lastOf(ext.page, "agent").text, "chose round-always");
    assert.equal(ext.page.state.permissions[pending.key].chosen.name, "Always allow these");
  });

  test("form elicitation: a form with checkboxes and a choice; the answer is sent typed", async () => {
    ext.send({ type: "prompt", text: "form" });
    const item = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "elicitation"), "the form");
    assert.equal(ext.page.status().text, "Waiting for your answer");
    ext.send({
      type: "elicitation",
      key: item.elicitation.key,
      action: "accept",
      content: { call_0: true, call_1: false, reason: "not now", note: "later" },
    });
    await ext.page.waitFor((s) => !s.turn.running && s.turn.lastStop, "the end of the turn");
    assert.equal(lastOf(ext.page, "agent").text, 'form accept {"call_0":true,"call_1":false,"reason":"not now","note":"later"}');
    assert.equal(ext.page.items("elicitation")[0].elicitation.state, "answered");
  });

  test("a long stream of chunks arrives whole and in order, in few posts to the webview", async () => {
    const posts = ext.view.posted.length;
    const answer = await run("stream 10000");
    assert.equal(answer, Array.from({ length: 10000 }, (_, i) => `${i} `).join(""));
    assert.ok(ext.view.posted.length - posts < 1000, `${ext.view.posted.length - posts} posts for 10000 chunks`);
  });

  test("a permission the agent withdraws disappears from the buttons", async () => {
    const answer = await run("withdraw");
    assert.equal(answer, "withdrawn: cancelled");
    const [withdrawn] = Object.values(ext.page.state.permissions);
    assert.equal(withdrawn.state, "cancelled");
    assert.equal(lastOf(ext.page, "tool").call.title, "Delete everything");
  });

  test("Stop sends session/cancel: the turn ends cancelled", async () => {
    ext.send({ type: "prompt", text: "slow" });
    await ext.page.waitFor((s) => s.items.some((i) => i.kind === "agent"), "the first words");
    assert.equal(ext.page.status().text, "Writing…");
    ext.send({ type: "cancel" });
    await ext.page.waitFor((s) => s.turn.lastStop === "cancelled", "the cancelled turn");
  });

  test("an error answer to the prompt is shown in words", async () => {
    ext.send({ type: "prompt", text: "fail" });
    const error = await ext.page.waitFor((s) => s.items.find((i) => i.kind === "error"), "the error");
    assert.match(error.message, /^tether could not finish the turn: .*the double was told to fail/);
  });

  test("the agent dies mid-turn: the turn ends, the exit and its last words are shown; Restart starts it again", async () => {
    ext.send({ type: "prompt", text: "crash" });
    const state = await ext.page.waitFor((s) => s.connection.phase === "exited" && s, "the exit");
    assert.equal(state.connection.message, "tether exited with code 3.");
    assert.equal(state.turn.running, false);
    const errors = ext.page.items("error");
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.match(errors[0].message, /^tether exited with code 3\. Its last output:\nboom: the double crashed on purpose$/);
    assert.deepEqual(errors[0].actions, ["restart", "log"]);
    assert.equal(ext.page.status().tone, "error");
    ext.send({ type: "restart" });
    await ext.page.waitFor((s) => s.connection.phase === "ready" && s.session.id && s.items.length === 0, "a fresh session");
    assert.equal(await run("read " + path.join(project.dir, "app.py") + " 1 1"), 'content="def greet(name):\\n"');
  });

  test("a line on stdout that is not JSON is skipped; the turn goes on", async () => {
    assert.equal(await run("garbage"), "still here");
  });

  test("fs: line and limit, a missing file, a path outside the workspace, unsaved text, writes", async () => {
    const app = path.join(project.dir, "app.py");
    assert.equal(await run(`read ${app} 2 1`), 'content="    return \\"hello \\" + name\\n"');
    assert.match(await run(`read ${path.join(project.dir, "missing.txt")}`), /^error=-32002 /);
    assert.match(await run("read /etc/hostname"), /^error=-32602 Invalid params: \/etc\/hostname is outside the workspace folders/);
    vscode.__test.openDocument(app, "unsaved\ntext\n");
    assert.equal(await run(`read ${app}`), 'content="unsaved\\ntext\\n"');
    // a write to a file open in an editor is an edit of that document, then saved
    assert.equal(await run(`write ${app} written by the agent`), "written");
    assert.equal(readFileSync(app, "utf8"), "written by the agent");
    assert.equal(vscode.__test.recorded.edits.length, 1);
    // a write to a closed file in a new folder goes to disk
    const deep = path.join(project.dir, "new", "dir", "file.txt");
    assert.equal(await run(`write ${deep} fresh`), "written");
    assert.equal(readFileSync(deep, "utf8"), "fresh");
    writeFileSync(app, 'def greet(name):\n    return "hello " + name\n');
  });

  test("session/resume is used when the agent cannot load", async () => {
    await ext.dispose();
    ext = startExtension({ folders: [project.dir], settings: doubleSettings(["--no-load"]) });
    await waitReady(ext.page);
    assert.deepEqual([ext.page.state.capabilities.load, ext.page.state.capabilities.resume], [false, true]);
    ext.send({ type: "openSession", sessionId: "old-session", cwd: project.dir });
    await ext.page.waitFor((s) => s.session.id === "old-session" && !s.session.loading, "the resumed session");
    const notice = lastOf(ext.page, "notice");
    assert.equal(notice.title, "Session resumed");
    assert.equal(ext.page.items("user").length, 0);
  });

  test("a reloaded window resumes the workspace's last session when the agent cannot load", async () => {
    await ext.dispose();
    const memory = new Memento();
    ext = startExtension({ folders: [project.dir], settings: doubleSettings(["--no-load"]), workspaceState: memory });
    await waitReady(ext.page);
    ext.send({ type: "openSession", sessionId: "old-session", cwd: project.dir });
    await ext.page.waitFor((s) => s.session.id === "old-session" && !s.session.loading, "the resumed session");
    await ext.dispose();
    ext = startExtension({ folders: [project.dir], settings: doubleSettings(["--no-load"]), workspaceState: memory });
    const state = await ext.page.waitFor((s) => s.connection.phase === "ready" && s.session.id && !s.session.loading && s, "the window's session");
    assert.equal(state.session.id, "old-session");
    assert.equal(lastOf(ext.page, "notice").title, "Session resumed");
  });
});
