"""A pseudo-terminal on POSIX (ptyprocess): its program in a session of its own, the terminal's
file descriptor read and written without blocking the event loop."""

from __future__ import annotations

import asyncio
import os
import signal
import termios
from pathlib import Path
from typing import Any

import anyio

from tether.engine.local.processes import exit_status, signal_session, stop_sessions
from tether.errors import SeamError

_CHUNK = 1 << 16


class PosixPty:
    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.pid: int = proc.pid
        self.fd: int = proc.fd
        os.set_blocking(self.fd, False)
        self._status: tuple[int | None, str | None] | None = None

    @classmethod
    def spawn(
        cls, argv: list[str], cwd: Path, env: dict[str, str], size: tuple[int, int]
    ) -> PosixPty:
        from ptyprocess import PtyProcess

        try:
            proc = PtyProcess.spawn(argv, cwd=str(cwd), env=env, dimensions=size)
        except (FileNotFoundError, PermissionError, OSError) as exc:
            raise SeamError("COMMAND_FAILED", f"{argv[0]} could not start: {exc}") from None
        proc.delayafterclose = 0
        proc.delayafterterminate = 0
        return cls(proc)

    async def read(self, wait: float) -> bytes | None:
        if self.fd < 0:
            return None
        with anyio.move_on_after(wait if wait > 0 else 0.001):
            try:
                await anyio.wait_readable(self.fd)
            except (anyio.ClosedResourceError, OSError):
                return None
            try:
                return os.read(self.fd, _CHUNK) or None
            except BlockingIOError:
                return b""
            except OSError:  # EIO: every process holding the terminal is gone
                return None
        return b""

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)

    def echoes(self) -> bool | None:
        # The master's attributes are the terminal's (Linux and the BSDs answer for the
        # slave), so this sees what `getpass` or `stty -echo` set.
        if self.fd < 0:
            return None
        try:
            return bool(termios.tcgetattr(self.fd)[3] & termios.ECHO)
        except termios.error:
            return None

    def status(self) -> tuple[int | None, str | None] | None:
        if self._status is None:
            try:
                alive = self.proc.isalive()
            except Exception:  # reaped elsewhere: it is gone, its status unknown
                self._status = (None, None)
                return self._status
            if not alive:
                code = self.proc.exitstatus
                sig = self.proc.signalstatus
                self._status = exit_status(-sig if sig else code)
        return self._status

    async def stop(self) -> None:
        await stop_sessions([self.pid], hangup=True)

    def kill_now(self) -> None:
        signal_session(self.pid, signal.SIGKILL)

    def release(self) -> None:
        if self.fd >= 0:
            if _in_loop():
                anyio.notify_closing(self.fd)  # wakes a read waiting on it
            self.proc.closed = True
            try:
                self.proc.fileobj.close()
            except OSError:
                pass
            self.fd = -1


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
