"""A warm start, the worker's side: the child the warm server forks for one launcher takes over
the launcher's process state (stdio, working directory, umask, nice level, CPU affinity,
resource limits, environment, locale, standard streams, argv, import path), runs the command
line as the launcher would have, and exits with its code. When the launcher goes away (an
editor kills it), the worker hangs up on itself: what tether started is stopped as on any
SIGHUP (engine/local/reaper.py); the server holds the launcher until then
(tether/warm/holding.py).

What tether's modules decided at import is the server's: tests/warm/test_warm_fork_hygiene.py lists
each such decision and checks that a worker's is what a cold start would make."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import socket

    from tether.warm.handover import Request

_SERVERS_STREAMS: list[object] = []  # the server's stdio objects: collected, they would close 0-2


def become(
    request: Request,
    fds: list[int],
    conn: socket.socket,
    close: list[int],
    run: Callable[..., int],
) -> NoReturn:
    code = 1
    try:
        adopt(request, fds, close)
        threading.Thread(target=_watch, args=(conn,), name="tether-launcher", daemon=True).start()
        code = run([os.fsdecode(a) for a in request.argv[1:]], warm=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _finish(code)


def adopt(request: Request, fds: list[int], close: list[int]) -> None:
    """Become the launcher: its stdio and process state, the server's fds closed."""
    signal.set_wakeup_fd(-1)  # the server's wake-up pipe, closed next
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
    _scheduling(request)
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
    _interpreter_state(request)


def _scheduling(request: Request) -> None:
    """The launcher's nice level (the server took one at least as good: fork_server._fits)
    and CPU affinity."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, request.nice)
    except OSError:
        pass
    if request.affinity:
        try:
            os.sched_setaffinity(0, request.affinity)
        except OSError:
            pass


def _interpreter_state(request: Request) -> None:
    """What the interpreter decided from the environment at its start and can decide again:
    the locale, the standard streams, the temporary directory."""
    import locale

    try:
        locale.setlocale(locale.LC_CTYPE, os.fsdecode(request.ctype))
    except (locale.Error, ValueError):
        pass
    _streams(request.stdio)
    if "tempfile" in sys.modules:  # chosen from TMPDIR once: the launcher's, at its next use
        import tempfile

        tempfile.tempdir = None


def _streams(stdio: list[tuple[str, str, bool, bool] | None]) -> None:
    """sys.stdin, stdout and stderr as the launcher's encode and buffer (PYTHONIOENCODING,
    PYTHONUNBUFFERED, its locale, a terminal), on fds 0-2."""
    import io

    for fd, (name, said) in enumerate(zip(("stdin", "stdout", "stderr"), stdio, strict=True)):
        _SERVERS_STREAMS.append(getattr(sys, name))
        if said is None:
            setattr(sys, name, None)
            setattr(sys, f"__{name}__", None)
            continue
        encoding, errors, line, write = said
        mode = "r" if fd == 0 else "w"
        unbuffered = write and fd > 0  # as CPython makes them under -u: no binary buffer
        binary = open(fd, mode + "b", buffering=0 if unbuffered else -1, closefd=False)  # noqa: SIM115
        text = io.TextIOWrapper(
            binary, encoding, errors, newline="\n", line_buffering=line, write_through=write
        )
        text.mode = mode  # pyright: ignore[reportAttributeAccessIssue]  # as CPython sets it
        setattr(sys, name, text)
        setattr(sys, f"__{name}__", text)


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
            if stream is not None:
                stream.flush()
    finally:
        os._exit(code)
