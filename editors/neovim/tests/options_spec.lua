-- Session history, the model and mode pickers, against the real `tether acp`.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
H.setup({ cmd = H.tether("session.json") })

local session = require("tether.session")
local status = require("tether.status")

local function option(id)
  for _, o in ipairs(session.state.config_options or {}) do
    if o.id == id then
      return o
    end
  end
end

local function idle()
  return session.state.turn == nil and status.kind == "idle"
end

local first_session

H.run({
  {
    "a new session starts an empty chat; the first one is in the session list",
    function()
      H.stub_select(H.option_of_kind("allow_once"))
      vim.cmd("Tether prompt fix greet")
      H.wait(function()
        return idle() and H.chat_text():find("Done:", 1, true) ~= nil
      end, "the first turn")
      first_session = session.state.id
      vim.cmd("Tether new")
      H.wait(function()
        return session.state.id ~= first_session and idle()
      end, "the new session")
      H.eq({ "" }, H.chat(), "the chat is empty")

      local picks = H.stub_select(function(items)
        for _, s in ipairs(items) do
          if s.sessionId == first_session then
            return s
          end
        end
      end)
      vim.cmd("Tether sessions")
      H.wait(function()
        return #picks == 1 and (status.kind == "error" or (idle() and session.state.id == first_session))
      end, "the stored session to open (or a refusal)")
      local label
      for i, s in ipairs(picks[1].items) do
        if s.sessionId == first_session then
          label = picks[1].labels[i]
        end
      end
      H.truthy(label and vim.startswith(label, "fix greet  "), "the list shows it by title: " .. tostring(label))
      local caps = session.state.agent.agentCapabilities
      if caps.loadSession then
        H.shows("## You\nfix greet")
        H.shows("Done: `greet()` now returns")
      else
        -- Today's tether lists sessions but cannot load them: the chat says so in words.
        H.shows("✗ cannot open a stored session: the agent offers neither session/load nor session/resume")
      end
    end,
  },
  {
    "the model picker lists the models by name and switches with session/set_config_option",
    function()
      session.stop()
      H.wait(function()
        return not session.is_running()
      end, "stop")
      local picks = H.stub_select(function(items)
        for _, o in ipairs(items) do
          if o.value == "demo" then
            return o
          end
        end
      end)
      vim.cmd("Tether model")
      H.wait(function()
        return option("model") and option("model").currentValue == "demo" and idle()
      end, "the model switch")
      H.eq("Model (now scripted)", picks[1].prompt, "prompt")
      H.truthy(vim.tbl_contains(picks[1].labels, "tether demo (scripted, offline)"), "demo listed")
      H.truthy(require("tether.ui.chat").winbar():find("tether demo (scripted, offline)", 1, true), "winbar model")
    end,
  },
  {
    "the mode picker switches the mode",
    function()
      local picks = H.stub_select(function(items)
        for _, o in ipairs(items) do
          if o.value == "code" then
            return o
          end
        end
      end)
      vim.cmd("Tether mode")
      H.wait(function()
        return option("mode").currentValue == "code" and idle()
      end, "the mode switch")
      H.truthy(picks[1].labels[2]:find("^Code  — "), "modes with descriptions: " .. picks[1].labels[2])
      H.eq("mode: code", status.text, "status")
    end,
  },
})
