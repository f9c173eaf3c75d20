"""A warm start, the server's side: one process per user and interpreter identity
(tether/warm/identity.py) that imports the engine once, then forks a worker per launcher
(tether/warm/worker.py). The engine's imports are most of a cold start; a fork of a process that
has them costs a millisecond.

It listens on a socket in the user's private directory, serves only a launcher the kernel names
(tether/warm/peer_check.py), holds each launcher until its worker has ended
(tether/warm/holding.py), forks only from its one thread, reports each worker's exit code to its
launcher, and retires — its socket, pid file and lock removed, its running workers seen to their
end — when its code changed on disk (`stale`), when a launcher needs a priority or a limit it
cannot give (`stale`: the launcher starts a successor that can), when asked to stop over its
socket, on SIGTERM, and after IDLE_SECONDS without workers.

    main([DIR, NAME, PID, IDLE], run)  (booted by tether/warm/launcher.py for the start PID,
                                       which serves cold meanwhile; `run` is the command line
                                       a worker runs, tether.cli.main's)
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable

from tether.warm import handover, identity, launcher, peer_check
from tether.warm.holding import Held, let_go, seize
from tether.warm.server_files import (
    changed,
    close_fds,
    loaded_files,
    lock,
    note,
    receive,
    remove,
    say,
)

HOLD_SECONDS = 10.0  # a worker whose launcher was killed has this long to stop (then SIGKILL)
FORWARDED = frozenset(getattr(signal, name) for name in launcher.FORWARDED)


class Client:
    """One launcher served: its worker (pid, pidfd, exit status once reaped), the connection its
    exit code goes back on, and the launcher, held, with a pidfd that says when it ended."""

    def __init__(self, worker: int, conn: socket.socket, peer: peer_check.Peer) -> None:
        self.worker = worker
        self.worker_fd = os.pidfd_open(worker)
        self.worker_done = False
        self.conn = conn
        self.held = Held(peer.pid)
        self.launcher_fd = peer.pidfd
        self.deadline: float | None = None  # when a worker whose launcher ended is killed

    def fds(self) -> list[int]:
        return [self.worker_fd, self.launcher_fd, self.conn.fileno()]


class WarmServer:
    def __init__(self, base: str, name: str, lock_fd: int, idle: str, run: Callable[..., int]):
        self.base, self.name, self.lock_fd, self.run = base, name, lock_fd, run
        self.listener = _bind(os.path.join(base, name + ".sock"))
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.poll = select.poll()
        for fd in (self.listener.fileno(), self.wake_r):
            self.poll.register(fd, select.POLLIN)
        self.clients: dict[int, Client] = {}  # by worker pidfd and by launcher pidfd
        self.files = loaded_files()
        self.idle = _idle_seconds(idle)  # the starter's TETHER_WARM_IDLE_SECONDS
        self.listening = True
        self.terminated = False

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGTERM, self._terminate)
        signal.signal(signal.SIGCHLD, _no_op)  # a held launcher's stop: the wake-up fd hears it
        with open(os.path.join(self.base, self.name + ".pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        last = time.monotonic()
        while self.listening or self.clients:
            timeout = self._timeout(last)
            if timeout == 0:
                self._retire()
                continue
            events = self.poll.poll(timeout)
            for fd, _ in events:
                self._event(fd)
            self._past_deadlines()
            if events or self.clients:
                last = time.monotonic()  # idle time counts from the last worker's end

    def _timeout(self, last: float) -> float | None:
        """Milliseconds to wait (None: no end; 0: idle long enough to retire)."""
        deadlines = [c.deadline for c in self.clients.values() if c.deadline is not None]
        if deadlines:
            return max(0.0, min(deadlines) - time.monotonic()) * 1000 + 1
        if self.clients or not self.listening:
            return None
        left = self.idle - (time.monotonic() - last)
        return 0 if left <= 0 else min(left, 3600.0) * 1000

    def _event(self, fd: int) -> None:
        if fd == self.wake_r:
            self._woken()
        elif fd == self.listener.fileno() and self.listening:
            if not self._accept():
                self._retire()
        elif fd in self.clients:
            client = self.clients[fd]
            if fd == client.worker_fd and not client.worker_done:
                self._worker_ended(client)
            elif fd == client.launcher_fd:
                client.held.ended = True
                self._launcher_ended(client)

    def _terminate(self, signum: int, frame: object) -> None:
        self.terminated = True

    def _woken(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        if self.terminated:
            self._retire()
        for client in list(dict.fromkeys(self.clients.values())):
            if not client.held.ended:
                client.held.serve_stops(lambda sig, c=client: self._forward(c, sig))
                if client.held.ended:
                    self._launcher_ended(client)

    def _forward(self, client: Client, sig: int) -> bool:
        """A signal the launcher got goes to its worker while there is one."""
        if client.worker_done or sig not in FORWARDED:
            return False
        try:
            os.kill(client.worker, sig)
        except OSError:
            return False
        return True

    def _accept(self) -> bool:
        """Serve one launcher; False when this server must retire."""
        conn, _ = self.listener.accept()
        try:
            peer = peer_check.check(conn)
        except (OSError, ValueError):
            conn.close()
            return True
        return self._answer(conn, peer)

    def _answer(self, conn: socket.socket, peer: peer_check.Peer) -> bool:
        try:
            body, fds = receive(conn)
        except (OSError, ValueError):
            body, fds = b"", []
        if handover.is_stop(body):
            say(conn, b"stopping %d\n" % os.getpid())
            return _dropped(conn, peer, fds, retire=True)
        try:
            request = handover.Request.decode(body)
        except ValueError:
            return _dropped(conn, peer, fds)
        if len(fds) != 3:
            return _dropped(conn, peer, fds)
        if changed(self.files) or not _fits(request):
            say(conn, b"stale\n")
            return _dropped(conn, peer, fds, retire=True)
        if not _hold(peer):
            say(conn, b"cold\n")
            return _dropped(conn, peer, fds)
        self._fork(conn, request, fds, peer)
        return True

    def _fork(self, conn: socket.socket, request: handover.Request, fds: list[int], peer) -> None:
        keep_out = [self.listener.fileno(), self.lock_fd, self.wake_r, self.wake_w, peer.pidfd]
        keep_out += [fd for c in dict.fromkeys(self.clients.values()) for fd in c.fds()]
        try:
            pid = os.fork()
        except OSError:  # no process to be had: the launcher serves itself (it sees the close)
            let_go(peer.pid)
            _dropped(conn, peer, fds)
            return
        if pid == 0:
            from tether.warm.worker import become

            become(request, fds, conn, keep_out, self.run)  # never returns
        close_fds(fds)
        client = Client(pid, conn, peer)
        for fd in (client.worker_fd, client.launcher_fd):
            self.clients[fd] = client
            self.poll.register(fd, select.POLLIN)
        say(conn, b"pid %d\n" % pid)

    def _worker_ended(self, client: Client) -> None:
        client.worker_done = True
        self._unwatch(client.worker_fd)
        _, status = os.waitpid(client.worker, 0)
        say(client.conn, b"exit %d\n" % os.waitstatus_to_exitcode(status))
        client.conn.close()
        if client.held.ended:
            client.held.let_go_ended()

    def _launcher_ended(self, client: Client) -> None:
        """The launcher ended: let go to its parent once its worker has ended. Ended first
        (killed), its worker hangs up, as on a terminal's hang-up."""
        self._unwatch(client.launcher_fd)
        if client.worker_done:
            client.held.let_go_ended()
            return
        try:
            os.kill(client.worker, signal.SIGHUP)
        except OSError:
            pass
        client.deadline = time.monotonic() + HOLD_SECONDS

    def _unwatch(self, fd: int) -> None:
        if self.clients.pop(fd, None) is not None:
            self.poll.unregister(fd)
            os.close(fd)

    def _past_deadlines(self) -> None:
        now = time.monotonic()
        for client in list(dict.fromkeys(self.clients.values())):
            if client.deadline is not None and client.deadline <= now and not client.worker_done:
                client.deadline = None
                try:
                    os.kill(client.worker, signal.SIGKILL)
                except OSError:
                    pass

    def _retire(self) -> None:
        """Serve no one new: the socket, pid file and lock are removed at once (a successor may
        start), while the workers still running are seen to their end (their launchers get
        their exit codes)."""
        if not self.listening:
            return
        self.listening = False
        remove(self.base, self.name)  # under the lock, which goes last
        self.poll.unregister(self.listener.fileno())
        self.listener.close()
        os.close(self.lock_fd)


