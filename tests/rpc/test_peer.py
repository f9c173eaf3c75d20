"""The JSON-RPC peer in both directions, over the in-memory transport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

from tether.rpc.peer import Peer
from tether.rpc.rpc_error import ConnectionClosed, RpcError
from tether.transports.framing import NdjsonFramer
from tether.transports.memory import MemoryByteStream, memory_pair
from tether.transports.streams import FramedStream

pytestmark = pytest.mark.anyio


class Params(msgspec.Struct, rename="camel"):
    session_id: str
    count: int = 0


@asynccontextmanager
async def pair() -> AsyncIterator[tuple[Peer, Peer, MemoryByteStream]]:
    a, b = memory_pair()
    left = Peer(FramedStream(a, NdjsonFramer()), name="left")
    right = Peer(FramedStream(b, NdjsonFramer()), name="right")
    async with anyio.create_task_group() as tg:
        tg.start_soon(left.run)
        tg.start_soon(right.run)
        yield left, right, b
        tg.cancel_scope.cancel()
    await a.aclose()
    await b.aclose()


@asynccontextmanager
async def raw_server() -> AsyncIterator[tuple[Peer, MemoryByteStream]]:
    """A peer on one end, raw bytes on the other."""
    a, b = memory_pair()
    server = Peer(FramedStream(a, NdjsonFramer()), name="server")
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        yield server, b
        tg.cancel_scope.cancel()
    await a.aclose()
    await b.aclose()


async def _read(stream: MemoryByteStream) -> dict[str, Any]:
    with anyio.fail_after(5):
        return json.loads(await stream.receive())


async def test_requests_both_ways_and_typed_params() -> None:
    async with pair() as (left, right, _):

        async def double(p: Params) -> dict[str, int]:
            return {"n": p.count * 2}

        right.on_request("double", double, Params)
        left.on_request("ping", lambda p: _const("pong"))
        assert await left.request("double", {"sessionId": "s", "count": 21}) == {"n": 42}
        assert await right.request("ping", {}) == "pong"


async def _const(value: Any) -> Any:
    return value


async def test_concurrent_requests_are_served_concurrently() -> None:
    """The first request can only finish after the second: served one at a time, it would
    never finish."""
    async with pair() as (left, right, _):
        order: list[str] = []
        second_done = anyio.Event()

        async def handler(p: dict[str, Any]) -> str:
            if p["name"] == "first":
                await second_done.wait()
            order.append(p["name"])
            if p["name"] == "second":
                second_done.set()
            return p["name"]

        right.on_request("work", handler)
        results: dict[str, str] = {}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call(name: str) -> None:
                    results[name] = await left.request("work", {"name": name})

                tg.start_soon(call, "first")
                tg.start_soon(call, "second")
        assert order == ["second", "first"] and results == {"first": "first", "second": "second"}


async def test_errors_and_their_codes() -> None:
    async with pair() as (left, right, _):

        async def boom(p: Any) -> None:
            raise ValueError("kaput\nsecret traceback line")

        async def refuse(p: Any) -> None:
            raise RpcError(-32002, "Resource not found: x", {"uri": "x"})

        right.on_request("boom", boom)
        right.on_request("refuse", refuse)
        right.on_request("typed", lambda p: _const(None), Params)
        with pytest.raises(RpcError) as e:
            await left.request("boom", {})
        assert (e.value.code, e.value.message) == (-32603, "Internal error: ValueError: kaput")
        with pytest.raises(RpcError) as e:
            await left.request("refuse", {})
        assert (e.value.code, e.value.data) == (-32002, {"uri": "x"})
        with pytest.raises(RpcError) as e:
            await left.request("typed", {"sessionId": 5})
        assert e.value.code == -32602 and "$.sessionId" in e.value.message
        with pytest.raises(RpcError) as e:
            await left.request("nothing", {})
        assert e.value.code == -32601


async def test_cancel_request_both_ways() -> None:
    async with pair() as (left, right, _):
        started = anyio.Event()
        cancelled = anyio.Event()

        async def forever(p: Any) -> None:
            started.set()
            try:
                await anyio.sleep_forever()
            finally:
                cancelled.set()

        right.on_request("forever", forever)
        with anyio.move_on_after(10):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await left.request("forever", {})

                tg.start_soon(call)
                await started.wait()
                tg.cancel_scope.cancel()  # the caller gives up: left sends $/cancel_request
        with anyio.fail_after(5):
            await cancelled.wait()  # ... and right's handler was cancelled


async def test_cancelled_handler_answers_32800() -> None:
    async with raw_server() as (server, raw):
        started = anyio.Event()

        async def forever(p: Any) -> None:
            started.set()
            await anyio.sleep_forever()

        server.on_request("forever", forever)
        await raw.send(b'{"jsonrpc":"2.0","id":"r1","method":"forever","params":{}}\n')
        await started.wait()
        await raw.send(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r1"}}\n'
        )
        reply = await _read(raw)
        assert reply == {
            "jsonrpc": "2.0",
            "id": "r1",
            "error": {"code": -32800, "message": "Request cancelled"},
        }


async def test_garbage_in_keeps_serving() -> None:
    async with raw_server() as (server, raw):
        server.on_request("echo", _const)
        await raw.send(b"not json\n")
        assert (await _read(raw))["error"]["code"] == -32700
        await raw.send(b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}\n')
        assert (await _read(raw))["error"]["code"] == -32600
        await raw.send(b'{"jsonrpc":"2.0","id":2,"method":"echo","params":[1]}\n')
        assert (await _read(raw))["result"] == [1]


async def test_writes_keep_their_order() -> None:
    async with pair() as (left, right, _):
        seen: list[int] = []
        all_seen = anyio.Event()

        async def note(p: dict[str, int]) -> None:
            seen.append(p["i"])
            if len(seen) == 500:
                all_seen.set()

        right.on_notification("note", note)
        for i in range(500):
            await left.notify("note", {"i": i})
        with anyio.fail_after(5):
            await all_seen.wait()
        assert seen == list(range(500))


async def test_pending_requests_fail_when_the_other_side_goes_away() -> None:
    async with pair() as (left, right, b):
        started = anyio.Event()

        async def forever(p: Any) -> None:
            started.set()
            await anyio.sleep_forever()

        right.on_request("forever", forever)

        async def hang_up() -> None:
            await started.wait()
            await b.aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang_up)
            with pytest.raises(ConnectionClosed):
                await left.request("forever", {})
