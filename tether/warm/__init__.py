"""Warm starts (Linux): a per-user server that has imported the engine forks a worker for each
`tether acp` / `tether lsp`, which hands it its stdio and process state. Started by the command
line (tether/cli/main.py); it imports the engine and the fronts, never the command line (the
server is given the command line a worker runs when it boots)."""
