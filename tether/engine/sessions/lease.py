"""Who may write a session's turns: one tether process at a time, across processes.

Several tether processes (editor windows) share one store. A prompt takes its session's lease in
the store before anything of its turn is written, renews it while the turn runs and gives it
back at the end; a prompt of another process meanwhile is refused with `HeldElsewhere`. A lease
left by a process that died expires after `lease_seconds()`, at once when its holder ran on this
machine and is gone.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

import msgspec

from tether.errors import HeldElsewhere

DEFAULT_LEASE_SECONDS = 30.0
_TOKEN = uuid.uuid4().hex[:12]  # this process, even if its pid is reused later


def _forked() -> None:
    """A forked tether (a warm server's worker) holds leases as a process of its own."""
    global _TOKEN
    _TOKEN = uuid.uuid4().hex[:12]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def lease_seconds() -> float:
    """How long a lease lasts without renewal (`TETHER_SESSION_LEASE_SECONDS`, default 30)."""
    raw = os.environ.get("TETHER_SESSION_LEASE_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_LEASE_SECONDS
    return value if 0 < value < 86_400 else DEFAULT_LEASE_SECONDS


class Holder(msgspec.Struct, frozen=True):
    host: str
    pid: int
    token: str

    @classmethod
    def me(cls) -> Holder:
        return cls(socket.gethostname(), os.getpid(), _TOKEN)

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        host, _, rest = text.rpartition("|")
        pid, _, token = rest.partition(":")
        if not host or not pid.isdigit():
            return None
        return cls(host, int(pid), token)

    def __str__(self) -> str:
        return f"{self.host}|{self.pid}:{self.token}"

    def gone(self) -> bool:
        """Whether this holder is known to have died: it ran on this machine and its process
        is no more (on another machine only the lease's expiry tells)."""
        if self.host != socket.gethostname() or self == Holder.me():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False  # alive, someone else's
        return False


def free(holder_text: str | None, until: float | None, *, now: float | None = None) -> bool:
    """Whether a lease as stored (holder, expiry) leaves the session free for this process."""
    if not holder_text or until is None:
        return True
    holder = Holder.parse(holder_text)
    if holder is None or holder == Holder.me():
        return True
    return until <= (time.time() if now is None else now) or holder.gone()


def held_elsewhere(session_id: str, holder_text: str, until: float) -> HeldElsewhere:
    """The refusal for a session whose lease `holder_text` keeps until `until`."""
    holder = Holder.parse(holder_text)
    where = f"tether process {holder.pid} on {holder.host}" if holder else holder_text
    return HeldElsewhere(session_id, where, max(0, round(until - time.time())))
