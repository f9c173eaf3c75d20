-- terminal/*: the agent's commands run as child processes and show in terminal buffers.
--
-- Each terminal/create starts the command with vim.system (pipes, no TTY: no pager, no colour
-- codes in what the agent reads) and opens a terminal buffer (nvim_open_term) that receives
-- the same bytes. terminal/output answers from the captured text, cut from the front at the
-- outputByteLimit (on a character boundary); the buffer keeps everything.
local chat = require("tether.ui.chat")

local M = {}

local terminals = {} -- id -> state
local next_id = 1

local SIGNALS = { [1] = "SIGHUP", [2] = "SIGINT", [9] = "SIGKILL", [15] = "SIGTERM", [6] = "SIGABRT" }

local function exit_status(t)
  if t.signal and t.signal ~= 0 then
    return { signal = SIGNALS[t.signal] or ("SIG" .. t.signal) }
  end
  return { exitCode = t.code }
end

-- Drop bytes from the front until the text fits, never splitting a UTF-8 sequence.
local function trim_front(text, limit)
  if #text <= limit then
    return text, false
  end
  local start = #text - limit + 1
  while start <= #text do
    local byte = text:byte(start)
    if byte < 0x80 or byte >= 0xC0 then
      break
    end
    start = start + 1
  end
  return text:sub(start), true
end

local function on_output(t, data)
  if not data or data == "" then
    return
  end
  t.output = t.output .. data
  if t.limit then
    local trimmed, cut = trim_front(t.output, t.limit)
    t.output = trimmed
    t.truncated = t.truncated or cut
  end
  t.all = t.all .. data
  if t.chan then
    pcall(vim.api.nvim_chan_send, t.chan, (data:gsub("\r?\n", "\r\n")))
  end
  chat.terminal_changed(t.id)
end

local function on_exit(t, res)
  t.exited = true
  t.code, t.signal = res.code, res.signal
  local status = exit_status(t)
  if t.chan then
    local words = status.signal and ("killed by " .. status.signal) or ("exit code " .. status.exitCode)
    pcall(vim.api.nvim_chan_send, t.chan, "\r\n[" .. words .. "]\r\n")
  end
  for _, reply in ipairs(t.waiters) do
    reply.result(status)
  end
  t.waiters = {}
  chat.terminal_changed(t.id)
end

local function env_table(list)
  local env = {}
  for _, e in ipairs(list or {}) do
    env[e.name] = e.value
  end
  return env
end

local function lookup(params)
  local t = terminals[params.terminalId]
  if not t then
    return nil, "no terminal " .. tostring(params.terminalId) .. " (never created, or released)"
  end
  return t
end

--- The command line as the chat shows it: tether's one-use launcher (`.../sandboxed-N`, or
--- `.../unconfined-N` for a command allowed outside the sandbox) is named by what it is,
--- `(sandboxed)` or `(unconfined)`, instead of by its path.
function M.shown(cmd)
  local kind = cmd[1]:match("/(%a+)%-%d+$")
  if (kind == "sandboxed" or kind == "unconfined") and #cmd > 1 then
    return table.concat(vim.list_slice(cmd, 2), " ") .. "  (" .. kind .. ")"
  end
  return table.concat(cmd, " ")
end

function M.create(params, reply)
  if type(params.command) ~= "string" or params.command == "" then
    return reply.error(-32602, "command is required")
  end
  local id = ("term_%d"):format(next_id)
  next_id = next_id + 1
  local cmd = { params.command }
  vim.list_extend(cmd, params.args or {})
  local t = {
    id = id,
    session = params.sessionId,
    command = M.shown(cmd),
    output = "",
    all = "",
    truncated = false,
    limit = params.outputByteLimit,
    exited = false,
    waiters = {},
  }
  t.buf = vim.api.nvim_create_buf(true, false)
  pcall(vim.api.nvim_buf_set_name, t.buf, ("tether://terminal/%s %s"):format(id, t.command))
  t.chan = vim.api.nvim_open_term(t.buf, {})
  local function out(_, data)
    vim.schedule(function()
      on_output(t, data)
    end)
  end
  local ok, proc = pcall(vim.system, cmd, {
    cwd = params.cwd,
    env = env_table(params.env),
    stdout = out,
    stderr = out,
  }, function(res)
    vim.schedule(function()
      on_exit(t, res)
    end)
  end)
  if not ok then
    pcall(vim.api.nvim_chan_send, t.chan, "could not start: " .. tostring(proc) .. "\r\n")
    return reply.error(-32603, ("could not run `%s`: %s"):format(t.command, tostring(proc)))
  end
  t.proc = proc
  terminals[id] = t
  reply.result({ terminalId = id })
end

function M.output(params, reply)
  local t, err = lookup(params)
  if not t then
    return reply.error(-32002, err)
  end
  reply.result({
    output = t.output,
    truncated = t.truncated,
    exitStatus = t.exited and exit_status(t) or nil,
  })
end

function M.wait_for_exit(params, reply)
  local t, err = lookup(params)
  if not t then
    return reply.error(-32002, err)
  end
  if t.exited then
    return reply.result(exit_status(t))
  end
  t.waiters[#t.waiters + 1] = reply
end

function M.kill(params, reply)
  local t, err = lookup(params)
  if not t then
    return reply.error(-32002, err)
  end
  if not t.exited then
    pcall(t.proc.kill, t.proc, 15)
  end
  reply.result(nil)
end

M.released = {} -- id -> terminal: the chat keeps showing a released terminal's output

function M.release(params, reply)
  local t, err = lookup(params)
  if not t then
    return reply.error(-32002, err)
  end
  if not t.exited then
    pcall(t.proc.kill, t.proc, 9)
  end
  terminals[params.terminalId] = nil
  t.released = true
  M.released[t.id] = t
  reply.result(nil)
end

--- What the chat shows for a terminal: command, output lines, state in words.
function M.snapshot(id)
  local t = terminals[id] or M.released[id]
  if not t then
    return nil
  end
  local lines = vim.split((t.all:gsub("\r\n", "\n")), "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  local state
  if t.exited then
    local s = exit_status(t)
    state = s.signal and ("killed by " .. s.signal) or ("exited with code " .. s.exitCode)
  else
    state = "running…"
  end
  return { command = t.command, lines = lines, state = state, buf = t.buf }
end

--- Open a terminal's buffer in a split (`:Tether terminal ID`; no ID: the newest).
function M.show(id)
  local t = id and (terminals[id] or M.released[id])
  if not t then
    local newest = -1
    for _, cand in pairs(vim.tbl_extend("force", {}, M.released, terminals)) do
      local n = tonumber(cand.id:match("%d+"))
      if n > newest then
        newest, t = n, cand
      end
    end
  end
  if not t then
    vim.notify("tether: no terminal yet", vim.log.levels.INFO)
    return
  end
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, t.buf)
end

--- Kill every command still running (the agent stopped, or Neovim exits).
function M.kill_all()
  for _, t in pairs(terminals) do
    if not t.exited then
      pcall(t.proc.kill, t.proc, 9)
    end
  end
end

return M
