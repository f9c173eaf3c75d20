"""Which stored session a command-line client continues: `--resume ID` names it, `--continue`
takes the newest of this folder (as the store lists them over ACP's `session/list`), neither
starts a new one. `tether ask` / `-p` and the chat share it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tether.schemas import acp

# The sessions of a folder (an absolute path), newest first: ACP's `session/list` with `cwd`.
ListSessions = Callable[[str], Awaitable[list[acp.SessionInfo]]]


class NoSessionToContinue(Exception):
    """`--continue` in a folder without stored sessions."""


async def pick_session(
    cwd: str, continue_last: bool, resume_id: str | None, list_sessions: ListSessions
) -> str | None:
    """The id of the session to open again, or None for a new one. `resume_id` is taken as
    given: opening it (`session/resume`) says when no such session exists."""
    if resume_id is not None:
        return resume_id
    if not continue_last:
        return None
    sessions = await list_sessions(cwd)
    if not sessions:
        raise NoSessionToContinue(f"no session to continue in {cwd} (start one without -c)")
    return sessions[0].session_id


def acp_lister(
    request: Callable[[acp.ListSessionsRequest], Awaitable[acp.ListSessionsResponse]],
) -> ListSessions:
    """`pick_session`'s lister over an ACP connection: `request` sends `session/list` (the first
    page is enough: it is newest first)."""

    async def listed(cwd: str) -> list[acp.SessionInfo]:
        return (await request(acp.ListSessionsRequest(cwd=cwd))).sessions

    return listed
