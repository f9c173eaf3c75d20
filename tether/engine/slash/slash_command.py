"""A slash command: what a front offers (its name, argument hint, help text, whether it is
available) and the handler that runs it, with the little a handler works through. A handler
may be named by where it lives ("module:function") and is then imported when the command
first runs: a front lists the commands without loading what they do."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from tether.engine.history import TextPart, UserPart

if TYPE_CHECKING:
    import anyio

    from tether.engine.sessions.manager import SessionManager
    from tether.engine.sessions.state import Session

OptionsChanged = Callable[[str], Awaitable[None]]
"""Told the id of the session option a command changed ("mode", "model"); the front shows the
session's options again."""


class CommandContext(msgspec.Struct, frozen=True):
    """What a command works through: never a front, only its callback."""

    manager: SessionManager
    session: Session
    options_changed: OptionsChanged
    scope: anyio.CancelScope | None = None  # the prompt's claim: a command that runs a turn
    parts: list[UserPart] = msgspec.field(default_factory=list)  # the prompt as typed


async def no_options_changed(option: str) -> None:
    """For a front that shows no session options."""


Handler = Callable[[CommandContext, str], Awaitable[str]]
"""Runs a command on its argument text; returns its reply (Markdown, shown as an agent
message), or, for a command that runs a turn, the turn's stop reason."""


def always(ctx: CommandContext) -> bool:
    return True


class Command(msgspec.Struct, frozen=True):
    name: str  # typed as `/name`
    help: str  # one line: the front's description and the `/help` listing
    # The handler, or where it lives ("package.module:function"), imported when it first runs.
    handler: Handler | str
    hint: str | None = None  # what the argument is, for a front that prompts for it
    available: Callable[[CommandContext], bool] = always  # offered (and run) only when true
    turn: bool = False  # it runs a turn: its handler records the prompt and returns the stop

    async def run(self, ctx: CommandContext, arg: str) -> str:
        return await handler(self.handler)(ctx, arg)


def handler(where: Handler | str) -> Handler:
    """The handler itself, imported first when it is named by where it lives."""
    if not isinstance(where, str):
        return where
    module, _, name = where.partition(":")
    found: Handler = getattr(importlib.import_module(module), name)
    return found


CommandSource = Callable[[CommandContext], list[Command]]
"""Commands that come and go with the session (a skill, an MCP server's prompt)."""


async def prompt_turn(ctx: CommandContext, text: str) -> str:
    """Run a turn in which the model is sent `text` for the prompt the user typed (a command
    that expands to instructions); the turn's stop reason."""
    assert ctx.scope is not None, "a turn command runs inside a prompt's claim"
    sent: list[UserPart] = [TextPart(text)]
    return await ctx.manager.run_turn(ctx.session, ctx.parts, ctx.scope, sent=sent)
