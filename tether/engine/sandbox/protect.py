"""What a confined command must not change inside the writable trees, and what it must not read.

Uncommitted work is what git cannot give back: files changed since the last commit and
untracked files not ignored (`git status`, through tether's hardened git on the repository the
session found at start), plus the repository itself (`.git`, so history, the index and stashes
stay as they are) and every submodule whole. Outside a repository every file is uncommitted. What
git can restore (committed files, ignored build output and caches) stays writable, so builds
and test runs work. Secrets are the path denylist's matches below the roots (bounded walk) and
the usual credential stores in the home directory.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from tether.engine.sandbox.home_secrets import HOME_SECRETS
from tether.engine.vcs.repository import Repository
from tether.engine.workspace import comparable
from tether.errors import TetherError

__all__ = ["HOME_SECRETS", "Work", "secrets", "uncommitted_work"]

MAX_PROTECTED = 2_000  # paths made read-only per command; more cannot be protected one by one
MAX_SECRET_SCAN = 20_000  # entries looked at per root for secrets
GIT_TIMEOUT = 20.0
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox"}
    | {".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".gradle", "target"}
)


class Work(msgspec.Struct, frozen=True):
    """The protected paths of one tree; with a `problem`, why not all of them could be (the
    paths are then what still is: the repository)."""

    paths: tuple[Path, ...]
    problem: str | None = None


def uncommitted_work(tree: Path, repo: Repository | None) -> Work:
    """`repo`: the repository the session found `tree` in when it started (engine/vcs/); None
    when there was none, and then every file is work, whatever `.git` appeared since."""
    if repo is None:
        return _every_file(tree)
    top, git_dir = repo.top, repo.git_dir
    found = [git_dir] if _inside(git_dir, tree) else []
    dot_git = top / ".git"
    if dot_git != git_dir and _inside(dot_git, tree) and os.path.lexists(dot_git):
        found.append(dot_git)
    repository = tuple(found)
    try:
        dirty = _dirty(repo)
    except (TetherError, OSError, TimeoutError) as exc:  # unknown work: ask before commands
        return Work(repository, f"git cannot tell what is uncommitted in {top}: {exc}")
    for path in dirty:
        if _inside(path, tree) and os.path.lexists(path):
            found.append(path)
        if len(found) > MAX_PROTECTED:
            problem = f"more than {MAX_PROTECTED:,} changed or untracked paths in {top}"
            return Work(repository, problem)  # the repository itself is still protected
    return Work(tuple(dict.fromkeys(found)))


def _dirty(repo: Repository) -> list[Path]:
    """Changed and untracked paths, and every submodule whole: tether's git does not look
    inside one (its config is its own, and could run a program), so none of it is changed."""
    out = repo.git(
        "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames",
        timeout=GIT_TIMEOUT,
    )  # fmt: skip
    if out.code != 0:
        raise TetherError("VCS_FAILED", out.error() or f"git status failed ({out.code})")
    paths: list[Path] = []
    for entry in out.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if len(entry) > 3 and entry[0] != "D" and entry[1] != "D":
            paths.append(repo.top / entry[3:].rstrip("/"))
    return paths + list(repo.submodules(GIT_TIMEOUT))


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
