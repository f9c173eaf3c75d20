"""The warm server holds each launcher it serves, so that whoever started the launcher sees it
end only once its worker has, as with a process that served in-process.

Holding is ptrace, seized without stopping the launcher (PTRACE_SEIZE): the kernel shows a
traced process's end to its tracer first, and to its parent only when the tracer lets it go
(reaps it, or ends itself). A launcher killed by SIGKILL stays a zombie only the server sees
until its worker has stopped what it ran and exited; its parent (an editor, a test) then finds
nothing of it left running, nor any of its connections open. The launcher's signals stop it for
the server to pass on: those a launcher forwards go to the worker, the rest are delivered.

Linux only; the launcher allows the server to trace it where Yama asks for that
(tether/warm/launcher.py). Nothing here is reached by a worker."""

from __future__ import annotations

import ctypes
import os
import signal

PTRACE_CONT, PTRACE_DETACH = 7, 17
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_LISTEN = 0x4206, 0x4207, 0x4208
PTRACE_EVENT_STOP = 128
WALL = 0x40000000  # __WALL: wait for a tracee whatever its kind
GROUP_STOPS = (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


def seize(pid: int) -> None:
    """Trace `pid` without stopping it; OSError when the kernel refuses (another tracer, Yama,
    a security module, a process of other credentials)."""
    _ptrace(PTRACE_SEIZE, pid, 0)


def let_go(pid: int) -> None:
    """Stop tracing a live `pid` (seized by mistake: it was not the launcher)."""
    try:
        _ptrace(PTRACE_INTERRUPT, pid, 0)
        _, status = os.waitpid(pid, WALL)
    except OSError:
        return  # it is gone: nothing is held
    sig = os.WSTOPSIG(status) if os.WIFSTOPPED(status) and status >> 16 == 0 else 0
    try:
        _ptrace(PTRACE_DETACH, pid, sig)
    except OSError:
        pass


class Held:
    """One held launcher: its stops served, its end noticed, and at last let go to its
    parent. `forward(signum)` takes what a launcher forwards; False delivers it instead."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.ended = False

    def serve_stops(self, forward) -> None:  # forward: Callable[[int], bool]
        """Resume the launcher from every stop it is in (non-blocking); notes its end."""
        while not self.ended:
            try:
                seen = os.waitid(os.P_PID, self.pid, _ANY | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                self.ended = True  # already let go (the server cannot see it any more)
                return
            if seen is None:
                return
            if seen.si_code != os.CLD_TRAPPED:
                self.ended = True  # exited or killed: kept a zombie until let_go_ended
                return
            self._resume(forward)

    def _resume(self, forward) -> None:
        _, status = os.waitpid(self.pid, WALL | os.WNOHANG)
        if not os.WIFSTOPPED(status):
            return
        sig, event = os.WSTOPSIG(status), status >> 16
        try:
            if event == PTRACE_EVENT_STOP and sig in GROUP_STOPS:
                _ptrace(PTRACE_LISTEN, self.pid, 0)  # stopped, as asked, until SIGCONT
            elif event == 0 and not forward(sig):
                _ptrace(PTRACE_CONT, self.pid, sig)
            else:
                _ptrace(PTRACE_CONT, self.pid, 0)
        except OSError:
            pass  # killed meanwhile: its end is seen next

    def let_go_ended(self) -> None:
        """Hand the ended launcher to its parent (reaping it as its tracer does that)."""
        try:
            os.waitpid(self.pid, WALL)
        except ChildProcessError:
            pass


_ANY = os.WEXITED | os.WSTOPPED | WALL


def _ptrace(request: int, pid: int, data: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    args = (ctypes.c_long(request), ctypes.c_long(pid), ctypes.c_void_p(0), ctypes.c_void_p(data))
    if libc.ptrace(*args) == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
