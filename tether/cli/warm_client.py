"""A warm start, the launcher's side: `tether acp` / `tether lsp` hand their stdio to this user's
warm server (warm_server.py), a process that has already imported the engine, and wait for the
worker it forks to exit, passing signals on. With no server yet, the launcher starts one in the
background and serves in-process (a cold start); so does it when warm starts are off or the
server cannot serve it.

On the way to the first answer: builtins and C modules only (`_socket`, `_signal`, `fcntl`)."""

from __future__ import annotations

import os
import sys

from tether.cli import warm_wire as wire

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def launch(argv: list[str]) -> int | None:
    """The worker's exit code, or None when this process must serve in-process."""
    if not wire.enabled():
        return None
    base = wire.warm_dir()
    if base is None:
        return None
    name = wire.server_name(wire.identity(sys.path[1:]))
    conn = _connect(os.path.join(base, name + ".sock"))
    if conn is None:
        start_server(base, name)
        return None
    hand_over = _Launch(conn)
    try:
        code = hand_over.run([sys.argv[0], *argv])
    finally:
        conn.close()
    if hand_over.stale:  # the server's code changed: it retired, a successor takes its place
        start_server(base, name, successor=True)
    return code


def _connect(path: str):  # -> _socket.socket | None (untyped C module)
    import _socket

    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


class _Launch:
    """One hand-over: the request sent with the stdio fds, signals passed to the worker."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.pid = 0
        self.pending: list[int] = []  # signals that came before the worker's pid
        self.stale = False

    def run(self, argv: list[str]) -> int | None:
        import _signal  # pyright: ignore[reportMissingImports]  # signal.py loads enum (startup)

        previous = {n: _signal.signal(getattr(_signal, n), self._forward) for n in FORWARDED}
        try:
            return self._exchange(argv)
        finally:
            for n, handler in previous.items():
                _signal.signal(getattr(_signal, n), handler)

    def _exchange(self, argv: list[str]) -> int | None:
        import _socket

        body = wire.own_request(argv).encode()
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        try:
            sent = self.conn.sendmsg([body], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            if sent < len(body):  # (an empty send to a server that already answered and
                self.conn.sendall(body[sent:])  # closed, as `stale` does, fails EPIPE)
        except OSError:
            return None  # a closed stdio fd, or the server went away: serve in-process
        return self._answers()

    def _answers(self) -> int | None:
        buf = b""
        while True:
            try:
                chunk = self.conn.recv(256)
            except OSError:
                chunk = b""
            if not chunk:
                return None if not self.pid else 1  # the server died before saying the code
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                word, _, value = line.partition(b" ")
                if word == b"stale":
                    self.stale = True
                    return None
                if word == b"pid":
                    self._started(int(value))
                elif word == b"exit":
                    return _exit_code(int(value))

    def _started(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            self._forward(signum, None)
        self.pending.clear()

    def _forward(self, signum: int, frame: object) -> None:
        if not self.pid:
            self.pending.append(signum)
            return
        try:
            os.kill(self.pid, signum)
        except OSError:
            pass


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
# through the environment, which is left behind.
_BOOT = (
    "import sys; i = sys.argv.index('--'); sys.path[:] = sys.argv[i + 1:]; "
    "from tether.cli.warm_server import main; raise SystemExit(main(sys.argv[1:i]))"
)
# What the interpreter needs to start at all; nothing else of this window's environment goes to
# the server, whose environment every worker it forks shows as its own in /proc/PID/environ.
_INTERPRETER_ENV = ("LD_LIBRARY_PATH", "PYTHONHOME")


def start_server(base: str, name: str, successor: bool = False) -> None:
    """Start the server in the background unless one holds its lock (starting or serving; a
    `successor` waits for it): detached (its own session, stdio on the null device, not this
    process's child), its environment empty of this window's (the options and import path
    this interpreter runs with go as arguments)."""
    if not successor and _locked(os.path.join(base, name + ".lock")):
        return
    starter = str(os.getpid())  # this start, which serves cold meanwhile
    idle = os.environ.get("TETHER_WARM_IDLE_SECONDS", "")
    command = [sys.executable, "-P", *_interpreter_options(), "-c", _BOOT]
    command += [base, name, starter, idle, "--", *sys.path[1:]]
    env = {k: os.environ[k] for k in _INTERPRETER_ENV if k in os.environ}
    first = os.fork()
    if first:
        os.waitpid(first, 0)
        return
    try:
        if os.fork():
            os._exit(0)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execve(sys.executable, command, env)
    finally:
        os._exit(1)


def _interpreter_options() -> list[str]:
    """This interpreter's options as command-line ones (some came from its environment:
    PYTHONUTF8, PYTHONWARNINGS, ...), so the server runs as it does."""
    flags = sys.flags
    options = ["-B"] if flags.dont_write_bytecode else []
    options += ["-O"] * flags.optimize
    options += ["-X", f"utf8={flags.utf8_mode}"]  # else the empty environment's C locale decides
    if flags.dev_mode:
        options += ["-X", "dev"]
    for key, value in sys._xoptions.items():
        if key not in ("utf8", "dev"):
            options += ["-X", key if value is True else f"{key}={value}"]
    for warning in sys.warnoptions:
        options += ["-W", warning]
    return options


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


def stop_servers(base: str) -> list[int]:
    """Stop every warm server in `base` (SIGTERM); their pids."""
    import signal

    stopped: list[int] = []
    for entry in os.scandir(base):
        if entry.name.endswith(".pid"):
            try:
                with open(entry.path) as f:
                    pid = int(f.read().strip() or 0)
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError):
                continue
            stopped.append(pid)
    return stopped


def describe() -> tuple[str, int | None]:
    """How this environment's `tether acp` / `tether lsp` start (for `tether doctor`), and the
    pid of the warm server that would serve them, if one runs."""
    if sys.platform != "linux":
        return "cold: warm starts are Linux-only", None
    if os.environ.get("TETHER_WARM", "1") == "0":
        return "cold: TETHER_WARM=0", None
    if not wire.enabled():
        return "cold: this process is confined (seccomp or no-new-privileges)", None
    base = wire.warm_dir()
    if base is None:
        return "cold: the warm directory is not private to this user", None
    name = wire.server_name(wire.identity(sys.path[1:]))
    try:
        with open(os.path.join(base, name + ".pid")) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return f"warm: the next start starts a server in {base}", None
    return f"warm: server {pid} in {base}", pid
