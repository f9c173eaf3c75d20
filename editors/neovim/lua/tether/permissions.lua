-- What the agent asks the user: session/request_permission and form elicitation/create.
--
-- A permission request's card goes into the chat and every option the agent offers into
-- vim.ui.select, with its name and what its kind means; the answer is the chosen optionId. A
-- form asks its fields one after another (vim.ui.select for booleans and choices, vim.ui.input
-- for text and numbers). The card is on the screen before a picker opens (chat.reveal): one
-- that blocks, like the builtin, would otherwise ask over a screen drawn before the request.
-- Dismissing a picker leaves a permission request waiting (the status says so; :Tether approve
-- or ga in the chat asks again) and cancels a form. Cancelling the turn answers everything
-- still waiting with "cancelled", as ACP requires.
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

local function remove(item)
  for i, w in ipairs(waiting) do
    if w == item then
      table.remove(waiting, i)
      return true
    end
  end
  return false
end

local show -- forward: answering one request shows the next

local function answered(item, result, words)
  if showing == item then
    showing = nil
  end
  if not remove(item) then
    return -- answered meanwhile (the turn was cancelled or the agent withdrew it)
  end
  item.reply.result(result)
  chat.answered(item.card, words)
  status.set("working…", "busy")
  if waiting[1] then
    show(waiting[1])
  end
end

-- Permission requests ---------------------------------------------------------------------------

-- A single call's request may carry only the id of a tool call the chat already shows.
local function title_of(params)
  local card = params.toolCall or {}
  return card.title or chat.tool_title(card.toolCallId) or card.toolCallId or "a tool call"
end

--- The label of an option in the picker: its name, then what its kind means.
function M.label(option)
  return ("%s  [%s]"):format(option.name, KIND[option.kind] or option.kind or "?")
end

local function verdict(option)
  if option.kind and option.kind:sub(1, 6) == "reject" then
    return "Rejected (" .. option.name .. ")"
  end
  return "Approved (" .. option.name .. ")"
end

local function show_permission(item)
  status.set("waiting for your approval: " .. title_of(item.params), "approval")
  chat.reveal(item.card)
  vim.ui.select(item.params.options or {}, {
    prompt = "tether asks: " .. title_of(item.params),
    format_item = M.label,
    kind = "tether.permission",
  }, function(choice)
    if not choice then
      if showing == item then
        showing = nil
      end
      if waiting[1] == item then
        status.set("waiting for your approval (:Tether approve to answer)", "approval")
      end
      return
    end
    local result = { outcome = { outcome = "selected", optionId = choice.optionId } }
    answered(item, result, verdict(choice))
  end)
end

-- Forms ------------------------------------------------------------------------------------------

-- Field order: the agent's keys sorted, numbers by value (call_2 before call_10).
local function field_order(props)
  local keys = vim.tbl_keys(props)
  table.sort(keys, function(a, b)
    local pa, na = a:match("^(.-)(%d+)$")
    local pb, nb = b:match("^(.-)(%d+)$")
    if pa and pa == pb then
      return tonumber(na) < tonumber(nb)
    end
    return a < b
  end)
  return keys
end

local function choices_of(prop)
  if prop.type == "boolean" then
    local yes, no = { value = true, name = "yes" }, { value = false, name = "no" }
    return prop.default == false and { no, yes } or { yes, no }
  end
  if prop.oneOf then
    return vim.tbl_map(function(o)
      return { value = o.const, name = o.title or o.const }
    end, prop.oneOf)
  end
  if prop.enum then
    return vim.tbl_map(function(v)
      return { value = v, name = v }
    end, prop.enum)
  end
end

--- Ask one field; done(value) or done(nil) when dismissed.
local function ask_field(message, key, prop, done)
  local label = (prop.title or key) .. (prop.description and (" — " .. prop.description) or "")
  local choices = choices_of(prop)
  if choices then
    return vim.ui.select(choices, {
      prompt = message .. ": " .. label,
      format_item = function(c)
        return c.name
      end,
      kind = "tether.form",
    }, function(c)
      done(c and c.value)
    end)
  end
  vim.ui.input({ prompt = message .. ": " .. label .. " ", default = prop.default and tostring(prop.default) }, function(text)
    if text == nil then
      return done(nil)
    end
    if prop.type == "number" or prop.type == "integer" then
      local n = tonumber(text)
      if not n then
        vim.notify("tether: " .. label .. " needs a number", vim.log.levels.WARN)
        return ask_field(message, key, prop, done)
      end
      return done(n)
    end
    if prop.type == "array" then
      return done(vim.split(text, "%s*,%s*", { trimempty = true }))
    end
    done(text)
  end)
end

local function show_form(item)
  local params = item.params
  local schema = params.requestedSchema or {}
  local props = schema.properties or {}
  local keys = field_order(props)
  local required = {}
  for _, key in ipairs(schema.required or {}) do
    required[key] = true
  end
  local content = {}
  status.set("waiting for your answer: " .. params.message, "approval")
  chat.reveal(item.card)
  local function step(i)
    if i > #keys then
      local result = { action = "accept", content = next(content) and content or vim.empty_dict() }
      return answered(item, result, "Answered")
    end
    local prop = props[keys[i]]
    ask_field(params.message, keys[i], prop, function(value)
      -- An optional text left unsaid is skipped; anything else dismissed cancels the form.
      if (value == nil or value == "") and not required[keys[i]] and not choices_of(prop) then
        return step(i + 1)
      end
      if value == nil then
        return answered(item, { action = "cancel" }, "Dismissed")
      end
      content[keys[i]] = value
      step(i + 1)
    end)
  end
  step(1)
end

-- Both -------------------------------------------------------------------------------------------

show = function(item)
  showing = item
  if item.form then
    show_form(item)
  else
    show_permission(item)
  end
end

local function enqueue(item)
  waiting[#waiting + 1] = item
  if showing then
    status.set(("waiting for your answer (%d questions)"):format(#waiting + 1), "approval")
  else
    show(item)
  end
end

--- session/request_permission; `reply` answers the JSON-RPC request.
function M.ask(params, reply, request_id)
  enqueue({ params = params, reply = reply, id = request_id, card = chat.permission(params) })
end

--- elicitation/create (form mode; this client does not advertise url mode).
function M.form(params, reply, request_id)
  if params.mode ~= "form" then
    return reply.result({ action = "decline" })
  end
  enqueue({ params = params, reply = reply, id = request_id, form = true, card = chat.form(params) })
end

--- Show the oldest waiting request again.
function M.reopen()
  if showing then
    return
  end
  if waiting[1] then
    show(waiting[1])
  else
    vim.notify("tether: nothing is waiting for your answer", vim.log.levels.INFO)
  end
end

--- The turn is being cancelled: everything waiting is answered "cancelled".
function M.cancel_all()
  local all = waiting
  waiting = {}
  showing = nil -- a picker still open answers nothing now
  for _, item in ipairs(all) do
    item.reply.result(item.form and { action = "cancel" } or { outcome = { outcome = "cancelled" } })
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
