"""A pseudo-terminal on Windows (pywinpty's ConPTY): its output read by a thread into a queue
(ConPTY has no descriptor to wait on). Written, not exercised here (Linux only)."""

from __future__ import annotations

import math
import queue
import threading
from pathlib import Path
from typing import Any

import anyio

from tether.engine.local.processes import stop_sessions
from tether.errors import SeamError

_CHUNK = 1 << 16


class WindowsPty:  # pragma: no cover - Windows only (pywinpty's ConPTY)
    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.pid: int = proc.pid
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    @classmethod
    def spawn(
        cls, argv: list[str], cwd: Path, env: dict[str, str], size: tuple[int, int]
    ) -> WindowsPty:
        import subprocess

        from winpty import PtyProcess  # pyright: ignore

        try:
            proc = PtyProcess.spawn(
                subprocess.list2cmdline(argv), cwd=str(cwd), env=env, dimensions=size
            )
        except Exception as exc:
            raise SeamError("COMMAND_FAILED", f"{argv[0]} could not start: {exc}") from None
        return cls(proc)

    def _pump(self) -> None:
        try:
            while True:
                text = self.proc.read(_CHUNK)
                self._queue.put(text.encode("utf-8") if isinstance(text, str) else text)
        except Exception:
            self._queue.put(None)

    async def read(self, wait: float) -> bytes | None:
        deadline = anyio.current_time() + (wait if math.isfinite(wait) else 1e9)
        while True:
            try:
                return self._queue.get_nowait()
            except queue.Empty:
                if anyio.current_time() >= deadline:
                    return b""
                await anyio.sleep(0.02)

    async def write(self, data: bytes) -> None:
        await anyio.to_thread.run_sync(self.proc.write, data.decode("utf-8", "replace"))

    def echoes(self) -> bool | None:
        return None  # ConPTY does not tell whether the program reads with echo

    def status(self) -> tuple[int | None, str | None] | None:
        return None if self.proc.isalive() else (self.proc.exitstatus, None)

    async def stop(self) -> None:
        await stop_sessions([self.pid])

    def kill_now(self) -> None:
        self.proc.terminate(force=True)

    def release(self) -> None:
        self.proc.close(force=True)
