// The chat panel rendered in headless Chromium (Debian's /usr/bin/chromium through
// playwright-core; no browser is downloaded), driven end to end: the page is the exact HTML the
// extension gives its webview (same CSP, same scripts), the extension runs in this process with
// the `vscode` stub, and the agent is the real `python -m tether acp` on the shared fixture.
// Screenshots in artifacts/: panel-approval.png mid-turn with the round permission pending,
// panel-command.png with the command's permission pending, panel.png at the end of the turn with
// the command's VS Code terminal embedded in its card.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { EXT, doubleSettings, fixtureProject, startExtension, tetherSettings, vscode } from "../helpers.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = path.join(EXT, "artifacts");
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const TYPES = { ".js": "text/javascript", ".css": "text/css", ".map": "application/json" };

let server;
let origin;
let browser;
let userDataDir;
let project;
let ext;

/** Serves out/ (the webview's assets) and, at /panel, the HTML the extension set. */
async function serve() {
  server = createServer(async (req, res) => {
    const url = new URL(req.url, origin);
    if (url.pathname === "/panel") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(ext.view.webview.html);
      return;
    }
    if (url.pathname === "/favicon.ico") {
      res.writeHead(204).end(); // the browser asks; a webview would not
      return;
    }
    const file = path.join(EXT, path.normalize(url.pathname));
    if (!file.startsWith(path.join(EXT, "out") + path.sep)) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
  await serve();
  project = await fixtureProject();
  userDataDir = await mkdtemp(path.join(tmpdir(), "tether-chromium-"));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 480, height: 1280 },
    deviceScaleFactor: 1,
  });
});

