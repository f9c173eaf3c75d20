"""The engine's slash commands as ACP offers them: one `available_commands_update`, sent as a
session opens and again whenever the list changed after a prompt (a skill was added)."""

from __future__ import annotations

from msgspec import UNSET

from tether.engine.commands.slash_command import CommandContext
from tether.engine.commands.slash_registry import offered
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


class CommandMenu:
    """The commands each session's client was last sent, so that a change is sent again."""

    def __init__(self) -> None:
        self._sent: dict[str, acp.AvailableCommandsUpdate] = {}

    def update(self, ctx: CommandContext) -> acp.AvailableCommandsUpdate:
        sent = self._sent[ctx.session.id] = available_commands(ctx)
        return sent

    def changed(self, ctx: CommandContext) -> acp.AvailableCommandsUpdate | None:
        """The update when the commands differ from what was last sent, else None."""
        now = available_commands(ctx)
        if self._sent.get(ctx.session.id) == now:
            return None
        self._sent[ctx.session.id] = now
        return now
