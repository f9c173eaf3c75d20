-- vim.ui.select pickers for the session's choices: model, mode, any config option, and stored
-- sessions. The protocol calls they end in live in session.lua.
local session = require("tether.session")
local status = require("tether.status")

local M = {}

local function described(item)
  local name = item.group and (item.group .. " / " .. item.name) or item.name
  return name .. (item.description and ("  — " .. item.description) or "")
end

local function choose_value(opt)
  if opt.type == "boolean" then
    return session.set_option(opt.id, not opt.currentValue, true)
  end
  vim.ui.select(session.values(opt), {
    prompt = opt.name .. " (now " .. tostring(opt.currentValue) .. ")",
    format_item = described,
    kind = "tether.config_option",
  }, function(choice)
    if choice then
      session.set_option(opt.id, choice.value)
    end
  end)
end

local function pick_mode()
  local modes = session.state.modes
  vim.ui.select(modes.availableModes or {}, {
    prompt = "Mode (now " .. tostring(modes.currentModeId) .. ")",
    format_item = described,
    kind = "tether.mode",
  }, function(mode)
    if mode then
      session.set_mode(mode)
    end
  end)
end

--- Pick a config option's value; `which` is a category ("model", "mode") or an option id;
--- nil lists every option first. Booleans toggle.
function M.option(which)
  session.ensure(function(ok)
    if not ok then
      return
    end
    local S = session.state
    local choices = {}
    for _, opt in ipairs(S.config_options or {}) do
      if not which or opt.category == which or opt.id == which then
        choices[#choices + 1] = opt
      end
    end
    if #choices == 0 and which == "mode" and S.modes then
      return pick_mode()
    end
    if #choices == 0 then
      return vim.notify("tether: the agent offers no " .. (which or "options"), vim.log.levels.WARN)
    end
    if #choices == 1 then
      return choose_value(choices[1])
    end
    vim.ui.select(choices, {
      prompt = "tether option",
      format_item = function(o)
        return ("%s: %s"):format(o.name, tostring(o.currentValue))
      end,
      kind = "tether.config_options",
    }, function(opt)
      if opt then
        choose_value(opt)
      end
    end)
  end)
end

--- Pick a stored session (every page of session/list) and open it.
function M.session()
  status.set("listing sessions…", "busy")
  session.list_sessions(function(list, why)
    if not list then
      return session.fail("cannot list sessions", why)
    end
    status.set("ready", "idle")
    vim.ui.select(list, {
      prompt = "tether sessions",
      format_item = function(s)
        return ("%s  %s"):format(s.title or s.sessionId, s.updatedAt or "")
      end,
      kind = "tether.session",
    }, function(info)
      if info then
        session.open_session(info)
      end
    end)
  end)
end

return M
