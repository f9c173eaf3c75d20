-- CodeCompanion.nvim with tether as its agent: an `adapters.acp` entry (no tether.nvim needed).
-- It extends the built-in `goose` adapter, whose command is two words like tether's: CodeCompanion
-- merges lists index by index, so a base with a longer command would keep its extra words.
-- tether offers no authMethods, so CodeCompanion sends no `authenticate`.
require("codecompanion").setup({
  adapters = {
    acp = {
      tether = function()
        return require("codecompanion.adapters").extend("goose", {
          name = "tether",
          formatted_name = "tether",
          commands = {
            default = { "tether", "acp" }, -- or the absolute path of tether in its virtualenv
          },
          env = {
            -- Each value is an environment variable's name, "cmd:<command>", or a literal, e.g.
            -- TETHER_MODEL = "anthropic:claude-sonnet-5-5",
            -- ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY",
          },
        })
      end,
    },
  },
  interactions = {
    chat = { adapter = "tether" },
  },
})
