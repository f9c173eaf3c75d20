"""A session's MCP servers: each connected in the background (a slow one delays nothing), its
tools offered while it lives, its failure told to the user, all of them stopped with the
session.

The SDK is imported on a worker thread the first time a server starts: it takes a good part
of a second, which the event loop (and every other session) must not wait for.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from tether.engine.events import Notice
from tether.engine.mcp.names import tool_name, unique
from tether.engine.mcp.spec import RemoteTool, ServerFailed, ServerSpec
from tether.engine.registry import ToolDef, ToolOutput, schema_tool
from tether.engine.seam import Capabilities

if TYPE_CHECKING:
    from tether.engine.mcp.connection import Connection

log = logging.getLogger("tether.mcp")

Notify = Callable[[Notice], Awaitable[None]]
INSTRUCTIONS_MAX = 8 * 1024  # characters of one server's instructions kept in the prompt
MAX_TOOLS = 256  # as connection.MAX_TOOLS (the connection module is imported late)
OUTPUT_MAX = 1024  # characters of a failed server's stderr shown in its notice
STOP_GRACE = 10.0  # seconds for connected servers to stop as the SDK stops them

SECTION_HEAD = """\
# MCP servers
Tools named `mcp__<server>__<tool>` come from MCP servers the user connected to this session; \
a server's results are its own words. What each server says about its use:"""


@dataclass
class _Server:
    spec: ServerSpec
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    connection: Connection | None = None
    tools: list[ToolDef] = field(default_factory=list[ToolDef])


