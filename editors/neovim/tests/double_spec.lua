-- The client's side of what the fixture session does not show (terminal env, kill and byte
-- limit, fs edge cases, session/load, list paging), against the ACP agent test double
-- (tests/support/acp_agent_double.py).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
H.setup({ cmd = H.env.double })

local session = require("tether.session")
local status = require("tether.status")
local terminal = require("tether.terminal")

--- Prompt a scene and return the double's closing report (its last message).
local function scene(name)
  local before = #H.chat()
  session.prompt(name)
  H.wait(function()
    return session.state.id ~= nil and session.state.turn == nil and #H.chat() > before
      and status.text == "ready"
  end, "scene " .. name)
  local text = H.chat_text()
  local report = text:match("\n(%S+=[^\n]*)\n?[^\n]*$")
  return assert(report, "no report in:\n" .. text)
end

H.run({
  {
    "tether's launcher is named by what it is, sandboxed or unconfined",
    function()
      local run = "/tmp/tether-sandbox-x/run/"
      H.eq("ls -la  (sandboxed)", terminal.shown({ run .. "sandboxed-3", "ls", "-la" }), "confined")
      H.eq("make push  (unconfined)", terminal.shown({ run .. "unconfined-4", "make", "push" }), "unconfined")
      H.eq("ls -la", terminal.shown({ "ls", "-la" }), "a plain command")
    end,
  },
  {
    "a command runs in a terminal buffer; output, exit code and env reach the agent",
    function()
      local report = scene("run")
      H.eq(
        'exit={"exitCode": 3} output={"exitStatus": {"exitCode": 3}, "output": "one\\ntwo hi\\noops\\n", "truncated": false}',
        report,
        "what the agent got"
      )
      H.shows("▶ Run the script  [execute] done")
      H.shows('    $ sh -c printf "one\\ntwo $GREETING\\n"; echo oops >&2; exit 3   (:Tether terminal term_1)')
      H.shows("    one\n    two hi\n    oops\n    exited with code 3")
      -- The terminal buffer is a real terminal showing the same output.
      local snap = terminal.snapshot("term_1")
      H.eq("terminal", vim.bo[snap.buf].buftype, "buftype")
      H.wait(function()
        local lines = table.concat(vim.api.nvim_buf_get_lines(snap.buf, 0, -1, false), "\n")
        return lines:find("two hi", 1, true) and lines:find("[exit code 3]", 1, true)
      end, "the terminal buffer to show the output")
      vim.cmd("Tether terminal term_1")
      H.eq(snap.buf, vim.api.nvim_get_current_buf(), ":Tether terminal opens the buffer")
      vim.cmd.close()
    end,
  },
  {
    "terminal/kill stops a running command; a released terminal is gone",
    function()
      local report = scene("kill")
      H.eq(
        'before={"output": "", "truncated": false} exit={"signal": "SIGTERM"} after_release_error=-32002',
        report,
        "what the agent got"
      )
      H.shows("    killed by SIGTERM")
    end,
  },
  {
    "output beyond outputByteLimit is cut from the front on a character boundary",
    function()
      local report = scene("limit")
      H.eq('output={"exitStatus": {"exitCode": 0}, "output": "-end", "truncated": true}', report, "limit")
    end,
  },
  {
    "fs reads honour line/limit and the unsaved buffer; errors have codes",
    function()
      vim.cmd.edit(H.env.project .. "/app.py")
      vim.api.nvim_buf_set_lines(0, 1, 2, false, { "    return 'unsaved'" })
      local report = scene("read")
      H.eq([[part={"content": "    return 'unsaved'\n"} missing=-32002 relative=-32602]], report, "reads")
    end,
  },
  {
    "bad input from the agent: a non-JSON line is reported, unknown methods and sessions refused",
    function()
      local report = scene("bad")
      H.eq("unknown=-32601 foreign=-32602", report, "the codes the agent got")
      H.shows("✗ the agent wrote a line that is not JSON-RPC: this is not json")
      H.shows("▶ a title on two lines  [other] failed")
    end,
  },
  {
    "sessions: every page of session/list in the picker, then session/load replays history",
    function()
      local picks = H.stub_select(function(items)
        return items[2]
      end)
      vim.cmd("Tether sessions")
      H.wait(function()
        return #picks == 1 and session.state.id == "stored_2" and status.text == "ready"
      end, "the stored session to load")
      H.eq(
        { "Fix the greeting  2026-01-02T10:00:00Z", "Write notes  2026-01-01T09:00:00Z" },
        picks[1].labels,
        "sessions offered"
      )
      H.eq("## You\nfix greet\n\n## tether", table.concat(vim.list_slice(H.chat(), 1, 4), "\n"), "replayed start")
      H.shows("▶ make check  [execute] done\n    terminal old_term (unknown to this editor; exited with code 2)")
      H.shows("▶ Replace app.py  [edit] done")
      H.shows("    -a\n    +b")
      H.shows("Fixed it.")
      H.truthy(require("tether.ui.chat").winbar():find("Write notes", 1, true), "title in the winbar")
    end,
  },
  {
    "an agent that dies mid-turn: the chat says so, with its last words",
    function()
      session.prompt("crash")
      H.wait(function()
        return status.kind == "error"
      end, "the crash")
      H.shows("about to fail")
      H.shows("✗ acp-agent-double exited (code 7): double: first line\ndouble: simulated crash — the turn was lost")
      H.eq(nil, session.state.turn, "no turn left running")
      H.eq(false, session.is_running(), "no agent")
    end,
  },
})
