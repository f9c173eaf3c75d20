"""A server's message streams as the connection sees them: their end noted before the SDK
sees it (so a turn never offers the tools of a server already gone), and their tool lists
passed on without the tools the MCP spec refuses (the SDK would refuse the whole list for
one), each left out on its own with why, and at most MAX_TOOLS of them."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any

import anyio
import mcp.types as mt
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

MAX_TOOLS = 256  # tools of one server offered to the model (every request carries every tool)

Streams = tuple[Any, Any]


class Watched(contextlib.AbstractAsyncContextManager[Streams]):
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
        self.lists = ToolLists(invalid)

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
    """Which requests are `tools/list`, and the tools their answers held that were invalid."""

    def __init__(self, invalid: list[str]) -> None:
        self.pending: set[Any] = set()
        self.invalid = invalid
        self.kept = 0  # valid tools passed on so far (at most MAX_TOOLS)
        self.dropped = 0  # tools past MAX_TOOLS, never looked at

    def restart(self) -> None:
        """A new listing begins (the server's tools changed)."""
        self.invalid.clear()
        self.kept = self.dropped = 0

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
    where = ".".join(str(p) for p in e.get("loc", ()))
    return f"{where}: {e.get('msg', '')}" if where else str(e.get("msg", ""))
