"""Slash commands offered through `available_commands_update` and run from prompt text."""

from __future__ import annotations

from tether.schemas import acp

COMMANDS = [
    acp.AvailableCommand(
        name="mode",
        description="Switch mode: ask, code or read-only",
        input=acp.CommandInput(hint="ask | code | read-only"),
    ),
    acp.AvailableCommand(
        name="model",
        description="Switch the model of this session",
        input=acp.CommandInput(hint="model id"),
    ),
    acp.AvailableCommand(
        name="undo",
        description="Revert the file changes of the last turn (again: one more turn back)",
    ),
    acp.AvailableCommand(name="help", description="List tether's commands, modes and tools"),
]


def parse(text: str) -> tuple[str, str] | None:
    """("mode", "code") for "/mode code"; None when the text is not one of our commands."""
    if not text.startswith("/"):
        return None
    name, _, arg = text[1:].strip().partition(" ")
    if name not in {c.name for c in COMMANDS}:
        return None
    return name, arg.strip()
