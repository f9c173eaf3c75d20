-- `tether lsp` inside Neovim's built-in LSP client, no plugin, set up as the README says
-- (editors/lsp/neovim.lua): `nvim --headless -u NONE -l tests/support/nvim/lsp_spec.lua`.
--
-- tests/lsp/test_lsp_neovim.py sets the environment:
--   TETHER_LSP_CMD       `tether lsp` as a JSON list (a --script is appended per case)
--   TETHER_TEST_PROJECT  a fresh copy of editors/fixtures/project
--   TETHER_TEST_DATA     the scripted-model files
-- It prints one line per case and a closing "N passed, N failed" line.

vim.opt.swapfile = false
vim.opt.shortmess:append("F")

local cmd = vim.json.decode(os.getenv("TETHER_LSP_CMD"))
local project = os.getenv("TETHER_TEST_PROJECT")
local data = os.getenv("TETHER_TEST_DATA")
local app = project .. "/app.py"
local UNSAVED = { "def greet(name):", '    return "hello " + name  # unsaved' }
local FIXED = { "def greet(name):", '    return f"Hello, {name}!"' }

local function eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(("%s: expected %s, got %s"):format(what, vim.inspect(want), vim.inspect(got)), 2)
  end
end

local function truthy(value, what)
  if not value then
    error(what .. " is false", 2)
  end
end

local function wait(cond, what)
  if not vim.wait(15000, cond, 5) then
    error("timed out waiting for " .. what, 2)
  end
end

local function read(path)
  local fh = assert(io.open(path, "rb"))
  local text = fh:read("*a")
  fh:close()
  return text
end

-- Every LspProgress event, as {kind, message}.
local progress = {}
vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(ev)
    local value = ev.data.params.value
    progress[#progress + 1] = { kind = value.kind, message = value.message, title = value.title }
  end,
})

