-- The agent's slash commands (available_commands_update) offered where a prompt is typed:
-- `:Tether prompt /sta<Tab>` on the command line, and <Tab> in the `tether> ` prompt, against
-- the real `tether acp`.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local builtin_input = vim.ui.input -- H.setup replaces it; the prompt case needs Neovim's own
H.setup({ cmd = H.tether("session.json") })

local session = require("tether.session")

local function complete(line)
  return vim.fn.getcompletion(line, "cmdline")
end

local function names()
  local out = {}
  for _, c in ipairs(session.state.commands) do
    out[#out + 1] = "/" .. c.name
  end
  table.sort(out)
  return out
end

H.run({
  {
    "the command line completes the slash commands the agent announced",
    function()
      H.eq({}, complete("Tether prompt /sta"), "nothing before the agent announced any")
      session.ensure()
      H.wait(function()
        return #session.state.commands > 0
      end, "the agent's available_commands_update")
      H.eq({ "/status" }, complete("Tether prompt /sta"), ":Tether prompt /sta<Tab>")
      H.eq({ "/skills" }, complete("Tether prompt /sk"), ":Tether prompt /sk<Tab>")
      local all = complete("Tether prompt /")
      H.eq(names(), all, "every announced command, once each")
      for _, want in ipairs({ "/help", "/compact", "/grants", "/mode", "/undo" }) do
        H.truthy(vim.tbl_contains(all, want), "offers " .. want)
      end
      -- A slash command is only a prompt's first word; subcommands still complete.
      H.eq({}, complete("Tether prompt fix /sta"), "not after the first word")
      H.eq({}, complete("Tether cancel /sta"), "only for prompt")
      H.eq({ "prompt" }, complete("Tether pro"), "subcommands")
    end,
  },
  {
    "<Tab> in the tether> prompt completes a slash command, and the prompt sends it",
    function()
      vim.ui.input = builtin_input
      local sent = {}
      session.prompt = function(text)
        sent[#sent + 1] = text
      end
      vim.api.nvim_feedkeys("/sta\t\r", "t", false)
      session.ask_prompt()
      H.wait(function()
        return #sent == 1
      end, "the prompt to be sent")
      H.eq({ "/status" }, sent, "what the prompt sent")
    end,
  },
})
