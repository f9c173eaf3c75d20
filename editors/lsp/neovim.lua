-- tether inside Neovim's built-in LSP client (0.11+), no plugin: source this file from your
-- config (or copy it). It starts `tether lsp` for every file buffer, one server per project,
-- and adds:
--   :Tether PROMPT          ask about the project; with a range (:'<,'>Tether PROMPT), about
--                           the selected lines. The answer is echoed; the whole session opens
--                           in a transcript window.
--   :TetherCancel           stop the running turn.
-- Approvals come through vim.ui.select (one question per round), its prompt holding each
-- call's diff (a command: its line and where it runs); the round's whole diff opens first in a
-- window without the focus (one window for these, each question's replacing the last). The
-- turn's progress is in vim.g.tether_status ("tether: Running: Edit app.py"), and the statusline
-- is redrawn as it changes: an unset 'statusline' gets Neovim's usual one with it on the right;
-- your own can show it with %{get(g:,'tether_status','')}. Edits land in your buffers, unsaved,
-- with undo. Code actions (vim.lsp.buf.code_action) offer "Ask tether", "Explain" and "Fix" on a
-- selection.
--
-- vim.g.tether_lsp_cmd overrides the command, e.g. { "/path/to/.venv/bin/tether", "lsp" }.

local group = vim.api.nvim_create_augroup("tether-lsp", {})
local REVIEW = "/review%-%d+%.diff$" -- tether's review documents (one per approval question)

-- The statusline shows vim.g.tether_status; Neovim redraws it on its own only when something
-- else changes, so every progress event redraws it (vim.lsp.status() alone never shows).
if vim.o.statusline == "" then
  vim.o.statusline = "%<%f %h%w%m%r%=%{get(g:,'tether_status','')}  %-14.(%l,%c%V%) %P"
end

local function redraw()
  vim.cmd.redrawstatus({ bang = true })
end

vim.api.nvim_create_autocmd("LspProgress", {
  group = group,
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    local value = ev.data.params.value
    if not client or client.name ~= "tether" or type(value) ~= "table" then
      return
    end
    local status = "tether: " .. (value.message or value.title or "")
    vim.g.tether_status = status
    if value.kind == "end" then -- the ending shows a while, then goes
      vim.defer_fn(function()
        if vim.g.tether_status == status then
          vim.g.tether_status = ""
          redraw()
        end
      end, 5000)
    end
    redraw()
  end,
})

-- One window shows the review documents: a question's replaces the last one's there.
local function show_document(err, params, ctx, config)
  local default = vim.lsp.handlers["window/showDocument"]
  if not params.uri:match(REVIEW) then
    return default(err, params, ctx, config)
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local old = vim.api.nvim_win_get_buf(win)
    if vim.api.nvim_buf_get_name(old):match(REVIEW) then
      local buf = vim.uri_to_bufnr(params.uri)
      vim.fn.bufload(buf)
      vim.api.nvim_win_set_buf(win, buf)
      if old ~= buf then
        pcall(vim.api.nvim_buf_delete, old, {})
      end
      return { success = true }
    end
  end
  return default(err, params, ctx, config)
end

local function start(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if vim.bo[buf].buftype ~= "" or name == "" or name:match(REVIEW) then
    return
  end
  local root = vim.fs.root(buf, { ".git" })
  local running = vim.tbl_filter(function(c)
    return not c:is_stopped()
  end, vim.lsp.get_clients({ name = "tether" }))[1]
  if root == nil and running then -- a file outside any project (the transcript): join
    vim.lsp.buf_attach_client(buf, running.id)
    return
  end
  vim.lsp.start({
    name = "tether",
    cmd = vim.g.tether_lsp_cmd or { "tether", "lsp" },
    root_dir = root or vim.fn.getcwd(),
    handlers = { ["window/showDocument"] = show_document },
  }, { bufnr = buf })
end

vim.api.nvim_create_autocmd("FileType", {
  group = group,
  callback = function(ev)
    start(ev.buf)
  end,
})

local function client()
  local found = vim.lsp.get_clients({ bufnr = 0, name = "tether" })[1]
  if not found then
    vim.notify("tether is not running for this buffer", vim.log.levels.WARN)
  end
  return found
end

vim.api.nvim_create_user_command("Tether", function(opts)
  local tether = client()
  if not tether then
    return
  end
  local argument = { prompt = opts.args }
  if opts.range > 0 then
    argument.textDocument = { uri = vim.uri_from_bufnr(0) }
    argument.range = {
      start = { line = opts.line1 - 1, character = 0 },
      ["end"] = { line = opts.line2, character = 0 },
    }
  end
  local command = { title = "tether", command = "tether.prompt", arguments = { argument } }
  tether:exec_cmd(command, { bufnr = 0 }, function(err, result)
    if err then
      vim.notify("tether: " .. err.message, vim.log.levels.ERROR)
    elseif result.stopReason ~= "end_turn" then
      vim.notify("tether: " .. result.stopReason, vim.log.levels.WARN)
    else
      vim.notify(result.text)
    end
  end)
end, { nargs = "+", range = true, desc = "Ask tether" })

vim.api.nvim_create_user_command("TetherCancel", function()
  local tether = client()
  if tether then
    tether:exec_cmd({ title = "tether", command = "tether.cancel" }, { bufnr = 0 })
  end
end, { desc = "Stop tether's running turn" })
