-- What the agent is doing right now, in words: shown in the chat window's winbar, available to
-- statuslines as require("tether").status(), and announced with the User TetherStatus autocmd.
-- While a turn runs the text carries the seconds since the last change, so a wait is never
-- silent.
local M = {}

M.text = "not started"
M.kind = "idle" -- idle | busy | approval | error
M.history = {} -- every text set, in order (tests and :Tether log read it)

local since = vim.uv.now()
local timer = nil
local listeners = {}

local function notify()
  for _, fn in ipairs(listeners) do
    pcall(fn)
  end
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "TetherStatus", modeline = false })
end

local function tick()
  if M.kind == "busy" or M.kind == "approval" then
    notify()
  elseif timer then
    timer:stop()
  end
end

--- Set the status. kind "busy" and "approval" start the per-second refresh.
function M.set(text, kind)
  M.text = text
  M.kind = kind or "busy"
  since = vim.uv.now()
  M.history[#M.history + 1] = text
  if (M.kind == "busy" or M.kind == "approval") and not timer then
    timer = vim.uv.new_timer()
  end
  if timer and (M.kind == "busy" or M.kind == "approval") then
    timer:start(1000, 1000, vim.schedule_wrap(tick))
  end
  notify()
end

--- The status line: text, plus the seconds it has lasted while the agent is working.
function M.line()
  if M.kind == "busy" or M.kind == "approval" then
    local secs = math.floor((vim.uv.now() - since) / 1000)
    if secs >= 1 then
      return ("%s (%ds)"):format(M.text, secs)
    end
  end
  return M.text
end

function M.on_change(fn)
  listeners[#listeners + 1] = fn
end

function M.stop_timer()
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
end

return M
