"""Owner-only files and directories, whatever the umask: the session store and spill files
hold the user's prompts and project contents."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

DAY = 86_400.0


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make it 0700."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def private_file(path: Path) -> None:
    """Create `path` if missing and make it 0600."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    os.chmod(path, 0o600)


def expire(root: Path, max_age_days: float, now: float | None = None) -> list[Path]:
    """Remove the directories under `root` untouched for `max_age_days` (spill directories of
    old sessions); returns what was removed. A missing root is nothing to do."""
    limit = (time.time() if now is None else now) - max_age_days * DAY
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return removed
    os.chmod(root, 0o700)  # a root made by an older tether may be looser
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and _newest(Path(entry.path)) < limit:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def _newest(directory: Path) -> float:
    newest = directory.stat().st_mtime
    for entry in os.scandir(directory):
        newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    return newest
