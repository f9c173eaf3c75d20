-- A small runner for the specs: `nvim --headless -u NONE -l tests/<name>_spec.lua`.
--
-- The Python tests (tests/editors/test_editor_neovim.py) set the environment:
--   TETHER_TEST_CMD      `tether acp` as a JSON list (H.tether(script) adds --script)
--   TETHER_TEST_DOUBLE   the ACP agent test double (tests/support/acp_agent_double.py), a JSON list
--   TETHER_TEST_PROJECT  a fresh copy of editors/fixtures/project
--   TETHER_TEST_LOG      the protocol log; the Python side schema-checks every frame in it
--   TETHER_TEST_DATA     a directory of scripted-model files
-- A spec calls H.run({ {name, fn}, ... }); it prints one line per case and the closing
-- "N passed, N failed" line, and exits non-zero when a case failed.
local H = {}

local here = debug.getinfo(1, "S").source:sub(2)
H.plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(here, ":p"))))
vim.opt.runtimepath:prepend(H.plugin_dir)
vim.opt.swapfile = false
vim.opt.shortmess:append("F")

local function json_env(name)
  local value = os.getenv(name)
  return value and vim.json.decode(value)
end

H.env = {
  cmd = json_env("TETHER_TEST_CMD"),
  double = json_env("TETHER_TEST_DOUBLE"),
  project = os.getenv("TETHER_TEST_PROJECT"),
  log = os.getenv("TETHER_TEST_LOG"),
  data = os.getenv("TETHER_TEST_DATA"),
}

--- `tether acp --script DATA/<script>`.
function H.tether(script)
  local cmd = vim.deepcopy(H.env.cmd)
  vim.list_extend(cmd, { "--script", vim.fs.joinpath(H.env.data, script) })
  return cmd
end

--- setup() the plugin with the test's log and project; `extra.cmd` is the agent command.
function H.setup(extra)
  local opts = vim.tbl_extend("force", {
    cwd = H.env.project,
    log_file = H.env.log,
  }, extra or {})
  require("tether").setup(opts)
  vim.cmd.runtime("plugin/tether.lua")
  -- A text question (the optional note after a rejection) is dismissed unless a spec answers.
  vim.ui.input = function(_, on_confirm)
    vim.schedule(function()
      on_confirm(nil)
    end)
  end
  if H.env.project then
    vim.cmd.cd(H.env.project)
  end
end

--- Stop the running agent (if any) and use `cmd` from now on.
function H.restart(cmd)
  local session = require("tether.session")
  if session.is_running() then
    session.stop()
    H.wait(function()
      return not session.is_running()
    end, "the agent to stop")
  end
  H.setup({ cmd = cmd })
end

function H.wait(cond, what, timeout_ms)
  local ok = vim.wait(timeout_ms or 15000, cond, 5)
  if not ok then
    error("timed out waiting for " .. what .. "\nstatus: " .. require("tether.status").text .. "\nchat:\n" .. table.concat(H.chat(), "\n"), 2)
  end
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(("%s: expected %s, got %s"):format(what or "value", vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.truthy(value, what)
  if not value then
    error((what or "condition") .. " is false", 2)
  end
end

function H.chat()
  return require("tether.ui.chat").lines()
end

function H.chat_text()
  return table.concat(H.chat(), "\n")
end

--- Assert the chat shows `needle` (plain text).
function H.shows(needle)
  local text = H.chat_text()
  if not text:find(needle, 1, true) then
    error(("the chat does not show %q; it shows:\n%s"):format(needle, text), 2)
  end
end

--- Replace vim.ui.select; `choose(items, opts)` returns the item to pick, or nil to dismiss, or
--- false to leave the picker open (never call back). Every call is recorded.
function H.stub_select(choose)
  local calls = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for i, item in ipairs(items) do
      labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
    end
    calls[#calls + 1] = { items = items, labels = labels, prompt = opts.prompt, kind = opts.kind }
    local pick = choose(items, opts)
    if pick ~= false then
      vim.schedule(function()
        on_choice(pick)
      end)
    end
  end
  return calls
end

--- Record the params of every permission request the agent sends (the plugin still answers).
function H.spy_permissions()
  local permissions = require("tether.permissions")
  local asked = {}
  local ask = permissions.ask
  permissions.ask = function(params, ...)
    asked[#asked + 1] = params
    return ask(params, ...)
  end
  return asked
end

function H.option_of_kind(kind)
  return function(items)
    for _, o in ipairs(items) do
      if o.kind == kind then
        return o
      end
    end
  end
end

function H.read(path)
  local fh = assert(io.open(path, "rb"))
  local text = fh:read("*a")
  fh:close()
  return text
end

function H.write(path, text)
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
end

function H.run(cases)
  local passed, failed = 0, 0
  for _, case in ipairs(cases) do
    local ok, err = xpcall(case[2], debug.traceback)
    if ok then
      passed = passed + 1
      io.write("ok - ", case[1], "\n")
    else
      failed = failed + 1
      io.write("FAIL - ", case[1], "\n", tostring(err), "\n")
    end
  end
  local session = package.loaded["tether.session"]
  if session and session.is_running() then
    session.stop()
    vim.wait(3000, function()
      return not session.is_running()
    end, 10)
  end
  io.write(("%d passed, %d failed\n"):format(passed, failed))
  io.stdout:flush()
  os.exit(failed > 0 and 1 or 0)
end

return H
