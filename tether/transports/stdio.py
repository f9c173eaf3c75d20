"""The process's stdin/stdout as a ByteStream that never blocks the event loop.

The protocol uses private duplicates of fds 0 and 1 (see stdio_fds.claim_stdio).
POSIX uses non-blocking fds with anyio's readiness waits; Windows (whose pipes are not selectable)
reads with a daemon thread that can never keep the process alive.
"""

from __future__ import annotations

import os
import sys
import threading

import anyio
import anyio.lowlevel


def uses_thread() -> bool:
    """Read with a thread: on Windows, or when TETHER_STDIO_THREAD=1 says so (decided per stream,
    not at import: a warm worker imported this module in its server, under another environment)."""
    return sys.platform == "win32" or os.environ.get("TETHER_STDIO_THREAD") == "1"


class StdioStream:
    def __init__(self, in_fd: int, out_fd: int) -> None:
        self._in = in_fd
        self._out = out_fd
        self._thread_recv: anyio.abc.ObjectReceiveStream[bytes] | None = None
        self._threaded = uses_thread()
        if not self._threaded:
            os.set_blocking(in_fd, False)
            os.set_blocking(out_fd, False)

    async def receive(self) -> bytes:
        if self._threaded:
            return await self._receive_threaded()
        while True:
            try:
                return os.read(self._in, 1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(self._in)

    async def _receive_threaded(self) -> bytes:
        if self._thread_recv is None:
            self._thread_recv = self._start_pump()
        try:
            return await self._thread_recv.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    def _start_pump(self) -> anyio.abc.ObjectReceiveStream[bytes]:
        send, recv = anyio.create_memory_object_stream[bytes](64)
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            try:
                while chunk := os.read(self._in, 1 << 16):
                    anyio.from_thread.run(send.send, chunk, token=token)
            except (OSError, RuntimeError):
                pass
            finally:
                try:
                    anyio.from_thread.run_sync(send.close, token=token)
                except RuntimeError:
                    pass  # the event loop is gone: nobody is listening any more

        threading.Thread(target=pump, name="tether-stdin", daemon=True).start()
        return recv

    async def send(self, data: bytes) -> None:
        if self._threaded:
            await anyio.to_thread.run_sync(_write_all_blocking, self._out, data)
            return
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._out, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._out)

    async def aclose(self) -> None:
        for fd in (self._in, self._out):
            try:
                # O_NONBLOCK lives on the shared open file description: give it back blocking.
                os.set_blocking(fd, True)
                os.close(fd)
            except OSError:
                pass


def _write_all_blocking(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
