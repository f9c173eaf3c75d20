-- The CodeCompanion.nvim entry (examples/codecompanion.lua), without CodeCompanion itself (it is
-- not published on any package registry this project can use): setup() and
-- adapters.extend() are recorders, extend() merges the way CodeCompanion's does
-- (vim.tbl_deep_extend over the base adapter). The base is the shape CodeCompanion documents for
-- its built-in `goose` adapter: command `goose acp`, no env, no auth method, fs capabilities.
-- Then the merged command is started as CodeCompanion starts it and answers its handshake.
-- tests/editors/test_editor_codecompanion.py replays CodeCompanion's whole frame sequence.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local GOOSE = {
  name = "goose",
  type = "acp",
  commands = { default = { "goose", "acp" } },
  defaults = { mcpServers = {}, timeout = 20000 },
  env = {},
  parameters = {
    protocolVersion = 1,
    clientCapabilities = { fs = { readTextFile = true, writeTextFile = true } },
    clientInfo = { name = "CodeCompanion.nvim", version = "1.0.0" },
  },
}

local seen = {}
package.preload["codecompanion"] = function()
  return {
    setup = function(cfg)
      seen.config = cfg
    end,
  }
end
package.preload["codecompanion.adapters"] = function()
  return {
    extend = function(base, opts)
      seen.base = base
      return vim.tbl_deep_extend("force", {}, vim.deepcopy(GOOSE), opts)
    end,
  }
end

local adapter

H.run({
  {
    "the entry extends a two-word built-in adapter with tether's command",
    function()
      dofile(vim.fs.joinpath(H.plugin_dir, "examples", "codecompanion.lua"))
      H.eq("tether", seen.config.interactions.chat.adapter, "the chat adapter")
      adapter = seen.config.adapters.acp.tether()
      H.eq("goose", seen.base, "the base adapter")
      H.eq({ "tether", "acp" }, adapter.commands.default, "the merged command")
      H.eq("tether", adapter.name, "name")
      H.eq("acp", adapter.type, "type")
      for name, value in pairs(adapter.env) do
        H.truthy(type(value) == "string", "env " .. name .. " is a string")
      end
    end,
  },
  {
    "its command starts tether, which needs no authenticate and opens a session",
    function()
      local exe = vim.fn.exepath(adapter.commands.default[1])
      H.truthy(exe ~= "", "`tether` is on PATH (the test puts the virtualenv's bin first)")
      local results = {}
      local conn = assert(require("tether.rpc").start({
        cmd = adapter.commands.default,
        cwd = H.env.project,
        log_file = H.env.log,
        on_request = function(_, _, reply)
          reply.error(-32601, "not in this test")
        end,
      }))
      conn:request("initialize", adapter.parameters, function(err, result)
        results.init = err or result
        conn:request("session/new", { cwd = H.env.project, mcpServers = adapter.defaults.mcpServers }, function(e, r)
          results.new = e or r
        end)
      end)
      H.wait(function()
        return results.new ~= nil
      end, "initialize and session/new")
      H.eq({}, results.init.authMethods, "authMethods (empty: CodeCompanion skips authenticate)")
      H.eq(1, results.init.protocolVersion, "protocol version")
      H.truthy(type(results.new.sessionId) == "string", "a session id")
      conn:stop()
      H.wait(function()
        return not conn:is_running()
      end, "tether to exit on EOF")
    end,
  },
})
