-- `tether lsp` in Neovim's real TUI with the README's setup (editors/lsp/neovim.lua), for what
-- the screen shows: tests/lsp/test_lsp_neovim.py starts `nvim -u NONE -S tests/support/nvim/lsp_tui.lua` in
-- tmux, types the commands and answers, and reads the terminal. Not a `-l` spec: there the main
-- loop never runs and nothing is redrawn; here Neovim redraws when and only when it would for a
-- user. The environment: TETHER_LSP_CMD (`tether lsp --script FILE` as a JSON list) and
-- TETHER_TEST_PROJECT (the project; app.py is opened). vim.ui.select is the builtin one.

vim.opt.swapfile = false
vim.opt.shortmess:append("F")
vim.g.tether_lsp_cmd = vim.json.decode(os.getenv("TETHER_LSP_CMD"))
vim.cmd("filetype on")
vim.cmd.cd(os.getenv("TETHER_TEST_PROJECT"))
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
dofile(vim.fs.normalize(here .. "/../../../editors/lsp/neovim.lua"))
vim.api.nvim_create_autocmd("LspAttach", { -- the test types once it reads this
  once = true,
  callback = function()
    vim.api.nvim_echo({ { "tether attached" } }, false, {})
  end,
})
vim.cmd.edit("app.py")
