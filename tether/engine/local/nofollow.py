"""Acting on a path without following a symlink on the way to it.

A path the workspace policy allowed was checked with its symlinks resolved; between that check
and the write, a command (or anything else) may swap a directory on the way for a symlink to
somewhere else. So writes, deletes, moves and `/undo` open the parent directory one component
at a time from `/`, never following a link (`O_NOFOLLOW`), and act on the last name relative to
that directory: a swap then makes the operation fail (SYMLINK_IN_PATH) instead of landing
outside. Tree operations (copying or removing a directory) go through `/proc/self/fd`, so the
tree they work in stays the one that was opened. A file made for the user (an export) is
created new, never through a link: a link planted under its name, dangling or not, is "exists".
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tether.errors import SeamError

_DIR = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PROC_FD = Path("/proc/self/fd")


@contextmanager
def parent_dir(path: Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """(fd of `path`'s parent, `path`'s name); `create`: make missing directories on the way
    (without following links either)."""
    if not path.is_absolute() or not path.name:
        raise SeamError("INVALID_PATH", f"{path} is not an absolute path to a name")
    fd = os.open("/", _DIR)
    try:
        for part in path.parent.parts[1:]:
            fd = _step(fd, part, path, create)
        yield fd, path.name
    finally:
        os.close(fd)


def _step(fd: int, part: str, path: Path, create: bool) -> int:
    try:
        nxt = os.open(part, _DIR, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(part, 0o777, dir_fd=fd)
        except FileExistsError:
            pass
        nxt = os.open(part, _DIR, dir_fd=fd)
    except OSError as exc:  # `fd` stays open: the caller closes it
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _not_a_way(fd, part, path) from None
        raise
    os.close(fd)
    return nxt


def _not_a_way(fd: int, part: str, path: Path) -> SeamError:
    try:
        link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        link = False
    if not link:
        return SeamError(
            "NOT_A_DIRECTORY", f"{path.parent} cannot be created: a part of it is a file"
        )
    return SeamError(
        "SYMLINK_IN_PATH",
        f"{path}: {part!r} on the way to it is now a symlink (it changed after the path was "
        "checked); nothing was done",
    )


def fd_path(fd: int, name: str) -> str:
    """A path naming `name` inside the directory open as `fd` (Linux: through /proc, so it
    cannot be redirected; elsewhere the directory's own path, as the kernel reports it)."""
    if PROC_FD.is_dir():
        return str(PROC_FD / str(fd) / name)
    return name


def still_at(fd: int, expected: Path) -> bool:
    """Whether the directory open as `fd` is still at `expected` (a last check before a
    library call that only takes paths, such as moving to the trash)."""
    link = PROC_FD / str(fd)
    if not PROC_FD.is_dir():
        return True
    try:
        return os.readlink(link) == str(expected)
    except OSError:
        return False


def create_new(path: Path, data: bytes) -> None:
    """Write `data` to a file that does not exist yet: no link followed on the way, and
    anything at the name (a file, a link, dangling or not) is FileExistsError. A link on the
    way is SYMLINK_IN_PATH."""
    try:
        with parent_dir(path) as (parent, name):
            fd = os.open(name, _NEW, 0o666, dir_fd=parent)
    except SeamError as exc:
        if exc.code != "SYMLINK_IN_PATH":
            raise
        raise SeamError(
            "SYMLINK_IN_PATH",
            f"{path}: a directory on the way to it is a symlink; nothing is written through one",
        ) from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
