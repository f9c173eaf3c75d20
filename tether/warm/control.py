"""Warm servers from the outside: stopping them (by a request over their socket: a pid file's
number may name another process by now, the socket is the server's own) and saying how this
environment's `tether acp` / `tether lsp` start (`tether doctor`)."""

from __future__ import annotations

import os
import select
import socket
import sys

from tether.warm import handover, identity


def stop_servers(base: str, wait: float = 0.0) -> list[int]:
    """Ask every warm server in `base` to stop: each retires at once (its socket, pid file and
    lock removed) and exits when its last worker has ended. The pids of those that said they
    would; with `wait`, each is waited for that many seconds at most. The files of a server
    that is gone (killed) are removed too."""
    stopped: list[int] = []
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        if entry.name.endswith(".sock"):
            pid = _ask_to_stop(entry.path)
            if pid is None:
                _remove_if_unheld(base, entry.name.removesuffix(".sock"))
            else:
                stopped.append(pid)
    for pid in stopped if wait > 0 else []:
        _wait_gone(pid, wait)
    return stopped


def _ask_to_stop(path: str) -> int | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        try:
            conn.connect(path)
            conn.sendall(handover.framed([handover.VERSION, handover.STOP]))
            answer = conn.recv(64)
        except OSError:
            return None
    word, _, pid = answer.strip().partition(b" ")
    return int(pid) if word == b"stopping" and pid.isdigit() else None


def _remove_if_unheld(base: str, name: str) -> None:
    """A dead server's files, removed under its lock (a live server holds it)."""
    import fcntl

    lock = os.path.join(base, name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for suffix in (".sock", ".pid", ".lock"):
            try:
                os.unlink(os.path.join(base, name + suffix))
            except FileNotFoundError:
                pass
    except OSError:
        pass  # held: a server is starting
    finally:
        os.close(fd)


def _wait_gone(pid: int, timeout: float) -> None:
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def describe() -> tuple[str, int | None]:
    """How this environment's `tether acp` / `tether lsp` start (for `tether doctor`), and the
    pid of the warm server that would serve them, if one runs."""
    why = identity.why_cold()
    if why is not None:
        return f"cold: {why}", None
    base = identity.warm_dir()
    if base is None:
        return "cold: the warm directory is not private to this user", None
    name = identity.server_name(identity.identity(sys.path[1:]))
    try:
        with open(os.path.join(base, name + ".pid")) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return f"warm: the next start starts a server in {base}", None
    return f"warm: server {pid} in {base}", pid
