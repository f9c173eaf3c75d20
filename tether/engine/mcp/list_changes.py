"""A server saying its tools or prompts changed: `notifications/tools/list_changed` (and the
prompts' one), which a server of the handshake era sends unasked and a 2026-07-28 server sends
on a `subscriptions/listen` stream the client opens. Both only mark the list stale here; the
connection reads it again from its own task, since the SDK delivers notifications from the
loop that also reads the answers (a request made there would wait for itself).
"""

from __future__ import annotations

import logging
from typing import Literal

import anyio
import mcp.types as mt
from mcp import Client, MCPError
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import (
    ListenNotSupportedError,
    PromptsListChanged,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger("tether.mcp")

ListName = Literal["tools", "prompts"]


class ListChanges:
    """The lists a server said changed since `next` last returned."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._stale: set[ListName] = set()
        self._wake = anyio.Event()

    def mark(self, which: ListName) -> None:
        self._stale.add(which)
        self._wake.set()

    async def on_message(self, message: IncomingMessage) -> None:
        """The SDK's message handler: a change notification, whichever way it came."""
        if isinstance(message, mt.ToolListChangedNotification):
            self.mark("tools")
        elif isinstance(message, mt.PromptListChangedNotification):
            self.mark("prompts")
        await anyio.lowlevel.checkpoint()

    async def next(self) -> set[ListName]:
        """Wait until a list changed; which ones (each told once however often it changed)."""
        await self._wake.wait()
        self._wake = anyio.Event()
        stale, self._stale = self._stale, set()
        return stale

    async def listen(self, client: Client) -> None:
        """Open the change stream a 2026-07-28 server offers, and mark what it reports; for
        a server of the handshake era there is nothing to open (it notifies unasked)."""
        caps = client.server_capabilities
        tools = bool(caps.tools and caps.tools.list_changed)
        prompts = bool(caps.prompts and caps.prompts.list_changed)
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (tools or prompts):
            return
        try:
            async with client.listen(tools_list_changed=tools, prompts_list_changed=prompts) as s:
                async for event in s:
                    if isinstance(event, ToolsListChanged):
                        self.mark("tools")
                    elif isinstance(event, PromptsListChanged):
                        self.mark("prompts")
        except (ListenNotSupportedError, SubscriptionLost, MCPError, TimeoutError) as exc:
            # Its lists are then read once, at the start: the server works on.
            log.info("MCP server %s: no change stream (%s)", self._server, exc)
