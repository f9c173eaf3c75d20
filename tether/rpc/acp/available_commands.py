"""The engine's slash commands as ACP offers them: one `available_commands_update`, sent as a
session opens and again whenever the list changed (after a prompt that added a skill, an MCP
server's prompts that came or went)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec
from msgspec import UNSET

from tether.engine.sessions.state import Session
from tether.engine.slash.slash_command import CommandContext
from tether.engine.slash.slash_registry import offered
from tether.rpc.acp.acp_front import AcpFront
from tether.schemas import acp

if TYPE_CHECKING:
    from tether.engine.mcp.server_state import McpChange
    from tether.engine.sessions.manager import SessionManager


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


class CommandsOffer:
    """Each open session's commands as the client was last sent them: sent again only when
    they changed."""

    def __init__(self, front: AcpFront, manager: SessionManager) -> None:
        self.front = front
        self.manager = manager
        self._sent: dict[str, bytes] = {}  # per session: the last commands update

    async def send(self, s: Session) -> None:
        """The session's commands, when they are not what the client was last sent (a skill
        or an MCP server's prompt came or went). Not to a closed session (a turn that ends
        after its close, a load answered after it): its entry is gone with it, and a later load
        is a new view that is sent them again."""
        if s.id not in self.manager.sessions:
            return
        update = available_commands(command_context(self.front, self.manager, s))
        sent = msgspec.json.encode(update)
        if self._sent.get(s.id) != sent:
            self._sent[s.id] = sent
            await self.front.send(s.id, update)

    def follow_mcp(self, s: Session) -> None:
        """An MCP server's prompts are commands: the client hears when they change."""

        async def changed(_: McpChange) -> None:
            if s.id in self.manager.sessions:
                await self.send(s)

        self.manager.runtime(s.id).on_mcp_change(changed)

    def forget(self, session_id: str) -> None:
        """The session was closed or deleted: a later load is a new view."""
        self._sent.pop(session_id, None)


def command_context(
    front: AcpFront, manager: SessionManager, s: Session, scope: anyio.CancelScope | None = None
) -> CommandContext:
    """What the engine's slash commands work through in `s`: a changed option is shown as ACP
    shows it (a changed mode as `current_mode_update` too)."""

    async def options_changed(option: str) -> None:
        if option == "mode":
            await front.send(s.id, acp.CurrentModeUpdate(current_mode_id=s.state.mode))
        await front.send_options(s)

    return CommandContext(manager, s, options_changed, scope)
