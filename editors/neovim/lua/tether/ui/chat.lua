-- The chat buffer: the session as Markdown, streamed.
--
-- The buffer is a list of blocks (your message, agent text, a thought, a tool call, the plan, a
-- permission card, a notice, an error). A block re-renders only its own lines when it changes,
-- and changes are flushed once per event-loop turn, so a burst of chunks costs one redraw.
-- Tool calls and permission cards are folds: a header line starting with "▶" and a body
-- indented by four spaces (zc / zo / za on them; all open by default).
local config = require("tether.config")
local status = require("tether.status")

local M = {}

local NAME = "tether://chat"
local ns = vim.api.nvim_create_namespace("tether.chat")
local INDENT = "    "
local MAX_DIFF_LINES = 400

local state = {
  buf = nil,
  blocks = {},
  tools = {}, -- toolCallId -> block
  plan = nil, -- the current turn's plan block
  flush_scheduled = false,
  title = nil,
  usage = nil,
  model = nil,
}

local TOOL_STATUS = {
  pending = "pending",
  in_progress = "running",
  completed = "done",
  failed = "failed",
}

local PLAN_MARK = { pending = "[ ]", in_progress = "[~]", completed = "[x]" }

-- Rendering ------------------------------------------------------------------------------------

local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

-- Header lines are one line whatever the agent sent.
local function one_line(text)
  return (tostring(text):gsub("%s*\n%s*", " "))
end

