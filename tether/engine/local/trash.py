"""Moving a file or a directory to the system trash, relative to the directory that was checked.

A trash library takes a path and follows every link on it, so a directory swapped for a link
between tether's check and the move would send a file outside the project to the trash. On
Linux and the BSDs, tether does the freedesktop.org trash move itself: the entry's parent is
opened without following links (`nofollow.parent_dir`), the trash's `files/` and `info/` are
opened the same way, the entry's `.trashinfo` is created exclusively (which reserves the name),
and the entry is renamed from the pinned parent into `files/`. A swap then makes the move fail
or leaves it moving the very entry that was checked. The trash is the one the specification
names: the home trash (`$XDG_DATA_HOME/Trash`) for a file on its file system, else the
file system's own (`$topdir/.Trash/$uid`, else `$topdir/.Trash-$uid`); where a rename cannot
cross (another mount), the entry is copied into the home trash from the pinned parent and then
removed. macOS and Windows go through send2trash (their own trash APIs) after a last check that
the parent is still where it was.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from urllib.parse import quote

from tether.engine.local.nofollow import PROC_FD, fd_path, still_at
from tether.errors import SeamError

_DIR = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_NAMES_TRIED = 1000  # "name 2.txt", "name 3.txt", ... before giving up on a crowded trash


def trash_entry(parent: int, name: str, path: Path) -> None:
    """Move the entry `name` of the directory open as `parent` (which is `path`, checked by the
    caller) to the system trash."""
    try:
        if sys.platform in ("darwin", "win32"):
            _by_library(parent, path)
        else:
            _freedesktop(parent, name, path)
    except SeamError:
        raise
    except Exception as exc:  # OSError, and send2trash's own errors
        raise SeamError(
            "TRASH_FAILED",
            f"could not move {path} to the system trash ({exc}); it was left in place. "
            "Pass permanent=true to delete it for good.",
        ) from None


def _by_library(parent: int, path: Path) -> None:
    from send2trash import send2trash  # imported when first needed: it is not small

    if not still_at(parent, path.parent):
        raise SeamError("SYMLINK_IN_PATH", f"{path.parent} moved; nothing was done")
    send2trash(path)


def _freedesktop(parent: int, name: str, path: Path) -> None:
    dev = os.stat(name, dir_fd=parent, follow_symlinks=False).st_dev
    home = _home_top()
    if _device(home) == dev:
        tries = [(_home_trash, home, False), (_home_trash, home, True)]  # EXDEV: a bind mount
    else:
        top = _mount_top(path.parent, dev)
        tries = [(lambda: _volume_trash(top), top, False), (_home_trash, home, True)]
    for opener, where, copy in tries:
        try:
            _move(parent, name, path, opener(), where, copy=copy)
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise


def _home_top() -> Path:
    """$XDG_DATA_HOME, the directory the home trash is in (a relative value is ignored, as the
    base directory specification says)."""
    data = os.environ.get("XDG_DATA_HOME", "")
    return Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share"


def _device(path: Path) -> int:
    """The device of `path`, or of its nearest existing parent (the trash is made on use)."""
    while True:
        try:
            return os.stat(path).st_dev
        except FileNotFoundError:
            if path.parent == path:
                raise
            path = path.parent


def _mount_top(start: Path, dev: int) -> Path:
    """The top of the mount holding `start` (the highest parent on device `dev`)."""
    top = start
    while top.parent != top and os.lstat(top.parent).st_dev == dev:
        top = top.parent
    return top


def _home_trash() -> int:
    """The home trash, opened (made 0700 when missing). Its place is the user's own: links in
    $XDG_DATA_HOME are theirs to have, and followed; the trash itself is not a link."""
    top = os.path.realpath(_home_top())
    os.makedirs(top, 0o700, exist_ok=True)
    fd = os.open(top, _DIR)
    try:
        return _sub(fd, "Trash")
    finally:
        os.close(fd)


def _volume_trash(top: Path) -> int:
    """A file system's own trash: `$topdir/.Trash/$uid` when `$topdir/.Trash` is a directory
    with the sticky bit (an administrator's shared trash), else `$topdir/.Trash-$uid`; each
    opened without following a link (the top may be a project a command writes in)."""
    fd = os.open(top, _DIR)
    try:
        try:
            shared = os.open(".Trash", _DIR, dir_fd=fd)
        except OSError:
            shared = -1
        if shared >= 0:
            try:
                if os.fstat(shared).st_mode & stat.S_ISVTX:
                    return _sub(shared, str(os.getuid()))
            except OSError:
                pass
            finally:
                os.close(shared)
        return _sub(fd, f".Trash-{os.getuid()}")
    finally:
        os.close(fd)


def _sub(fd: int, name: str) -> int:
    """`name` in the directory `fd`, made 0700 when missing, opened without following a link;
    it must be this user's."""
    try:
        os.mkdir(name, 0o700, dir_fd=fd)
    except FileExistsError:
        pass
    sub = os.open(name, _DIR, dir_fd=fd)
    if os.fstat(sub).st_uid != os.getuid():
        os.close(sub)
        raise SeamError("TRASH_FAILED", f"the trash directory {name} is not yours")
    return sub


def _move(parent: int, name: str, path: Path, trash: int, top: Path, *, copy: bool) -> None:
    try:
        files, info = _sub(trash, "files"), _sub(trash, "info")
    finally:
        os.close(trash)
    try:
        dest = _reserve(info, name, _info_text(path, top))
        try:
            if copy:
                _copy_out(parent, name, files, dest)
                _remove(parent, name)
            else:
                os.rename(name, dest, src_dir_fd=parent, dst_dir_fd=files)
        except BaseException:
            os.unlink(f"{dest}.trashinfo", dir_fd=info)
            raise
    finally:
        os.close(files)
        os.close(info)


def _reserve(info: int, name: str, text: str) -> str:
    """A name free in the trash, its `.trashinfo` written (created exclusively: two trashings
    at once never take the same name)."""
    stem, ext = os.path.splitext(name)
    if not stem:  # ".bashrc": the whole name is the stem
        stem, ext = name, ""
    for n in range(1, _NAMES_TRIED + 1):
        candidate = name if n == 1 else f"{stem} {n}{ext}"
        try:
            fd = os.open(f"{candidate}.trashinfo", _NEW, 0o600, dir_fd=info)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return candidate
    raise SeamError("TRASH_FAILED", f"the trash holds {_NAMES_TRIED} entries named like {name}")


def _info_text(path: Path, top: Path) -> str:
    """The `.trashinfo`: where the entry was (relative to the directory the trash is in when
    it lies under it, as the specification asks; else absolute) and when it was trashed."""
    where = os.path.relpath(path, top) if path.is_relative_to(top) else str(path)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    return f"[Trash Info]\nPath={quote(os.fsencode(where))}\nDeletionDate={stamp}\n"


def _copy_out(parent: int, name: str, files: int, dest: str) -> None:
    """The entry copied into the trash on another file system, read from the pinned parent."""
    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=parent), dest, dir_fd=files)
    elif stat.S_ISREG(st.st_mode):
        _copy_file(parent, name, files, dest, st.st_mode)
    elif stat.S_ISDIR(st.st_mode) and PROC_FD.is_dir():
        fd = os.open(name, _DIR | os.O_RDONLY, dir_fd=parent)
        try:
            shutil.copytree(f"{PROC_FD}/{fd}", fd_path(files, dest), symlinks=True)
        finally:
            os.close(fd)
    else:
        raise SeamError("TRASH_FAILED", f"{name} cannot be copied to the trash on another disk")


def _copy_file(parent: int, name: str, files: int, dest: str, mode: int) -> None:
    src = os.open(name, _READ, dir_fd=parent)
    try:
        out = os.open(dest, _NEW, stat.S_IMODE(mode), dir_fd=files)
        with os.fdopen(out, "wb") as w, os.fdopen(os.dup(src), "rb") as r:
            shutil.copyfileobj(r, w)
    finally:
        os.close(src)


def _remove(parent: int, name: str) -> None:
    if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
        shutil.rmtree(name, dir_fd=parent)
    else:
        os.unlink(name, dir_fd=parent)
