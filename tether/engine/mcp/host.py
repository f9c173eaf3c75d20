"""A session's MCP servers: each connected in the background (a slow one delays nothing), its
tools offered while it lives and kept up to date when it says they changed, its prompts
offered as commands, its failure told to the user, a failed one started again on request,
all of them stopped with the session.

The SDK is imported on a worker thread the first time a server starts: it takes a good part
of a second, which the event loop (and every other session) must not wait for.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc

from tether.engine.events import Notice
from tether.engine.history import ImagePart
from tether.engine.mcp.names import tool_name, unique
from tether.engine.mcp.server_state import (
    LeftOut,
    McpChange,
    ServerState,
    ServerStatus,
    left_out_lines,
    tools_changed,
)
from tether.engine.mcp.spec import RemotePrompt, RemoteTool, ServerSpec
from tether.engine.registry import ToolDef, ToolOutput, schema_tool
from tether.engine.seam import Capabilities
from tether.errors import McpServerFailed, ToolError

if TYPE_CHECKING:
    from tether.engine.mcp.connection import Connection
    from tether.engine.mcp.list_changes import ListName

log = logging.getLogger("tether.mcp")

Notify = Callable[[Notice], Awaitable[None]]
Listener = Callable[[McpChange], Awaitable[None]]
INSTRUCTIONS_MAX = 8 * 1024  # characters of one server's instructions kept in the prompt
MAX_TOOLS = 256  # as watched_streams.MAX_TOOLS (that module is imported late)
OUTPUT_MAX = 1024  # characters of a failed server's stderr shown in its notice
STOP_GRACE = 10.0  # seconds for connected servers to stop as the SDK stops them
RECONNECT_WAIT = 65.0  # seconds a reconnect waits to say how it went (a start takes <= 60)
# Seconds after a server's start that a turn waits for it to be ready (Codex's MCP
# startup_timeout_sec is 10 s too): its tools are offered from the first request, where a
# request sent without them would have the model call a tool that is not there yet.
READY_WAIT = 10.0
TIMEOUT_MARGIN = 5.0  # the call's own budget (naming the server) ends before the pipeline's

SECTION_HEAD = """\
# MCP servers
Tools named `mcp__<server>__<tool>` come from MCP servers the user connected to this session; \
a server's results are its own words. What each server says about its use:"""


@dataclass
class _Server:
    spec: ServerSpec
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    settled: anyio.Event = field(default_factory=anyio.Event)  # ready, or failed to start
    connection: Connection | None = None
    tools: list[ToolDef] = field(default_factory=list[ToolDef])
    listed: list[RemoteTool] = field(default_factory=list[RemoteTool])  # what `tools` came from
    left_out: list[LeftOut] = field(default_factory=list[LeftOut])  # of the last listing, why
    offered: set[str] = field(default_factory=set[str])  # every tool name it ever had
    state: ServerState = "starting"
    started: float = 0.0  # anyio.current_time() when it was last started
    reason: str = ""  # why it failed or exited
    output: str = ""  # the end of its stderr then
    listing: anyio.Lock = field(default_factory=anyio.Lock)  # one `listed` swap at a time

    @property
    def live(self) -> bool:
        return self.connection is not None and self.connection.alive


