"""`.gitignore` files for the Python search engine: each directory's own (and a repository's
`.git/info/exclude`), the deepest one with a verdict deciding, as git does."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

IGNORE_FILE_MAX = 256 * 1024
_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)

# The ignore files in force in a directory: (its path relative to the top, with a trailing `/`
# unless it is the top; its spec), outermost first.
Specs = tuple[tuple[str, "GitIgnoreSpec"], ...]


def read_small(path: str, max_bytes: int) -> bytes | None:
    """A small regular file's bytes; None for anything else (a FIFO is never waited on)."""
    try:
        fd = os.open(path, _OPEN | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        return os.read(fd, max_bytes)
    except OSError:
        return None
    finally:
        os.close(fd)


def load_spec(directory: str) -> GitIgnoreSpec | None:
    """The rules `directory`'s own ignore files add; None when it has none."""
    lines: list[str] = []
    for name in (".gitignore", os.path.join(".git", "info", "exclude")):
        data = read_small(os.path.join(directory, name), IGNORE_FILE_MAX)
        if data is not None:
            lines += data.decode("utf-8", "replace").splitlines()
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)


def entering(specs: Specs, directory: str, rel_from_top: str) -> Specs:
    """The specs in force inside `directory` (at `rel_from_top`, `""` for the top)."""
    spec = load_spec(directory)
    if spec is None:
        return specs
    return (*specs, (rel_from_top + "/" if rel_from_top else "", spec))


def ignored(specs: Specs, rel_from_top: str, is_dir: bool) -> bool:
    for base, spec in reversed(specs):
        if not rel_from_top.startswith(base):
            continue
        rel = rel_from_top[len(base) :] + ("/" if is_dir else "")
        verdict = spec.check_file(rel).include
        if verdict is not None:
            return verdict
    return False


def ancestor_rules(top: str, rel_start: str) -> list[str]:
    """The ignore rules of the directories from `top` down to the parent of `top/rel_start`,
    rewritten to apply from `top` (as one file read at `top`: the deeper rule comes later and
    wins, as the deeper file does)."""
    parts = rel_start.split("/")
    out: list[str] = []
    for i in range(len(parts)):
        base = "/".join(parts[:i])
        folder = os.path.join(top, *parts[:i])
        for name in (".gitignore", os.path.join(".git", "info", "exclude")):
            data = read_small(os.path.join(folder, name), IGNORE_FILE_MAX)
            if data is not None:
                out += map(_rebased(base), data.decode("utf-8", "replace").splitlines())
    return [r for r in out if r]


def _rebased(base: str) -> Callable[[str], str]:
    """A rule of the ignore file in `base` (relative to the top), as a rule read at the top."""

    def rule(line: str) -> str:
        line = line.rstrip("\r")
        if not base or not line.strip() or line.startswith("#"):
            return "" if not line.strip() or line.startswith("#") else line
        neg = "!" if line.startswith("!") else ""
        body = line[len(neg) :]
        anchored = "/" in body.rstrip("/")
        body = body.lstrip("/") if anchored else "**/" + body
        return f"{neg}/{base}/{body}"

    return rule
