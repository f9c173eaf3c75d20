"""The peer's outgoing queue: writes in order through one writer, many frames per write.

Putting a frame does not yield to the event loop while the buffer is under its high-water mark,
so a burst of deltas becomes a handful of large writes instead of a loop iteration and a system
call per frame; past the mark, `put` waits for the writer (backpressure).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

HIGH_WATER = 1 << 20

Sender = Callable[[list[bytes]], Awaitable[None]]


class OutboxClosed(Exception):
    pass


class Outbox:
    def __init__(self, high_water: int = HIGH_WATER) -> None:
        self._frames: list[bytes] = []
        self._size = 0
        self._high = high_water
        self._wake = anyio.Event()
        self._drained = anyio.Event()
        self._closing = False
        self.broken = False  # the writer failed: the other side is gone

    async def put(self, payload: bytes) -> None:
        if self._closing or self.broken:
            raise OutboxClosed
        self._frames.append(payload)
        self._size += len(payload)
        self._wake.set()
        if self._size >= self._high:
            await self._drained.wait()

    async def put_all(self, payloads: list[bytes]) -> None:
        """Many frames at once (a replay), with the same backpressure as `put`."""
        if self._closing or self.broken:
            raise OutboxClosed
        self._frames.extend(payloads)
        self._size += sum(len(p) for p in payloads)
        self._wake.set()
        if self._size >= self._high:
            await self._drained.wait()

    def close(self) -> None:
        """Refuse new frames; the writer sends what is queued, then returns."""
        self._closing = True
        self._wake.set()

    async def run(self, send: Sender) -> None:
        """Write queued frames until closed; a failed write marks the outbox broken."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._frames:
                batch, self._frames, self._size = self._frames, [], 0
                drained, self._drained = self._drained, anyio.Event()
                try:
                    await send(batch)
                except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self.broken = True
                    drained.set()
                    self._drained.set()
                    return
                drained.set()
                self._wake.set()  # frames may have arrived while the write was in progress
            elif self._closing:
                return