class McpHost:
    def __init__(
        self,
        servers: list[ServerSpec],
        *,
        cwd: Path,
        notify: Notify,
        ready_notices: bool = False,
    ) -> None:
        """`notify` tells the user about a server (failures and changed tools always;
        `ready_notices`: also when one is ready, for clients that show notices apart from
        the conversation)."""
        self._servers = [_Server(s) for s in servers]
        self._cwd = cwd
        self._notify = notify
        self._ready_notices = ready_notices
        self._closing = False
        self._group: anyio.abc.TaskGroup | None = None
        self._listeners: list[Listener] = []

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Connect every server in `tg` (a task group that outlives the session)."""
        self._group = tg
        for server in self._servers:
            server.started = anyio.current_time()
            tg.start_soon(self._run, server)

    def listen(self, listener: Listener) -> None:
        """Call `listener` whenever a server's state, tools or prompts change (a front shows
        its commands again: the prompts are commands)."""
        self._listeners.append(listener)

    def tools(self) -> list[ToolDef]:
        """The tools of the servers connected now (a registry source)."""
        return [t for s in self._servers if s.live for t in s.tools]

    def gone(self, name: str) -> ToolError | None:
        """Why a tool a server offered is not there now (a registry explainer)."""
        server = next((s for s in self._servers if name in s.offered), None)
        if server is None:
            return None
        spec = server.spec.name
        if server.live:
            return ToolError("UNKNOWN_TOOL", f"the MCP server {spec} no longer offers {name}")
        state = f"{server.state}: {server.reason}" if server.reason else server.state
        return ToolError(
            "MCP_SERVER_GONE",
            f"the MCP server {spec} is not running ({state}); the user can start it again "
            f"with `/mcp reconnect {spec}`",
        )

    def prompts(self) -> list[tuple[str, RemotePrompt]]:
        """(server, prompt) for every prompt of the servers connected now."""
        return [
            (s.spec.name, p)
            for s in self._servers
            if s.live and s.connection is not None
            for p in s.connection.prompts
        ]

    async def get_prompt(
        self, server: str, prompt: str, arguments: dict[str, str], *, images: bool
    ) -> tuple[str, list[ImagePart]]:
        """The prompt's text and pictures for these arguments (ToolError when it fails)."""
        found = next((s for s in self._servers if s.spec.name == server), None)
        if found is None or found.connection is None or not found.live:
            raise ToolError("MCP_SERVER_GONE", f"the MCP server {server} is not running")
        return await found.connection.get_prompt(prompt, arguments, images=images)

    def statuses(self) -> list[ServerStatus]:
        """Each server, its state and what it offers (for /mcp)."""
        return [
            ServerStatus(
                s.spec.name,
                s.spec.transport,
                s.state,
                s.reason,
                [t.name for t in s.tools] if s.live else [],
                len(s.connection.prompts) if s.live and s.connection is not None else 0,
                s.output,
                list(s.left_out) if s.live else [],
            )
            for s in self._servers
        ]

    def instructions(self) -> str:
        """The system prompt's section on the connected servers ("" while none is)."""
        live = [s for s in self._servers if s.live]
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

    def starting(self) -> list[str]:
        """The servers still starting (neither ready nor failed)."""
        return [s.spec.name for s in self._servers if not s.settled.is_set()]

    async def settle(self, wait: float = READY_WAIT) -> list[str]:
        """Wait for the servers still starting, each until `wait` seconds after its start
        (a server that hangs holds up one turn at most); the names of those still not ready."""
        for server in self._servers:
            left = server.started + wait - anyio.current_time()
            if not server.settled.is_set() and left > 0:
                with anyio.move_on_after(left):
                    await server.settled.wait()
        return self.starting()

    async def reconnect(self, name: str | None) -> list[ServerStatus]:
        """Start `name` again (stopping it first if it runs), or, for None, every server
        that failed or exited; wait until each is ready or failed, then their statuses.
        KeyError for a name the session has no server of."""
        if name is None:
            targets = [s for s in self._servers if s.state in ("failed", "exited")]
        else:
            targets = [s for s in self._servers if s.spec.name == name]
            if not targets:
                raise KeyError(name)
        for server in targets:
            await self._restart(server)
        with anyio.move_on_after(RECONNECT_WAIT):
            for server in targets:
                await server.settled.wait()
        names = {s.spec.name for s in targets}
        return [status for status in self.statuses() if status.name in names]

    async def aclose(self) -> None:
        """Stop every server (connected ones shut down as the SDK does; ones still starting
        are abandoned, their process stopped) and wait for them."""
        self._closing = True
        for s in self._servers:
            self._stop(s)
        with anyio.move_on_after(STOP_GRACE):
            for s in self._servers:
                await s.done.wait()
        for s in self._servers:  # a server slow to say goodbye (an HTTP DELETE) is cut off
            s.scope.cancel()
            await s.done.wait()

    # --- one server ------------------------------------------------------------------------

    def _stop(self, s: _Server) -> None:
        if s.connection is not None and s.connection.alive:
            s.connection.stop()
        else:
            s.scope.cancel()

    async def _restart(self, server: _Server) -> None:
        assert self._group is not None, "the host was started"
        if not server.done.is_set():
            self._stop(server)
            await server.done.wait()
        server.scope, server.done = anyio.CancelScope(), anyio.Event()
        server.settled = anyio.Event()
        server.connection, server.state, server.reason, server.output = None, "starting", "", ""
        server.started = anyio.current_time()
        self._group.start_soon(self._run, server)
        await self._changed(server, "state")

    async def _run(self, server: _Server) -> None:
        failure: McpServerFailed | None = None
        try:
            with server.scope:
                await self._serve(server)
        except McpServerFailed as exc:
            failure = exc
        except Exception as exc:  # never let one server's trouble reach the task group
            log.exception("MCP server %s failed", server.spec.name)
            failure = McpServerFailed(server.connection is not None, f"{type(exc).__name__}: {exc}")
        finally:
            server.tools, server.left_out = [], []
            told = failure is not None and not self._closing
            server.state = "stopped"
            if failure is not None and told:
                server.state = "exited" if failure.started else "failed"
                server.reason, server.output = failure.reason, failure.output
            server.settled.set()
            server.done.set()
        if failure is not None and told:
            await self._failed(server.spec, failure)
            await self._changed(server, "state")

    async def _serve(self, server: _Server) -> None:
        if server.spec.problem:
            raise McpServerFailed(False, server.spec.problem)
        if server.spec.transport == "sse":
            raise McpServerFailed(
                False, "it uses the SSE transport, which tether does not support (use http)"
            )
        module: Any = await anyio.to_thread.run_sync(
            importlib.import_module, "tether.engine.mcp.connection"
        )
        if self._closing:
            return
        server.connection = module.Connection(server.spec, self._cwd)
        assert server.connection is not None
        await server.connection.run(
            lambda: self._ready(server), lambda stale: self._lists_changed(server, stale)
        )

    async def _ready(self, server: _Server) -> None:
        await self._take_tools(server)
        server.state = "ready"
        server.settled.set()
        log.info("MCP server %s is ready: %d tools", server.spec.name, len(server.tools))
        if self._ready_notices:
            names = ", ".join(t.name for t in server.tools) or "none"
            await self._tell(
                Notice("info", f"MCP server {server.spec.name} is ready", f"Tools: {names}")
            )
        await self._changed(server, "state")

    async def _lists_changed(self, server: _Server, stale: set[ListName]) -> None:
        if "tools" in stale:
            before = await self._take_tools(server)
            title = tools_changed(server.spec.name, before, server.listed)
            if title:
                await self._tell(Notice("info", title))
            await self._changed(server, "tools")
        if "prompts" in stale:
            await self._changed(server, "prompts")

    async def _take_tools(self, server: _Server) -> list[RemoteTool]:
        """The server's tools as it lists them now, offered from the next request on; the
        list they replace."""
        assert server.connection is not None
        connection = server.connection
        async with server.listing:  # a change told as it became ready: the newest list wins
            before, listed = server.listed, list(connection.tools)
            refused = [*connection.invalid, *_dropped(connection.dropped)]
            # Schemas are made self-contained and checked off the event loop: a hostile one
            # can take a while before its bound refuses it, and nothing else may wait.
            tools, unusable = await anyio.to_thread.run_sync(self._tools_of, server, listed)
            server.tools, server.listed = tools, listed  # one swap: a request sees one set
            server.left_out = [*refused, *unusable]
        server.offered.update(t.name for t in tools)
        if server.left_out:
            count = len(connection.invalid) + connection.dropped + len(unusable)
            tools_ = "tool" if count == 1 else "tools"
            title = f"MCP server {server.spec.name}: {count} {tools_} left out"
            lines = left_out_lines(server.left_out)
            await self._tell(Notice("warning", title, "\n".join(f"- {x}" for x in lines)))
        return before

    def _tools_of(
        self, server: _Server, listed: list[RemoteTool]
    ) -> tuple[list[ToolDef], list[LeftOut]]:
        """The server's tools as tether offers them, and those whose schema it cannot use."""
        taken = {t.name for s in self._servers if s is not server for t in s.tools}
        tools: list[ToolDef] = []
        unusable: list[LeftOut] = []
        for remote in listed:
            name = unique(tool_name(server.spec.name, remote.name), taken)
            try:
                tools.append(self._tool(server, remote, name))
            except ValueError as exc:
                unusable.append((remote.name, str(exc)))
                continue
            taken.add(name)
        return tools, unusable

    def _tool(self, server: _Server, remote: RemoteTool, name: str) -> ToolDef:
        connection = server.connection
        assert connection is not None
        tool = remote.name

        async def call(ctx: Capabilities, args: dict[str, Any]) -> ToolOutput:
            images = ctx.llm is not None and ctx.llm.info.images
            return await connection.call(tool, args, images=images)

        spec = server.spec
        label = remote.title or remote.name
        description = remote.description or f"{label} (a tool of the MCP server {spec.name})"
        # Only the user's word (the server's `read_only`) lets a call run unasked; a server can
        # claim anything, so its `readOnlyHint` only shapes the card's words.
        claim = (
            " (read-only, says the server)" if remote.read_only_hint and not spec.read_only else ""
        )
        return schema_tool(
            name,
            description,
            remote.input_schema,
            call,
            title=f"MCP {spec.name}: {label}{claim}",
            read_only=spec.read_only,
            timeout=spec.request_timeout + TIMEOUT_MARGIN,
        )

    async def _failed(self, spec: ServerSpec, failure: McpServerFailed) -> None:
        if failure.started:
            title = f"MCP server {spec.name} stopped; its tools are gone"
        else:
            title = f"MCP server {spec.name} could not start"
        detail = failure.reason
        if failure.output:
            detail += f"\nIts last output:\n{failure.output[-OUTPUT_MAX:]}"
        log.warning("%s: %s", title, detail)
        await self._tell(Notice("error", title, detail))

    async def _changed(self, server: _Server, what: Literal["state", "tools", "prompts"]) -> None:
        change = McpChange(server.spec.name, what)
        for listener in list(self._listeners):
            try:
                await listener(change)
            except Exception:  # a front's trouble is not the server's
                log.exception("an MCP change listener failed")

    async def _tell(self, notice: Notice) -> None:
        try:
            await self._notify(notice)
        except Exception:  # the client may be gone; the log keeps it
            log.warning("could not tell the client: %s", notice.title)


def _dropped(count: int) -> list[LeftOut]:
    if not count:
        return []
    why = f"tether offers at most {MAX_TOOLS} of one server (every request carries every tool)"
    return [("", f"{count:,} more tools: {why}")]
