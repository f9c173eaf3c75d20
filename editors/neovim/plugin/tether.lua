if vim.g.loaded_tether or vim.fn.has("nvim-0.10") == 0 then
  return
end
vim.g.loaded_tether = true

vim.api.nvim_create_user_command("Tether", function(o)
  require("tether").command(o.fargs)
end, {
  nargs = "*",
  desc = "tether: chat with the agent (:Tether prompt|cancel|approve|new|sessions|model|mode|…)",
  complete = function(lead, line)
    return require("tether").complete(lead, line)
  end,
})
