"""A session's PTYs: interactive programs on pseudo-terminals (ptyprocess on POSIX, pywinpty's
ConPTY on Windows) with small integer ids, a per-session limit, an idle timeout and an output
budget. Every PTY is killed when its session closes, and at the latest when tether exits."""

from __future__ import annotations

import asyncio
import atexit
import codecs
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Protocol

import anyio
import msgspec

from tether.engine.local.processes import (
    command_environment,
    omitted_marker,
)
from tether.engine.local.secret_filter import SecretFilter
from tether.engine.local.terminal_text import sanitize
from tether.engine.seam import MoreOutput, PtyRead
from tether.errors import SeamError

MAX_PTYS = 8
IDLE_TIMEOUT = 30 * 60.0
OUTPUT_BUDGET = 8 * 1024 * 1024
QUIET = 0.25  # a read without `until` returns once the output pauses this long
SIZE = (40, 120)  # rows, columns
_CHUNK = 1 << 16


class _Backend(Protocol):
    pid: int

    async def read(self, wait: float) -> bytes | None:
        """Output available within `wait` seconds (b"" when none came); None at end of output."""
        ...

    async def write(self, data: bytes) -> None: ...

    def echoes(self) -> bool | None:
        """Whether the terminal echoes input; None where that cannot be known."""
        ...

    def status(self) -> tuple[int | None, str | None] | None:
        """(exit code, signal) once the program ended; None while it runs."""
        ...

    async def stop(self) -> None:
        """Hang up, SIGTERM, then SIGKILL the program and what it started."""
        ...

    def kill_now(self) -> None:
        """SIGKILL at once, synchronously (idle expiry, process exit)."""
        ...

    def release(self) -> None:
        """Close the terminal's file descriptor."""
        ...


class _Pty(msgspec.Struct, eq=False):
    id: int
    argv: list[str]
    backend: _Backend
    read_lock: anyio.Lock = msgspec.field(default_factory=anyio.Lock)
    write_lock: anyio.Lock = msgspec.field(default_factory=anyio.Lock)
    decoder: codecs.IncrementalDecoder = msgspec.field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace")
    )
    produced: int = 0
    budget: int = OUTPUT_BUDGET  # what it may print before it is stopped (or the user asked)
    confined: bool = False  # runs in the sandbox
    hidden: SecretFilter = msgspec.field(default_factory=SecretFilter)  # answers typed by the user
    timer: asyncio.TimerHandle | None = None
    ended: PtyRead | None = None  # set once the program is gone and its terminal released


_LIVE: set[_Pty] = set()  # every PTY of the process, for the exit hook


@atexit.register
def _kill_all_at_exit() -> None:
    for pty in list(_LIVE):
        pty.backend.kill_now()


