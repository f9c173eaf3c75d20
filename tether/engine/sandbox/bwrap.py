"""A confined command as a bubblewrap command line.

The whole file system is mounted read-only, then the writable trees are bound read-write over
it, then protected paths read-only again and hidden ones masked (an unreadable empty file or
directory bound over each). The session's private directory is TMPDIR (the rest of `/tmp`
stays read-only); `/dev` is a minimal one (no disks); `/run` an empty tmpfs when the network
is off (no daemon sockets: a Docker socket is root). New PID, IPC and (without network)
network namespaces; no capability, even for root; the sandbox dies with its parent, and with
it every process inside, detached or not.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tether.engine.sandbox.confinement import Confinement

DAEMON_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock")


def bwrap_argv(
    bwrap: str, c: Confinement, argv: list[str], cwd: Path, *, tty_signals: bool = True
) -> list[str]:
    """`tty_signals`: coreutils `env` can restore signals (`--default-signal`, 8.31+)."""
    shim = c.tty and tty_signals
    # bwrap ignores the terminal's job-control signals, so Ctrl-C interrupts the program
    # instead of ending the sandbox; the program gets them back as they were.
    args = ["env", "--ignore-signal=INT,QUIT,TSTP"] if shim else []
    args += [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # /tmp stays the host's, read-only (a program or a project may live there); the session's
    # private directory is TMPDIR, the one place outside the project a command may write.
    args += ["--tmpfs", "/dev/shm", "--bind", str(c.tmp), str(c.tmp)]
    if not c.network:
        args += ["--tmpfs", "/run"]
    for tree in c.writable:
        args += ["--bind", str(tree), str(tree)]
    for path in c.protected:
        if _mountable(path):
            args += ["--ro-bind", str(path), str(path)]
    args += _masks(c)
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    if not c.network:
        args.append("--unshare-net")
    if not c.tty:
        args.append("--new-session")  # no terminal to push keystrokes into (TIOCSTI)
    for name in c.unset_env:
        args += ["--unsetenv", name]
    args += ["--setenv", "TMPDIR", str(c.tmp), "--chdir", str(cwd), "--"]
    if shim:
        args += ["env", "--default-signal=INT,QUIT,TSTP"]
    return args + argv


def _masks(c: Confinement) -> list[str]:
    if c.masks is None:
        return []
    empty_file, empty_dir = c.masks
    out: list[str] = []
    sockets = [Path(s) for s in DAEMON_SOCKETS if c.network and os.path.exists(s)]
    for path in (*c.hidden, *sockets):
        path = Path(os.path.realpath(path))  # a mount lands on what a link points at
        if _replaced(path, c) or not _mountable(path):
            continue  # under a mount of its own (/run, /dev, /proc): not there anyway
        out += ["--ro-bind", str(empty_dir if path.is_dir() else empty_file), str(path)]
    return out


def _mountable(path: Path) -> bool:
    """A file or directory (a mount cannot sit on a symlink: it would land on the target)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _replaced(path: Path, c: Confinement) -> bool:
    """Whether `path` lies under a place the sandbox mounts afresh (and outside every
    writable tree, which is bound over it again)."""
    fresh = ["/dev", "/proc", *([] if c.network else ["/run"])]
    if any(path == t or path.is_relative_to(t) for t in c.writable):
        return False
    return any(path == Path(f) or path.is_relative_to(f) for f in fresh)
