"""A warm start, the launcher's side: `tether acp` / `tether lsp` hand their stdio and process
state to this user's warm server (tether/warm/fork_server.py), a process that has already
imported the engine, and stay as their worker's stand-in until it exits. With no server yet,
the launcher starts one in the background and serves in-process (a cold start); so does it when
warm starts are off or the server cannot serve it.

The stand-in holds nothing of the engine, and after the hand-over not even Python: it becomes a
`/bin/sh` that reads the worker's exit code and exits with it (or dies of its signal). The
server holds it meanwhile (tether/warm/holding.py) and passes the signals it gets to the worker.

On the way to the first answer: builtins and C modules only (`_socket`, `_signal`, `fcntl`)."""

from __future__ import annotations

import os
import sys

from tether.warm import handover, identity

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
_PR_SET_PTRACER = 0x59616D61
# The stand-in: the worker's `exit N`, read from the server's socket (its stdin), then that exit.
STAND_IN = (
    'IFS=" " read -r word code || exit 1\n'
    '[ "$word" = exit ] || exit 1\n'
    '[ "$code" -ge 0 ] && exit "$code"\n'
    'kill -"$((-code))" $$\n'
    "exit 1\n"
)


def launch(argv: list[str]) -> int | None:
    """The worker's exit code, or None when this process must serve in-process."""
    if not identity.enabled():
        return None
    base = identity.warm_dir()
    if base is None:
        return None
    name = identity.server_name(identity.identity(sys.path[1:]))
    conn = _connect(os.path.join(base, name + ".sock"))
    if conn is None:
        start_server(base, name)
        return None
    try:
        answer = _hand_over(conn, [sys.argv[0], *argv])
        if answer.startswith(b"pid "):
            return _stand_in(conn)
    finally:
        conn.close()
    if answer == b"stale":  # the server retired: a successor (started from here) takes its place
        start_server(base, name, successor=True)
    return None


def _connect(path: str):  # -> _socket.socket | None (untyped C module)
    import _socket

    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


def _hand_over(conn, argv: list[str]) -> bytes:
    """The server's first answer to this process's request (b"" when it went away)."""
    import _socket

    _allow_tracing_by(conn)
    body = handover.own_request(argv).encode()
    fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
    try:
        sent = conn.sendmsg([body], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        if sent < len(body):  # (an empty send to a server that already answered and
            conn.sendall(body[sent:])  # closed, as `stale` does, fails EPIPE)
    except OSError:
        return b""  # a closed stdio fd, or the server went away: serve in-process
    return _line(conn)


def _allow_tracing_by(conn) -> None:
    """Where Yama allows tracing only by an ancestor (ptrace_scope 1), allow the server that
    listens on `conn` (as the kernel names it) to hold this process."""
    import _socket

    try:
        with open("/proc/sys/kernel/yama/ptrace_scope", "rb") as f:
            if f.read().strip() != b"1":
                return
    except OSError:
        return  # no Yama: the server may trace a process of its own user
    creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    import ctypes

    ctypes.CDLL(None).prctl(_PR_SET_PTRACER, int.from_bytes(creds[:4], sys.byteorder), 0, 0, 0)


def _line(conn) -> bytes:
    """One answer line, read a byte at a time: what follows it is the stand-in's to read."""
    line = b""
    while not line.endswith(b"\n"):
        try:
            byte = conn.recv(1)
        except OSError:
            byte = b""
        if not byte:
            return b""
        line += byte
    return line[:-1]


def _stand_in(conn) -> int:
    """Become the stand-in shell, reading the worker's exit code; in Python if that fails."""
    import _signal  # pyright: ignore[reportMissingImports]  # signal.py loads enum (startup)

    for name in (*FORWARDED, "SIGPIPE", "SIGXFSZ"):  # its end can be the worker's signal
        _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
    os.dup2(conn.fileno(), 0)  # the worker holds the client's stdin; this, the server's socket
    try:
        os.execve("/bin/sh", ["tether", "-c", STAND_IN], {})
    except OSError:
        pass
    line = _line(conn)
    word, _, value = line.partition(b" ")
    return _exit_code(int(value)) if word == b"exit" and value.lstrip(b"-").isdigit() else 1


def _exit_code(code: int) -> int:
    """A worker killed by a signal: the launcher dies of the same one (its parent sees that)."""
    if code >= 0:
        return code
    import _signal  # pyright: ignore[reportMissingImports]  # signal.py loads enum (startup)

    try:
        _signal.signal(-code, _signal.SIG_DFL)
    except OSError:
        pass  # SIGKILL and SIGSTOP take no handler: they need none to be fatal
    os.kill(os.getpid(), -code)
    return 128 - code


# The server's first lines: this launcher's import path, given as arguments (after `--`), not
# through the environment, which is left behind; the command line each worker runs is
# tether.cli.main's (the boot composes the two: tether.warm imports nothing of tether.cli).
_BOOT = (
    "import sys; i = sys.argv.index('--'); sys.path[:] = sys.argv[i + 1:]; "
    "from tether.warm.fork_server import main; from tether.cli.main import main as run; "
    "raise SystemExit(main(sys.argv[1:i], run))"
)


def start_server(base: str, name: str, successor: bool = False) -> None:
    """Start the server in the background unless one holds its lock (starting or serving; a
    `successor` waits for it): detached (its own session, stdio on the null device, not this
    process's child), in `/`."""
    if not successor and _locked(os.path.join(base, name + ".lock")):
        return
    command, env = server_command([base, name, str(os.getpid())])  # it serves cold meanwhile
    first = os.fork()
    if first:
        os.waitpid(first, 0)
        return
    try:
        if os.fork():
            os._exit(0)
        os.setsid()
        os.chdir("/")
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execve(sys.executable, command, env)
    finally:
        os._exit(1)


def server_command(args: list[str], boot: str = _BOOT) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment: this interpreter with the options it runs
    with, the import path as arguments, an environment empty of this window's but for what
    starts the interpreter (a worker's /proc/PID/environ is the server's)."""
    idle = os.environ.get("TETHER_WARM_IDLE_SECONDS", "")
    # No -P: it would show in a worker's sys.flags. Nothing is imported from the directory it
    # starts in ("/") before the boot's first line replaces the import path (`sys` is built in).
    command = [sys.executable, *identity.interpreter_options(), "-c", boot]
    command += [*args, idle, "--", *sys.path[1:]]
    env = {k: os.environ[k] for k in identity.INTERPRETER_ENV if k in os.environ}
    return command, env


def _locked(path: str) -> bool:
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return True  # cannot tell: do not start one
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock, for the server to take
    return False
