"""A warm server's files and messages: its lock (held for its life), the files it removes when
it retires, the note that says why one did not serve, reading a launcher's request, and what
its code is made of (a change on disk retires it)."""

from __future__ import annotations

import os
import socket
import sys
import time

MAX_REQUEST = 4 * 1024 * 1024  # an environment this large is not a launcher's


def lock(base: str, name: str) -> int | None:
    """This server's lock, held for its life (a second server for the same name gives up). A
    lock file a retiring server removed meanwhile is not the lock: it is opened again."""
    import fcntl

    path = os.path.join(base, name + ".lock")
    for _ in range(20):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            time.sleep(0.1)  # a launcher checking it, or a stopping server
            continue
        if _same_file(fd, path):
            return fd
        os.close(fd)
    return None


def _same_file(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def remove(base: str, name: str) -> None:
    """A retiring server's socket, pid file and lock file (its lock still held, so no successor
    has made them its own yet)."""
    for suffix in (".sock", ".pid", ".lock"):
        try:
            os.unlink(os.path.join(base, name + suffix))
        except OSError:
            pass


def note(base: str, name: str, text: str) -> None:
    """Why a server did not serve, in NAME.log beside its socket (the last reason only)."""
    try:
        with open(os.path.join(base, name + ".log"), "w") as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {text}\n")
    except OSError:
        pass


def receive(conn: socket.socket) -> tuple[bytes, list[int]]:
    """A request's body and the fds that came with it (SCM_RIGHTS)."""
    conn.settimeout(5)
    data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - len(payload) % 4, 4)]  # fmt: skip
    try:
        return _body(conn, data), fds
    except (OSError, ValueError):
        close_fds(fds)
        raise


def _body(conn: socket.socket, data: bytes) -> bytes:
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 or size > MAX_REQUEST:
        raise ValueError("no request, or one too large")
    while len(data) < 4 + size:
        more = conn.recv(min(65536, 4 + size - len(data)))
        if not more:
            raise ValueError("request cut short")
        data += more
    return data[4:]


def say(conn: socket.socket, line: bytes) -> None:
    try:
        conn.sendall(line)
    except OSError:
        pass  # the launcher is gone: its worker sees that too


def close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def loaded_files() -> dict[str, int]:
    """What this server's code is made of: tether's loaded source files and the import path's
    directories (installing or removing a package changes its directory)."""
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    files = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    files = [f for f in files if f and f.startswith(own)] + [p for p in sys.path if p]
    return {f: _mtime(f) for f in files}


def changed(files: dict[str, int]) -> bool:
    return any(_mtime(f) != mtime for f, mtime in files.items())


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1