local function indented(lines, out, hl, group)
  for _, l in ipairs(lines) do
    out[#out + 1] = INDENT .. l
    if hl then
      hl[#out] = group
    end
  end
end

local function diff_lines(d, out, hl)
  out[#out + 1] = INDENT .. "diff " .. vim.fn.fnamemodify(d.path, ":~:.")
  hl[#out] = "Title"
  local old, new = d.oldText or "", d.newText or ""
  local differ = (vim.text and vim.text.diff) or vim.diff
  local text = differ(old, new, { result_type = "unified", ctxlen = 3 })
  local lines = split(type(text) == "string" and text or "")
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  for i, l in ipairs(lines) do
    if i > MAX_DIFF_LINES then
      out[#out + 1] = INDENT .. ("… %d more diff lines"):format(#lines - MAX_DIFF_LINES)
      break
    end
    out[#out + 1] = INDENT .. l
    local c = l:sub(1, 1)
    hl[#out] = (c == "+" and "DiffAdd") or (c == "-" and "DiffDelete") or (c == "@" and "DiffChange") or nil
  end
end

-- A command's exit code from the agent's rawOutput ({ exitCode = N }): what a card still says
-- once its terminal is gone (a reloaded session's earlier command).
local function raw_exit_code(raw)
  local code = type(raw) == "table" and raw.exitCode or nil
  return type(code) == "number" and code or nil
end

local function terminal_lines(id, out, hl, raw)
  local term = require("tether.terminal").snapshot(id)
  if not term then
    local code = raw_exit_code(raw)
    local exited = code and ("; exited with code " .. tostring(code)) or ""
    out[#out + 1] = INDENT .. "terminal " .. id .. " (unknown to this editor" .. exited .. ")"
    return
  end
  out[#out + 1] = INDENT .. ("$ %s   (:Tether terminal %s)"):format(one_line(term.command), id)
  hl[#out] = "Title"
  local keep = config.options.chat.terminal_lines
  local lines = term.lines
  local first = math.max(1, #lines - keep + 1)
  if first > 1 then
    out[#out + 1] = INDENT .. ("… %d earlier lines"):format(first - 1)
  end
  for i = first, #lines do
    out[#out + 1] = INDENT .. lines[i]
  end
  out[#out + 1] = INDENT .. term.state
  hl[#out] = "Comment"
end

local function content_lines(items, out, hl, raw)
  for _, c in ipairs(items or {}) do
    if c.type == "diff" then
      diff_lines(c, out, hl)
    elseif c.type == "terminal" then
      terminal_lines(c.terminalId, out, hl, raw)
    elseif c.type == "content" and c.content then
      local inner = c.content
      if inner.type == "text" then
        indented(split(inner.text), out)
      elseif inner.type == "resource_link" then
        out[#out + 1] = INDENT .. "link " .. one_line(inner.uri or "")
      else
        out[#out + 1] = INDENT .. "(" .. tostring(inner.type) .. " content)"
      end
    end
  end
end

local render = {}

function render.user(b)
  local out = { "## You" }
  vim.list_extend(out, split(b.text))
  out[#out + 1] = ""
  return out, { [1] = "Title" }
end

function render.header()
  return { "## tether" }, { [1] = "Title" }
end

function render.text(b)
  local out = split(b.text)
  out[#out + 1] = ""
  return out, {}
end

function render.thought(b)
  local out, hl = {}, {}
  for _, l in ipairs(split(b.text)) do
    out[#out + 1] = "> " .. l
    hl[#out] = "Comment"
  end
  out[#out + 1] = ""
  return out, hl
end

function render.tool(b)
  local t = b.call
  local out, hl = {}, {}
  local word = TOOL_STATUS[t.status or "pending"] or tostring(t.status)
  out[1] = ("▶ %s  [%s] %s"):format(one_line(t.title or t.toolCallId), t.kind or "other", word)
  hl[1] = (t.status == "failed" and "DiagnosticError")
    or (t.status == "completed" and "DiagnosticOk")
    or "DiagnosticWarn"
  local diffed = {}
  for _, c in ipairs(t.content or {}) do
    if c.type == "diff" then
      diffed[c.path] = true
    end
  end
  for _, loc in ipairs(t.locations or {}) do
    if not diffed[loc.path] then
      local where = vim.fn.fnamemodify(loc.path, ":~:.") .. (loc.line and (":" .. loc.line) or "")
      out[#out + 1] = INDENT .. "at " .. where
      hl[#out] = "Directory"
    end
  end
  content_lines(t.content, out, hl, t.rawOutput)
  out[#out + 1] = ""
  return out, hl
end

function render.plan(b)
  local out, hl = { "Plan:" }, { [1] = "Title" }
  for _, e in ipairs(b.entries) do
    out[#out + 1] = ("  %s %s"):format(PLAN_MARK[e.status] or "[?]", one_line(e.content))
  end
  out[#out + 1] = ""
  return out, hl
end

function render.permission(b)
  local p = b.params
  local card = p.toolCall or {}
  local tool = card.toolCallId and state.tools[card.toolCallId]
  local title = one_line(card.title or (tool and tool.call.title) or card.toolCallId or "a tool call")
  if b.answer then
    -- Answered: the header says how; the tool entries keep the details.
    return { ("▶ %s: %s"):format(b.answer, title), "" }, { [1] = "DiagnosticInfo" }
  end
  local out, hl = { ("▶ Waiting for your approval: %s"):format(title) }, { [1] = "DiagnosticWarn" }
  if tool then
    out[#out + 1] = INDENT .. "(the entry above shows what it covers)"
    hl[#out] = "Comment"
  else
    content_lines(card.content, out, hl)
  end
  local names = {}
  for _, o in ipairs(p.options or {}) do
    names[#names + 1] = o.name
  end
  out[#out + 1] = INDENT .. "options: " .. one_line(table.concat(names, " | "))
  out[#out + 1] = INDENT .. "answer with :Tether approve (or ga in this buffer)"
  hl[#out] = "Comment"
  out[#out + 1] = ""
  return out, hl
end

function render.form(b)
  local p = b.params
  local message = one_line(p.message or "")
  if b.answer then
    return { ("▶ %s: %s"):format(b.answer, message), "" }, { [1] = "DiagnosticInfo" }
  end
  local out, hl = { "▶ Waiting for your answer: " .. message }, { [1] = "DiagnosticWarn" }
  local props = (p.requestedSchema or {}).properties or {}
  local keys = vim.tbl_keys(props)
  table.sort(keys)
  for _, key in ipairs(keys) do
    local prop = props[key]
    local what = (prop.title or key) .. (prop.description and (" (" .. prop.description .. ")") or "")
    out[#out + 1] = INDENT .. "- " .. one_line(what)
  end
  out[#out + 1] = ""
  return out, hl
end

function render.line(b)
  local out, hl = {}, {}
  for _, l in ipairs(split(b.text)) do
    out[#out + 1] = l
    hl[#out] = b.group
  end
  out[#out + 1] = ""
  return out, hl
end

-- The buffer -----------------------------------------------------------------------------------

local function ensure_buf()
  if state.buf and vim.api.nvim_buf_is_valid(state.buf) then
    return state.buf
  end
  local buf = vim.fn.bufnr(NAME)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, NAME)
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].modifiable = false
  state.buf = buf
  state.blocks = {}
  M.attach_keys(buf)
  return buf
end

local function set_lines(buf, first, last, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
end

local function flush()
  state.flush_scheduled = false
  local buf = ensure_buf()
  -- Windows whose cursor sits on the last line follow the output; others stay where they are.
  local follow = {}
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      follow[#follow + 1] = win
    end
  end
  local row = 0
  for _, b in ipairs(state.blocks) do
    if b.dirty then
      b.dirty = false
      local lines, hl = render[b.kind](b)
      vim.api.nvim_buf_clear_namespace(buf, ns, row, row + b.height)
      set_lines(buf, row, row + b.height, lines)
      b.height = #lines
      for i, group in pairs(hl) do
        vim.api.nvim_buf_set_extmark(buf, ns, row + i - 1, 0, { line_hl_group = group })
      end
    end
    row = row + b.height
  end
  if row > 0 and row < vim.api.nvim_buf_line_count(buf) then
    set_lines(buf, row, -1, {}) -- the empty line a new buffer starts with
  end
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
end

local function touch(b)
  b.dirty = true
  if not state.flush_scheduled then
    state.flush_scheduled = true
    vim.schedule(flush)
  end
  return b
end

local function add(kind, fields)
  ensure_buf()
  local b = fields or {}
  b.kind = kind
  b.height = 0
  state.blocks[#state.blocks + 1] = b
  return touch(b)
end

local function last()
  return state.blocks[#state.blocks]
end

-- What the session module calls ----------------------------------------------------------------

function M.reset()
  local buf = ensure_buf()
  state.blocks, state.tools, state.plan, state.need_header = {}, {}, nil, false
  state.title, state.usage = nil, nil
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  set_lines(buf, 0, -1, {})
end

--- Your message; agent output after it gets a "## tether" header first.
function M.user(text)
  state.plan = nil
  state.need_header = true
  add("user", { text = text })
end

--- A replayed user message arrives in chunks, like agent text.
function M.user_chunk(text)
  local b = last()
  if b and b.kind == "user" then
    b.text = b.text .. text
    touch(b)
  else
    M.user(text)
  end
end

local function agent_block()
  if state.need_header then
    state.need_header = false
    add("header")
  end
end

function M.agent_text(text)
  agent_block()
  local b = last()
  if b and b.kind == "text" then
    b.text = b.text .. text
    touch(b)
  else
    add("text", { text = text })
  end
end

function M.thought(text)
  agent_block()
  local b = last()
  if b and b.kind == "thought" then
    b.text = b.text .. text
    touch(b)
  else
    add("thought", { text = text })
  end
end

--- A `tool_call` or `tool_call_update`: fields present replace the stored ones.
function M.tool(update)
  local b = state.tools[update.toolCallId]
  if not b then
    agent_block()
    b = add("tool", { call = { toolCallId = update.toolCallId } })
    state.tools[update.toolCallId] = b
  end
  for k, v in pairs(update) do
    if k ~= "sessionUpdate" then
      b.call[k] = v
    end
  end
  touch(b)
  return b.call
end

--- A tool call of this turn still running (or about to), if any: its title.
function M.active_tool()
  for i = #state.blocks, 1, -1 do
    local b = state.blocks[i]
    if b.kind == "user" then
      return nil
    end
    if b.kind == "tool" and (b.call.status == "in_progress" or b.call.status == "pending") then
      return b.call.title or b.call.toolCallId
    end
  end
end

--- The title of a tool call the chat has seen, if any.
function M.tool_title(id)
  local b = id and state.tools[id]
  return b and b.call.title
end

function M.plan(entries)
  if state.plan then
    state.plan.entries = entries
    touch(state.plan)
  else
    agent_block()
    state.plan = add("plan", { entries = entries })
  end
end

--- A permission card; returns a handle for answered().
function M.permission(params)
  return add("permission", { params = params })
end

--- A form (elicitation) card; returns a handle for answered().
function M.form(params)
  return add("form", { params = params })
end

-- The lines (first, last; 1-based) of a card and of the pending tool entries right above it:
-- what it asks about, with their diffs.
local function asking_lines(handle)
  local row, start = 0, nil
  for _, b in ipairs(state.blocks) do
    if b == handle then
      return (start or row) + 1, row + b.height
    end
    if b.kind == "tool" and (b.call.status or "pending") == "pending" then
      start = start or row
    else
      start = nil
    end
    row = row + b.height
  end
end

--- Put a permission or form card on the screen before its question is asked: the chat is
--- flushed, every window showing it scrolls the card's pending tool entries to the top (the
--- card's last line stays in view when they do not all fit), and Neovim redraws. Without this
--- the builtin vim.ui.select, which blocks in inputlist, asks over a screen drawn before the
--- request came.
function M.reveal(handle)
  flush()
  local first, last = asking_lines(handle)
  if first then
    for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
      vim.api.nvim_win_call(win, function()
        vim.api.nvim_win_set_cursor(win, { first, 0 })
        vim.cmd("normal! zt")
        -- The cursor ends on the card's last line: in view, and at the chat's end when the
        -- card is the newest block, so the window keeps following the output (see flush).
        vim.api.nvim_win_set_cursor(win, { last, 0 })
      end)
    end
  end
  vim.cmd.redraw()
end

function M.answered(handle, answer)
  handle.answer = answer
  touch(handle)
end

function M.notice(severity, title, description)
  local text = "! " .. title .. (description and description ~= "" and (": " .. description) or "")
  local group = severity == "error" and "DiagnosticError"
    or severity == "warning" and "DiagnosticWarn"
    or "DiagnosticInfo"
  add("line", { text = text, group = group })
end

function M.error(text)
  add("line", { text = "✗ " .. text, group = "DiagnosticError" })
end

function M.info(text)
  add("line", { text = text, group = "Comment" })
end

--- A terminal's output changed: redraw the tool entries that embed it.
function M.terminal_changed(terminal_id)
  for _, b in pairs(state.tools) do
    for _, c in ipairs(b.call.content or {}) do
      if c.type == "terminal" and c.terminalId == terminal_id then
        touch(b)
      end
    end
  end
end

function M.set_title(title)
  state.title = title
  status.set(status.text, status.kind) -- redraw the winbar
end

function M.set_usage(usage)
  state.usage = usage
end

function M.set_model(name)
  state.model = name
end

-- Keys in the chat buffer: the session module is required lazily (it requires this one).
function M.attach_keys(buf)
  local function map(lhs, desc, fn)
    vim.keymap.set("n", lhs, fn, { buffer = buf, desc = desc, nowait = true })
  end
  local function session()
    return require("tether.session")
  end
  map("i", "tether: send a prompt", function()
    session().ask_prompt()
  end)
  map("<CR>", "tether: send a prompt", function()
    session().ask_prompt()
  end)
  map("<C-c>", "tether: cancel the turn", function()
    session().cancel()
  end)
  map("ga", "tether: answer the pending approval", function()
    require("tether.permissions").reopen()
  end)
  map("q", "tether: close the chat window", M.close)
end

-- The window -----------------------------------------------------------------------------------

function M.winbar()
  local parts = { "tether" }
  if state.title then
    parts[#parts + 1] = state.title
  end
  if state.model then
    parts[#parts + 1] = state.model
  end
  parts[#parts + 1] = status.line()
  if state.usage and state.usage.size then
    parts[#parts + 1] = ("context %d/%d"):format(state.usage.used or 0, state.usage.size)
  end
  return (table.concat(parts, " · "):gsub("%%", "%%%%"))
end

function M.foldexpr()
  local line = vim.fn.getline(vim.v.lnum)
  if line:sub(1, #"▶ ") == "▶ " then
    return ">1"
  end
  if line:sub(1, #INDENT) == INDENT then
    return "="
  end
  return "0"
end

function M.open()
  local buf = ensure_buf()
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd(("botright vertical %dsplit"):format(config.options.chat.width))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'tether.ui.chat'.foldexpr()"
  wo.foldlevel = 99
  wo.winbar = "%{%v:lua.require'tether.ui.chat'.winbar()%}"
  return win
end

function M.close()
  if state.buf then
    for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
end

function M.buf()
  return ensure_buf()
end

--- The chat as lines (pending changes flushed first).
function M.lines()
  if state.flush_scheduled then
    flush()
  end
  return vim.api.nvim_buf_get_lines(ensure_buf(), 0, -1, false)
end

status.on_change(function()
  if state.buf and vim.fn.bufwinid(state.buf) ~= -1 then
    pcall(vim.cmd.redrawstatus, { bang = true })
  end
end)

return M
