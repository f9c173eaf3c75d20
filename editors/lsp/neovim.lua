-- tether inside Neovim's built-in LSP client (0.11+), no plugin: source this file from your
-- config (or copy it). It starts `tether lsp` for every file buffer, one server per project,
-- and adds:
--   :Tether PROMPT          ask about the project; with a range (:'<,'>Tether PROMPT), about
--                           the selected lines. The answer is echoed; the whole session opens
--                           in a transcript window.
--   :TetherCancel           stop the running turn.
-- Approvals come through vim.ui.select (one question per round); progress through the
-- LspProgress event (put vim.lsp.status() in your statusline to see it); edits land in your
-- buffers, unsaved, with undo. Code actions (vim.lsp.buf.code_action) offer "Ask tether",
-- "Explain" and "Fix" on a selection.
--
-- vim.g.tether_lsp_cmd overrides the command, e.g. { "/path/to/.venv/bin/tether", "lsp" }.

local group = vim.api.nvim_create_augroup("tether-lsp", {})

local function start(buf)
  if vim.bo[buf].buftype ~= "" or vim.api.nvim_buf_get_name(buf) == "" then
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