-- The review documents (review-N.diff) windows show: { name, lines } each.
local function reviews()
  local shown = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    local name = vim.api.nvim_buf_get_name(buf)
    if name:match("/review%-%d+%.diff$") then
      shown[#shown + 1] = { name = vim.fs.basename(name), lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false) }
    end
  end
  return shown
end

-- vim.ui.select picks by action title; every question is recorded, with the review documents
-- on screen as it is asked and the window then focused.
local questions = {}
local picks = {}
vim.ui.select = function(items, opts, on_choice)
  local titles = vim.tbl_map(function(item)
    return item.title
  end, items)
  questions[#questions + 1] =
    { prompt = opts.prompt, titles = titles, reviews = reviews(), focus = vim.api.nvim_get_current_win() }
  local want = table.remove(picks, 1)
  for _, item in ipairs(items) do
    if item.title == want then
      on_choice(item)
      return
    end
  end
  on_choice(nil)
end

-- The setup the README gives (editors/lsp/neovim.lua), with the test's command.
local answers = {}
vim.notify = function(msg, level)
  answers[#answers + 1] = { msg = msg, level = level }
end
vim.cmd("filetype on")
vim.cmd.cd(project)
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
dofile(vim.fs.normalize(here .. "/../../../editors/lsp/neovim.lua"))

--- Use `tether lsp --script DATA/<script>` for the next buffers; returns after `path` is open
--- with its client ready.
local function open_with(script, path)
  local argv = vim.deepcopy(cmd)
  vim.list_extend(argv, { "--script", data .. "/" .. script })
  vim.g.tether_lsp_cmd = argv
  vim.cmd.edit(path)
  local client
  wait(function()
    client = vim.lsp.get_clients({ bufnr = 0, name = "tether" })[1]
    return client ~= nil and client.initialized
  end, "tether to start on " .. path)
  return client
end

local function stop(client)
  client:stop()
  wait(function()
    return #vim.lsp.get_clients({ name = "tether" }) == 0
  end, "tether to stop")
end

local cases = {
  {
    "a round asks once, edits land in the modified buffer, progress and transcript show",
    function()
      local client = open_with("round.json", app)
      local buf = vim.api.nvim_get_current_buf()
      eq("utf-8", client.offset_encoding, "position encoding")
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, UNSAVED)
      vim.bo[buf].undolevels = vim.bo[buf].undolevels -- the user's change is its own undo step
      truthy(vim.bo[buf].modified, "app.py has unsaved edits")
      picks = { "Allow all" }

      vim.cmd("Tether fix greet")
      wait(function()
        return #answers > 0
      end, "the prompt's answer")
      eq({ { msg = "Fixed greet and wrote notes.md." } }, answers, "the answer, echoed")

      -- One question for the round, listing both calls.
      eq(1, #questions, "questions asked")
      eq({ "Reject all", "Allow all", "One by one" }, questions[1].titles, "actions")
      truthy(questions[1].prompt:find("tether asks to Edit app.py, notes.md:", 1, true), "prompt title")
      truthy(questions[1].prompt:find("1. Edit app.py (+1 -1)", 1, true), "first call listed")
      truthy(questions[1].prompt:find("2. Create notes.md (+1 -0)", 1, true), "second call listed")
      -- Each call's diff in the question, and the round's whole diff in a window beside it.
      local diff = { '-    return "hello " + name  # unsaved', '+    return f"Hello, {name}!"' }
      truthy(questions[1].prompt:find(table.concat(diff, "\n"), 1, true), "app.py's diff asked")
      truthy(questions[1].prompt:find("\n+Notes\n", 1, true), "notes.md's diff asked")
      eq(1, #questions[1].reviews, "review windows at the question")
      eq("review-1.diff", questions[1].reviews[1].name, "the review document")
      eq("--- " .. app, questions[1].reviews[1].lines[1], "the review's first line")
      truthy(vim.tbl_contains(questions[1].reviews[1].lines, diff[2]), "the review's diff")
      eq(vim.fn.win_getid(vim.fn.bufwinnr(buf)), questions[1].focus, "the focus stayed")

      -- The edit was made against the unsaved text, landed in the buffer, which stays modified;
      -- one undo brings the unsaved text back. The disk is untouched.
      eq(FIXED, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "app.py buffer")
      truthy(vim.bo[buf].modified, "app.py still unsaved")
      eq('def greet(name):\n    return "hello " + name\n', read(app), "app.py on disk")
      vim.api.nvim_buf_call(buf, function()
        vim.cmd("silent undo")
      end)
      eq(UNSAVED, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "after one undo")

      -- The new file is a buffer holding the text (created empty on disk).
      local notes = vim.fn.bufnr(project .. "/notes.md")
      truthy(notes > 0, "notes.md has a buffer")
      eq({ "Notes" }, vim.api.nvim_buf_get_lines(notes, 0, -1, false), "notes.md buffer")

      -- Progress: begin (titled), at least one report, end "Done".
      eq("begin", progress[1].kind, "first progress")
      eq("tether", progress[1].title, "progress title")
      eq("end", progress[#progress].kind, "last progress")
      eq("Done", progress[#progress].message, "end message")
      local reports = vim.tbl_filter(function(p)
        return p.kind == "report"
      end, progress)
      truthy(#reports >= 1, "a report")

      -- The transcript was shown (in a window, without the focus), and joined the server.
      local transcript
      wait(function()
        for _, win in ipairs(vim.api.nvim_list_wins()) do
          local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
          if name:match("transcript%.md$") then
            transcript = name
            return true
          end
        end
      end, "the transcript's window")
      eq(buf, vim.api.nvim_get_current_buf(), "the focus stayed")
      truthy(read(transcript):find("Fixed greet and wrote notes.md.", 1, true), "transcript text")
      wait(function()
        return #vim.lsp.get_clients({ bufnr = vim.fn.bufnr(transcript), name = "tether" }) == 1
      end, "the transcript to join the server")
      eq(1, #vim.lsp.get_clients({ name = "tether" }), "one server")
      stop(client)
    end,
  },
  {
    "each question's review replaces the last one's in the same window",
    function()
      answers, questions = {}, {}
      local client = open_with("two.json", project .. "/README.md")
      picks = { "Allow", "Allow" }
      vim.cmd("Tether write two")
      wait(function()
        return #answers > 0
      end, "the prompt's answer")
      eq({ { msg = "Wrote both." } }, answers, "the answer")
      eq(2, #questions, "questions asked")
      eq("review-1.diff", questions[1].reviews[1].name, "the first review")
      eq({ "review-2.diff" }, vim.tbl_map(function(r)
        return r.name
      end, questions[2].reviews), "only the second review, in the one window")
      truthy(vim.tbl_contains(questions[2].reviews[1].lines, "+B"), "the second review's diff")
      eq(-1, vim.fn.bufnr("review-1.diff"), "the first review's buffer is gone")
      stop(client)
    end,
  },
  {
    ":TetherCancel ends the turn, which answers cancelled",
    function()
      answers = {}
      local client = open_with("slow.json", project .. "/README.md")
      vim.cmd("Tether take your time")
      wait(function()
        for _, p in ipairs(progress) do
          if p.message == "working" then
            return true
          end
        end
      end, "the turn to run")
      vim.cmd("TetherCancel")
      wait(function()
        return #answers > 0
      end, "the cancelled answer")
      eq({ { msg = "tether: cancelled", level = vim.log.levels.WARN } }, answers, "answer")
      stop(client)
    end,
  },
}

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
io.write(("%d passed, %d failed\n"):format(passed, failed))
io.stdout:flush()
os.exit(failed > 0 and 1 or 0)
