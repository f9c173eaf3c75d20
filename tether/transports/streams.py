"""The byte-stream interface every transport offers, and the framed stream built on it."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

from tether.transports.framing import Frame

if TYPE_CHECKING:
    from tether.transports.framing import Framer


class ByteStream(Protocol):
    async def receive(self) -> bytes:
        """The next chunk of input; b"" once the input has ended."""
        ...

    async def send(self, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


class FramedStream:
    """Frames over a ByteStream: `receive_frame` returns None at end of input."""

    def __init__(self, stream: ByteStream, framer: Framer) -> None:
        self.stream = stream
        self.framer = framer
        self._ready: deque[Frame] = deque()
        self._eof = False

    def push_frames(self, frames: list[Frame]) -> None:
        """Frames read before this stream existed (the fast initialize path)."""
        self._ready.extend(frames)

    async def receive_frame(self) -> Frame | None:
        while not self._ready:
            if self._eof:
                return None
            chunk = await self.stream.receive()
            if chunk:
                self._ready.extend(self.framer.feed(chunk))
            else:
                self._eof = True
                self._ready.extend(self.framer.finish())
        return self._ready.popleft()

    async def send_payloads(self, payloads: list[bytes]) -> None:
        """Write several encoded messages with one write: the writer coalesces bursts."""
        encode = self.framer.encode
        await self.stream.send(b"".join([encode(p) for p in payloads]))

    async def aclose(self) -> None:
        await self.stream.aclose()
