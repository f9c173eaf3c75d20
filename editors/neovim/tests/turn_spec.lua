-- The shared fixture session (editors/fixtures/session.json) through the real `tether acp`:
-- thought, text, plan, a round permission over two diffs, writes into buffers, a command
-- approved and run in a terminal buffer that its tool entry embeds, final text.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
H.setup({ cmd = H.tether("session.json") })

local status = require("tether.status")
local session = require("tether.session")
local project = H.env.project
local app = project .. "/app.py"
local UNSAVED = { "def greet(name):", '    return "hello " + name  # unsaved edit' }
local FIXED = { "def greet(name):", '    return f"Hello, {name}!"' }

local app_buf
local selects
local asked = H.spy_permissions()
local terminal = require("tether.terminal")

H.run({
  {
    "a turn with a round permission edits buffers and shows every step",
    function()
      vim.cmd.edit(app)
      app_buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(app_buf, 0, -1, false, UNSAVED)
      H.truthy(vim.bo[app_buf].modified, "app.py has unsaved edits")
      selects = H.stub_select(H.option_of_kind("allow_once"))

      vim.cmd("Tether prompt fix greet")
      H.wait(function()
        return session.state.id ~= nil and session.state.turn == nil and status.text == "ready"
          and #selects == 2
      end, "the turn to end")

      -- The round permission: one picker with every option, by name and kind.
      local pick = selects[1]
      local title = asked[1].toolCall.title
      H.eq("tether.permission", pick.kind, "picker kind")
      H.eq("tether asks: " .. title, pick.prompt, "picker prompt")
      H.eq(#pick.items, #pick.labels, "one label per option")
      H.truthy(#pick.items >= 2, "several options")
      for i, o in ipairs(pick.items) do
        H.truthy(pick.labels[i]:find(o.name, 1, true), "label shows the option name " .. o.name)
      end
      H.shows("▶ Approved (" .. H.option_of_kind("allow_once")(pick.items).name .. "): " .. title)

      -- Everything the agent did is in the chat.
      H.shows("## You\nfix greet")
      H.shows("## tether")
      H.shows("> The user wants a greeting fix and notes. I will plan first.")
      H.shows("I'll plan the work, then make two edits and check them.")
      H.shows("Plan:\n  [~] Fix greet() punctuation\n  [ ] Write notes.md\n  [ ] Run check.py")
      H.shows("▶ Replace app.py  [edit] done")
      H.shows("▶ Create notes.md  [edit] done")
      -- The diff's old side is the unsaved buffer: the agent read it through fs/read_text_file.
      H.shows('    -    return "hello " + name  # unsaved edit')
      H.shows('    +    return f"Hello, {name}!"')
      -- The command: a second picker, then its terminal embedded in the tool entry.
      H.eq("tether asks: python3 check.py", selects[2].prompt, "the command's picker")
      H.shows("▶ Approved (" .. H.option_of_kind("allow_once")(selects[2].items).name .. "): python3 check.py")
      H.shows("▶ python3 check.py  [execute] done")
      -- The exit status once: the terminal's, not again from the agent's card.
      H.shows("    $ python3 check.py  (sandboxed)   (:Tether terminal term_1)\n    Hello, Ada!\n    exited with code 0\n    Allowed")
      H.truthy(not H.chat_text():find("exit code 0", 1, true), "no second exit status")
      H.shows("Done: `greet()` now returns `Hello, NAME!`")

      -- The status said what was happening at every step, approval included.
      local seen = table.concat(status.history, "\n")
      for _, want in ipairs({
        "starting ",
        "waiting for the model…",
        "thinking…",
        "writing…",
        "waiting for your approval: " .. title,
        "waiting for your approval: python3 check.py",
        "working…",
        "ready",
      }) do
        H.truthy(seen:find(want, 1, true), "the status showed " .. want)
      end
    end,
  },
  {
    "the write landed in the buffer, saved, and one undo restores the unsaved text",
    function()
      H.eq(FIXED, vim.api.nvim_buf_get_lines(app_buf, 0, -1, false), "app.py buffer")
      H.eq(false, vim.bo[app_buf].modified, "app.py saved")
      H.eq(table.concat(FIXED, "\n") .. "\n", H.read(app), "app.py on disk")
      vim.api.nvim_buf_call(app_buf, function()
        vim.cmd("silent undo")
      end)
      H.eq(UNSAVED, vim.api.nvim_buf_get_lines(app_buf, 0, -1, false), "app.py after one undo")
      local notes = require("tether.fs").find_buf(project .. "/notes.md")
      H.truthy(notes, "notes.md has a buffer")
      H.eq("# Notes\n\ngreet() now says Hello, NAME!\n", H.read(project .. "/notes.md"), "notes.md on disk")
    end,
  },
  {
    "the command ran in a terminal buffer, released, still showing its output",
    function()
      local snap = terminal.snapshot("term_1")
      H.truthy(snap, "term_1 is known")
      H.eq("python3 check.py  (sandboxed)", snap.command, "the command, run in tether's sandbox")
      H.eq({ "Hello, Ada!" }, snap.lines, "what it printed, after app.py was fixed")
      H.eq("exited with code 0", snap.state, "its state")
      H.truthy(terminal.released.term_1, "the agent released it")
      H.eq("terminal", vim.bo[snap.buf].buftype, "a real terminal buffer")
      H.wait(function()
        local shown = table.concat(vim.api.nvim_buf_get_lines(snap.buf, 0, -1, false), "\n")
        return shown:find("Hello, Ada!", 1, true) and shown:find("[exit code 0]", 1, true)
      end, "the terminal buffer to show the output")
      vim.cmd("Tether terminal")
      H.eq(snap.buf, vim.api.nvim_get_current_buf(), ":Tether terminal opens the newest")
      vim.cmd.close()
    end,
  },
  {
    "tool entries fold",
    function()
      local chat_win = vim.fn.bufwinid(require("tether.ui.chat").buf())
      H.truthy(chat_win ~= -1, "the chat is in a window")
      local lines = H.chat()
      local header
      for i, l in ipairs(lines) do
        if l:find("▶ Replace app.py", 1, true) then
          header = i
        end
      end
      vim.api.nvim_win_call(chat_win, function()
        H.eq(1, vim.fn.foldlevel(header), "tool header fold level")
        H.eq(1, vim.fn.foldlevel(header + 1), "tool body fold level")
        H.eq(0, vim.fn.foldlevel(1), "your message is not folded")
      end)
      H.truthy(vim.wo[chat_win].winbar:find("tether.ui.chat", 1, true), "the winbar shows the status")
      local bar = require("tether.ui.chat").winbar()
      H.truthy(bar:find("fix greet", 1, true) and bar:find("ready", 1, true), "winbar: " .. bar)
    end,
  },
})
