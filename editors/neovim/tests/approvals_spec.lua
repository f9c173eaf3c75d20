-- Approvals against the real `tether acp`: with the session option "Approvals" set to review each
-- call (through :Tether option), a round asks one yes/no per tool call in a form; dismissing the
-- form cancels the round; a single call's approval names the tool call it is about.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
H.setup({ cmd = H.tether("choose.json") })

local session = require("tether.session")
local status = require("tether.status")
local project = H.env.project

local function turn_over()
  return session.state.turn == nil and status.kind == "idle"
end

local function option(id)
  for _, o in ipairs(session.state.config_options or {}) do
    if o.id == id then
      return o
    end
  end
end

--- A select stub: form fields take `answers` in turn (nil: dismissed).
local function answering(answers)
  local n = 0
  return H.stub_select(function(items)
    n = n + 1
    local want = answers[n]
    if want == nil then
      return nil
    end
    for _, c in ipairs(items) do
      if c.value == want then
        return c
      end
    end
  end)
end

H.run({
  {
    "the option picker switches approvals to each call",
    function()
      local picks = H.stub_select(function(items, opts)
        for _, item in ipairs(items) do
          if (opts.kind == "tether.config_options" and item.id == "approvals")
            or (opts.kind == "tether.config_option" and item.value == "call")
          then
            return item
          end
        end
      end)
      vim.cmd("Tether option")
      H.wait(function()
        return option("approvals") and option("approvals").currentValue == "call" and turn_over()
      end, "approvals = call")
      H.eq({ "tether.config_options", "tether.config_option" }, { picks[1].kind, picks[2].kind }, "two pickers")
      H.truthy(vim.tbl_contains(picks[1].labels, "Approvals: round"), "options listed with their values")
    end,
  },
  {
    "each call in a form: one yes/no per call, only the allowed call runs",
    function()
      local picks = answering({ true, false })
      vim.cmd("Tether prompt write two files")
      H.wait(turn_over, "the turn")
      H.eq(2, #picks, "two fields")
      H.eq("tether.form", picks[1].kind, "a form field")
      H.truthy(picks[1].prompt:find("Create a.txt", 1, true), "first field: " .. picks[1].prompt)
      H.truthy(picks[2].prompt:find("Create b.txt", 1, true), "second field: " .. picks[2].prompt)
      H.eq({ "yes", "no" }, picks[1].labels, "yes first: the field's default is true")
      H.shows("▶ Answered: Choose which of this round's tool calls may run")
      H.eq("a.txt\n", H.read(project .. "/a.txt"), "a.txt written")
      H.eq(nil, vim.uv.fs_stat(project .. "/b.txt"), "b.txt not written")
      H.shows("Wrote what you allowed.")
      H.truthy(vim.tbl_contains(status.history, "waiting for your answer: Choose which of this round's tool calls may run"), "status")
    end,
  },
  {
    "dismissing a form field cancels the form: nothing runs",
    function()
      vim.fn.delete(project .. "/a.txt")
      answering({})
      vim.cmd("Tether prompt again")
      H.wait(turn_over, "the turn")
      H.shows("▶ Dismissed: Choose which of this round's tool calls may run")
      H.eq(nil, vim.uv.fs_stat(project .. "/a.txt"), "a.txt not written")
    end,
  },
  {
    "a single call's approval is titled by its tool call",
    function()
      H.restart(H.tether("single.json"))
      local picks = H.stub_select(H.option_of_kind("allow_once"))
      vim.cmd("Tether prompt fix greet")
      H.wait(turn_over, "the turn")
      H.eq("tether asks: Replace app.py", picks[1].prompt, "picker prompt")
      local words = {
        allow_once = "allow once",
        allow_always = "always allow",
        reject_once = "reject once",
        reject_always = "always reject",
      }
      for i, o in ipairs(picks[1].items) do
        H.eq(o.name .. "  [" .. words[o.kind] .. "]", picks[1].labels[i], "option " .. i .. ", by name and kind")
      end
      H.shows("▶ Approved (Allow): Replace app.py")
      H.truthy(vim.tbl_contains(status.history, "waiting for your approval: Replace app.py"), "status")
    end,
  },
})
