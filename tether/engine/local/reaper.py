"""Nothing tether started outlives it.

What holds a command's processes together is what the command cannot shed (docs/safety.md
says which layer holds where):

- each command runs under a launcher that ends everything it started when it ends and when
  tether ends, even by SIGKILL (bubblewrap's PID namespace; else
  engine/sandbox/lifetime_exec.py: a PID namespace where the kernel allows, a subreaper
  otherwise, and a watch on this process named by `owner()`);
- this process is a child subreaper (Linux): whatever its commands leave orphaned is
  re-parented to it, never to init, so it stays below tether;
- when tether ends — SIGTERM, SIGHUP, the end of its input, a normal exit — every process below
  it is stopped (SIGTERM, a moment, then SIGKILL), and so is every live process that still
  carries this tether's marker in its environment (`TETHER_OWNER`: a last resort, for what got
  away by other means; a command can drop it, so it decides nothing).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

MARKER = "TETHER_OWNER"
GRACE = 0.5
_PR_SET_CHILD_SUBREAPER = 36
_installed = False
_at_stop: list[Callable[[], None]] = []  # more to end with tether (a session's cgroup)


def _new_owner() -> str:
    return f"{os.getpid()}-{os.urandom(6).hex()}"


OWNER = _new_owner()


def _forked() -> None:
    """A forked tether (a warm server's worker) is a tether of its own: what another one
    started is not its to stop."""
    global OWNER
    OWNER = _new_owner()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def owner() -> str:
    """This process as a launcher watches it: `PID:START` (its start time, so a pid used again
    by another process is not taken for it)."""
    return f"{os.getpid()}:{start_time(os.getpid()) or ''}"


def start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot), from /proc; None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def descendants(root: int | None = None) -> list[int]:
    """The live processes below `root` (this process), parents before children (Linux;
    elsewhere none are found)."""
    parents: dict[int, int] = {}
    for pid, fields in _table():
        if fields[0] != b"Z":
            parents[pid] = int(fields[1])
    found: list[int] = []
    frontier = {os.getpid() if root is None else root}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier}
        found += sorted(frontier)
    return found


def marked() -> list[int]:
    """The live processes carrying this tether's marker (Linux; elsewhere none are found)."""
    needle = f"\0{MARKER}={OWNER}\0".encode()
    found: list[int] = []
    me = os.getpid()
    for pid, fields in _table():
        if pid == me or fields[0] == b"Z":
            continue
        try:
            environ = b"\0" + Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if needle in environ:
            found.append(pid)
    return found


def _table() -> list[tuple[int, list[bytes]]]:
    """Every process's /proc stat fields after its name (state, ppid, pgrp, session, ...)."""
    rows: list[tuple[int, list[bytes]]] = []
    if not os.path.isdir("/proc"):
        return rows
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3:
            rows.append((int(entry.name), fields))
    return rows


def stop_all(grace: float = GRACE) -> int:
    """SIGTERM every process below this one and every marked one, SIGKILL what is left after
    `grace` (until none is); then what else must end with tether. How many there were."""
    pids = _everyone()
    count = len(pids)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        time.sleep(0.02)
        pids = [p for p in pids if _alive(p)]
    for _ in range(50):  # a process forking as fast as it is killed: a few more rounds
        left = _everyone()
        if not left:
            break
        for pid in left:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.005)
    for stop in list(_at_stop):
        try:
            stop()
        except Exception:  # the rest must still run at exit
            pass
    return count


def _everyone() -> list[int]:
    return list(dict.fromkeys([*descendants(), *marked()]))


def at_stop(stop: Callable[[], None]) -> None:
    """Run `stop` (synchronous, quick) when tether ends, after its processes are stopped."""
    _at_stop.append(stop)


def install() -> None:
    """Become a child subreaper; stop every process below this one and every marked one at exit
    and on SIGTERM / SIGHUP (then die of that signal, as before). Once per process; the fronts
    call it when they start serving."""
    global _installed
    if _installed or os.name != "posix":
        return
    _installed = True
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    atexit.register(stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _on_signal)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[:1]
    except OSError:
        return False
    return state != [b"Z"]
