-- The plugin in Neovim's real TUI, for what the screen shows while the builtin vim.ui.select
-- asks: tests/editors/test_editor_neovim.py starts `nvim -u NONE -S tests/tui.lua` in tmux, reads the
-- terminal and types the answers. Not a `-l` spec: there the main loop never runs and vim.wait
-- never redraws; here Neovim redraws when and only when it would for a user.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
H.setup({ cmd = H.tether("reading.json") })

-- Still the builtin picker (it blocks in inputlist); only its prompt is numbered, so the test
-- tells the two rounds' questions apart on the screen.
local builtin, asked = vim.ui.select, 0
vim.ui.select = function(items, opts, on_choice)
  asked = asked + 1
  local prompt = ("(question %d) %s"):format(asked, opts.prompt)
  return builtin(items, vim.tbl_extend("force", opts, { prompt = prompt }), on_choice)
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    vim.cmd("Tether prompt tell me everything") -- the long answer; the test types the rest
  end,
})
