"""The version-control seam the vcs tools read through: a `VcsBackend` per kind of repository,
found by detectors tried in order for the session's working directory. git is the one kind
today (engine/vcs/git_backend.py); another system is a detector and a backend more, and the
tools stay as they are. Loaded when a vcs tool first runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Protocol

from tether.engine.vcs.repository import Repositories


class VcsBackend(Protocol):
    """One repository, read only. Each method's text is what the model is shown; a failure is a
    ToolError (VCS_FAILED, VCS_UNAVAILABLE)."""

    kind: str  # "git"
    root: Path  # the work tree's top

    async def status(self) -> str: ...

    async def diff(self, path: Path | None, *, staged: bool, hidden: Sequence[str]) -> str:
        """Uncommitted changes as a unified diff; `hidden`: file names never shown (the path
        denylist's entries)."""
        ...

    async def log(self, count: int) -> str:
        """The newest `count` commits, one line each; "" before the first commit."""
        ...

    async def current_branch(self) -> str:
        """The branch checked out; "" for a detached HEAD."""
        ...

    async def branches(self) -> str: ...


Detector = Callable[[Repositories, Path], Awaitable[VcsBackend | None]]


async def _git(repositories: Repositories, cwd: Path) -> VcsBackend | None:
    from tether.engine.vcs.git_backend import detect

    return await detect(repositories, cwd)


DETECTORS: list[Detector] = [_git]
"""Tried in order; the first that finds a repository wins."""


async def find_backend(repositories: Repositories, cwd: Path) -> VcsBackend | None:
    """The backend of the repository `cwd` lies in; None when it lies in none."""
    for detect in DETECTORS:
        found = await detect(repositories, cwd)
        if found is not None:
            return found
    return None
