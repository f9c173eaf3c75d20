"""Run one program so that everything it starts ends with it, and with tether:
`python -I -S lifetime_exec.py [--owner PID:START] -- PROGRAM [ARG...]`.

tether starts every command it does not give to bubblewrap through this launcher (the Landlock
launcher, landlock_exec.py, calls `run` with its confinement as `prepare`). It imports nothing
of tether, so it starts in a few milliseconds under `-I -S`. What it builds, in order (the
session's cgroup, where there is one, was joined before: session_cgroups.py):

- it becomes a child subreaper: whatever its program's processes leave orphaned (`setsid`, a
  double fork) is re-parented to it, never to init;
- where the kernel allows, the program runs in a PID namespace of its own: the launcher forks an
  init (pid 1 there) that forks the program, passes signals on, reaps orphans and exits with the
  program's status, at which the kernel kills everything left in the namespace. The init dies
  with the launcher (PR_SET_PDEATHSIG), so killing the launcher, even with SIGKILL, empties the
  namespace. An unprivileged user needs a user namespace for it: only a confined command gets one
  (`user_namespace`; one would change what an unconfined program is: no set-user-ID, unmapped
  owners shown as nobody);
- without a namespace the launcher is that init itself: when the program exits it kills what is
  left below it (its subreaper's tree);
- it watches tether (`--owner`: pid and start time, a pidfd): when tether ends, however it
  ended (SIGKILL included), the launcher kills the program and everything below it.

Signals to the launcher are passed to the program (through the init), except those a terminal
sends to its whole foreground group (the program gets those itself: passing them on would
deliver them twice). The launcher ends as the program did: its exit code, or the same signal.
"""

from __future__ import annotations

# Every command starts through this file: signal.py (it loads enum) and typing would cost
# milliseconds of each start, so the C module instead, and typing for the checker only.
import _signal as signal  # pyright: ignore[reportMissingImports]
import ctypes
import os
import select
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

FORWARDED = ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
FROM_TERMINAL = ("SIGINT", "SIGQUIT")  # sent to the foreground group: the program has them
JOB_CONTROL = ("SIGTSTP", "SIGTTIN", "SIGTTOU")  # must not stop the launcher
GONE = 125  # exit code when tether is gone before the program could start

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 1, 4, 36
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_SLAVE = 2, 4, 8, 1 << 14, 1 << 19
_OWNER_POLL = 500  # ms between looks at tether where no pidfd can watch it
_SWEEP_ROUNDS = 200

_libc = ctypes.CDLL(None, use_errno=True)
_target = 0  # the process signals are passed to (the init, or the program)
_pending: list[int] = []  # signals that came before it was started
_ended: dict[int, int] = {}  # the target's wait status, once reaped


class Gone(Exception):
    """tether, which the program would belong to, has already ended."""


def run(
    program: list[str],
    owner: str | None,
    *,
    user_namespace: bool = False,
    prepare: Callable[[], None] | None = None,
) -> NoReturn:
    """Start `program` (after `prepare`, run in its process just before exec: confinement),
    wait for it, and end as it ended."""
    try:
        watch = _watch(owner)
    except Gone:
        _say("tether has ended; the command did not run")
        os._exit(GONE)
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    terminal = _in_foreground()
    _handle_signals(terminal)
    try:
        namespace = _new_pid_namespace(user_namespace)
    except OSError as exc:  # in a user namespace it could not map itself into: stop here
        _say(f"tether: cannot set up the command's namespace; it did not run: {exc}")
        os._exit(126)
    if namespace:
        status = _outer(program, prepare, watch)
    else:
        status = _supervise(_start(program, prepare), watch, sweep=True)
    _end_as(status)


# --- tether, the owner ----------------------------------------------------------------------


def _watch(owner: str | None) -> tuple[int, int, str] | None:
    """(pidfd or -1, pid, start time) of tether; None when no owner was named."""
    if not owner:
        return None
    pid_text, _, start = owner.partition(":")
    pid = int(pid_text)
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise Gone from None
    except (OSError, AttributeError):
        fd = -1  # no pidfd here (Linux < 5.3): looked at every _OWNER_POLL ms
    if start and _start_time(pid) != start:
        raise Gone  # that pid is another process now
    return fd, pid, start


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _owner_gone(watch: tuple[int, int, str]) -> bool:
    fd, pid, start = watch
    if fd >= 0:
        return bool(select.select([fd], [], [], 0)[0])  # a pidfd reads as ready at the end
    now = _start_time(pid)
    return now is None or (bool(start) and now != start)


# --- the namespace --------------------------------------------------------------------------


def _new_pid_namespace(user_namespace: bool) -> bool:
    """Whether this process's next child is pid 1 of a new PID namespace."""
    if _libc.unshare(_CLONE_NEWPID) == 0:
        return True
    if not user_namespace:
        return False
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID) != 0:
        return False
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w") as f:  # cannot fail for our own ids
            f.write(text)
    return True


def _in_foreground() -> bool:
    """Whether this process is in its terminal's foreground group: the terminal then sends
    Ctrl-C's SIGINT (and SIGQUIT) to the program too."""
    for fd in (0, 1, 2):
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


# --- signals --------------------------------------------------------------------------------


def _handle_signals(terminal: bool) -> None:
    for name in FORWARDED:
        keep = terminal and name in FROM_TERMINAL
        signal.signal(getattr(signal, name), _ignore if keep else _forward)
    for name in JOB_CONTROL:
        signal.signal(getattr(signal, name), _ignore)
    signal.signal(signal.SIGCHLD, _ignore)  # a handler, so the wake-up fd hears of it


