"""The engine's slash commands as ACP offers them: one `available_commands_update`, sent as a
session opens and again whenever the list changed after a prompt (a skill was added)."""

from __future__ import annotations

from msgspec import UNSET

from tether.engine.slash.slash_command import CommandContext
from tether.engine.slash.slash_registry import offered
from tether.schemas import acp


def available_commands(ctx: CommandContext) -> acp.AvailableCommandsUpdate:
    return acp.AvailableCommandsUpdate(
        available_commands=[
            acp.AvailableCommand(
                name=c.name,
                description=c.help,
                input=UNSET if c.hint is None else acp.CommandInput(hint=c.hint),
            )
            for c in offered(ctx)
        ]
    )
