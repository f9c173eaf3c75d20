#!/usr/bin/env node
// Drive an ACP agent with the official TypeScript SDK (@agentclientprotocol/sdk 2.x).
//
//   node tests/support/ts/drive.mjs [--cwd DIR] [--prompt TEXT] [--flow edit|approvals] [--timeout SECONDS]
//                           -- AGENT_CMD [ARGS...]
//
// Spawns AGENT_CMD (inheriting the environment, so TETHER_HOME passes through; its stderr
// goes to ours) and runs one editor-like session over NDJSON on stdio:
//   initialize (protocolVersion 1, fs read/write) -> session/new (cwd, no MCP servers)
//   -> the flow's prompts -> session/list, session/close (when advertised)
// meanwhile answering session/request_permission and fs/read_text_file / fs/write_text_file
// from disk, and collecting every session/update. Then it closes the agent's stdin and waits
// for the agent to exit. The flows:
//   edit       (default) one prompt (--prompt); every permission answered with the first option
//              whose kind starts with "allow".
//   approvals  for a scripted agent whose rounds write a.txt + b.txt, c.txt + d.txt, e.txt, then
//              f.txt (each followed by a text round): the round of two writes asked once (allow
//              once); session option approvals=call, and the next round's per-call form
//              (elicitation/create, offered in the capabilities) answered with only c.txt's box
//              checked; approvals=round, always=project, and e.txt allowed "always" (a project
//              grant); the prompt "/grants"; mode allow-all, and f.txt must ask nothing.
//              A flow event {event: "flow", step} is written before each step.
//
// stdout: one JSON object per line, each with an "event":
//   start          {agent, cwd, prompt}
//   frame          {dir: "recv" | "send", frame}   every raw JSON-RPC message, both ways
//   invalid_line   {line, reason}                  agent stdout that is not a JSON object
//   response       {method, params, result}        a result of a request we sent
//   error_response {method, params, error}         an error answer to a request we sent
//   request        {method, requestId, params, response | error, outsideCwd?, unexpected?}
//   notification   {method, params, unexpected?}
//   skipped        {method, reason}
//   sdk_rejected   {kind, detail}                  the SDK refused a message as invalid
//   agent_exit     {code, signal, forced}
//   done           {ok, failures}
// Exit status: 0 if the session ran through and nothing in `failures`; 1 otherwise (the
// reason on stderr); 2 on a usage error. The cwd defaults to $TETHER_DRIVE_CWD, then ".".

import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const USAGE =
  "usage: node drive.mjs [--cwd DIR] [--prompt TEXT] [--flow edit|approvals] [--timeout SECONDS] -- AGENT_CMD [ARGS...]";
const DEFAULT_PROMPT = "Read README.md and improve its wording.";
const EXIT_GRACE_MS = 5000;

class DriveError extends Error {}

function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function parseArgs(argv) {
  const opts = {
    cwd: process.env.TETHER_DRIVE_CWD || ".",
    prompt: DEFAULT_PROMPT,
    flow: "edit",
    timeout: 120,
    command: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new DriveError(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === "--") {
      opts.command = argv.slice(i + 1);
      break;
    } else if (arg === "--cwd") {
      opts.cwd = value();
    } else if (arg === "--prompt") {
      opts.prompt = value();
    } else if (arg === "--flow") {
      opts.flow = value();
      if (!(opts.flow in FLOWS)) throw new DriveError(`--flow must be one of ${Object.keys(FLOWS)}`);
    } else if (arg === "--timeout") {
      opts.timeout = Number(value());
      if (!(opts.timeout > 0)) throw new DriveError("--timeout needs a positive number");
    } else if (arg === "-h" || arg === "--help") {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      throw new DriveError(`unexpected argument ${JSON.stringify(arg)}`);
    }
  }
  if (opts.command.length === 0) throw new DriveError("no agent command given after --");
  opts.cwd = path.resolve(opts.cwd);
  return opts;
}

/** Calls `onLine(text)` for each "\n"-terminated line of a byte stream (and a final
 * unterminated rest, if any). */