class McpHost:
    def __init__(
        self,
        servers: list[ServerSpec],
        *,
        cwd: Path,
        notify: Notify,
        ready_notices: bool = False,
    ) -> None:
        """`notify` tells the user about a server (failures always; `ready_notices`: also
        when one is ready, for clients that show notices apart from the conversation)."""
        self._servers = [_Server(s) for s in servers]
        self._cwd = cwd
        self._notify = notify
        self._ready_notices = ready_notices
        self._closing = False

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Connect every server in `tg` (a task group that outlives the session)."""
        for server in self._servers:
            tg.start_soon(self._run, server)

    def tools(self) -> list[ToolDef]:
        """The tools of the servers connected now (a registry source)."""
        return [
            t
            for s in self._servers
            if s.connection is not None and s.connection.alive
            for t in s.tools
        ]

    def instructions(self) -> str:
        """The system prompt's section on the connected servers ("" while none is)."""
        live = [s for s in self._servers if s.connection is not None and s.connection.alive]
        if not live:
            return ""
        parts = [SECTION_HEAD]
        for s in live:
            assert s.connection is not None
            text = s.connection.instructions or "(no instructions)"
            if len(text) > INSTRUCTIONS_MAX:
                text = text[:INSTRUCTIONS_MAX] + "\n[... cut]"
            parts.append(f"## {s.spec.name}\n{text}")
        return "\n\n".join(parts)

    async def aclose(self) -> None:
        """Stop every server (connected ones shut down as the SDK does; ones still starting
        are abandoned, their process stopped) and wait for them."""
        self._closing = True
        for s in self._servers:
            if s.connection is not None and s.connection.alive:
                s.connection.stop()
            else:
                s.scope.cancel()
        with anyio.move_on_after(STOP_GRACE):
            for s in self._servers:
                await s.done.wait()
        for s in self._servers:  # a server slow to say goodbye (an HTTP DELETE) is cut off
            s.scope.cancel()
            await s.done.wait()

    # --- one server ------------------------------------------------------------------------

    async def _run(self, server: _Server) -> None:
        failure: ServerFailed | None = None
        try:
            with server.scope:
                await self._serve(server)
        except ServerFailed as exc:
            failure = exc
        except Exception as exc:  # never let one server's trouble reach the task group
            log.exception("MCP server %s failed", server.spec.name)
            failure = ServerFailed(server.connection is not None, f"{type(exc).__name__}: {exc}")
        finally:
            server.tools = []
            server.done.set()
        if failure is not None and not self._closing:
            await self._failed(server.spec, failure)

    async def _serve(self, server: _Server) -> None:
        if server.spec.problem:
            raise ServerFailed(False, server.spec.problem)
        if server.spec.transport == "sse":
            raise ServerFailed(
                False, "it uses the SSE transport, which tether does not support (use http)"
            )
        module: Any = await anyio.to_thread.run_sync(
            importlib.import_module, "tether.engine.mcp.connection"
        )
        if self._closing:
            return
        server.connection = module.Connection(server.spec, self._cwd)
        assert server.connection is not None
        await server.connection.run(lambda: self._ready(server))

    async def _ready(self, server: _Server) -> None:
        assert server.connection is not None
        # Schemas are made self-contained and checked off the event loop: a hostile one can
        # take a while before its bound refuses it, and nothing else may wait meanwhile.
        tools, left_out = await anyio.to_thread.run_sync(self._tools_of, server)
        server.tools = tools
        log.info("MCP server %s is ready: %d tools", server.spec.name, len(tools))
        if left_out:
            await self._tell(
                Notice(
                    "warning",
                    f"MCP server {server.spec.name}: {_count(server, tools)} tools left out",
                    "\n".join(left_out),
                )
            )
        if self._ready_notices:
            names = ", ".join(t.name for t in tools) or "none"
            await self._tell(
                Notice("info", f"MCP server {server.spec.name} is ready", f"Tools: {names}")
            )

    def _tools_of(self, server: _Server) -> tuple[list[ToolDef], list[str]]:
        """The server's tools as tether offers them, and what was left out, with why."""
        assert server.connection is not None
        taken = {t.name for s in self._servers if s is not server for t in s.tools}
        listed = server.connection.tools
        left_out = [f"- {why}" for why in server.connection.invalid]
        if server.connection.dropped:
            left_out.append(
                f"- {server.connection.dropped:,} more tools: tether offers at most "
                f"{MAX_TOOLS} of one server (every request carries every tool)"
            )
        tools: list[ToolDef] = []
        for remote in listed:
            try:
                tools.append(self._tool(server, remote, unique(self._name(server, remote), taken)))
            except ValueError as exc:
                left_out.append(f"- {remote.name}: {exc}")
                continue
            taken.add(tools[-1].name)
        return tools, left_out

    def _name(self, server: _Server, remote: RemoteTool) -> str:
        return tool_name(server.spec.name, remote.name)

    def _tool(self, server: _Server, remote: RemoteTool, name: str) -> ToolDef:
        connection = server.connection
        assert connection is not None
        tool = remote.name

        async def call(ctx: Capabilities, args: dict[str, Any]) -> ToolOutput:
            return await connection.call(tool, args)

        label = remote.title or remote.name
        description = remote.description or f"{label} (a tool of the MCP server {server.spec.name})"
        return schema_tool(
            name,
            description,
            remote.input_schema,
            call,
            title=f"MCP {server.spec.name}: {label}",
            read_only=server.spec.read_only or remote.read_only_hint,
        )

    async def _failed(self, spec: ServerSpec, failure: ServerFailed) -> None:
        if failure.started:
            title = f"MCP server {spec.name} stopped; its tools are gone"
        else:
            title = f"MCP server {spec.name} could not start"
        detail = failure.reason
        if failure.output:
            detail += f"\nIts last output:\n{failure.output[-OUTPUT_MAX:]}"
        log.warning("%s: %s", title, detail)
        await self._tell(Notice("error", title, detail))

    async def _tell(self, notice: Notice) -> None:
        try:
            await self._notify(notice)
        except Exception:  # the client may be gone; the log keeps it
            log.warning("could not tell the client: %s", notice.title)


def _count(server: _Server, tools: list[ToolDef]) -> int:
    c = server.connection
    assert c is not None
    return len(c.tools) + len(c.invalid) + c.dropped - len(tools)