after(async () => {
  await browser?.close();
  await ext?.dispose();
  server?.close();
  await project?.cleanup();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

/** Opens the panel page wired to the extension: page -> extension through an exposed function,
 * extension -> page as window messages, in order. */
async function openPanel(settings = tetherSettings(project.home)) {
  await ext?.dispose();
  ext = startExtension({
    folders: [project.dir],
    settings,
    webviewUri: (uri) => ({ toString: () => `${origin}${uri.path.slice(EXT.length)}` }),
    cspSource: origin,
    ready: false, // the page says when it is ready
  });
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  await page.exposeFunction("__tetherToExtension", (message) => ext.send(message));
  await page.addInitScript(() => {
    window.acquireVsCodeApi = () => ({
      postMessage: (message) => window.__tetherToExtension(message),
      getState: () => undefined,
      setState: () => {},
    });
  });
  let delivered = Promise.resolve();
  ext.view.onPost((message) => {
    delivered = delivered.then(() => page.evaluate((m) => window.postMessage(m, "*"), message));
  });
  await page.goto(`${origin}/panel`);
  return { page, problems, delivered: () => delivered };
}

async function inView(page, locator, what) {
  // measured in the page in one step: cards and pickers are redrawn (replaced) as updates
  // arrive, so an element found visible may be a replaced one by the time it is measured: wait
  // until one measures with a box (the same assertion, after the redraws settle)
  const deadline = Date.now() + 30_000;
  let box = null;
  while (box === null && Date.now() < deadline) {
    await locator.first().waitFor({ state: "visible", timeout: Math.max(1, deadline - Date.now()) });
    box = await locator.first().evaluate((el) => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0 ? { y: r.y, height: r.height } : null;
    }).catch(() => null); // detached between the wait and the measure: look again
    if (box === null) await page.waitForTimeout(50);
  }
  const viewport = page.viewportSize();
  assert.ok(box, `${what} has no box`);
  assert.ok(box.y >= 0 && box.y + box.height <= viewport.height, `${what} is outside the visible panel: ${JSON.stringify(box)}`);
}

test("the panel shows the text, the diff cards, the round permission, the command's permission and its terminal; the buttons work", async () => {
  const { page, problems } = await openPanel();
  // the webview's HTML has a strict CSP with a nonce: it must run as is
  assert.match(ext.view.webview.html, /script-src 'nonce-[^']+'/);
  await page.locator(".status-text", { hasText: "Ready" }).waitFor({ timeout: 60_000 });
  await inView(page, page.locator("select#config-model"), "the model picker");
  await inView(page, page.locator("select#config-mode"), "the mode picker");

  // "/" lists the agent's commands; picking one fills the prompt
  await page.locator("textarea#prompt").fill("/mo");
  await inView(page, page.locator(".commands .command", { hasText: "/mode" }), "the /mode command");
  await page.locator(".commands .command", { hasText: "/model" }).click();
  assert.equal(await page.locator("textarea#prompt").inputValue(), "/model ");

  await page.locator("textarea#prompt").fill("fix greet");
  assert.equal(await page.locator(".commands").isVisible(), false);
  await page.locator("button#send").click();
  const card = page.locator(".card.tool.status-awaiting");
  await card.waitFor({ state: "visible", timeout: 60_000 });
  const [permission] = Object.values(ext.controller.state.permissions);
  const title = ext.controller.state.items.find((i) => i.kind === "tool" && i.call.toolCallId === permission.toolCallId).call.title;

  // what must be visible at this moment
  await inView(page, page.locator(".status-text", { hasText: `Waiting for your approval: ${title}` }), "the status");
  await inView(page, page.locator(".msg.agent", { hasText: "I'll plan the work, then make two edits and check them." }), "the agent's text");
  await inView(page, page.locator(".thought"), "the thought");
  await inView(page, page.locator(".plan .plan-entry", { hasText: "Fix greet() punctuation" }), "the plan");
  await inView(page, card.locator(".card-title", { hasText: title }), "the round card's title");
  await inView(page, card.locator(".badge", { hasText: "waiting for your approval" }), "the card's badge");
  await inView(page, card.locator(".diff[data-path$='app.py'] .diff-body .add", { hasText: 'return f"Hello, {name}!"' }), "the app.py diff");
  await inView(page, card.locator(".diff[data-path$='notes.md'] .open-diff"), "Open diff on notes.md");
  for (const option of permission.options) {
    await inView(page, card.locator(`button.option[data-option-id="${option.optionId}"]`, { hasText: option.name }), `the “${option.name}” button`);
  }
  await inView(page, page.locator("button#send", { hasText: "Stop" }), "the Stop button");
  assert.equal(await page.locator(".card.tool .badge", { hasText: "pending" }).count(), 3); // the todo_update and the two edits, all in the round being asked

  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, "panel-approval.png") });

  // Open diff from the card -> VS Code's diff editor
  await card.locator(".diff[data-path$='app.py'] .open-diff").click();
  const diff = await vscode.__test.until(() => vscode.__test.recorded.commands.find((c) => c[0] === "vscode.diff"), "vscode.diff");
  assert.equal(vscode.__test.provideText(diff[2]), 'def greet(name):\n    return f"Hello, {name}!"\n');

  // allow the round with the button of kind allow_once
  const allow = permission.options.find((o) => o.kind === "allow_once");
  await card.locator(`button.option[data-option-id="${allow.optionId}"]`).click();

  // the command asks next: its card says why, with the agent's options as buttons
  const check = page.locator(".card.tool.status-awaiting[data-tool-call='check1']");
  await check.waitFor({ state: "visible", timeout: 60_000 });
  const command = Object.values(ext.controller.state.permissions).find((p) => p.toolCallId === "check1");
  await inView(page, page.locator(".status-text", { hasText: "Waiting for your approval: python3 check.py" }), "the status");
  await inView(page, check.locator(".card-title", { hasText: "python3 check.py" }), "the command card's title");
  await inView(page, check.locator(".tool-text", { hasText: "⚠ python3 runs the script check.py" }), "why it asks");
  for (const option of command.options) {
    await inView(page, check.locator(`button.option[data-option-id="${option.optionId}"]`, { hasText: option.name }), `the “${option.name}” button`);
  }
  await inView(page, page.locator(".card.tool[data-tool-call^='round_'] .answer", { hasText: `You chose: ${allow.name}` }), "the round's answer");
  await page.screenshot({ path: path.join(ARTIFACTS, "panel-command.png") });
  const run = command.options.find((o) => o.kind === "allow_once");
  await check.locator(`button.option[data-option-id="${run.optionId}"]`).click();

  // the end of the turn: the command's card embeds its VS Code terminal
  await page.locator(".msg.agent", { hasText: "Done:" }).waitFor({ timeout: 60_000 });
  await page.locator(".status-text", { hasText: "Ready" }).waitFor();
  const ran = page.locator(".card.tool.status-completed[data-tool-call='check1']");
  await inView(page, ran.locator(".badge", { hasText: "done" }), "the command card's badge");
  await inView(page, ran.locator(".terminal .terminal-command", { hasText: "$ python3 check.py" }), "the terminal's command");
  await inView(page, ran.locator(".terminal .terminal-output", { hasText: "Hello, Ada!" }), "the terminal's output");
  await inView(page, ran.locator(".terminal .terminal-status", { hasText: "exited with 0" }), "the exit status");
  // the exit status once: the terminal's, and no line from the agent saying it again
  assert.doesNotMatch(await ran.innerText(), /exit code/);
  await inView(page, ran.locator(".answer", { hasText: `You chose: ${run.name}` }), "the command's answer");
  await inView(page, page.locator(".msg.agent", { hasText: "check.py prints Hello, Ada!" }), "the final answer");
  assert.equal(await page.locator(".card.tool .badge", { hasText: "done" }).count(), 6);
  assert.equal(await page.locator(".title").textContent(), "fix greet");
  await page.screenshot({ path: path.join(ARTIFACTS, "panel.png") });
  assert.equal(readFileSync(path.join(project.dir, "notes.md"), "utf8"), "# Notes\n\ngreet() now says Hello, NAME!\n");
  // "Show terminal" reveals the VS Code terminal it ran in
  await ran.locator(".terminal button", { hasText: "Show terminal" }).click();
  const [terminal] = vscode.__test.recorded.terminals;
  await vscode.__test.until(() => terminal.shown > 0, "the terminal shown");
  assert.match(terminal.written, /Hello, Ada!\r\n/);

  // the history view lists this session
  await page.locator("button#history-button").click();
  await inView(page, page.locator(".session-row", { hasText: "fix greet" }), "the session in the history");

  assert.deepEqual(problems, [], "the page logged errors (CSP violations included)");
});