class PtyHost:
    """The `pty` seam for one session."""

    def __init__(
        self,
        *,
        limit: int = MAX_PTYS,
        idle_timeout: float = IDLE_TIMEOUT,
        output_budget: int = OUTPUT_BUDGET,
        auto_raise: bool = False,
    ) -> None:
        self.limit = limit
        self.idle_timeout = idle_timeout
        self.output_budget = output_budget
        # `[agent] auto_continue_limits`: a limit reached is raised by as much again, nobody
        # asked; otherwise the tools ask the user (`raise_limit`, `read(..., more=)`).
        self.auto_raise = auto_raise
        self._step = limit
        self._ptys: dict[int, _Pty] = {}
        self._opening = 0  # opens started, not yet registered
        self._next = 1

    # --- the seam ------------------------------------------------------------------------

    async def open(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], confined: bool = False
    ) -> tuple[int, int]:
        live = [p.id for p in self._ptys.values() if p.ended is None]
        if self.auto_raise and len(live) + self._opening >= self.limit:
            self.raise_limit()
        if len(live) + self._opening >= self.limit:  # the calls of one round open at once
            raise SeamError(
                "PTY_LIMIT",
                f"this session already has {len(live) + self._opening} PTYs open or opening "
                f"(ids {', '.join(map(str, live)) or 'none yet'}), the most it may; close one "
                "with close_pty",
            )
        full_env = {**command_environment(), "TERM": "xterm-256color", **env}
        self._opening += 1  # taken before the first await, so a concurrent open sees it
        try:
            backend = await _spawn(argv, cwd, full_env)
        finally:
            self._opening -= 1
        pty = _Pty(self._next, list(argv), backend, budget=self.output_budget, confined=confined)
        self._next += 1
        self._ptys[pty.id] = pty
        _LIVE.add(pty)
        self._touch(pty)
        return pty.id, backend.pid

    def confined(self, pty_id: int) -> bool:
        return self._get(pty_id).confined

    def raise_limit(self, unlimited: bool = False) -> None:
        """Allow as many PTYs again as the session's limit (`unlimited`: no limit)."""
        self.limit = 1 << 30 if unlimited else self.limit + self._step

    async def read(
        self,
        pty_id: int,
        *,
        until: str | None,
        timeout: float,
        max_chars: int,
        more: MoreOutput | None = None,
    ) -> PtyRead:
        pty = self._get(pty_id)
        if pty.ended is not None:
            return _after_end(pty.ended)
        async with pty.read_lock:
            self._touch(pty)
            try:
                return await self._read(pty, until, timeout, max_chars, more)
            finally:
                self._touch(pty)

    async def write(self, pty_id: int, data: bytes) -> None:
        pty = self._get(pty_id)
        if pty.ended is not None:
            raise SeamError("PTY_EXITED", f"pty {pty_id} has ended: {_ending(pty.ended)}")
        async with pty.write_lock:
            self._touch(pty)
            with anyio.move_on_after(10):
                await pty.backend.write(data)
                return
            raise SeamError(
                "PTY_WRITE_BLOCKED", f"pty {pty_id} is not reading its input (10 s waited)"
            )

    def hide(self, pty_id: int, secret: str) -> None:
        self._get(pty_id).hidden.add(secret)

    def echoes(self, pty_id: int) -> bool | None:
        pty = self._get(pty_id)
        if pty.ended is not None:
            raise SeamError("PTY_EXITED", f"pty {pty_id} has ended: {_ending(pty.ended)}")
        return pty.backend.echoes()

    async def close(self, pty_id: int) -> PtyRead:
        pty = self._get(pty_id)
        if pty.ended is None:
            with anyio.CancelScope(shield=True):
                await pty.backend.stop()
                text = ""
                with anyio.move_on_after(2):
                    async with pty.read_lock:  # a running read ends at the hang-up
                        text = await self._drain(pty)
                if pty.ended is None:
                    await self._end(pty, text, None)
        ended = pty.ended
        assert ended is not None
        self._ptys.pop(pty_id, None)
        return ended

    async def close_all(self) -> None:
        with anyio.CancelScope(shield=True):
            for pty_id in list(self._ptys):
                await self.close(pty_id)

    # --- internals -----------------------------------------------------------------------

    def _get(self, pty_id: int) -> _Pty:
        pty = self._ptys.get(pty_id)
        if pty is None:
            known = ", ".join(str(i) for i in self._ptys) or "none"
            raise SeamError("PTY_NOT_FOUND", f"there is no pty {pty_id} (open: {known})")
        return pty

    async def _read(
        self, pty: _Pty, until: str | None, timeout: float, limit: int, more: MoreOutput | None
    ) -> PtyRead:
        parts: list[str] = []
        matched = eof = over_budget = False
        deadline = anyio.current_time() + timeout
        while (remaining := deadline - anyio.current_time()) > 0:
            quiet = until is None and parts
            data = await pty.backend.read(min(QUIET, remaining) if quiet else remaining)
            if data is None:
                eof = True
                break
            if not data:
                if quiet:
                    break
                continue
            pty.produced += len(data)
            text = pty.hidden.feed(pty.decoder.decode(data))  # a secret never gets further
            parts.append(text)
            recent = _recent(parts, len(text) + 4 * len(until or "") + 256)
            if until is not None and until in pty.hidden.scrub(recent):
                matched = True
                break
            if pty.produced > pty.budget:
                grant = await self._more_output(pty, more)
                if grant == 0:
                    over_budget = True
                    break
                pty.budget += grant
        if eof or over_budget:
            parts.append(pty.hidden.flush())
        text, omitted = _bounded(pty.hidden.scrub(sanitize("".join(parts))), limit)
        if over_budget:
            await pty.backend.stop()
            reason = f"it printed more than its output budget ({pty.budget:,} bytes)"
            return await self._end(pty, text, reason, omitted=omitted, matched=matched)
        if eof:
            return await self._end(pty, text, None, omitted=omitted, matched=matched)
        return PtyRead(text, alive=True, matched=matched, omitted=omitted)

    async def _more_output(self, pty: _Pty, more: MoreOutput | None) -> int:
        """How much more `pty` may print past its budget: as much again when limits are
        raised without asking, else what the user answers through `more` (0: stop it)."""
        if self.auto_raise:
            return self.output_budget
        if more is None:
            return 0
        answer = await more(pty.id, pty.budget)
        return 1 << 50 if answer == "always" else self.output_budget if answer == "once" else 0

    async def _drain(self, pty: _Pty) -> str:
        parts: list[str] = []
        while (data := await pty.backend.read(0.05)) and sum(map(len, parts)) < _CHUNK * 4:
            parts.append(pty.hidden.feed(pty.decoder.decode(data)))
        parts.append(pty.hidden.flush())
        return pty.hidden.scrub(sanitize("".join(parts)))

    async def _end(
        self,
        pty: _Pty,
        text: str,
        closed: str | None,
        *,
        omitted: int = 0,
        matched: bool = False,
    ) -> PtyRead:
        """The program is gone (or being stopped): reap it, release its terminal, and keep how
        it ended for later reads."""
        status = pty.backend.status()
        with anyio.move_on_after(1):  # the exit status follows the hang-up by a moment
            while status is None:
                await anyio.sleep(0.01)
                status = pty.backend.status()
        if status is None:
            pty.backend.kill_now()
        return self._record_end(pty, status, text, closed, omitted, matched)

    def _record_end(
        self,
        pty: _Pty,
        status: tuple[int | None, str | None] | None,
        text: str,
        closed: str | None,
        omitted: int = 0,
        matched: bool = False,
    ) -> PtyRead:
        code, sig = status or (None, None)
        pty.backend.release()
        _LIVE.discard(pty)
        if pty.timer is not None:
            pty.timer.cancel()
        pty.ended = PtyRead("", alive=False, exit_code=code, signal=sig, closed=closed)
        return PtyRead(text, False, code, sig, matched, omitted, closed)

    def _touch(self, pty: _Pty) -> None:
        if pty.timer is not None:
            pty.timer.cancel()
        loop = asyncio.get_running_loop()
        pty.timer = loop.call_later(self.idle_timeout, self._expire, pty)

    def _expire(self, pty: _Pty) -> None:
        if pty.ended is not None:
            return
        if pty.read_lock.locked() or pty.write_lock.locked():
            self._touch(pty)
            return
        pty.backend.kill_now()
        status = pty.backend.status()
        for _ in range(10 if status is None else 0):  # SIGKILL is quick; do not hold the loop
            time.sleep(0.005)
            status = pty.backend.status()
        self._record_end(
            pty, status or (None, "SIGKILL"), "", f"it was idle for {self.idle_timeout:g} s"
        )