def _hold(peer: peer_check.Peer) -> bool:
    """Hold the launcher; False when the kernel refuses, or when the launcher is gone (its pid
    may then name another process, which is let go at once)."""
    try:
        seize(peer.pid)
    except OSError:
        return False
    if peer_check.alive(peer.pidfd):
        return True  # alive after the seize: the pid named the launcher when it was seized
    let_go(peer.pid)
    return False


def _fits(request: handover.Request) -> bool:
    """This server can give the launcher's worker its nice level and hard limits (a process
    cannot take a better priority or a higher hard limit than it has, unless privileged); when
    it cannot, the server takes them itself first, or retires for a successor that has them."""
    import resource

    if request.nice < os.getpriority(os.PRIO_PROCESS, 0):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, request.nice)
        except OSError:
            return False
    for which, _, hard in request.limits:
        soft, own = resource.getrlimit(which)
        if own != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > own):
            try:
                resource.setrlimit(which, (soft, hard))
            except (OSError, ValueError):
                return False
    return True


def _dropped(conn: socket.socket, peer, fds: list[int], retire: bool = False) -> bool:
    close_fds(fds)
    os.close(peer.pidfd)
    conn.close()
    return not retire


def _no_op(signum: int, frame: object) -> None:
    pass


def _idle_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        return handover.IDLE_SECONDS  # unset or not a number
    return seconds if seconds >= 0 else handover.IDLE_SECONDS


def _bind(path: str) -> socket.socket:
    try:
        os.unlink(path)  # a dead server's (this one holds the lock)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def main(argv: list[str], run: Callable[..., int]) -> int:
    base, name, starter, idle = argv
    os.chdir("/")
    why = _cannot_serve(name)
    if why is not None:
        note(base, name, why)
        return 1
    lock_fd = lock(base, name)
    if lock_fd is None:
        note(base, name, "another server holds the lock")
        return 0
    try:
        from tether.warm.preload import after_busy, preload

        after_busy(int(starter))
        preload()
        import gc

        gc.collect()
        gc.freeze()  # workers share these pages instead of copying them at their first collection
        WarmServer(base, name, lock_fd, idle, run).serve()
    except Exception:
        import traceback

        note(base, name, traceback.format_exc())
        raise
    return 0


def _cannot_serve(name: str) -> str | None:
    if identity.server_name(identity.identity(sys.path)) != name:
        return "started for another identity"  # a launcher it could never serve
    return identity.kernel_short()
