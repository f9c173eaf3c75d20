"""A session's private directory (its commands' TMPDIR, policies, launchers, masks): made in the
system's temporary directory, removed when the session closes and when tether ends (the end of
its input, SIGTERM, SIGHUP, exit), and swept by the next tether when its own was killed (as it
makes its first, and as it ends).

Whether a directory's tether lives is what the kernel says of a lock, not a pid: each directory
holds `lock`, locked (flock) by its tether for as long as the directory is in use; the kernel
drops the lock when that process dies, however it died. A tether sweeps, once, every directory
of its user whose lock it can take. A directory is set up under another name and renamed into
place once its lock is held, so a sweep never meets one half made.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from tether.engine.local import reaper

PREFIX = "tether-sandbox-"
_MAKING = ".tether-sandbox-making-"
_LOCK = "lock"
_MASKS = ("deny-file", "deny-dir", "empty-dir")  # read-only or unreadable: made removable first
_held: dict[Path, int] = {}  # directory -> its lock's fd
_guard = threading.Lock()
_swept: set[Path] = set()


def make(base: Path | None) -> Path:
    """A new private directory in `base` (the system's temporary directory by default), with
    its `tmp`, `policies` and `run` subdirectories, the masks (an unreadable empty file and
    directory) and a read-only empty directory (placeholders show it), locked as this
    tether's; directories of tethers that are gone are swept first."""
    parent = Path(base or tempfile.gettempdir())
    sweep(parent)
    making = Path(tempfile.mkdtemp(prefix=_MAKING, dir=parent))
    try:
        lock = os.open(making / _LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in ("tmp", "policies", "run"):
            (making / name).mkdir(mode=0o700)
        deny_file, deny_dir = making / _MASKS[0], making / _MASKS[1]
        deny_file.touch(mode=0o000)
        deny_dir.mkdir(mode=0o000)
        os.chmod(deny_file, 0o000)
        os.chmod(deny_dir, 0o000)
        (making / "empty-dir").mkdir(mode=0o555)  # what bubblewrap's placeholders show
        final = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        os.rename(making, final)  # replaces the empty placeholder that reserved the name
    except BaseException:
        _remove(making)
        raise
    with _guard:
        _held[final] = lock
    return final


def remove(directory: Path) -> None:
    """Remove a private directory this tether made, and let go of its lock."""
    with _guard:
        lock = _held.pop(directory, None)
    _remove(directory)
    if lock is not None:
        os.close(lock)


def remove_all() -> None:
    """Every private directory this tether still holds (it is ending), and those of tethers
    killed meanwhile where it made its own."""
    with _guard:
        held = list(_held)
        parents = list(_swept)
    for directory in held:
        remove(directory)
    for parent in parents:
        sweep(parent, again=True)


def sweep(parent: Path, *, again: bool = False) -> list[Path]:
    """Remove, once per process and parent (unless `again`), every private directory of this
    user in `parent` whose lock no live tether holds; what was removed."""
    with _guard:
        if parent in _swept and not again:
            return []
        _swept.add(parent)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if entry.name.startswith(PREFIX) and _ours(entry) and _take(Path(entry.path)):
            removed.append(Path(entry.path))
    return removed


def _ours(entry: os.DirEntry[str]) -> bool:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _take(directory: Path) -> bool:
    """Remove `directory` if its lock can be taken (its tether is gone). One without a lock is
    left alone: an older tether's, whose owner cannot be told."""
    try:
        lock = os.open(directory / _LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return False  # a live tether's
    try:
        _remove(directory)
    finally:
        os.close(lock)
    return True


def _remove(directory: Path) -> None:
    for name in _MASKS:
        mask = directory / name
        try:
            if not mask.is_symlink():
                os.chmod(mask, 0o700)
        except OSError:
            pass
    shutil.rmtree(directory, ignore_errors=True)


reaper.at_stop(remove_all)  # SIGTERM, SIGHUP
atexit.register(remove_all)  # a normal exit, also where no front installed the reaper (a test's)
