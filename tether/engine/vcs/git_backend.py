"""The git backend of the vcs tools (engine/vcs/vcs_backend.py): every git runs through the
session's repository, hardened (engine/vcs/repository.py), with a bounded output."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tether.engine.vcs.repository import Repositories, Repository
from tether.errors import TetherError, ToolError

VCS_MAX_CHARS = 30_000
VCS_TIMEOUT = 30.0


async def detect(repositories: Repositories, cwd: Path) -> GitBackend | None:
    """The git repository the session found for `cwd` when it started; None outside one."""
    repo = await repositories.afind(cwd)
    return None if repo is None else GitBackend(repo, cwd)


class GitBackend:
    kind = "git"

    def __init__(self, repo: Repository, cwd: Path) -> None:
        self.repo = repo
        self.root = repo.top
        self.cwd = cwd

    async def status(self) -> str:
        return await self._git("status", "--short", "--branch")

    async def diff(self, path: Path | None, *, staged: bool, hidden: Sequence[str]) -> str:
        words = ["diff", "--no-ext-diff", "--no-textconv"]
        if staged:
            words.append("--cached")
        words += ["--", str(path) if path is not None else "."]
        for entry in hidden:  # denylisted files (.env, keys) stay out, as they stay out of reads
            words += [f":(exclude,glob,icase)**/{entry}", f":(exclude,glob,icase)**/{entry}/**"]
        return await self._git(*words)

    async def log(self, count: int) -> str:
        try:
            return await self._git(
                "log", f"--max-count={count}", "--date=short", "--format=%h %ad %an: %s"
            )
        except ToolError as exc:
            if "does not have any commits" not in exc.message:
                raise
            return ""

    async def current_branch(self) -> str:
        return await self._git("branch", "--show-current")

    async def branches(self) -> str:
        return await self._git("branch", "--list", "-vv")

    async def _git(self, *args: str) -> str:
        try:
            done = await self.repo.agit(
                *args, cwd=self.cwd, timeout=VCS_TIMEOUT, limit=4 * VCS_MAX_CHARS
            )
        except FileNotFoundError:
            raise ToolError("VCS_UNAVAILABLE", "git is not installed on this machine") from None
        except TimeoutError:
            raise ToolError("VCS_FAILED", f"git {args[0]} took over {VCS_TIMEOUT:g} s") from None
        except TetherError as exc:
            raise ToolError(exc.code, exc.message) from None
        if done.code != 0:
            raise ToolError("VCS_FAILED", f"git {args[0]} failed ({done.code}): {done.error()}")
        return _bounded(done.text(), done.truncated)


def _bounded(text: str, truncated: bool) -> str:
    if len(text) <= VCS_MAX_CHARS and not truncated:
        return text.rstrip("\n")
    head = text[:VCS_MAX_CHARS].rstrip("\n")
    return f"{head}\n[… output truncated at {VCS_MAX_CHARS} characters; narrow it with a path]"
