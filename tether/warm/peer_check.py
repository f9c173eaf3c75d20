"""Who is on the other end of a warm server's socket, as the kernel says it: a launcher of this
user that is as free as the server (what the kernel says of it, not what it says of itself), so
a command tether confined that reaches the socket gets no unconfined agent.

The peer is named by a pidfd the kernel made at connect time (SO_PEERPIDFD): it names that
process and no other, even once its pid is free again. Its /proc entries are read, then the
pidfd is asked whether the process still lives: if so, the pid named it all along. A pid
(SO_PEERCRED) would name whatever process took the number after the peer exited; so a kernel
without SO_PEERPIDFD (before Linux 6.5) gets no warm starts (tether/warm/identity.py)."""

from __future__ import annotations

import os
import signal
import socket
import sys

from tether.warm import identity


class Peer:
    """A checked launcher: its pid and a pidfd naming it (the server closes it)."""

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self.pidfd = pidfd


def check(conn: socket.socket) -> Peer:
    """The launcher on `conn`; ValueError when it is another user's, confined, or gone."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
        raise ValueError("another user")
    pidfd = _peer_pidfd(conn)
    try:
        pid = pid_of(pidfd)
        if pid <= 0 or not _as_free(pid) or not alive(pidfd):
            raise ValueError("a confined process, or one that is gone")
    except BaseException:
        os.close(pidfd)
        raise
    return Peer(pid, pidfd)


def _peer_pidfd(conn: socket.socket) -> int:
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, identity.SO_PEERPIDFD, 4)
    except OSError as exc:  # no SO_PEERPIDFD, or the peer exited before it could be named
        raise ValueError(f"the peer cannot be named by pidfd: {exc}") from None
    return int.from_bytes(raw, sys.byteorder, signed=True)


def pid_of(pidfd: int) -> int:
    """The pid a pidfd names in this pid namespace (-1: it exited; 0: not in this namespace)."""
    with open(f"/proc/self/fdinfo/{pidfd}", "rb") as f:
        for line in f:
            if line.startswith(b"Pid:"):
                return int(line.split()[1])
    return -1


def alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except OSError:
        return False
    return True


def _as_free(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
    except OSError:
        return False
    return identity.unconfined(status) and identity.confinement(str(pid)) == identity.confinement()
