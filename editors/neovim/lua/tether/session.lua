-- The ACP client: one agent process, one session at a time, shown in the chat buffer.
--
-- It starts the agent, initializes, creates (or loads) a session, sends prompts, cancels, and
-- routes what the agent sends: session/update to the chat, permission requests to
-- permissions.lua, fs/* to fs.lua, terminal/* to terminal.lua.
local chat = require("tether.ui.chat")
local config = require("tether.config")
local fs = require("tether.fs")
local permissions = require("tether.permissions")
local rpc = require("tether.rpc")
local status = require("tether.status")
local terminal = require("tether.terminal")

local M = {}

M.CLIENT_CAPABILITIES = {
  fs = { readTextFile = true, writeTextFile = true },
  terminal = true,
  session = {
    configOptions = { boolean = vim.empty_dict() },
    notices = vim.empty_dict(),
  },
  elicitation = { form = vim.empty_dict() },
}

local S = {
  conn = nil,
  starting = false,
  queue = {}, -- callbacks waiting for a session
  agent = nil, -- the initialize result
  id = nil, -- the current sessionId
  cwd = nil,
  config_options = nil,
  modes = nil,
  commands = {},
  turn = nil, -- { id = request id } while a prompt runs
}
M.state = S

-- How a turn ended, in words (a normal end_turn needs none).
local STOP_WORDS = {
  cancelled = "cancelled",
  max_tokens = "stopped: the model reached its output limit",
  max_turn_requests = "stopped: too many model requests in one turn",
  refusal = "stopped: the model refused",
}

local function err_text(err)
  if type(err) ~= "table" then
    return tostring(err)
  end
  local code = err.code and (" (error " .. tostring(err.code) .. ")") or ""
  return (err.message or "unknown error") .. code
end

local function fail(what, err)
  if type(err) == "table" and err.code == rpc.AGENT_EXITED then
    return -- the exit itself is reported, once, by on_exit
  end
  local text = what .. ": " .. err_text(err)
  chat.error(text)
  status.set("error: " .. text, "error")
end
M.fail = fail

--- A select option's values as one list; grouped values keep their group's name.
function M.values(opt)
  local out = {}
  for _, o in ipairs(opt.options or {}) do
    if o.options then
      for _, inner in ipairs(o.options) do
        out[#out + 1] = vim.tbl_extend("force", inner, { group = o.name })
      end
    else
      out[#out + 1] = o
    end
  end
  return out
end

local function model_name()
  for _, opt in ipairs(S.config_options or {}) do
    if opt.category == "model" and opt.type == "select" then
      for _, o in ipairs(M.values(opt)) do
        if o.value == opt.currentValue then
          return o.name
        end
      end
      return opt.currentValue
    end
  end
end

local function set_config(options)
  if options then
    S.config_options = options
    chat.set_model(model_name())
  end
end

-- What the agent sends -------------------------------------------------------------------------

-- The status while a turn runs; an approval waiting for the user outranks everything else.
local function busy(text)
  if S.turn and permissions.waiting_count() == 0 then
    status.set(text, "busy")
  end
end

local UPDATE = {}

function UPDATE.agent_message_chunk(u)
  if u.content and u.content.type == "text" then
    chat.agent_text(u.content.text)
  end
  busy("writing…")
end

function UPDATE.agent_thought_chunk(u)
  if u.content and u.content.type == "text" then
    chat.thought(u.content.text)
  end
  busy("thinking…")
end

function UPDATE.user_message_chunk(u)
  if u.content and u.content.type == "text" then
    chat.user_chunk(u.content.text)
  end
end

local function tool(u)
  local call = chat.tool(u)
  local title = call.title or call.toolCallId
  if call.status == "in_progress" then
    busy("running: " .. title)
  elseif call.status == "pending" then
    busy("preparing: " .. title)
  else -- completed or failed: another call of the round may still run
    local other = chat.active_tool()
    local prefix = call.status == "failed" and ("failed: " .. title .. "; ") or ""
    busy(prefix .. (other and ("running: " .. other) or "waiting for the model…"))
  end
end
UPDATE.tool_call = tool
UPDATE.tool_call_update = tool

function UPDATE.plan(u)
  chat.plan(u.entries or {})
end

function UPDATE.available_commands_update(u)
  S.commands = u.availableCommands or {}
end

function UPDATE.current_mode_update(u)
  if S.modes then
    S.modes.currentModeId = u.currentModeId
  end
end

function UPDATE.config_option_update(u)
  set_config(u.configOptions)
end

function UPDATE.session_info_update(u)
  if u.title then
    chat.set_title(u.title)
  end
end

function UPDATE.usage_update(u)
  chat.set_usage(u)
end

function UPDATE.notice(u)
  chat.notice(u.severity, u.title or "", u.description)
end

local function on_notification(method, params)
  if method ~= "session/update" or params.sessionId ~= S.id then
    return
  end
  local u = params.update or {}
  local handler = UPDATE[u.sessionUpdate]
  if handler then
    handler(u)
  end
end

local REQUEST = {
  ["session/request_permission"] = function(params, reply, id)
    permissions.ask(params, reply, id)
  end,
  ["elicitation/create"] = function(params, reply, id)
    permissions.form(params, reply, id)
  end,
  ["fs/read_text_file"] = function(params, reply)
    local result, code, message = fs.read(params)
    if result then
      reply.result(result)
    else
      reply.error(code, message)
    end
  end,
  ["fs/write_text_file"] = function(params, reply)
    local result, code, message = fs.write(params)
    if result then
      reply.result(result)
    else
      reply.error(code, message)
      chat.error("could not apply the agent's write: " .. message)
    end
  end,
  ["terminal/create"] = terminal.create,
  ["terminal/output"] = terminal.output,
  ["terminal/wait_for_exit"] = terminal.wait_for_exit,
  ["terminal/kill"] = terminal.kill,
  ["terminal/release"] = terminal.release,
}

local function on_request(method, params, reply)
  local handler = REQUEST[method]
  if not handler then
    return reply.error(rpc.METHOD_NOT_FOUND, "this client does not offer " .. method)
  end
  if params.sessionId and params.sessionId ~= S.id then
    return reply.error(-32602, "unknown session " .. tostring(params.sessionId))
  end
  handler(params, reply, reply.id)
end

local function run_queue(ok)
  local queued = S.queue
  S.queue = {}
  for _, cb in ipairs(queued) do
    cb(ok)
  end
end

--- The agent's name: from its initialize answer, else the command's.
function M.agent_name()
  local info = S.agent and S.agent.agentInfo
  return (info and (info.title or info.name)) or vim.fs.basename(config.options.cmd[1])
end

local function on_exit(code, signal, stderr)
  local was_turn = S.turn
  S.conn, S.id, S.turn, S.starting = nil, nil, nil, false
  terminal.kill_all()
  permissions.cancel_all()
  if S.stopping then
    S.stopping = false
    status.set("stopped", "idle")
    return
  end
  local tail = table.concat(vim.list_slice(stderr, math.max(1, #stderr - 4)), "\n")
  local text = ("%s exited (code %s%s)"):format(
    M.agent_name(),
    tostring(code),
    (signal and signal ~= 0) and (", signal " .. signal) or ""
  )
  if tail ~= "" then
    text = text .. ": " .. tail
  end
  chat.error(text .. (was_turn and " — the turn was lost" or ""))
  status.set("error: " .. text, "error")
  run_queue(false)
end

-- Starting -------------------------------------------------------------------------------------

local function env()
  local e = vim.deepcopy(config.options.env or {})
  return next(e) and e or nil
end

local function new_session(cb)
  status.set("creating a session…", "busy")
  S.conn:request("session/new", { cwd = S.cwd, mcpServers = {} }, function(err, result)
    if err then
      fail("session/new failed", err)
      return cb(false)
    end
    S.id = result.sessionId
    S.modes = result.modes
    set_config(result.configOptions)
    chat.reset()
    status.set("ready", "idle")
    cb(true)
  end)
end

--- Start the agent and a session if needed, then cb(ok).
function M.ensure(cb)
  cb = cb or function() end
  if S.id and S.conn then
    return cb(true)
  end
  S.queue[#S.queue + 1] = cb
  if S.starting then
    return
  end
  S.starting = true
  S.agent = nil
  S.cwd = config.options.cwd or vim.fn.getcwd()
  status.set("starting " .. config.options.cmd[1] .. "…", "busy")
  local conn, why = rpc.start({
    cmd = config.options.cmd,
    env = env(),
    cwd = S.cwd,
    log_file = config.options.log_file,
    on_request = on_request,
    on_notification = on_notification,
    on_cancel = permissions.withdrawn,
    on_exit = on_exit,
    on_protocol_error = function(text)
      chat.error(text)
    end,
  })
  if not conn then
    S.starting = false
    chat.error(why)
    status.set("error: " .. why, "error")
    return run_queue(false)
  end
  S.conn = conn
  local params = {
    protocolVersion = 1,
    clientCapabilities = M.CLIENT_CAPABILITIES,
    clientInfo = { name = "tether.nvim", title = "tether for Neovim", version = "0.1.0" },
  }
  conn:request("initialize", params, function(err, result)
    if err then
      S.starting = false
      fail("initialize failed", err)
      return run_queue(false)
    end
    S.agent = result
    new_session(function(ok)
      S.starting = false
      run_queue(ok)
    end)
  end)
end

-- Commands -------------------------------------------------------------------------------------

--- Send a prompt (text) in the current session, starting one if needed.
function M.prompt(text)
  if not text or text:match("^%s*$") then
    return
  end
  M.ensure(function(ok)
    if not ok then
      return
    end
    if S.turn then
      vim.notify("tether: a turn is running (:Tether cancel stops it)", vim.log.levels.WARN)
      return
    end
    chat.user(text)
    status.set("waiting for the model…", "busy")
    local params = { sessionId = S.id, prompt = { { type = "text", text = text } } }
    local turn = {}
    S.turn = turn
    turn.id = S.conn:request("session/prompt", params, function(err, result)
      if S.turn == turn then
        S.turn = nil
      end
      if err then
        return fail("the turn failed", err)
      end
      local words = STOP_WORDS[result.stopReason]
      if words then
        chat.info("(" .. words .. ")")
      end
      status.set(result.stopReason == "cancelled" and "cancelled" or "ready", "idle")
    end)
  end)
end

--- Ask for a prompt with vim.ui.input; <Tab> completes the agent's slash commands.
function M.ask_prompt()
  local opts = { prompt = "tether> ", completion = "customlist,v:lua.require'tether'.complete_prompt" }
  vim.ui.input(opts, function(text)
    M.prompt(text)
  end)
end

--- Cancel the running turn: session/cancel, and every waiting approval answered "cancelled".
function M.cancel()
  if not (S.turn and S.conn) then
    vim.notify("tether: no turn is running", vim.log.levels.INFO)
    return
  end
  status.set("cancelling…", "busy")
  S.conn:notify("session/cancel", { sessionId = S.id })
  permissions.cancel_all()
end

--- A fresh session in the running agent.
function M.new()
  if not S.conn then
    return M.ensure()
  end
  if S.turn then
    M.cancel()
  end
  new_session(function() end)
end

function M.stop()
  if S.conn then
    S.stopping = true
    if S.turn then
      M.cancel()
    end
    S.conn:stop()
  end
end

function M.set_option(id, value, is_boolean)
  local params = { sessionId = S.id, configId = id, value = value }
  if is_boolean then
    params.type = "boolean"
  end
  status.set("setting " .. id .. "…", "busy")
  S.conn:request("session/set_config_option", params, function(err, result)
    if err then
      return fail("could not set " .. id, err)
    end
    set_config(result.configOptions)
    status.set(("%s: %s"):format(id, tostring(value)), "idle")
  end)
end

--- session/set_mode (agents that offer `modes` without config options).
function M.set_mode(mode)
  status.set("setting the mode…", "busy")
  S.conn:request("session/set_mode", { sessionId = S.id, modeId = mode.id }, function(err)
    if err then
      return fail("could not set the mode", err)
    end
    S.modes.currentModeId = mode.id
    status.set("mode: " .. mode.name, "idle")
  end)
end

-- Session history ------------------------------------------------------------------------------

local function session_caps()
  local caps = (S.agent and S.agent.agentCapabilities) or {}
  return caps, caps.sessionCapabilities or {}
end

--- Open a stored session: session/load (history replayed into the chat) or session/resume.
function M.open_session(info, cb)
  cb = cb or function() end
  local caps, scaps = session_caps()
  local method = (caps.loadSession and "session/load") or (scaps.resume and "session/resume")
  if not method then
    fail("cannot open a stored session", "the agent offers neither session/load nor session/resume")
    return cb(false)
  end
  if S.turn then
    M.cancel()
  end
  chat.reset()
  S.id = info.sessionId -- replayed updates carry this id
  if info.title then
    chat.set_title(info.title)
  end
  status.set(method == "session/load" and "loading the session…" or "resuming the session…", "busy")
  local params = { sessionId = info.sessionId, cwd = info.cwd or S.cwd, mcpServers = {} }
  S.conn:request(method, params, function(err, result)
    if err then
      fail(method .. " failed", err)
      return cb(false)
    end
    result = result or {}
    S.modes = result.modes or S.modes
    set_config(result.configOptions)
    if method == "session/resume" then
      chat.info("(resumed: earlier messages are not shown)")
    end
    status.set("ready", "idle")
    cb(true)
  end)
end

--- session/list (every page) then cb(list, err).
function M.list_sessions(cb)
  M.ensure(function(ok)
    if not ok then
      return cb(nil, "the agent is not running")
    end
    local _, scaps = session_caps()
    if not scaps.list then
      return cb(nil, "the agent cannot list sessions")
    end
    local all = {}
    local function page(cursor)
      local params = { cwd = S.cwd }
      params.cursor = cursor
      S.conn:request("session/list", params, function(err, result)
        if err then
          return cb(nil, err_text(err))
        end
        vim.list_extend(all, result.sessions or {})
        if result.nextCursor then
          return page(result.nextCursor)
        end
        cb(all)
      end)
    end
    page(nil)
  end)
end

function M.is_running()
  return S.conn ~= nil
end

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("tether.session", { clear = true }),
  callback = function()
    terminal.kill_all()
    if S.conn then
      S.stopping = true
      S.conn:stop(0)
    end
  end,
})

return M
