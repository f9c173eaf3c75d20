"""A stored session opened again: what the model is told at the first turn a new tether process
runs in it (the PTYs of the process before are gone), the move to another folder when the client
opens it from one (the front asks the user first: keep the old folder, move, or abort), and the
host notices said at the head of that turn."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tether.engine import events as ev
from tether.engine.history import AssistantMessage, UserPart
from tether.engine.sessions import host_notices
from tether.engine.sessions.runtime import SessionRuntime
from tether.engine.sessions.state import Session

Emit = Callable[[ev.Event], Awaitable[None]]
PTY_TOOLS = frozenset({"open_pty"})  # what lives in the process and dies with it


async def tell(runtime: SessionRuntime, emit: Emit) -> list[UserPart]:
    """The host notices pending at a turn's start: shown to the user (kept for replay, before
    the prompt), and returned as the head of the prompt's message to the model."""
    s = runtime.session
    if runtime.reopened:
        runtime.reopened = False
        note_restart(s)
    notices, s.state.notices = s.state.notices, []
    for n in notices:
        await emit(ev.Notice("info", n.title, n.text, kept=True))
    return host_notices.parts(notices)


def note_restart(s: Session) -> None:
    """A session whose earlier turns opened PTYs, run by a process other than theirs: the model
    is told they are gone (a session that never had any has nothing to be told)."""
    if any(
        c.name in PTY_TOOLS
        for m in s.history
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
    ):
        s.state.notices = host_notices.add(s.state.notices, host_notices.restarted())


async def move(runtime: SessionRuntime, new_cwd: str) -> None:
    """Bind the session to `new_cwd` (a real path): its root there instead of the old folder,
    the project snapshot retaken at the next prompt, and the model told then."""
    s = runtime.session
    old = s.cwd
    async with runtime.snapshot:  # a snapshot being taken of the old folder finishes first
        s.cwd = new_cwd
        s.state.roots = [new_cwd if r == old else r for r in s.state.roots] or [new_cwd]
        s.state.context, s.state.instruction_files = None, []
    s.state.notices = host_notices.add(s.state.notices, host_notices.moved(old, new_cwd))
