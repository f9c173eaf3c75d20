"""Which stored session `--continue` and `--resume ID` mean, asked of the agent (`session/list`,
filtered by the folder): the chat's own small lookup, in ACP terms."""

from __future__ import annotations

import argparse

from tether.cli.chat.chat_agent import ChatAgent
from tether.schemas import acp


class NoSession(Exception):
    """There is nothing to continue: one line for the user."""


async def session_to_load(agent: ChatAgent, args: argparse.Namespace, cwd: str) -> str | None:
    """The id of the session to load, or None for a new one."""
    wanted = getattr(args, "resume", None)
    if isinstance(wanted, str):
        if not wanted.strip():
            raise NoSession("--resume needs a session id (`tether sessions list` shows them)")
        return wanted.strip()
    if not getattr(args, "continue_last", False):
        return None
    found = newest_first(await agent.list_sessions(cwd))
    if not found:
        raise NoSession(f"no session to continue in {cwd}")
    return found[0].session_id


def newest_first(sessions: list[acp.SessionInfo]) -> list[acp.SessionInfo]:
    def when(s: acp.SessionInfo) -> str:
        return s.updated_at if isinstance(s.updated_at, str) else ""

    return sorted(sessions, key=when, reverse=True)
