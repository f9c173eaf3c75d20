-- Cancel, a dismissed approval, and failures said in words, against the real `tether acp`.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local session = require("tether.session")
local status = require("tether.status")
local permissions = require("tether.permissions")

local asked = H.spy_permissions()

local function turn_over()
  return session.state.turn == nil and status.kind ~= "busy" and status.kind ~= "approval"
end

H.run({
  {
    "cancel while the model streams: the turn ends cancelled",
    function()
      H.restart(H.tether("slow.json"))
      vim.cmd("Tether prompt take your time")
      H.wait(function()
        return H.chat_text():find("working", 1, true) ~= nil
      end, "the first words")
      H.eq("writing…", status.text, "status while streaming")
      vim.cmd("Tether cancel")
      H.wait(turn_over, "the cancelled turn to end")
      H.eq("cancelled", status.text, "status")
      H.shows("(cancelled)")
      H.truthy(vim.tbl_contains(status.history, "cancelling…"), "the status said cancelling")
    end,
  },
  {
    "cancel while the approval waits: the request is answered cancelled, nothing is written",
    function()
      H.restart(H.tether("writes.json"))
      local picks = H.stub_select(function()
        return false -- the user looks at the picker and does not answer
      end)
      vim.cmd("Tether prompt write two files")
      H.wait(function()
        return permissions.waiting_count() == 1
      end, "the approval")
      H.eq("approval", status.kind, "status kind")
      local title = asked[#asked].toolCall.title
      H.eq("waiting for your approval: " .. title, status.text, "status")
      H.shows("▶ Waiting for your approval: " .. title)
      H.eq(1, #picks, "one picker")
      vim.cmd("Tether cancel")
      H.wait(turn_over, "the cancelled turn to end")
      H.eq("cancelled", status.text, "status")
      H.shows("▶ Cancelled: " .. title)
      H.eq(0, permissions.waiting_count(), "nothing waits")
      H.eq(nil, vim.uv.fs_stat(H.env.project .. "/a.txt"), "a.txt not written")
    end,
  },
  {
    "a dismissed picker keeps the approval waiting; :Tether approve asks again",
    function()
      local answers = { nil, "reject_once" }
      local n = 0
      local picks = H.stub_select(function(items)
        n = n + 1
        return answers[n] and H.option_of_kind(answers[n])(items) or nil
      end)
      vim.cmd("Tether prompt write two files again")
      H.wait(function()
        return #picks == 1 and status.text:find(":Tether approve", 1, true) ~= nil
      end, "the dismissed picker")
      H.eq("waiting for your approval (:Tether approve to answer)", status.text, "status")
      H.eq("approval", status.kind, "still waiting")
      vim.cmd("Tether approve")
      H.wait(turn_over, "the turn to end")
      H.eq(2, #picks, "asked twice")
      local reject = H.option_of_kind("reject_once")(picks[2].items)
      H.shows("▶ Rejected (" .. reject.name .. "): " .. asked[#asked].toolCall.title)
      H.shows("Both were rejected.")
      H.eq(nil, vim.uv.fs_stat(H.env.project .. "/a.txt"), "a.txt not written")
    end,
  },
  {
    "a provider failure is shown in words",
    function()
      H.restart(H.tether("failing.json"))
      vim.cmd("Tether prompt hello")
      H.wait(turn_over, "the failed turn")
      H.eq("error", status.kind, "status kind")
      H.shows("✗ the turn failed: ")
      H.shows("HTTP 401: invalid x-api-key")
    end,
  },
  {
    "an agent that dies at start is shown in words, with its last stderr line",
    function()
      H.restart({ H.env.cmd[1], "-c", "import sys; sys.stderr.write('boom: bad config\\n'); sys.exit(3)" })
      vim.cmd("Tether prompt hello")
      H.wait(function()
        return status.kind == "error"
      end, "the error")
      -- It died before initialize, so it is named by its command.
      local name = vim.fs.basename(H.env.cmd[1])
      H.shows("✗ " .. name .. " exited (code 3): boom: bad config")
      H.truthy(status.text:find(name .. " exited (code 3)", 1, true), "status: " .. status.text)
    end,
  },
  {
    "a command that does not exist is shown in words",
    function()
      H.restart({ "/nonexistent/tether", "acp" })
      vim.cmd("Tether prompt hello")
      H.wait(function()
        return status.kind == "error"
      end, "the error")
      H.shows("✗ could not start `/nonexistent/tether acp`")
    end,
  },
})
