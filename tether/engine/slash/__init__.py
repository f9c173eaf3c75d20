"""Slash commands, protocol-agnostic: one registry (`slash_registry.py`) that every front
renders and dispatches a prompt's `/name args` to; each command works through the session
manager, the session and the front's "options changed" callback (`slash_command.py`)."""