test("the test double's form and terminal render and answer from the page", async () => {
  const { page, problems } = await openPanel(doubleSettings());
  await page.locator(".status-text", { hasText: "Ready" }).waitFor({ timeout: 30_000 });
  await inView(page, page.locator("select#config-approvals"), "the approvals picker");

  // a form elicitation: uncheck one call, pick a reason, submit
  await page.locator("textarea#prompt").fill("form");
  await page.locator("textarea#prompt").press("Enter");
  const form = page.locator(".card.elicitation.state-pending");
  await inView(page, form, "the form");
  await inView(page, page.locator(".status-text", { hasText: "Waiting for your answer" }), "the status");
  await form.locator("input[name=call_1]").uncheck();
  await form.locator("select[name=reason]").selectOption("not now");
  // a required field left empty: the form says so and sends nothing
  await form.locator("button", { hasText: "Submit" }).click();
  await inView(page, form.locator(".error-text", { hasText: "Fill in: Note" }), "the missing-field message");
  assert.equal(ext.controller.state.items.find((i) => i.kind === "elicitation").elicitation.state, "pending");
  await form.locator("input[name=note]").fill("later");
  await form.locator("input[name=note]").press("Enter"); // must not submit (reload) the page
  await form.locator("button", { hasText: "Submit" }).click();
  await page
    .locator(".msg.agent", { hasText: 'form accept {"call_0":true,"call_1":false,"reason":"not now","note":"later"}' })
    .waitFor({ timeout: 30_000 });
  const answered = page.locator(".card.elicitation.state-answered");
  assert.equal(await answered.locator("input[name=call_0]").isChecked(), true);
  assert.equal(await answered.locator("input[name=call_1]").isChecked(), false, "the form shows what was sent");
  assert.equal(await answered.locator("select[name=reason]").inputValue(), "not now");

  // a command in a client terminal: its output shows on the tool card
  await page.locator("textarea#prompt").fill('terminal node:console.log("from the terminal")');
  await page.locator("textarea#prompt").press("Enter");
  await inView(page, page.locator(".terminal .terminal-output", { hasText: "from the terminal" }), "the terminal output");
  await inView(page, page.locator(".terminal .terminal-status", { hasText: "exited with 0" }), "the exit status");
  await page.locator(".terminal button", { hasText: "Show terminal" }).click();
  await vscode.__test.until(() => vscode.__test.recorded.terminals[0]?.shown > 0, "the terminal shown");
  await page.screenshot({ path: path.join(ARTIFACTS, "panel-double.png") });
  assert.deepEqual(problems, [], "the page logged errors");
});

test("a failed restart leaves the mode and model pickers empty and disabled, not at the old session's values", async () => {
  const { page, problems } = await openPanel();
  await page.locator(".status-text", { hasText: "Ready" }).waitFor({ timeout: 60_000 });
  const model = page.locator("select#config-model");
  const mode = page.locator("select#config-mode");
  await inView(page, model, "the model picker");
  assert.equal(await model.isDisabled(), false);
  assert.notEqual(await model.inputValue(), "");
  assert.notEqual(await mode.inputValue(), "");

  // tether.path now names a missing program; Restart (the command, or the error's button)
  vscode.__test.setSettings({ "tether.path": path.join(project.root, "no-such-tether") });
  ext.send({ type: "restart" });
  await inView(page, page.locator(".status-text", { hasText: "Could not start tether" }), "the failure in the status");
  await inView(page, page.locator(".items .error", { hasText: "no-such-tether" }), "the error");
  for (const [picker, name] of [[mode, "mode"], [model, "model"]]) {
    await inView(page, picker, `the ${name} picker`);
    assert.equal(await picker.isDisabled(), true, `the ${name} picker is disabled`);
    assert.equal(await picker.inputValue(), "", `the ${name} picker is empty`);
    assert.deepEqual(await picker.locator("option").allTextContents(), ["—"]);
  }
  await page.screenshot({ path: path.join(ARTIFACTS, "panel-failed.png") });
  assert.deepEqual(problems, [], "the page logged errors");
});
