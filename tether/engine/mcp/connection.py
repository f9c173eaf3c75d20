"""One MCP server, connected with the official SDK's stdio or streamable-HTTP client and held
open until the session stops it or the server goes away.

Its tools and prompts are listed as it connects, and listed again when it says they changed
(`list_changes.py`); each request it serves has the server's `timeout`.

The server going away is seen where it happens: the transport's message stream ends (a stdio
server's output closes when it exits; an HTTP transport ends when a request cannot reach the
server). That is noticed before any call waiting on the server is failed, so a turn never
offers the tools of a server it already knows is gone.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO, cast

import anyio
import httpx2
import mcp.types as mt
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from tether import __version__
from tether.engine.history import ImagePart
from tether.engine.mcp.list_changes import ListChanges, ListName
from tether.engine.mcp.results import prompt_parts, to_output
from tether.engine.mcp.server_state import LeftOut
from tether.engine.mcp.spec import PromptArgument, RemotePrompt, RemoteTool, ServerSpec
from tether.engine.mcp.stdio_transport import StdioTransport
from tether.engine.mcp.watched_streams import Streams, Watched
from tether.engine.registry import ToolOutput
from tether.errors import McpServerFailed, ToolError

log = logging.getLogger("tether.mcp")

CONNECT_TIMEOUT = 60.0  # seconds for a server to start and list its tools (npx may download)
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults
MAX_PAGES = 100  # tools/list pages read from one server
MAX_PROMPTS = 256  # prompts of one server offered as slash commands
RELIST_WAIT = 10.0  # seconds a call's result waits for the lists it changed to be read again
STDERR_TAIL = 2048  # bytes of a server's stderr shown when it fails

Changed = Callable[[set[ListName]], Awaitable[None]]


class Connection:
    """A live connection: `run` holds it; `call` and `tools` serve the session meanwhile."""

    def __init__(self, spec: ServerSpec, cwd: Path) -> None:
        self.spec = spec
        self.cwd = cwd
        self.tools: list[RemoteTool] = []
        self.prompts: list[RemotePrompt] = []
        # Of the last listing: tools the MCP spec refuses (each with why), and how many were
        # past MAX_TOOLS (left out unread). Set with `tools`, so the three agree.
        self.invalid: list[LeftOut] = []
        self.dropped = 0
        self.instructions = ""
        self._client: Client | None = None
        self._ended = anyio.Event()  # the transport ended, or `stop` was called
        self._stopping = False
        self._stderr: TextIO | None = None
        self._stdio: StdioTransport | None = None
        self._watched: Watched | None = None
        self._changes = ListChanges(spec.name)

    @property
    def alive(self) -> bool:
        return self._client is not None and not self._ended.is_set()

    def stop(self) -> None:
        """End `run` quietly: the server is shut down as the SDK does (stdin closed, then the
        process group terminated, then killed), or its HTTP session deleted."""
        self._stopping = True
        self._ended.set()

    async def run(self, ready: Callable[[], Awaitable[None]], changed: Changed) -> None:
        """Connect, list the tools and prompts, call `ready`, and hold the connection until
        `stop`, listing them again (then `changed`) when the server says they changed.
        Raises McpServerFailed when the server cannot start or goes away on its own."""
        with contextlib.ExitStack() as files:
            if self.spec.transport == "stdio":
                self._stderr = cast(TextIO, files.enter_context(tempfile.TemporaryFile("w+")))
            try:
                await self._hold(ready, changed)
            except McpServerFailed:
                raise
            except Exception as exc:
                reason = self._stdio.problem if self._stdio and self._stdio.problem else None
                started = self._client is not None
                raise McpServerFailed(started, reason or _reason(exc), self._tail()) from exc
            finally:
                self._client = None
                self._changes.close()
            if not self._stopping:
                why = self._stdio.problem if self._stdio and self._stdio.problem else None
                raise McpServerFailed(True, why or "the server went away", self._tail())

    async def _hold(self, ready: Callable[[], Awaitable[None]], changed: Changed) -> None:
        started = False
        watched = self._watched = Watched(self._transport(), self._ended)
        with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT) as limit:
            async with Client(
                watched,
                client_info=mt.Implementation(name="tether", version=__version__),
                cache=None,
                logging_callback=self._server_log,
                message_handler=self._changes.on_message,
            ) as client:
                watched.lists.version = client.protocol_version  # what the SDK checks against
                await self._read_tools(client)
                self.prompts = await _list_prompts(client, self.spec.name)
                self.instructions = (client.instructions or "").strip()
                self._client = client
                limit.deadline = math.inf
                started = True
                async with anyio.create_task_group() as tg:
                    await tg.start(self._changes.listen, client)
                    tg.start_soon(self._follow, client, changed)
                    await ready()
                    await self._ended.wait()
                    tg.cancel_scope.cancel()
        if not started and not self._stopping:
            reason = f"it did not answer within {CONNECT_TIMEOUT:g} s"
            raise McpServerFailed(False, reason, self._tail())

    async def _follow(self, client: Client, changed: Changed) -> None:
        """List again what the server said changed, then tell `changed` (a list that cannot
        be read keeps its last version)."""
        while True:
            stale = await self._changes.next()
            try:
                with anyio.fail_after(self.spec.request_timeout):
                    if "tools" in stale:
                        await self._read_tools(client)
                    if "prompts" in stale:
                        self.prompts = await _list_prompts(client, self.spec.name)
                await changed(stale)
            except (MCPError, TimeoutError, ValidationError, RuntimeError) as exc:
                log.warning("MCP server %s: listing again failed: %s", self.spec.name, exc)
            finally:
                self._changes.done()

    async def _read_tools(self, client: Client) -> None:
        """List the tools; those the MCP spec refuses are left out one by one (`invalid`)."""
        tools = await _list_tools(client)
        assert self._watched is not None
        lists = self._watched.lists
        self.tools, self.invalid, self.dropped = tools, list(lists.invalid), lists.dropped

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Streams]:
        spec = self.spec
        if spec.transport == "stdio":
            assert self._stderr is not None
            if os.name == "posix":
                self._stdio = StdioTransport(
                    spec.command, list(spec.args), dict(spec.env), self.cwd, self._stderr
                )
                return self._stdio
            params = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=self.cwd
            )
            return stdio_client(params, errlog=self._stderr)
        http = httpx2.AsyncClient(headers=dict(spec.headers), timeout=HTTP_TIMEOUT)
        return _HttpTransport(http, spec.url)

    async def call(self, tool: str, arguments: dict[str, Any], *, images: bool) -> ToolOutput:
        """Call a tool (`images`: the model takes images); a cancelled call cancels the MCP
        request (the SDK tells the server)."""
        client = self._live()
        with self._failures(f"the call of {tool}"):
            result = await client.call_tool(tool, arguments)
        with anyio.move_on_after(RELIST_WAIT):  # the tools it changed meanwhile: offered next
            await self._changes.caught_up()
        return to_output(result, images=images)

    async def get_prompt(
        self, name: str, arguments: dict[str, str], *, images: bool
    ) -> tuple[str, list[ImagePart]]:
        """A prompt's text (and pictures) for these arguments."""
        client = self._live()
        with self._failures(f"the prompt {name}"):
            result = await client.get_prompt(name, arguments)
        return prompt_parts(result, images=images)

    def _live(self) -> Client:
        client = self._client
        if client is None or self._ended.is_set():
            raise ToolError("MCP_SERVER_GONE", f"the MCP server {self.spec.name} is not running")
        return client

    @contextlib.contextmanager
    def _failures(self, what: str) -> Iterator[None]:
        """A request within the server's timeout, its failures as ToolErrors."""
        name, timeout = self.spec.name, self.spec.request_timeout
        try:
            with anyio.fail_after(timeout):
                yield
        except TimeoutError:
            raise ToolError(
                "TOOL_TIMEOUT",
                f"the MCP server {name} did not answer {what} within {timeout:g} s (its "
                f"timeout: `timeout` in [mcp_servers.{name}] of the config file)",
            ) from None
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED:
                self._ended.set()  # its tools leave now, not once the connection has unwound
                raise ToolError(
                    "MCP_SERVER_GONE", f"the MCP server {name} went away during {what}"
                ) from None
            raise ToolError("MCP_ERROR", f"MCP server {name}: {exc.message}") from None
        except (RuntimeError, ValueError) as exc:  # a malformed or non-conforming result
            raise ToolError("MCP_ERROR", f"MCP server {name}: {exc}") from None

    async def _server_log(self, params: mt.LoggingMessageNotificationParams) -> None:
        log.debug("MCP server %s (%s): %s", self.spec.name, params.level, params.data)

    def _tail(self) -> str:
        """The end of what the server wrote to stderr (stdio servers)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, STDERR_TAIL, max(0, size - STDERR_TAIL))
        return data.decode("utf-8", "replace").strip()


async def _list_tools(client: Client) -> list[RemoteTool]:
    if client.server_capabilities.tools is None:
        return []
    tools: list[mt.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return [_remote(t) for t in tools]


async def _list_prompts(client: Client, server: str) -> list[RemotePrompt]:
    """The server's prompts; none when it lists them wrongly (its tools still serve)."""
    if client.server_capabilities.prompts is None:
        return []
    prompts: list[mt.Prompt] = []
    cursor: str | None = None
    try:
        for _ in range(MAX_PAGES):
            page = await client.list_prompts(cursor=cursor)
            prompts += page.prompts
            cursor = page.next_cursor
            if not cursor or len(prompts) >= MAX_PROMPTS:
                break
    except (MCPError, ValidationError, RuntimeError) as exc:
        log.warning("MCP server %s: its prompts cannot be listed: %s", server, exc)
        return []
    return [_prompt(p) for p in prompts[:MAX_PROMPTS]]


