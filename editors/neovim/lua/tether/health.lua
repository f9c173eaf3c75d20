-- :checkhealth tether: Neovim's version, the agent command, a real initialize handshake with it,
-- and which provider variables the agent will see (names only, never values).
local config = require("tether.config")

local M = {}

local PROVIDER_VARS = { "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY" }
local OTHER_VARS = { "TETHER_MODEL", "TETHER_CONFIG", "TETHER_HOME" }

local function check_neovim()
  vim.health.start("Neovim")
  local v = vim.version()
  local text = ("Neovim %d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 and vim.system then
    vim.health.ok(text)
  else
    vim.health.error(text .. ": tether needs Neovim 0.10 or newer (vim.system)")
  end
end

local function handshake(cmd)
  local request = vim.json.encode({
    jsonrpc = "2.0",
    id = 0,
    method = "initialize",
    params = {
      protocolVersion = 1,
      clientCapabilities = require("tether.session").CLIENT_CAPABILITIES,
      clientInfo = { name = "tether.nvim-health", version = "0.1.0" },
    },
  }) .. "\n"
  local env = next(config.options.env or {}) and config.options.env or nil
  local ok, res = pcall(function()
    -- stdin is closed after the request: the agent answers, sees EOF and exits.
    return vim.system(cmd, { stdin = request, env = env, text = true, timeout = 15000 }):wait()
  end)
  if not ok then
    return nil, tostring(res)
  end
  local first = (res.stdout or ""):match("[^\n]+")
  local decoded, msg = pcall(vim.json.decode, first or "", { luanil = { object = true, array = true } })
  if not decoded or type(msg) ~= "table" or not msg.result then
    local why = (res.stderr or ""):gsub("%s+$", "")
    if res.code == 124 then
      why = "no answer within 15 s. " .. why
    end
    return nil, ("exit code %s; %s"):format(tostring(res.code), why ~= "" and why or "no output")
  end
  return msg.result
end

local function describe(result)
  local info = result.agentInfo or {}
  local caps = result.agentCapabilities or {}
  local scaps = caps.sessionCapabilities or {}
  local offers = {}
  if scaps.list then
    offers[#offers + 1] = "session list"
  end
  if caps.loadSession then
    offers[#offers + 1] = "session load"
  end
  if scaps.resume then
    offers[#offers + 1] = "session resume"
  end
  return ("answered initialize: %s %s, protocol %s%s"):format(
    info.name or "agent",
    info.version or "",
    tostring(result.protocolVersion),
    #offers > 0 and ("; offers " .. table.concat(offers, ", ")) or ""
  )
end

local function check_agent()
  vim.health.start("Agent")
  local cmd = config.options.cmd
  local exe = vim.fn.exepath(cmd[1])
  if exe == "" then
    vim.health.error(
      ("`%s` is not on Neovim's PATH"):format(cmd[1]),
      { "set cmd = { '/absolute/path/to/tether', 'acp' } in require('tether').setup()" }
    )
    return
  end
  vim.health.ok(("`%s` is %s"):format(cmd[1], exe))
  local result, why = handshake(cmd)
  if result then
    vim.health.ok(("`%s` %s"):format(table.concat(cmd, " "), describe(result)))
  else
    vim.health.error(("`%s` did not answer initialize: %s"):format(table.concat(cmd, " "), why))
  end
end

local function where(name)
  if config.options.env and config.options.env[name] then
    return "set in setup({ env })"
  end
  if vim.env[name] and vim.env[name] ~= "" then
    return "set in Neovim's environment"
  end
end

local function check_env()
  vim.health.start("What the agent sees")
  local keys = 0
  for _, name in ipairs(PROVIDER_VARS) do
    local w = where(name)
    if w then
      keys = keys + 1
      vim.health.ok(name .. " " .. w)
    end
  end
  if keys == 0 then
    vim.health.warn("no provider API key is visible to the agent", {
      "without one tether uses its config file's providers, or its offline demo model",
      "a Neovim started from a desktop launcher may not have your shell's variables: pass them in setup({ env = { ... } })",
    })
  end
  for _, name in ipairs(OTHER_VARS) do
    local w = where(name)
    if w then
      vim.health.info(name .. " " .. w)
    end
  end
  local log = config.options.log_file
  if log then
    local dir = vim.fs.dirname(log)
    if vim.fn.isdirectory(dir) == 1 and vim.fn.filewritable(dir) == 2 then
      vim.health.ok("protocol log: " .. log)
    else
      vim.health.error("protocol log directory is not writable: " .. dir)
    end
  end
end

function M.check()
  check_neovim()
  check_agent()
  check_env()
end

return M
