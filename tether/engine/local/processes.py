"""Commands run on this machine: each stage in a session of its own, stdout and stderr in
arrival order through one pipe, output kept bounded (head and tail), and the whole session
stopped on timeout or cancellation (SIGTERM, then SIGKILL to every process left in it)."""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.abc

from tether.engine.local import env_allowlist, reaper
from tether.engine.local.terminal_text import sanitize
from tether.engine.seam import CommandProgress, CommandResult, Launcher, Overflow, Stage
from tether.errors import SeamError

KILL_GRACE = 0.5  # seconds between SIGTERM and SIGKILL
DRAIN_AFTER_EXIT = 0.3  # how long a background child may keep the output open after exit
POLL = 0.02
_POSIX = os.name == "posix"


class BoundedOutput:
    """Keeps the first third and the last two thirds of `limit` bytes and counts the rest;
    with `overflow`, the whole output goes to that file once it is longer than `limit` (up to
    OVERFLOW_MAX bytes), so the middle can be read there."""

    def __init__(self, limit: int, overflow: Overflow | None = None) -> None:
        self.head_limit = max(limit // 3, 0)
        self.tail_limit = max(limit - self.head_limit, 0)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.omitted = 0
        self.total = 0
        self._overflow = overflow
        self.file: BinaryIO | None = None
        self.path: Path | None = None
        self.kept = 0  # bytes in the file

    def add(self, chunk: bytes) -> None:
        self._keep_whole(chunk)
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size > self.tail_limit:
            first = self.tail.popleft()
            excess = self.tail_size - self.tail_limit
            if len(first) > excess:
                self.tail.appendleft(first[excess:])
                self.omitted += excess
                self.tail_size -= excess
            else:
                self.omitted += len(first)
                self.tail_size -= len(first)

    def _keep_whole(self, chunk: bytes) -> None:
        if self.file is None:
            if (
                self._overflow is None
                or self.total + len(chunk) <= self.head_limit + self.tail_limit
            ):
                return
            try:
                self.path = self._overflow()
                self.file = open(self.path, "ab")  # noqa: SIM115  # closed by close()
            except OSError:
                self._overflow = None
                return
            chunk = bytes(self.head) + b"".join(self.tail) + chunk  # nothing was dropped yet
        room = OVERFLOW_MAX - self.kept
        if room > 0:
            self.file.write(chunk[:room])
            self.kept += min(len(chunk), room)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def text(self) -> str:
        head = sanitize(bytes(self.head).decode("utf-8", "replace"))
        tail = sanitize(b"".join(self.tail).decode("utf-8", "replace"))
        if not self.omitted:
            return head + tail
        return f"{head}\n{self._marker()}\n{tail}"

    def _marker(self) -> str:
        if self.path is None:
            return omitted_marker(self.omitted, "bytes")
        tail_from = self.total - self.tail_size
        whole = "the whole output" if self.kept == self.total else f"its first {self.kept:,} bytes"
        return (
            f"[... {self.omitted:,} bytes of output omitted here: {whole} is in {self.path} "
            f"(bytes 0-{len(self.head):,} are above, bytes {tail_from:,}-{self.total:,} below); "
            "read_file pages through it ...]"
        )


OVERFLOW_MAX = 64 * 1024 * 1024  # bytes of one command's output kept whole, at most


def omitted_marker(count: int, unit: str) -> str:
    return f"[... {count:,} {unit} of output omitted ...]"


def exit_status(returncode: int | None) -> tuple[int | None, str | None]:
    """(exit code, signal name): a negative return code is the signal that ended it."""
    if returncode is None or returncode >= 0:
        return returncode, None
    try:
        return None, signal.Signals(-returncode).name
    except ValueError:
        return None, f"signal {-returncode}"


def command_environment() -> dict[str, str]:
    """The environment every command starts from: the variables of tether's own that the
    allowlist names (env_allowlist.py; never a provider's key), with the marker that lets
    tether find everything it started (see reaper.py)."""
    env = env_allowlist.current().filter(os.environ)
    env[reaper.MARKER] = reaper.OWNER
    return env


# --- stopping a process and everything it started ------------------------------------------


def session_members(sid: int) -> list[int]:
    """The live (non-zombie) processes of a session and every process below its leader (what
    left the session is still below the launcher that reaps it), read from /proc (Linux);
    elsewhere the leader alone when it lives."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(sid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [sid]
    found: list[int] = []
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != b"Z":
            found.append(int(entry.name))
    below = reaper.descendants(sid) if found else []
    return list(dict.fromkeys([*found, *below]))


def signal_session(sid: int, sig: int) -> None:
    """Send `sig` to the session's process group and to every process still in the session
    (jobs of an interactive shell move to groups of their own)."""
    if not _POSIX:
        return
    for target in {sid, *session_members(sid)}:
        try:
            if target == sid:
                os.killpg(sid, sig)
            else:
                os.kill(target, sig)
        except (ProcessLookupError, PermissionError):
            pass


async def stop_sessions(
    sids: Sequence[int], grace: float = KILL_GRACE, *, hangup: bool = False
) -> None:
    """SIGTERM (and SIGHUP for PTY programs, which expect a hang-up), up to `grace` seconds
    for them to go, then SIGKILL for whatever is left."""
    if not _POSIX:
        for sid in sids:
            _kill_tree_windows(sid)
        return
    seen = _started([p for sid in sids for p in session_members(sid) if p not in sids])
    for sid in sids:
        if hangup:
            signal_session(sid, signal.SIGHUP)
        signal_session(sid, signal.SIGTERM)
        signal_session(sid, signal.SIGCONT)  # a stopped process only sees SIGTERM when resumed
    for _ in range(int(grace / POLL)):
        if not any(session_members(sid) for sid in sids):
            break
        await anyio.sleep(POLL)
    for sid in sids:
        seen.update(_started([p for p in session_members(sid) if p not in sids]))
        signal_session(sid, signal.SIGKILL)
    for _ in range(int(1 / POLL)):  # SIGKILL cannot be ignored; it takes a moment to land
        if not any(session_members(sid) for sid in sids):
            break
        await anyio.sleep(POLL)
    _reap_adopted(seen)


def _started(pids: list[int]) -> dict[int, str | None]:
    return {pid: reaper.start_time(pid) for pid in pids}


def _reap_adopted(seen: dict[int, str | None]) -> None:
    """Reap the processes of `seen` (pid -> start time) that came to this process (a subreaper:
    reaper.py) when the launcher above them was killed first: nothing else waits for them. Only
    the very process seen (its start time), never one that took its pid since; the launchers
    themselves are waited for by whoever started them."""
    me = str(os.getpid()).encode()
    for pid, start in seen.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == b"Z" and fields[1] == me and start and fields[19].decode() == start:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _kill_tree_windows(pid: int) -> None:  # pragma: no cover - Windows only
    subprocess.run(
        ["taskkill", "/T", "/F", "/PID", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


# --- running ---------------------------------------------------------------------------------


class LocalTerminal:
    """The `terminal` seam on this machine."""

    async def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        timeout: float,
        output_limit: int,
        stdin: bytes | None = None,
        progress: CommandProgress | None = None,
        overflow: Overflow | None = None,
        launcher: Launcher | None = None,  # (a local process runs `argv` as it is)
    ) -> CommandResult:
        stage = Stage(argv, cwd, env, mix_stderr=True)
        return await run_local(
            [stage],
            stdin=stdin,
            timeout=timeout,
            output_limit=output_limit,
            progress=progress,
            overflow=overflow,
        )

    async def run_pipeline(
        self,
        stages: Sequence[Stage],
        *,
        stdin: bytes | None,
        timeout: float,
        output_limit: int,
        progress: CommandProgress | None = None,
        overflow: Overflow | None = None,
    ) -> CommandResult:
        return await run_local(
            stages,
            stdin=stdin,
            timeout=timeout,
            output_limit=output_limit,
            progress=progress,
            overflow=overflow,
        )


async def run_local(
    stages: Sequence[Stage],
    *,
    stdin: bytes | None,
    timeout: float,
    output_limit: int,
    progress: CommandProgress | None,
    overflow: Overflow | None = None,
) -> CommandResult:
    out = BoundedOutput(output_limit, overflow)
    collector, sink = os.pipe()  # every stream meant for the user, in arrival order
    try:
        procs = await _spawn_all(stages, stdin is not None, sink)
    except BaseException:
        os.close(collector)
        raise
    finally:
        os.close(sink)  # the children hold their own copies
    timed_out = False
    try:
        async with anyio.create_task_group() as tg:
            eof = anyio.Event()
            tg.start_soon(_pump, collector, out, progress, eof)
            if stdin is not None and procs[0].stdin is not None:
                tg.start_soon(_feed, procs[0].stdin, stdin)
            with anyio.move_on_after(timeout):
                for p in procs:
                    await p.wait()
            if any(p.returncode is None for p in procs):
                timed_out = True
                await stop_sessions([p.pid for p in procs])
                for p in procs:
                    await p.wait()
            with anyio.move_on_after(DRAIN_AFTER_EXIT):
                await eof.wait()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if any(p.returncode is None for p in procs):  # cancelled: stop them now
                await stop_sessions([p.pid for p in procs])
            for p in procs:
                with anyio.move_on_after(2):
                    await p.aclose()
            os.close(collector)
            out.close()
    code, sig = exit_status(procs[-1].returncode)
    return CommandResult(
        exit_code=code,
        output=out.text(),
        truncated=out.omitted > 0,
        signal=sig,
        timed_out=timed_out,
        omitted=out.omitted,
        stage_codes=tuple(exit_status(p.returncode)[0] for p in procs),
    )


async def _spawn_all(
    stages: Sequence[Stage], with_stdin: bool, sink: int
) -> list[anyio.abc.Process]:
    procs: list[anyio.abc.Process] = []
    upstream: int | None = None  # read end of the pipe from the previous stage
    try:
        for i, stage in enumerate(stages):
            last = i == len(stages) - 1
            downstream_r, downstream_w = (None, sink) if last else os.pipe()
            try:
                procs.append(
                    await _spawn(
                        stage,
                        stdin=upstream
                        if upstream is not None
                        else (subprocess.PIPE if with_stdin else subprocess.DEVNULL),
                        stdout=downstream_w,
                        stderr=subprocess.STDOUT if stage.mix_stderr else sink,
                    )
                )
            finally:
                if upstream is not None:
                    os.close(upstream)
                if not last:
                    os.close(downstream_w)
            upstream = downstream_r
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_sessions([p.pid for p in procs])
            for p in procs:
                await p.aclose()
        raise
    return procs


async def _spawn(stage: Stage, *, stdin: int, stdout: int, stderr: int) -> anyio.abc.Process:
    argv = stage.argv
    try:
        return await anyio.open_process(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=stage.cwd,
            env={**command_environment(), **stage.env},
            start_new_session=_POSIX,
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
    except FileNotFoundError:
        if not stage.cwd.is_dir():
            raise SeamError(
                "NOT_A_DIRECTORY", f"the directory {stage.cwd} does not exist"
            ) from None
        raise SeamError(
            "COMMAND_NOT_FOUND", f"{argv[0]}: no such program (looked in PATH and {stage.cwd})"
        ) from None
    except PermissionError:
        raise SeamError("COMMAND_NOT_EXECUTABLE", f"{argv[0]} is not executable") from None
    except OSError as exc:
        raise SeamError("COMMAND_FAILED", f"{argv[0]} could not start: {exc}") from None


async def _pump(
    fd: int, out: BoundedOutput, progress: CommandProgress | None, eof: anyio.Event
) -> None:
    if _POSIX:
        os.set_blocking(fd, False)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        chunk = await _read_chunk(fd)
        if not chunk:
            eof.set()
            return
        out.add(chunk)
        if progress is not None:
            progress.output(sanitize(decoder.decode(chunk)))


async def _read_chunk(fd: int) -> bytes:
    if not _POSIX:  # pragma: no cover - Windows pipes do not poll
        return await anyio.to_thread.run_sync(os.read, fd, 1 << 16, abandon_on_cancel=True)
    while True:
        await anyio.wait_readable(fd)
        try:
            return os.read(fd, 1 << 16)
        except BlockingIOError:
            continue


async def _feed(stream: anyio.abc.ByteSendStream, data: bytes) -> None:
    try:
        await stream.send(data)
        await stream.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
        pass  # the program stopped reading its input: that is its business
