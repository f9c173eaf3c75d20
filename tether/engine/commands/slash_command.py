"""A slash command: what a front offers (its name, argument hint, help text, whether it is
available) and the handler that runs it, with the little a handler works through."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from tether.engine.sessions.manager import SessionManager
    from tether.engine.sessions.state import Session

OptionsChanged = Callable[[str], Awaitable[None]]
"""Told the id of the session option a command changed ("mode", "model"); the front shows the
session's options again."""


@dataclass(frozen=True)
class CommandContext:
    """What a command works through: never a front, only its callback."""

    manager: SessionManager
    session: Session
    options_changed: OptionsChanged
    scope: anyio.CancelScope | None = None  # the prompt's claim: a command that runs a turn


async def no_options_changed(option: str) -> None:
    """For a front that shows no session options."""


Handler = Callable[[CommandContext, str], Awaitable[str]]
"""Runs a command on its argument text; returns its reply (Markdown, shown as an agent
message), or, for a command that runs a turn, the turn's stop reason."""


def always(ctx: CommandContext) -> bool:
    return True


@dataclass(frozen=True)
class Command:
    name: str  # typed as `/name`
    help: str  # one line: the front's description and the `/help` listing
    run: Handler
    hint: str | None = None  # what the argument is, for a front that prompts for it
    available: Callable[[CommandContext], bool] = always  # offered (and run) only when true
    turn: bool = False  # it runs a turn: its handler shows what it does and returns the stop
