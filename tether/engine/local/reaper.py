"""Nothing tether started outlives it.

Every command tether starts carries a marker in its environment (`TETHER_OWNER`), which its
children inherit, detached (`setsid`, double forks) or not. When tether ends — SIGTERM, SIGHUP,
the end of its input, a normal exit — every live process with this process's marker is stopped
(SIGTERM, a moment, then SIGKILL). Confined commands have a firmer guarantee on top: bubblewrap
gives each its own PID namespace, which the kernel empties when the sandbox dies, and the
sandbox dies with tether even on SIGKILL.
"""

from __future__ import annotations

import atexit
import os
import signal
import time
from pathlib import Path
from types import FrameType

MARKER = "TETHER_OWNER"
GRACE = 0.5
_installed = False


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


def marked() -> list[int]:
    """The live processes carrying this tether's marker (Linux; elsewhere none are found)."""
    needle = f"\0{MARKER}={OWNER}\0".encode()
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    me = os.getpid()
    for entry in os.scandir(proc):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = b"\0" + Path(entry.path, "environ").read_bytes()
            state = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[-1].split()[:1]
        except OSError:
            continue  # gone, or not ours to read
        if needle in environ and state != [b"Z"]:
            found.append(int(entry.name))
    return found


def stop_all(grace: float = GRACE) -> int:
    """SIGTERM every marked process, SIGKILL what is left after `grace`; how many there were."""
    pids = marked()
    for pid in pids:
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        time.sleep(0.02)
        pids = [p for p in pids if _alive(p)]
    for pid in marked():
        _signal(pid, signal.SIGKILL)
    return len(pids)


def install() -> None:
    """Stop every marked process at exit and on SIGTERM / SIGHUP (then die of that signal, as
    before). Once per process; the fronts call it when they start serving."""
    global _installed
    if _installed or os.name != "posix":
        return
    _installed = True
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
