-- tether for Neovim: a chat with an ACP agent (tether acp by default).
--
--   require("tether").setup({ cmd = { "tether", "acp" }, env = { TETHER_MODEL = "..." } })
--   :Tether              open the chat and ask for a prompt
--   :Tether {subcommand} see M.subcommands below and :help tether
local config = require("tether.config")

local M = {}

function M.setup(opts)
  config.setup(opts)
  return M
end

--- The agent's state in words, for a statusline.
function M.status()
  return require("tether.status").line()
end

local function session()
  return require("tether.session")
end

M.subcommands = {
  open = function()
    require("tether.ui.chat").open()
    session().ensure()
  end,
  prompt = function(args)
    require("tether.ui.chat").open()
    if #args == 0 then
      return session().ask_prompt()
    end
    session().prompt(table.concat(args, " "))
  end,
  cancel = function()
    session().cancel()
  end,
  approve = function()
    require("tether.permissions").reopen()
  end,
  new = function()
    session().new()
  end,
  sessions = function()
    require("tether.ui.chat").open()
    require("tether.pickers").session()
  end,
  model = function()
    require("tether.pickers").option("model")
  end,
  mode = function()
    require("tether.pickers").option("mode")
  end,
  option = function()
    require("tether.pickers").option(nil)
  end,
  terminal = function(args)
    require("tether.terminal").show(args[1])
  end,
  log = function()
    local file = config.options.log_file
    if not file then
      return vim.notify("tether: set log_file in setup() to record the protocol", vim.log.levels.INFO)
    end
    vim.cmd("botright split " .. vim.fn.fnameescape(file))
  end,
  stop = function()
    session().stop()
  end,
}

function M.command(args)
  local name = table.remove(args, 1)
  if not name then
    M.subcommands.open()
    return session().ask_prompt()
  end
  local fn = M.subcommands[name]
  if not fn then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return vim.notify(
      ("tether: unknown subcommand %q (one of: %s)"):format(name, table.concat(names, ", ")),
      vim.log.levels.ERROR
    )
  end
  fn(args)
end

--- The slash commands the agent announced (available_commands_update) that start with `lead`,
--- as `/name`: a prompt's first word. Nothing before the agent has announced any (completing
--- never starts it).
function M.complete_prompt(lead)
  local session = package.loaded["tether.session"]
  if not (session and lead:match("^/%S*$")) then
    return {}
  end
  local out = {}
  for _, c in ipairs(session.state.commands or {}) do
    local name = "/" .. c.name
    if vim.startswith(name, lead) and not vim.tbl_contains(out, name) then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

function M.complete(arg_lead, cmdline)
  local sub, rest = cmdline:match("^%s*%S+%s+(%S+)%s+(.*)$")
  if sub then
    -- past the subcommand: only a prompt's first word completes (a slash command)
    return (sub == "prompt" and rest == arg_lead) and M.complete_prompt(arg_lead) or {}
  end
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return vim.tbl_filter(function(n)
    return vim.startswith(n, arg_lead)
  end, names)
end

return M
