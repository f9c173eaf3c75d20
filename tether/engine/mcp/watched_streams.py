"""A server's message streams as the connection sees them: their end noted before the SDK
sees it (so a turn never offers the tools of a server already gone), and their tool lists
passed on without the tools the MCP spec refuses, each left out on its own with why, and at
most MAX_TOOLS of them.

The SDK checks a `tools/list` result as a whole, first against the negotiated protocol
version's wire types (`mcp.types.methods.validate_server_result`: there `inputSchema.type` must
be `"object"`), then against its own `Tool`: one tool failing either costs every tool of the
server. The raw result is taken here, before the SDK reads it, and each tool is put through
the same two checks on its own (in a result of one tool, so the envelope is checked as the SDK
checks it); the result passed on holds the tools that pass."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any

import anyio
import mcp.types as mt
from mcp.shared.message import SessionMessage
from mcp.types import methods
from pydantic import ValidationError

from tether.engine.mcp.server_state import LeftOut

MAX_TOOLS = 256  # tools of one server offered to the model (every request carries every tool)
FALLBACK_VERSION = "2025-11-25"  # what the SDK checks against before a version is negotiated

Streams = tuple[Any, Any]


class Watched(contextlib.AbstractAsyncContextManager[Streams]):
    """A transport whose message stream sets `ended` when it ends, and whose tool lists reach
    the SDK without the tools the MCP spec refuses (`lists` says which, and why)."""

    def __init__(
        self, inner: contextlib.AbstractAsyncContextManager[Streams], ended: anyio.Event
    ) -> None:
        self._inner = inner
        self._ended = ended
        self.lists = ToolLists()

    async def __aenter__(self) -> Streams:
        read, write = await self._inner.__aenter__()
        return WatchedReader(read, self._ended, self.lists), WatchedWriter(write, self.lists)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


class ToolLists:
    """Which requests are `tools/list`, and, of the listing under way (its pages), the tools
    left out and how many were passed on."""

    def __init__(self) -> None:
        self.pending: set[Any] = set()
        self.version: str | None = None  # the negotiated protocol version, once known
        self.invalid: list[LeftOut] = []
        self.kept = 0  # valid tools passed on so far (at most MAX_TOOLS)
        self.dropped = 0  # tools past MAX_TOOLS, never looked at

    def sent(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, mt.JSONRPCRequest) and message.method == "tools/list":
            self.pending.add(message.id)
            if not (message.params or {}).get("cursor"):  # a new listing: its first page
                self.invalid, self.kept, self.dropped = [], 0, 0

    def received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if not isinstance(message, mt.JSONRPCResponse) or message.id not in self.pending:
            return item
        self.pending.discard(message.id)
        listed = message.result.get("tools")
        envelope = {k: v for k, v in message.result.items() if k != "tools"}
        if not isinstance(listed, list) or self._problem(envelope, None) is not None:
            return item  # not a matter of one tool: the SDK refuses the list, saying why
        kept: list[Any] = []
        room = max(MAX_TOOLS - self.kept, 0)
        self.dropped += max(len(listed) - room, 0)
        for raw in listed[:room]:  # checking 20,000 tools on the event loop takes seconds
            problem = self._problem(envelope, raw)
            if problem is not None:
                name = raw.get("name") if isinstance(raw, dict) else None
                self.invalid.append((str(name or "(no name)"), f"not a valid MCP tool ({problem})"))
                continue
            kept.append(raw)
        self.kept += len(kept)
        if len(kept) == len(listed):
            return item
        result = {**message.result, "tools": kept}
        return SessionMessage(
            mt.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result), item.metadata
        )

    def _problem(self, envelope: dict[str, Any], tool: Any) -> str | None:
        """Why the SDK would refuse a result of `envelope` holding just `tool` (None: no tool),
        or None. Its two checks: the negotiated version's wire types, then its own `Tool`."""
        result = {**envelope, "tools": [] if tool is None else [tool]}
        try:
            methods.validate_server_result("tools/list", self.version or FALLBACK_VERSION, result)
            if tool is not None:
                mt.Tool.model_validate(tool)
        except ValidationError as exc:
            return _first(exc)
        except (KeyError, ValueError):  # a version without tools/list types: the SDK's call
            return None
        return None


class WatchedWriter:
    """The client's message stream, passed through; its `tools/list` requests noted."""

    def __init__(self, inner: Any, lists: ToolLists) -> None:
        self._inner = inner
        self._lists = lists

    async def send(self, item: Any) -> None:
        self._lists.sent(item)
        await self._inner.send(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedWriter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class WatchedReader:
    """The server's message stream, passed through; its end is noted before the SDK sees it."""

    def __init__(self, inner: Any, ended: anyio.Event, lists: ToolLists) -> None:
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

    def __aiter__(self) -> WatchedReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReader:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _first(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    e = errors[0]
    loc = tuple(e.get("loc", ()))
    if loc[:2] == ("tools", 0):  # the one tool of the result checked
        loc = loc[2:]
    where = ".".join(str(p) for p in loc)
    return f"{where}: {e.get('msg', '')}" if where else str(e.get("msg", ""))
