"""The LSP front: `tether lsp`, the agent inside any LSP client (Neovim's built-in client, eglot,
Helix, a thin VS Code shim), on pygls and lsprotocol. It drives the same engine, store, tools and
permissions as the ACP front, and knows nothing the ACP front does not: neither imports the
other."""
