-- :checkhealth tether with a working agent, a failing one and a missing one.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local function health(opts)
  H.setup(opts)
  vim.cmd("silent checkhealth tether")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

local function has(text, needle)
  if not text:find(needle, 1, true) then
    error(("the report lacks %q:\n%s"):format(needle, text), 2)
  end
end

H.run({
  {
    "a working agent answers initialize; keys are named, never shown",
    function()
      local cmd = table.concat(H.env.cmd, " ")
      local text = health({ cmd = H.env.cmd, env = { ANTHROPIC_API_KEY = "sk-do-not-print", TETHER_MODEL = "anthropic:claude-sonnet-5-5" } })
      has(text, ("OK Neovim %d.%d.%d"):format(vim.version().major, vim.version().minor, vim.version().patch))
      has(text, ("OK `%s` answered initialize: tether "):format(cmd))
      has(text, ", protocol 1; offers session list")
      has(text, "OK ANTHROPIC_API_KEY set in setup({ env })")
      has(text, "TETHER_MODEL set in setup({ env })")
      H.truthy(not text:find("sk-do-not-print", 1, true), "the key's value is not in the report")
      H.truthy(not text:find("ERROR", 1, true), "no error")
    end,
  },
  {
    "no key: a warning says what tether will do and why a GUI Neovim may lack it",
    function()
      local text = health({ cmd = H.env.cmd, env = {} })
      has(text, "WARNING no provider API key is visible to the agent")
      has(text, "offline demo model")
    end,
  },
  {
    "an agent that fails: its exit code and stderr in the report",
    function()
      local cmd = { H.env.cmd[1], "-c", "import sys; sys.stderr.write('unknown model foo'); sys.exit(2)" }
      local text = health({ cmd = cmd })
      has(text, "did not answer initialize: exit code 2; unknown model foo")
    end,
  },
  {
    "a command not on PATH: the fix is named",
    function()
      local text = health({ cmd = { "no-such-tether-binary", "acp" } })
      has(text, "ERROR `no-such-tether-binary` is not on Neovim's PATH")
      has(text, "set cmd = { '/absolute/path/to/tether', 'acp' }")
    end,
  },
})
