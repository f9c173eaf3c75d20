"""A warm start, the worker's side: the child the warm server forks for one launcher takes over
the launcher's process state (stdio, working directory, umask, environment, argv, import path),
runs the command line as the launcher would have, and exits with its code. When the launcher
goes away (an editor kills it), the worker hangs up on itself: what tether started is stopped
as on any SIGHUP (engine/local/reaper.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import socket

    from tether.cli.warm_wire import Request


def become(request: Request, fds: list[int], conn: socket.socket, close: list[int]) -> NoReturn:
    code = 1
    try:
        _adopt(request, fds, close)
        threading.Thread(target=_watch, args=(conn,), name="tether-launcher", daemon=True).start()
        from tether.cli.main import main

        code = main([os.fsdecode(a) for a in request.argv[1:]], warm=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _finish(code)


def _adopt(request: Request, fds: list[int], close: list[int]) -> None:
    for fd in close:
        try:
            os.close(fd)
        except OSError:
            pass
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.setsid()  # its own session and group, apart from the server and other workers
    os.chdir(request.cwd)
    os.umask(request.umask)
    _limit(request.limits)
    os.environ.clear()
    for entry in request.env:
        key, _, value = entry.partition(b"=")
        if key:
            os.environb[key] = value
    sys.argv = [os.fsdecode(a) for a in request.argv]
    sys.path[:] = [os.fsdecode(p) for p in request.path]
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGCHLD", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python process
    if "tempfile" in sys.modules:  # chosen from TMPDIR once: the launcher's, at its next use
        import tempfile

        tempfile.tempdir = None


def _limit(limits: list[tuple[int, int, int]]) -> None:
    """The launcher's resource limits, as far as the server's own allow (a limit the server
    was started under cannot be raised)."""
    import resource

    for which, soft, hard in limits:
        hard = _within(hard, resource.getrlimit(which)[1])
        try:
            resource.setrlimit(which, (_within(soft, hard), hard))
        except (OSError, ValueError):
            pass


def _within(value: int, ceiling: int) -> int:
    import resource

    if ceiling == resource.RLIM_INFINITY:
        return value
    return ceiling if value == resource.RLIM_INFINITY or value > ceiling else value


def _watch(conn: socket.socket) -> None:
    """The launcher's end closing is its death: hang up, as a terminal would."""
    try:
        conn.settimeout(None)  # the server's timeout for reading the request
        while conn.recv(64):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGHUP)


def _finish(code: int) -> NoReturn:
    import atexit

    try:
        atexit._run_exitfuncs()  # what exit runs
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        os._exit(code)