async function eachLine(readable, onLine) {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let pending = "";
  for await (const chunk of readable) {
    pending += decoder.decode(chunk, { stream: true });
    let newline;
    while ((newline = pending.indexOf("\n")) >= 0) {
      onLine(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
    }
  }
  pending += decoder.decode();
  if (pending.length > 0) onLine(pending);
}

function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function errorInfo(error) {
  if (error instanceof acp.RequestError) {
    return { code: error.code, message: error.message, data: error.data };
  }
  return { message: error instanceof Error ? error.message : String(error) };
}

function isInside(root, target) {
  const rel = path.relative(root, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

function delay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

// ---- the flows: what the client does once initialized; each returns the session id

async function editFlow({ agent, call, opts, failed }) {
  const { sessionId } = await call(agent, acp.methods.agent.session.new, {
    cwd: opts.cwd,
    mcpServers: [],
  });
  const { stopReason } = await call(agent, acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: opts.prompt }],
  });
  if (stopReason !== "end_turn") failed(`the prompt stopped with ${stopReason}, not end_turn`);
  return sessionId;
}

async function approvalsFlow({ agent, call, opts, failed, policy }) {
  const m = acp.methods.agent.session;
  const { sessionId } = await call(agent, m.new, { cwd: opts.cwd, mcpServers: [] });
  const prompt = async (step, text) => {
    emit({ event: "flow", step });
    const { stopReason } = await call(agent, m.prompt, { sessionId, prompt: [{ type: "text", text }] });
    if (stopReason !== "end_turn") failed(`${step}: the prompt stopped with ${stopReason}, not end_turn`);
  };
  const option = (configId, value) => call(agent, m.setConfigOption, { sessionId, configId, value });
  policy.permission = "allow_once";
  await prompt("round", "write a.txt and b.txt");
  await option("approvals", "call");
  policy.checked = "c.txt";
  await prompt("per-call", "write c.txt and d.txt");
  await option("approvals", "round");
  await option("always", "project");
  policy.permission = "allow_always";
  await prompt("project-grant", "write e.txt");
  policy.permission = null; // from here on nothing may ask
  await prompt("grants", "/grants");
  await call(agent, m.setMode, { sessionId, modeId: "allow-all" });
  await prompt("allow-all", "write f.txt");
  return sessionId;
}

const FLOWS = { edit: editFlow, approvals: approvalsFlow };

/** The answer to a permission request: the option of `policy.permission`'s kind; with no
 * policy (the edit flow), the first whose kind starts with "allow". */
function choosePermission(options, policy) {
  if (policy.permission === undefined) return options.find((o) => o.kind.startsWith("allow")) ?? options[0];
  return options.find((o) => o.kind === policy.permission);
}

