"""`tether doctor`'s MCP part: each configured server started as a session starts it, given
the time a turn gives it (host.READY_WAIT), its state and tools (or why it failed) noted, and
stopped again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio

from tether.engine.events import Notice
from tether.engine.mcp.host import READY_WAIT, McpHost
from tether.engine.mcp.server_state import ServerStatus
from tether.engine.mcp.spec import ServerSpec


async def check_servers(specs: Sequence[ServerSpec], cwd: Path) -> list[ServerStatus]:
    """Each server's status once it is ready or failed (or still `starting` after the wait)."""
    if not specs:
        return []

    async def quiet(_notice: Notice) -> None:  # the statuses say it all
        return None

    host = McpHost(list(specs), cwd=cwd, notify=quiet)
    statuses: list[ServerStatus] = []
    async with anyio.create_task_group() as tg:
        host.start(tg)
        await host.settle(READY_WAIT)
        statuses = host.statuses()
        await host.aclose()
    return statuses