def _recent(parts: list[str], size: int) -> str:
    return sanitize("".join(parts)[-size:])


def _bounded(text: str, limit: int) -> tuple[str, int]:
    if len(text) <= limit:
        return text, 0
    head = limit // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n{omitted_marker(omitted, 'characters')}\n{text[-tail:]}", omitted


def _after_end(ended: PtyRead) -> PtyRead:
    return PtyRead("", False, ended.exit_code, ended.signal, False, 0, ended.closed)


def _ending(ended: PtyRead) -> str:
    if ended.closed:
        return f"tether closed it because {ended.closed}"
    if ended.signal:
        return f"killed by {ended.signal}"
    return f"exited with code {ended.exit_code}"


# --- backends ----------------------------------------------------------------------------


async def _spawn(argv: list[str], cwd: Path, env: dict[str, str]) -> _Backend:
    return await anyio.to_thread.run_sync(_spawn_sync, argv, cwd, env)


def _spawn_sync(argv: list[str], cwd: Path, env: dict[str, str]) -> _Backend:
    if not cwd.is_dir():
        raise SeamError("NOT_A_DIRECTORY", f"the directory {cwd} does not exist")
    program = _resolve(argv[0], cwd, env)
    if program is None:
        raise SeamError(
            "COMMAND_NOT_FOUND", f"{argv[0]}: no such program (looked in PATH and {cwd})"
        )
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        from tether.engine.local.pty_windows import WindowsPty

        return WindowsPty.spawn([program, *argv[1:]], cwd, env, SIZE)
    from tether.engine.local.pty_posix import PosixPty

    return PosixPty.spawn([program, *argv[1:]], cwd, env, SIZE)


def _resolve(program: str, cwd: Path, env: dict[str, str]) -> str | None:
    """The program's path as the child would find it: relative paths from its cwd, bare
    names on its PATH."""
    if os.sep in program or (os.altsep and os.altsep in program):
        full = cwd / program
        return str(full) if full.is_file() and os.access(full, os.X_OK) else None
    return shutil.which(program, path=env.get("PATH", os.defpath))
