-- Options of the plugin: defaults, merged with what setup() is given.
local M = {}

M.defaults = {
  -- The agent command. Any ACP agent works; tether is the one this plugin is tested with.
  cmd = { "tether", "acp" },
  -- Extra environment for the agent (API keys, TETHER_MODEL): merged over Neovim's own.
  env = {},
  -- The session's working directory (default: Neovim's current directory at first use).
  cwd = nil,
  -- Every JSON-RPC frame, both ways, appended to this file ("-> " sent, "<- " received).
  log_file = nil,
  -- Save a buffer after the agent wrote to it (the agent's next command then sees the file).
  save_on_write = true,
  chat = {
    width = 80, -- columns of the chat split (a vertical split on the right)
    terminal_lines = 8, -- last lines of a terminal shown inside its tool entry
  },
}

M.options = vim.deepcopy(M.defaults)

function M.setup(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if opts and opts.cmd then
    M.options.cmd = opts.cmd -- a list: replace it whole, never merge index by index
  end
  return M.options
end

return M
