"""One MCP server, connected with the official SDK's stdio or streamable-HTTP client and held
open until the session stops it or the server goes away.

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
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO, cast

import anyio
import httpx2
import mcp.types as mt
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from tether import __version__
from tether.engine.mcp.results import to_output
from tether.engine.mcp.spec import RemoteTool, ServerFailed, ServerSpec
from tether.engine.mcp.stdio_transport import StdioTransport
from tether.engine.registry import ToolError, ToolOutput

log = logging.getLogger("tether.mcp")

CONNECT_TIMEOUT = 60.0  # seconds for a server to start and list its tools (npx may download)
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults
MAX_PAGES = 100  # tools/list pages read from one server
MAX_TOOLS = 256  # tools of one server offered to the model (every request carries every tool)
STDERR_TAIL = 2048  # bytes of a server's stderr shown when it fails

Streams = tuple[Any, Any]


class Connection:
    """A live connection: `run` holds it; `call` and `tools` serve the session meanwhile."""

    def __init__(self, spec: ServerSpec, cwd: Path) -> None:
        self.spec = spec
        self.cwd = cwd
        self.tools: list[RemoteTool] = []
        self.invalid: list[str] = []  # tools the server listed that the MCP spec refuses: why
        self.instructions = ""
        self._client: Client | None = None
        self._ended = anyio.Event()  # the transport ended, or `stop` was called
        self._stopping = False
        self._stderr: TextIO | None = None
        self._stdio: StdioTransport | None = None
        self._watched: _Watched | None = None

    @property
    def dropped(self) -> int:
        """Tools the server listed past MAX_TOOLS (left out unread)."""
        return self._watched.lists.dropped if self._watched is not None else 0

    @property
    def alive(self) -> bool:
        return self._client is not None and not self._ended.is_set()

    def stop(self) -> None:
        """End `run` quietly: the server is shut down as the SDK does (stdin closed, then the
        process group terminated, then killed), or its HTTP session deleted."""
        self._stopping = True
        self._ended.set()

    async def run(self, ready: Callable[[], Awaitable[None]]) -> None:
        """Connect, list the tools, call `ready`, and hold the connection until `stop`.
        Raises ServerFailed when the server cannot start or goes away on its own."""
        with contextlib.ExitStack() as files:
            if self.spec.transport == "stdio":
                self._stderr = cast(TextIO, files.enter_context(tempfile.TemporaryFile("w+")))
            try:
                await self._hold(ready)
            except ServerFailed:
                raise
            except Exception as exc:
                reason = self._stdio.problem if self._stdio and self._stdio.problem else None
                started = self._client is not None
                raise ServerFailed(started, reason or _reason(exc), self._tail()) from exc
            finally:
                self._client = None
            if not self._stopping:
                why = self._stdio.problem if self._stdio and self._stdio.problem else None
                raise ServerFailed(True, why or "the server went away", self._tail())

    async def _hold(self, ready: Callable[[], Awaitable[None]]) -> None:
        started = False
        watched = self._watched = _Watched(self._transport(), self._ended, self.invalid)
        with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT) as limit:
            async with Client(
                watched,
                client_info=mt.Implementation(name="tether", version=__version__),
                cache=None,
                logging_callback=self._server_log,
            ) as client:
                self.tools = await _list_tools(client)
                self.instructions = (client.instructions or "").strip()
                self._client = client
                limit.deadline = math.inf
                started = True
                await ready()
                await self._ended.wait()
        if not started and not self._stopping:
            reason = f"it did not answer within {CONNECT_TIMEOUT:g} s"
            raise ServerFailed(False, reason, self._tail())

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

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call a tool; a cancelled call cancels the MCP request (the SDK tells the server)."""
        client = self._client
        if client is None or self._ended.is_set():
            raise ToolError("MCP_SERVER_GONE", f"the MCP server {self.spec.name} is not running")
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED:
                self._ended.set()  # its tools leave now, not once the connection has unwound
                raise ToolError(
                    "MCP_SERVER_GONE", f"the MCP server {self.spec.name} went away during the call"
                ) from None
            raise ToolError("MCP_ERROR", f"MCP server {self.spec.name}: {exc.message}") from None
        except (RuntimeError, ValueError) as exc:  # a malformed or non-conforming result
            raise ToolError("MCP_ERROR", f"MCP server {self.spec.name}: {exc}") from None
        return to_output(result)

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


def _first(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    e = errors[0]
    where = ".".join(str(p) for p in e.get("loc", ()))
    return f"{where}: {e.get('msg', '')}" if where else str(e.get("msg", ""))


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


class _Watched(contextlib.AbstractAsyncContextManager[Streams]):
    """A transport whose message stream sets `ended` when it ends, and whose tool lists reach
    the SDK without the tools the MCP spec refuses (the SDK would refuse the whole list for
    one): each is left out on its own, its reason added to `invalid`."""

    def __init__(
        self,
        inner: contextlib.AbstractAsyncContextManager[Streams],
        ended: anyio.Event,
        invalid: list[str],
    ) -> None:
        self._inner = inner
        self._ended = ended
        self.lists = _ToolLists(invalid)

    async def __aenter__(self) -> Streams:
        read, write = await self._inner.__aenter__()
        return _WatchedReader(read, self._ended, self.lists), _WatchedWriter(write, self.lists)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


class _ToolLists:
    """Which requests are `tools/list`, and the tools their answers held that were invalid."""

    def __init__(self, invalid: list[str]) -> None:
        self.pending: set[Any] = set()
        self.invalid = invalid
        self.kept = 0  # valid tools passed on so far (at most MAX_TOOLS)
        self.dropped = 0  # tools past MAX_TOOLS, never looked at

    def sent(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, mt.JSONRPCRequest) and message.method == "tools/list":
            self.pending.add(message.id)

    def received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if not isinstance(message, mt.JSONRPCResponse) or message.id not in self.pending:
            return item
        self.pending.discard(message.id)
        listed = message.result.get("tools")
        if not isinstance(listed, list):
            return item
        kept: list[Any] = []
        room = max(MAX_TOOLS - self.kept, 0)
        self.dropped += max(len(listed) - room, 0)
        for raw in listed[:room]:  # checking 20,000 tools on the event loop takes seconds
            try:
                mt.Tool.model_validate(raw)
            except ValidationError as exc:
                name = raw.get("name") if isinstance(raw, dict) else None
                self.invalid.append(f"{name or '(no name)'}: not a valid MCP tool ({_first(exc)})")
                continue
            kept.append(raw)
        self.kept += len(kept)
        if len(kept) == len(listed):
            return item
        result = {**message.result, "tools": kept}
        return SessionMessage(
            mt.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result), item.metadata
        )


class _WatchedWriter:
    """The client's message stream, passed through; its `tools/list` requests noted."""

    def __init__(self, inner: Any, lists: _ToolLists) -> None:
        self._inner = inner
        self._lists = lists

    async def send(self, item: Any) -> None:
        self._lists.sent(item)
        await self._inner.send(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedWriter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _WatchedReader:
    """The server's message stream, passed through; its end is noted before the SDK sees it."""

    def __init__(self, inner: Any, ended: anyio.Event, lists: _ToolLists) -> None:
        self._inner = inner
        self._ended = ended
        self._lists = lists

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's context from the stream
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return self._lists.received(await self._inner.receive())
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> _WatchedReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReader:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
