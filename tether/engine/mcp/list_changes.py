"""A server saying its tools or prompts changed: `notifications/tools/list_changed` (and the
prompts' one), which a server of the handshake era sends unasked and a 2026-07-28 server sends
on a `subscriptions/listen` stream the client opens. Both only mark the list stale here; the
connection reads it again from its own task, since the SDK delivers notifications from the
loop that also reads the answers (a request made there would wait for itself).

A server that changes its tools while serving a call says so before it answers; the call then
waits for the new list (`caught_up`), so the model's next request already carries it.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

import anyio
import anyio.abc
import mcp.types as mt
from mcp import Client, MCPError
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import (
    ListenNotSupportedError,
    PromptsListChanged,
    ServerEvent,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger("tether.mcp")

ListName = Literal["tools", "prompts"]
LISTEN_WAIT = 10.0  # seconds for a server to open the change stream it offers
LISTEN_TRIES = 20  # change streams opened for one connection (one that ends is opened again)
LISTEN_RETRY = 1.0  # seconds before opening it again, times the attempts so far


class ListChanges:
    """The lists a server said changed since `next` last returned."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._stale: set[ListName] = set()
        self._wake = anyio.Event()
        self._marked = 0  # changes told so far
        self._taken = 0  # of them, the ones `next` returned
        self._handled = 0  # of them, the ones read again (`done`)
        self._settled = anyio.Event()

    def mark(self, which: ListName) -> None:
        self._stale.add(which)
        self._marked += 1
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
        self._taken = self._marked
        return stale

    def done(self) -> None:
        """What `next` returned is read again (or could not be)."""
        self._handled = self._taken
        self._settled.set()
        self._settled = anyio.Event()

    def close(self) -> None:
        """The connection ended: nothing more will be read; nobody waits for it."""
        self._taken = self._marked
        self.done()

    async def caught_up(self) -> None:
        """Wait until every change told so far is read again."""
        while self._handled < self._marked:
            await self._settled.wait()

    async def listen(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold open the change stream a 2026-07-28 server offers (started once the first one
        is open, so a change made by the first call is not missed), and mark what it reports;
        a stream that ends is opened again, both lists then read again (what changed meanwhile
        is unknown). A server of the handshake era needs no stream: it notifies unasked."""
        caps = client.server_capabilities
        tools = bool(caps.tools and caps.tools.list_changed)
        prompts = bool(caps.prompts and caps.prompts.list_changed)
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (tools or prompts):
            task_status.started()
            return
        started = False
        failures = 0  # streams in a row that could not be opened or ended at once
        while failures < LISTEN_TRIES:
            if failures:
                await anyio.sleep(LISTEN_RETRY * failures)
            failures += 1
            opened = math.inf
            try:
                with anyio.CancelScope(deadline=anyio.current_time() + LISTEN_WAIT) as limit:
                    async with client.listen(
                        tools_list_changed=tools, prompts_list_changed=prompts
                    ) as stream:
                        limit.deadline = math.inf
                        if started:  # opened again: what changed meanwhile is unknown
                            self._mark_all(tools=tools, prompts=prompts)
                        else:
                            started = True
                            task_status.started()
                        opened = anyio.current_time()
                        async for event in stream:
                            self._event(event)
            except ListenNotSupportedError as exc:
                log.info("MCP server %s: no change stream (%s)", self._server, exc)
                break
            except (SubscriptionLost, MCPError, TimeoutError) as exc:
                log.info("MCP server %s: its change stream ended (%s)", self._server, exc)
            if anyio.current_time() - opened > LISTEN_WAIT:
                failures = 0  # it served a while: open it again at once
            if not started:  # its lists are then read once, at the start: the server works on
                started = True
                task_status.started()
        if not started:
            task_status.started()

    def _mark_all(self, *, tools: bool, prompts: bool) -> None:
        if tools:
            self.mark("tools")
        if prompts:
            self.mark("prompts")

    def _event(self, event: ServerEvent) -> None:
        if isinstance(event, ToolsListChanged):
            self.mark("tools")
        elif isinstance(event, PromptsListChanged):
            self.mark("prompts")