def _forward(signum: int, frame: object) -> None:
    if _target:
        try:
            os.kill(_target, signum)
        except OSError:
            pass
    else:
        _pending.append(signum)


def _ignore(signum: int, frame: object) -> None:
    pass


def _set_target(pid: int) -> None:
    global _target
    _target = pid
    while _pending:
        _forward(_pending.pop(0), None)


def _defaults() -> None:
    """Every signal as a program expects it (Python ignores SIGPIPE and SIGXFSZ)."""
    signal.set_wakeup_fd(-1)
    names = (*FORWARDED, *JOB_CONTROL, "SIGCHLD", "SIGPIPE", "SIGXFSZ")
    for name in names:
        signal.signal(getattr(signal, name), signal.SIG_DFL)


# --- the processes --------------------------------------------------------------------------


def _start(program: list[str], prepare: Callable[[], None] | None) -> int:
    """Fork the program; its pid. The child never returns."""
    pid = os.fork()
    if pid:
        _set_target(pid)
        return pid
    try:
        _defaults()
        if prepare is not None:
            prepare()
        os.execvp(program[0], program)
    except OSError as exc:
        _say(f"{program[0]}: {exc.strerror}")
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    except BaseException as exc:  # the child must never return to the caller
        _say(f"{program[0]}: {exc}")
    os._exit(126)


def _outer(
    program: list[str], prepare: Callable[[], None] | None, watch: tuple[int, int, str] | None
) -> int:
    """The launcher's part with a namespace: fork its init; the program's wait status."""
    status_r, status_w = os.pipe()
    alive_r, alive_w = os.pipe()  # held open by the launcher: the init sees it close
    pid = os.fork()
    if pid == 0:
        os.close(status_r)
        os.close(alive_w)
        _init(program, prepare, status_w, alive_r)
    os.close(status_w)
    os.close(alive_r)
    _set_target(pid)
    init_status = _supervise(pid, watch, sweep=False)
    said = os.read(status_r, 16)
    if len(said) == 4:
        return int.from_bytes(said, "little")
    return init_status  # the init was killed before the program ended


def _init(
    program: list[str], prepare: Callable[[], None] | None, status_w: int, alive_r: int
) -> NoReturn:
    """pid 1 of the namespace: it dies with the launcher; it passes signals to the program
    (pid 1 gets only those it handles, so exactly these), reaps orphans, and ends with it."""
    global _target
    _target = 0
    _pending.clear()
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(1)  # the launcher died before the line above
    os.close(alive_r)
    _own_proc()
    child = _start(program, prepare)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            os.write(status_w, status.to_bytes(4, "little"))
            os._exit(0)  # the kernel kills what is left in the namespace


def _own_proc() -> None:
    """A /proc of the namespace's own (in a mount namespace of its own, where mounts outside
    still show), so a program that reads /proc/<its pid> reads its own; where it cannot be
    mounted, /proc stays the host's."""
    if _libc.unshare(_CLONE_NEWNS) != 0:
        return
    if _libc.mount(None, b"/", None, _MS_REC | _MS_SLAVE, None) == 0:
        _libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


def _supervise(child: int, watch: tuple[int, int, str] | None, *, sweep: bool) -> int:
    """Wait for `child` (reaping every orphan that comes to this subreaper meanwhile); kill it
    (and, with `sweep`, everything below this process) when tether ends. Its wait status."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    poller = select.poll()
    poller.register(wake_r, select.POLLIN)
    if watch is not None and watch[0] >= 0:
        poller.register(watch[0], select.POLLIN)
    polling = watch is not None and watch[0] < 0
    status: int | None = None
    while status is None:
        _reap()
        status = _ended.pop(child, None)
        if status is not None:
            break
        poller.poll(_OWNER_POLL if polling else None)
        _drain(wake_r)
        if watch is not None and _owner_gone(watch):
            _kill(child)
            if sweep:
                _sweep()
            if watch[0] >= 0:
                poller.unregister(watch[0])  # it stays readable: poll would not wait again
            watch = None
            polling = False
    if sweep:
        _sweep()
    return status


def _reap() -> None:
    """Reap every child that ended, keeping the wait status of the one signals go to."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == _target:
            _ended[pid] = status


def _sweep() -> None:
    """SIGKILL everything below this process until nothing is (as a subreaper, everything its
    program left behind is below it), reaping as it goes."""
    me = os.getpid()
    for _ in range(_SWEEP_ROUNDS):
        below = _descendants(me)
        for pid in below:
            _kill(pid)
        _reap()
        if not below:
            return
        select.select([], [], [], 0.005)


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            parents[int(name)] = int(fields[1])
    found: list[int] = []
    frontier = {root}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier}
        found += frontier
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _end_as(status: int) -> NoReturn:
    """Exit as the program did: its code, or killed by the same signal."""
    sys.stderr.flush()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # a core of this launcher helps no one
        signal.set_wakeup_fd(-1)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _say(text: str) -> None:
    try:
        os.write(2, f"{text}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def main(argv: list[str]) -> NoReturn:
    owner = None
    if argv[:1] == ["--owner"] and len(argv) > 1:
        owner, argv = argv[1], argv[2:]
    if len(argv) < 2 or argv[0] != "--":
        _say("usage: lifetime_exec.py [--owner PID:START] -- PROGRAM [ARG...]")
        os._exit(2)
    run(argv[1:], owner)


if __name__ == "__main__":
    main(sys.argv[1:])