/** A per-call form: each boolean box checked when its title names `policy.checked`. */
function answerForm(schema, policy) {
  const content = {};
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    if (prop.type === "boolean") content[name] = policy.checked !== undefined && (prop.title ?? "").includes(policy.checked);
  }
  return { action: "accept", content };
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`drive.mjs: ${error.message}\n${USAGE}\n`);
    return 2;
  }
  const failures = [];
  const failed = (message) => {
    if (!failures.includes(message)) failures.push(message);
  };
  let phase = "start";
  emit({ event: "start", agent: opts.command, cwd: opts.cwd, prompt: opts.prompt });

  // ---- the agent process
  const child = spawn(opts.command[0], opts.command.slice(1), {
    stdio: ["pipe", "pipe", "inherit"],
    env: process.env,
  });
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  try {
    await new Promise((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
  } catch (error) {
    const message = `could not start agent ${JSON.stringify(opts.command)}: ${error.message}`;
    emit({ event: "done", ok: false, failures: [message] });
    process.stderr.write(`drive.mjs: ${message}\n`);
    return 1;
  }
  child.on("error", (error) => failed(`agent process error: ${error.message}`));
  child.stdin.on("error", () => {}); // EPIPE when the agent dies first: reported via exit

  // ---- raw taps on both directions, then the SDK's NDJSON stream over them
  const [forSdk, forTap] = Readable.toWeb(child.stdout).tee();
  const tapDone = eachLine(forTap, (line) => {
    let frame;
    try {
      frame = JSON.parse(line);
    } catch {
      emit({ event: "invalid_line", line, reason: "not JSON" });
      failed("the agent wrote a line to stdout that is not JSON");
      return;
    }
    if (!isObject(frame)) {
      emit({ event: "invalid_line", line, reason: "not a JSON object" });
      failed("the agent wrote a line to stdout that is not a JSON object");
      return;
    }
    emit({ event: "frame", dir: "recv", frame });
  }).catch((error) => failed(`reading agent stdout failed: ${error.message}`));

  const ourErrorIds = new Set(); // requests our handlers answered with an error on purpose
  const sent = new TransformStream({
    transform(chunk, controller) {
      controller.enqueue(chunk);
      for (const line of new TextDecoder().decode(chunk).split("\n")) {
        if (line.trim() === "") continue;
        let frame;
        try {
          frame = JSON.parse(line); // the SDK writes one whole message per chunk
        } catch {
          emit({ event: "invalid_line", line, reason: "the client wrote a partial line" });
          continue;
        }
        emit({ event: "frame", dir: "send", frame });
        if (isObject(frame) && "error" in frame && !ourErrorIds.has(JSON.stringify(frame.id))) {
          emit({ event: "sdk_rejected", kind: "request", detail: frame });
          failed(`the SDK answered an agent request with an error: ${JSON.stringify(frame.error)}`);
        }
      }
    },
  });
  const pipeDone = sent.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  const stream = acp.ndJsonStream(sent.writable, forSdk);

  // The SDK logs, and otherwise drops, notifications whose params fail its zod schemas.
  const consoleError = console.error;
  console.error = (...args) => {
    const rejected = [
      "Error handling notification",
      "Invalid message",
      "Got response to unknown request",
    ];
    if (rejected.includes(args[0])) {
      emit({ event: "sdk_rejected", kind: "notification", detail: args.slice(1) });
      failed(`the SDK rejected a message from the agent: ${JSON.stringify(args)}`);
    }
    consoleError(...args);
  };

  // ---- client-side handlers
  const handled = (ctx, fields) => {
    const event = { event: "request", method: ctx.method, requestId: ctx.requestId };
    emit({ ...event, params: ctx.params, ...fields });
  };
  const refuse = (ctx, error, fields = {}) => {
    ourErrorIds.add(JSON.stringify(ctx.requestId));
    handled(ctx, { error: errorInfo(error), ...fields });
    throw error;
  };
  const checkPath = (ctx, target) => {
    if (typeof target !== "string" || !path.isAbsolute(target)) {
      failed(`${ctx.method} with a non-absolute path ${JSON.stringify(target)}`);
      return refuse(ctx, acp.RequestError.invalidParams({ path: target }, "path must be absolute"));
    }
    const outsideCwd = !isInside(opts.cwd, path.resolve(target));
    if (outsideCwd) failed(`${ctx.method} outside the session cwd: ${target}`);
    return outsideCwd;
  };

  const policy = {}; // what the flow wants answered next (see choosePermission, answerForm)
  const forms = opts.flow === "approvals";
  const app = acp
    .client({ name: "tether-ts-drive" })
    .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
      const { options } = ctx.params;
      const chosen = choosePermission(options, policy);
      if (!chosen) failed(`a permission request the flow did not expect: ${ctx.params.toolCall.title}`);
      const response = chosen
        ? { outcome: { outcome: "selected", optionId: chosen.optionId } }
        : { outcome: { outcome: "cancelled" } };
      handled(ctx, { response, chosenKind: chosen?.kind ?? null });
      return response;
    })
    .onRequest(acp.methods.client.elicitation.create, (ctx) => {
      if (!forms || ctx.params.mode !== "form") {
        failed(`an elicitation the flow did not expect: ${ctx.params.message}`);
        return refuse(ctx, acp.RequestError.methodNotFound(ctx.method), { unexpected: true });
      }
      const response = answerForm(ctx.params.requestedSchema, policy);
      handled(ctx, { response });
      return response;
    })
    .onRequest(acp.methods.client.fs.readTextFile, async (ctx) => {
      const { path: target, line, limit } = ctx.params;
      const outsideCwd = checkPath(ctx, target);
      let text;
      try {
        text = await readFile(target, "utf8");
      } catch (error) {
        const refusal =
          error.code === "ENOENT"
            ? acp.RequestError.resourceNotFound(target)
            : acp.RequestError.internalError({ path: target }, error.message);
        return refuse(ctx, refusal, { outsideCwd });
      }
      const lines = text.split(/(?<=\n)/);
      const start = Math.max((line ?? 1) - 1, 0);
      const end = limit == null ? undefined : start + limit;
      const response = { content: lines.slice(start, end).join("") };
      handled(ctx, { response, outsideCwd });
      return response;
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async (ctx) => {
      const { path: target, content } = ctx.params;
      const outsideCwd = checkPath(ctx, target);
      try {
        await mkdir(path.dirname(target), { recursive: true });
        await writeFile(target, content, "utf8");
      } catch (error) {
        return refuse(ctx, acp.RequestError.internalError({ path: target }, error.message), {
          outsideCwd,
        });
      }
      const response = {};
      handled(ctx, { response, outsideCwd });
      return response;
    })
    .onRequest("*", (ctx) => {
      // We advertise no terminal support (nor forms, but in the approvals flow): no other asks.
      failed(`the agent sent an unexpected request ${ctx.method}`);
      return refuse(ctx, acp.RequestError.methodNotFound(ctx.method), { unexpected: true });
    })
    .onNotification(acp.methods.client.session.update, (ctx) => {
      emit({ event: "notification", method: ctx.method, params: ctx.params });
    })
    .onNotification("*", (ctx) => {
      emit({ event: "notification", method: ctx.method, params: ctx.params, unexpected: true });
    });

  const call = async (agent, method, params) => {
    phase = method;
    try {
      const result = await agent.request(method, params);
      emit({ event: "response", method, params, result });
      return result;
    } catch (error) {
      if (error instanceof acp.RequestError) {
        emit({ event: "error_response", method, params, error: errorInfo(error) });
        throw new DriveError(`${method} failed: ${error.code} ${error.message}`);
      }
      throw error;
    }
  };

  // ---- the session
  const session = app.connectWith(stream, async (agent) => {
    const clientCapabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
    if (forms) clientCapabilities.elicitation = { form: {} };
    const init = await call(agent, acp.methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities,
      clientInfo: { name: "tether-ts-drive", version: "1.0.0" },
    });
    if (init.protocolVersion !== 1) {
      throw new DriveError(`agent answered protocolVersion ${init.protocolVersion}, expected 1`);
    }
    const sessionId = await FLOWS[opts.flow]({ agent, call, opts, failed, policy });
    const sessionCaps = init.agentCapabilities?.sessionCapabilities ?? {};
    for (const [cap, method, params] of [
      ["list", acp.methods.agent.session.list, { cwd: opts.cwd }],
      ["close", acp.methods.agent.session.close, { sessionId }],
    ]) {
      if (sessionCaps[cap] == null) {
        emit({ event: "skipped", method, reason: `sessionCapabilities.${cap} not advertised` });
      } else {
        await call(agent, method, params);
      }
    }
    phase = "shutdown";
  });
  session.catch(() => {}); // awaited below; don't let a late rejection go unhandled

  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new DriveError(`timed out after ${opts.timeout}s`)),
      opts.timeout * 1000,
    );
  });
  try {
    await Promise.race([session, timeout]);
  } catch (error) {
    const exit = await Promise.race([exited, delay(300)]);
    const after = exit ? ` (agent exited with ${exit.code ?? exit.signal})` : "";
    failed(`${phase}: ${error instanceof Error ? error.message : String(error)}${after}`);
  } finally {
    clearTimeout(timer);
  }

  // ---- shutdown: close stdin, give the agent time to exit, then terminate it
  try {
    await sent.writable.close();
  } catch {
    child.stdin.end();
  }
  await pipeDone;
  let forced = false;
  let exit = await Promise.race([exited, delay(EXIT_GRACE_MS)]);
  if (!exit) {
    forced = true;
    child.kill("SIGTERM");
    exit = await Promise.race([exited, delay(2000)]);
    if (!exit) {
      child.kill("SIGKILL");
      exit = await exited;
    }
  }
  emit({ event: "agent_exit", code: exit.code, signal: exit.signal, forced });
  if (forced) failed(`the agent did not exit within ${EXIT_GRACE_MS} ms of its stdin closing`);
  else if (exit.code !== 0) failed(`the agent exited with ${exit.code ?? exit.signal}`);
  await tapDone;
  console.error = consoleError;

  emit({ event: "done", ok: failures.length === 0, failures });
  for (const message of failures) process.stderr.write(`drive.mjs: ${message}\n`);
  return failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), 2000).unref();
  },
  (error) => {
    process.stderr.write(`drive.mjs: internal error: ${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
