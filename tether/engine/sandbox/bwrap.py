"""A confined command as a bubblewrap command line.

The whole file system is mounted read-only, then the writable trees are bound read-write over
it, then each directory on the way to a protected path is bound onto itself (a mount point
cannot be renamed or removed, so no command can move a protected path aside and put its own in
its place), then protected paths read-only again: one that does not exist yet gets an empty
read-only directory mounted at its first missing part (a placeholder, which bubblewrap makes on
the host; `placeholders.py` removes it once no sandbox uses it). Hidden paths are masked (an
unreadable empty file or directory bound over each). The session's private directory is TMPDIR
(the rest of `/tmp` stays read-only); `/dev` is a minimal one (no disks); `/run` an empty tmpfs
when the network is off (no daemon sockets: a Docker socket is root). New PID, IPC and (without
network) network namespaces; no capability, even for root; the sandbox dies with its parent, and
with it every process inside, detached or not.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

from tether.engine.sandbox.confinement import Confinement

DAEMON_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock")


class Mounts(NamedTuple):
    """What protects the protected paths: `kept` directories bound onto themselves (ancestors
    of a protected path: they cannot be renamed or removed), `read_only` paths bound read-only,
    and `placeholders`, where an empty read-only directory is mounted (the first missing part
    of a protected path, or an empty directory standing for one)."""

    kept: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    placeholders: tuple[Path, ...] = ()


def bwrap_argv(
    bwrap: str,
    c: Confinement,
    argv: list[str],
    cwd: Path,
    *,
    tty_signals: bool = True,
    mounts: Mounts | None = None,
    background: bool = False,
) -> list[str]:
    """`tty_signals`: coreutils `env` can restore signals (`--default-signal`, 8.31+);
    `mounts`: `plan_mounts(c)`, when the caller needed it first; `background`: a launcher
    starts it as a background job (which ignores SIGINT and SIGQUIT: the program gets them
    back)."""
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
    args += _protection(c, plan_mounts(c) if mounts is None else mounts)
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
    elif background and tty_signals:
        args += ["env", "--default-signal=INT,QUIT"]
    return args + argv


def plan_mounts(c: Confinement) -> Mounts:
    """The mounts that protect `c.protected` (shallowest first; a path inside one already
    mounted is covered by it). A path through a symlink is skipped: a mount on it would land
    on the link's target, which the confinement protects under its own name."""
    kinds: dict[Path, int | None] = {}
    kept: dict[Path, None] = {}
    mounted: dict[Path, bool] = {}  # path -> whether it is a placeholder
    for path in sorted(set(c.protected), key=lambda p: len(p.parts)):
        tree = _tree_of(path, c.writable)
        if tree is None or any(a in mounted for a in _between(tree, path)):
            continue
        target, placeholder = _target(tree, path, kinds)
        if target is None or target in mounted:
            continue
        if placeholder and c.placeholder is None:
            continue  # nothing to mount there: it stays as writable as its folder
        mounted[target] = placeholder
        kept.update((a, None) for a in _between(tree, target))
    return Mounts(
        kept=tuple(k for k in kept if k not in mounted),
        read_only=tuple(p for p, empty in mounted.items() if not empty),
        placeholders=tuple(p for p, empty in mounted.items() if empty),
    )


def _protection(c: Confinement, m: Mounts) -> list[str]:
    args: list[str] = []
    for path in sorted(m.kept, key=lambda p: len(p.parts)):
        args += ["--bind", str(path), str(path)]
    for path in m.read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in m.placeholders:
        assert c.placeholder is not None
        args += ["--ro-bind", str(c.placeholder), str(path)]
    return args


def _target(tree: Path, path: Path, kinds: dict[Path, int | None]) -> tuple[Path | None, bool]:
    """Where to mount for `path` and whether a placeholder goes there: the first missing part,
    or the empty folder above it (placeholder: so one that another sandbox's placeholder or
    the user's empty folder stands for is covered whole), a file standing where a folder of the
    path should be (pinned read-only), a link (nothing: see plan_mounts), or the path itself
    (an empty directory: placeholder)."""
    here = tree
    for part in path.relative_to(tree).parts:
        here = here / part
        mode = _kind(here, kinds)
        if mode is None:
            while here.parent != tree and _empty_dir(here.parent):
                here = here.parent
            return here, True
        if stat.S_ISLNK(mode):
            return None, False
        if not stat.S_ISDIR(mode):
            return (here, False) if _mountable(here) else (None, False)
    if here == tree:
        return here, False
    return here, _empty_dir(here)


def _kind(path: Path, kinds: dict[Path, int | None]) -> int | None:
    if path not in kinds:
        try:
            kinds[path] = os.lstat(path).st_mode
        except OSError:
            kinds[path] = None
    return kinds[path]


def _empty_dir(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _tree_of(path: Path, trees: tuple[Path, ...]) -> Path | None:
    """The deepest writable tree holding `path` (its bind is the mount nearest to it)."""
    holding = [t for t in trees if path == t or path.is_relative_to(t)]
    return max(holding, key=lambda t: len(t.parts)) if holding else None


def _between(tree: Path, path: Path) -> list[Path]:
    """The directories strictly between `tree` and `path`, shallowest first."""
    parts = path.relative_to(tree).parts
    return [tree.joinpath(*parts[:i]) for i in range(1, len(parts))]


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
