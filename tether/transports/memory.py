"""An in-memory duplex pipe pair, for tests and in-process clients."""

from __future__ import annotations

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream


class MemoryByteStream:
    def __init__(self, send: ObjectSendStream[bytes], receive: ObjectReceiveStream[bytes]) -> None:
        self._send = send
        self._receive = receive

    async def receive(self) -> bytes:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    async def send(self, data: bytes) -> None:
        try:
            await self._send.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise BrokenPipeError("peer closed the in-memory stream") from None

    async def aclose(self) -> None:
        """Close both directions: the other end reads end of input, and writes to us fail."""
        await self._send.aclose()
        await self._receive.aclose()

    async def close_output(self) -> None:
        """Close only what we send: the other end reads end of input, we can still read."""
        await self._send.aclose()


def memory_pair(buffer: int = 256) -> tuple[MemoryByteStream, MemoryByteStream]:
    """Two connected byte streams: what one sends the other receives."""
    a_send, b_recv = anyio.create_memory_object_stream[bytes](buffer)
    b_send, a_recv = anyio.create_memory_object_stream[bytes](buffer)
    return MemoryByteStream(a_send, a_recv), MemoryByteStream(b_send, b_recv)
