-- JSON-RPC 2.0 with a child process over its stdio, one JSON object per line (ACP's framing).
-- The optional protocol log gets every line: "-> " sent, "<- " received, "?? " received but not
-- JSON, "!! " the agent's stderr.
--
-- start() spawns the command with vim.system pipes. Incoming requests go to on_request with a
-- reply object (answer once: reply.result(x) or reply.error(code, message)); notifications go
-- to on_notification; responses to our requests go to the callback given to request().
local M = {}

local Conn = {}
Conn.__index = Conn

M.CANCELLED = -32800
M.METHOD_NOT_FOUND = -32601
M.INTERNAL_ERROR = -32603
M.AGENT_EXITED = -32099 -- given to callbacks still waiting when the agent exits; never sent

local STDERR_KEEP = 40 -- lines of the agent's stderr kept to explain a crash

local function decode(line)
  return pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
end

--- Spawn `opts.cmd` and speak JSON-RPC to it.
--- opts: cmd, env, cwd, log_file, on_request(method, params, reply), on_notification(method,
--- params), on_cancel(request_id), on_exit(code, signal, stderr_lines), on_protocol_error(text)
--- Returns the connection, or nil and a sentence saying why it could not start.
function M.start(opts)
  local self = setmetatable({
    opts = opts,
    next_id = 1,
    waiting = {}, -- our request id -> callback(err, result)
    incoming = {}, -- agent request id -> its reply object, until answered
    partial = "",
    stderr = {},
    closed = false,
  }, Conn)
  if opts.log_file then
    self.log = io.open(opts.log_file, "a")
  end
  local ok, proc = pcall(vim.system, opts.cmd, {
    stdin = true,
    cwd = opts.cwd,
    env = opts.env,
    stdout = function(_, data)
      self:_on_stdout(data)
    end,
    stderr = function(_, data)
      self:_on_stderr(data)
    end,
  }, function(res)
    vim.schedule(function()
      self:_on_exit(res)
    end)
  end)
  if not ok then
    self:_close_log()
    return nil, ("could not start `%s`: %s"):format(table.concat(opts.cmd, " "), tostring(proc))
  end
  self.proc = proc
  return self
end

function Conn:_write_log(prefix, text)
  if self.log then
    self.log:write(prefix, text, "\n")
    self.log:flush()
  end
end

function Conn:_close_log()
  if self.log then
    self.log:close()
    self.log = nil
  end
end

-- Runs in libuv's fast context: only split lines here, handle them on the main loop.
function Conn:_on_stdout(data)
  if not data then
    return
  end
  local lines = {}
  local text = self.partial .. data
  local start = 1
  while true do
    local nl = text:find("\n", start, true)
    if not nl then
      break
    end
    lines[#lines + 1] = text:sub(start, nl - 1)
    start = nl + 1
  end
  self.partial = text:sub(start)
  if #lines > 0 then
    vim.schedule(function()
      for _, line in ipairs(lines) do
        self:_on_line(line)
      end
    end)
  end
end

function Conn:_on_stderr(data)
  if not data then
    return
  end
  vim.schedule(function()
    for line in data:gmatch("[^\n]+") do
      self.stderr[#self.stderr + 1] = line
      self:_write_log("!! ", line)
      if #self.stderr > STDERR_KEEP then
        table.remove(self.stderr, 1)
      end
    end
  end)
end

function Conn:_protocol_error(text)
  if self.opts.on_protocol_error then
    self.opts.on_protocol_error(text)
  end
end

function Conn:_on_line(line)
  if line:match("^%s*$") then
    return
  end
  local ok, msg = decode(line)
  if not ok or type(msg) ~= "table" then
    self:_write_log("?? ", line)
    return self:_protocol_error("the agent wrote a line that is not JSON-RPC: " .. line:sub(1, 200))
  end
  self:_write_log("<- ", line)
  if msg.method and msg.id ~= nil then
    self:_on_request(msg)
  elseif msg.method then
    self:_on_notification(msg)
  elseif msg.id ~= nil then
    local cb = self.waiting[msg.id]
    self.waiting[msg.id] = nil
    if cb then
      cb(msg.error, msg.result)
    end
  else
    self:_protocol_error("the agent sent a frame with neither a method nor an id")
  end
end

function Conn:_on_request(msg)
  local answered = false
  local id = msg.id
  local reply = { id = id }
  local function answer(frame)
    if answered or self.closed then
      return
    end
    answered = true
    self.incoming[id] = nil
    frame.jsonrpc = "2.0"
    frame.id = id
    self:_send(frame)
  end
  function reply.result(result)
    answer({ result = result == nil and vim.empty_dict() or result })
  end
  function reply.error(code, message)
    answer({ error = { code = code, message = message } })
  end
  function reply.pending()
    return not answered
  end
  self.incoming[id] = reply
  local ok, err = pcall(self.opts.on_request, msg.method, msg.params or {}, reply)
  if not ok then
    reply.error(M.INTERNAL_ERROR, tostring(err))
  end
end

function Conn:_on_notification(msg)
  if msg.method == "$/cancel_request" then
    local rid = msg.params and msg.params.requestId
    local reply = rid ~= nil and self.incoming[rid]
    if reply then
      if self.opts.on_cancel then
        self.opts.on_cancel(rid)
      end
      reply.error(M.CANCELLED, "cancelled by the agent")
    end
    return
  end
  if self.opts.on_notification then
    self.opts.on_notification(msg.method, msg.params or {})
  end
end

function Conn:_send(frame)
  if self.closed then
    return false
  end
  local line = vim.json.encode(frame)
  self:_write_log("-> ", line)
  local ok = pcall(self.proc.write, self.proc, line .. "\n")
  return ok
end

--- Send a request; cb(err, result) runs on the main loop when the answer arrives (err is the
--- JSON-RPC error object, or {code = AGENT_EXITED} when the agent exits first). Returns the id.
function Conn:request(method, params, cb)
  local id = self.next_id
  self.next_id = id + 1
  self.waiting[id] = cb or function() end
  local sent = self:_send({ jsonrpc = "2.0", id = id, method = method, params = params or vim.empty_dict() })
  if not sent then
    self.waiting[id] = nil
    local fail = cb or function() end
    vim.schedule(function()
      fail({ code = M.AGENT_EXITED, message = "the agent is not running" })
    end)
  end
  return id
end

function Conn:notify(method, params)
  return self:_send({ jsonrpc = "2.0", method = method, params = params or vim.empty_dict() })
end

function Conn:_on_exit(res)
  self.closed = true
  -- A last line without a newline is still the agent's.
  if self.partial ~= "" then
    self:_on_line(self.partial)
    self.partial = ""
  end
  self:_close_log()
  if self.opts.on_exit then
    self.opts.on_exit(res.code, res.signal, self.stderr)
  end
  local waiting = self.waiting
  self.waiting = {}
  for _, cb in pairs(waiting) do
    cb({ code = M.AGENT_EXITED, message = "the agent exited" })
  end
end

--- Close the agent's stdin (ACP agents exit on EOF); kill it if it is still there after a while.
function Conn:stop(grace_ms)
  if self.closed then
    return
  end
  pcall(self.proc.write, self.proc, nil)
  vim.defer_fn(function()
    if not self.closed then
      pcall(self.proc.kill, self.proc, 15)
    end
  end, grace_ms or 2000)
end

function Conn:is_running()
  return not self.closed
end

return M