def _prompt(p: mt.Prompt) -> RemotePrompt:
    arguments = [
        PromptArgument(a.name, a.description or "", bool(a.required)) for a in p.arguments or []
    ]
    return RemotePrompt(p.name, p.description or "", arguments, p.title or "")


def _remote(t: mt.Tool) -> RemoteTool:
    hints = t.annotations
    return RemoteTool(
        name=t.name,
        description=t.description or "",
        input_schema=t.input_schema,
        title=t.title or (hints.title if hints and hints.title else ""),
        read_only_hint=bool(hints and hints.read_only_hint),
    )


def _reason(exc: BaseException) -> str:
    """What went wrong, in a line: the first real failure inside any exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        if exc.code == mt.CONNECTION_CLOSED:
            return "the server closed the connection"
        return exc.message
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    if isinstance(exc, httpx2.HTTPError):
        return f"{type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _HttpTransport(contextlib.AbstractAsyncContextManager[Streams]):
    """The SDK's streamable-HTTP client over our own httpx2 client (the configured headers),
    which is closed with it."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self._stack = contextlib.AsyncExitStack()
        self._http = http
        self._url = url

    async def __aenter__(self) -> Streams:
        await self._stack.__aenter__()
        try:
            await self._stack.enter_async_context(self._http)
            return await self._stack.enter_async_context(
                streamable_http_client(self._url, http_client=self._http)
            )
        except BaseException:
            await self._stack.__aexit__(None, None, None)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc, tb)
