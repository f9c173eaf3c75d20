"""Which file a command line actually runs: its program looked up the way `execvp` does (with
the PATH the command is given, `env PATH=...` included), symlinks resolved. The denylist knows
a denylisted program by that file, so a link or a copy under another name is still refused."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def effective_path(env: Mapping[str, str]) -> str:
    """The PATH the program is looked up in: the command's own, else tether's."""
    return env.get("PATH") or os.environ.get("PATH", os.defpath)


def resolve_program(word: str, cwd: Path, env: Mapping[str, str]) -> Path | None:
    """The real file `word` runs from `cwd`; None when there is none."""
    if not word:
        return None
    if "/" in word:
        return _real_executable(cwd / word)
    for folder in effective_path(env).split(os.pathsep):
        found = _real_executable(Path(cwd, folder or ".", word))
        if found is not None:
            return found
    return None


def _real_executable(path: Path) -> Path | None:
    try:
        real = Path(os.path.realpath(path))
        if real.is_file() and os.access(real, os.X_OK):
            return real
    except (OSError, ValueError):
        pass
    return None
