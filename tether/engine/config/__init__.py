"""Configuration: the config file and the environment, turned into what tether serves.

`kinds` is the registry of provider kinds (model providers and web search/fetch providers);
`file` finds and reads the TOML file, `check` validates it (every error with its key and line,
`errors`, `explain`, `toml_lines`); `resolve` merges it with the environment into providers,
models, web settings and MCP servers (`mcp_servers`, with `${VAR}` references: `env_refs`);
`catalog`, `adapters`, `default_model` and `load` make the model catalog sessions pick from.
Import the module you need: this package imports nothing itself.
"""
