"""What a confined command must not change inside the writable trees, and what it must not read.

Uncommitted work is what git cannot give back: files changed since the last commit and
untracked files not ignored (`git status`), plus the repository itself (`.git`, so history,
the index and stashes stay as they are). Outside a repository every file is uncommitted. What
git can restore (committed files, ignored build output and caches) stays writable, so builds
and test runs work. Secrets are the path denylist's matches below the roots (bounded walk) and
the usual credential stores in the home directory.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.engine.sandbox.home_secrets import HOME_SECRETS
from tether.engine.workspace import comparable

__all__ = ["HOME_SECRETS", "Work", "secrets", "uncommitted_work"]

MAX_PROTECTED = 2_000  # paths made read-only per command; more cannot be protected one by one
MAX_SECRET_SCAN = 20_000  # entries looked at per root for secrets
GIT_TIMEOUT = 20.0
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox"}
    | {".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".gradle", "target"}
)
# git reads these from the repository's config; none may run a program of the repository's.
_GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")


@dataclass(frozen=True)
class Work:
    """The protected paths of one tree; with a `problem`, why not all of them could be (the
    paths are then what still is: the repository)."""

    paths: tuple[Path, ...]
    problem: str | None = None


def uncommitted_work(tree: Path) -> Work:
    repo = _repository(tree)
    if repo is None:
        return _every_file(tree)
    top, git_dir = repo
    found = [git_dir] if _inside(git_dir, tree) else []
    dot_git = top / ".git"
    if dot_git != git_dir and _inside(dot_git, tree) and os.path.lexists(dot_git):
        found.append(dot_git)
    repository = tuple(found)
    for rel in _dirty(top):
        path = top / rel
        if _inside(path, tree) and os.path.lexists(path):
            found.append(path)
        if len(found) > MAX_PROTECTED:
            problem = f"more than {MAX_PROTECTED:,} changed or untracked paths in {top}"
            return Work(repository, problem)  # the repository itself is still protected
    return Work(tuple(found))


def _repository(tree: Path) -> tuple[Path, Path] | None:
    out = _git(tree, "rev-parse", "--show-toplevel", "--absolute-git-dir")
    if out is None:
        return None
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:
        return None
    return Path(lines[0]).resolve(), Path(lines[1]).resolve()


def _dirty(top: Path) -> list[str]:
    out = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames")
    if out is None:
        return []
    paths: list[str] = []
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if len(entry) > 3 and entry[0] != "D" and entry[1] != "D":
            paths.append(entry[3:].rstrip("/"))
    return paths


def _git(cwd: Path, *args: str) -> bytes | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            [*_GIT, *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT, env=env, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _every_file(tree: Path) -> Work:
    """Outside git, every existing file is uncommitted work (new files may still be made)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            found.append(Path(folder, name))
            if len(found) > MAX_PROTECTED:
                problem = f"{tree} is no git repository and has over {MAX_PROTECTED:,} files"
                return Work((), problem)
    return Work(tuple(found))


def _inside(path: Path, tree: Path) -> bool:
    return path == tree or path.is_relative_to(tree)


# --- secrets ---------------------------------------------------------------------------------


def secrets(roots: Iterable[Path], patterns: Sequence[str], home: Path | None) -> list[Path]:
    """Paths a confined command must not read: the denylist's matches below each root (VCS
    directories aside: git must work; they are protected instead), and the home directory's
    credential stores."""
    names = [comparable(p.strip().strip("/")) for p in patterns if p.strip("/ ")]
    names = [p for p in names if not fnmatch.fnmatchcase(".git", p)]
    found: list[Path] = []
    for root in roots:
        found += _matches(root, names)
    if home is not None:
        found += [home / rel for rel in HOME_SECRETS if os.path.lexists(home / rel)]
    return found


def _matches(root: Path, patterns: list[str]) -> list[Path]:
    found: list[Path] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        kept: list[str] = []
        for name in [*dirs, *files]:
            seen += 1
            if any(fnmatch.fnmatchcase(comparable(name), p) for p in patterns):
                found.append(Path(folder, name))
            elif name in dirs and name not in SKIP_DIRS:
                kept.append(name)
        dirs[:] = kept
        if seen > MAX_SECRET_SCAN:
            break
    return found
