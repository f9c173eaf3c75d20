"""A stored session opened again: what the model is told when a new tether process opens it
(its PTYs and running commands are gone), and the move to another folder when the client opens
it from one (the front asks the user first: keep the old folder, move, or abort)."""

from __future__ import annotations

from tether.engine.sessions.host_notices import HostNotice, add, moved, restarted
from tether.engine.sessions.runtime import SessionRuntime
from tether.engine.sessions.state import Session


def note_restart(s: Session) -> HostNotice | None:
    """A session that had a turn, opened by this (new) process: the model is told what the
    restart dropped. None for one that never ran (nothing of it could be gone)."""
    if s.state.context is None:  # the snapshot is taken at the first prompt
        return None
    notice = restarted()
    s.state.notices = add(s.state.notices, notice)
    return notice


async def move(runtime: SessionRuntime, new_cwd: str) -> HostNotice:
    """Bind the session to `new_cwd` (a real path): its root there instead of the old folder,
    the project snapshot retaken at the next prompt, and the model told."""
    s = runtime.session
    old = s.cwd
    async with runtime.snapshot:  # a snapshot being taken of the old folder finishes first
        s.cwd = new_cwd
        s.state.roots = [new_cwd if r == old else r for r in s.state.roots] or [new_cwd]
        s.state.context = None
    notice = moved(old, new_cwd)
    s.state.notices = add(s.state.notices, notice)
    return notice
