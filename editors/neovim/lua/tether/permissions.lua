-- session/request_permission: the card goes into the chat, the options into vim.ui.select.
--
-- Every option the agent offers is shown with its name and what its kind means; the answer is
-- the chosen optionId. Dismissing the picker leaves the request waiting (the status says so);
-- :Tether approve (or ga in the chat) shows it again. Cancelling the turn answers every waiting
-- request with the "cancelled" outcome, as ACP requires.
local chat = require("tether.ui.chat")
local status = require("tether.status")

local M = {}

local KIND = {
  allow_once = "allow once",
  allow_always = "always allow",
  reject_once = "reject once",
  reject_always = "always reject",
}

local waiting = {} -- requests not answered yet, oldest first
local showing = nil -- the request whose picker is open

local function title_of(params)
  local card = params.toolCall or {}
  return card.title or card.toolCallId or "a tool call"
end

local function remove(item)
  for i, w in ipairs(waiting) do
    if w == item then
      table.remove(waiting, i)
      return true
    end
  end
  return false
end

local function verdict(option)
  if option.kind and option.kind:sub(1, 6) == "reject" then
    return "Rejected (" .. option.name .. ")"
  end
  return "Approved (" .. option.name .. ")"
end

--- The label of an option in the picker: its name, then what its kind means.
function M.label(option)
  return ("%s  [%s]"):format(option.name, KIND[option.kind] or option.kind or "?")
end

local function show(item)
  showing = item
  status.set("waiting for your approval: " .. title_of(item.params), "approval")
  vim.ui.select(item.params.options or {}, {
    prompt = "tether asks: " .. title_of(item.params),
    format_item = M.label,
    kind = "tether.permission",
  }, function(choice)
    showing = nil
    if not remove(item) then
      return -- answered meanwhile (the turn was cancelled or the agent withdrew it)
    end
    if not choice then
      table.insert(waiting, 1, item)
      status.set("waiting for your approval (:Tether approve to answer)", "approval")
      return
    end
    item.reply.result({ outcome = { outcome = "selected", optionId = choice.optionId } })
    chat.answered(item.card, verdict(choice))
    status.set("working…", "busy")
    if waiting[1] then
      show(waiting[1])
    end
  end)
end

--- Ask the user; `reply` answers the JSON-RPC request.
function M.ask(params, reply, request_id)
  local item = { params = params, reply = reply, id = request_id, card = chat.permission(params) }
  waiting[#waiting + 1] = item
  if showing then
    status.set(("waiting for your approval (%d requests)"):format(#waiting + 1), "approval")
  else
    show(item)
  end
end

--- Show the oldest waiting request again.
function M.reopen()
  if showing then
    return
  end
  if waiting[1] then
    show(waiting[1])
  else
    vim.notify("tether: nothing is waiting for your approval", vim.log.levels.INFO)
  end
end

--- The turn is being cancelled: every waiting request gets the "cancelled" outcome.
function M.cancel_all()
  local all = waiting
  waiting = {}
  showing = nil -- a picker still open answers nothing now
  for _, item in ipairs(all) do
    item.reply.result({ outcome = { outcome = "cancelled" } })
    chat.answered(item.card, "Cancelled")
  end
end

--- The agent withdrew its request ($/cancel_request).
function M.withdrawn(request_id)
  for _, item in ipairs(waiting) do
    if item.id == request_id then
      remove(item)
      if showing == item then
        showing = nil
      end
      chat.answered(item.card, "Withdrawn by the agent")
      return
    end
  end
end

function M.waiting_count()
  return #waiting
end

return M
