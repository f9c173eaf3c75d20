"""Where the denylisted programs live on this machine, so a sandbox can make them unrunnable
whatever runs them (a wrapper, a shell, an alias, an interpreter's `system()`), and so a copy of
one can be known by its content."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

STANDARD_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
MULTI_CALL = ("busybox", "toybox")  # one binary that is every program, dd included
MAX_HASHED = 64 * 1024 * 1024


@functools.lru_cache(maxsize=8)
def program_files(patterns: tuple[str, ...], path_env: str = "") -> tuple[Path, ...]:
    """The real files of every program whose name matches one of `patterns` (`dd`, `mkfs*`) in
    PATH and the standard directories, symlinks resolved, plus multi-call binaries."""
    path = (path_env or os.environ.get("PATH", "")).split(os.pathsep)
    dirs = dict.fromkeys([*path, *STANDARD_DIRS])
    wanted = [*patterns, *MULTI_CALL] if patterns else []
    found: dict[Path, None] = {}
    for folder in dirs:
        if not folder or not os.path.isdir(folder):
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if any(fnmatch.fnmatchcase(name, p) for p in wanted):
                real = Path(os.path.realpath(os.path.join(folder, name)))
                if real.is_file():
                    found[real] = None
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def _digest(path: str, stamp: tuple[int, int, int, int]) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def digest(path: Path) -> str | None:
    """The file's SHA-256 (cached while it is unchanged); None when unreadable or too large."""
    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_size > MAX_HASHED:
        return None
    return _digest(str(path), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))


def same_program(path: Path, files: Sequence[Path]) -> Path | None:
    """The denylisted file that `path` is (the same file, or a copy of it), or None."""
    try:
        real = Path(os.path.realpath(path))
        st = real.stat()
    except OSError:
        return None
    for f in files:
        try:
            other = f.stat()
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return f
    same_size = [f for f in files if _size(f) == st.st_size]
    mine = digest(real) if same_size else None  # hashed only when a size matches
    return next((f for f in same_size if mine is not None and digest(f) == mine), None)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
