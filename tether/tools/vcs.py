"""Read-only version-control tools: vcs_kind, vcs_status, vcs_diff, vcs_log, vcs_branch, read
through the repository's backend (engine/vcs/vcs_backend.py; git today).

git runs as a local process through tether's hardened runner (engine/vcs/), on the repository
the session found when it started: no config of the repository's, the user's or the
environment's can make it run a program (fsmonitor, hooks, filters, diff drivers, pagers,
signatures, transports), and a `.git` that appeared since is never the one it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.engine.events import Location, TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools.tool_paths import display, resolve

if TYPE_CHECKING:
    from tether.engine.vcs.vcs_backend import VcsBackend

LOG_DEFAULT = 20
LOG_MAX = 200


async def _backend(ctx: Capabilities) -> VcsBackend:
    from tether.engine.vcs.vcs_backend import find_backend  # when a vcs tool first runs

    found = await find_backend(ctx.repositories, ctx.cwd)
    if found is None:
        raise ToolError(
            "NOT_A_REPOSITORY",
            f"{ctx.cwd} is not inside a git repository (as found when this session started)",
        )
    return found


def _card(ctx: Capabilities, title: str) -> CallPlan:
    where = [Location(str(ctx.cwd))]
    return CallPlan(title=title, kind="read", locations=where, scope="git", target=title)


class NoArgs(ToolArgs):
    pass


def _result(text: str, empty: str) -> ToolOutput:
    body = text or empty
    return ToolOutput(body, [TextOut(body)])


@tool(kind="read", read_only=True)
async def vcs_status(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Show the git status of the project: the branch, staged, changed and untracked files."""
    return _result(await (await _backend(ctx)).status(), "nothing to report")


vcs_status.described_by(lambda ctx, args: _card(ctx, "git status"))


@vcs_status.planned_by
async def _plan_status(ctx: Capabilities, args: NoArgs, mode: str) -> CallPlan:
    return _card(ctx, "git status")


class VcsDiffArgs(ToolArgs):
    path: str | None = None
    staged: bool = False


@tool(kind="read", read_only=True)
async def vcs_diff(ctx: Capabilities, args: VcsDiffArgs) -> ToolOutput:
    """Show uncommitted changes as a unified diff (git diff).

    Args:
        path: Only changes to this file or directory.
        staged: Show the changes staged for the next commit instead of the unstaged ones.
    """
    backend = await _backend(ctx)
    path = resolve(ctx, args.path) if args.path is not None else None
    text = await backend.diff(path, staged=args.staged, hidden=ctx.policy.denylist)
    which = "staged" if args.staged else "unstaged"
    return _result(text, f"no {which} changes")


vcs_diff.described_by(lambda ctx, args: _card(ctx, "git diff"))


@vcs_diff.planned_by
async def _plan_diff(ctx: Capabilities, args: VcsDiffArgs, mode: str) -> CallPlan:
    where = f" {display(ctx, resolve(ctx, args.path))}" if args.path is not None else ""
    staged = " --cached" if args.staged else ""
    return _card(ctx, f"git diff{staged}{where}")


class VcsLogArgs(ToolArgs):
    max_count: int = LOG_DEFAULT


@tool(kind="read", read_only=True)
async def vcs_log(ctx: Capabilities, args: VcsLogArgs) -> ToolOutput:
    """Show recent commits of the current branch: hash, date, author and subject.

    Args:
        max_count: How many commits, newest first (up to 200).
    """
    if args.max_count < 1:
        raise ToolError("INVALID_ARGS", "max_count must be 1 or more")
    text = await (await _backend(ctx)).log(min(args.max_count, LOG_MAX))
    return _result(text, "no commits yet")


vcs_log.described_by(lambda ctx, args: _card(ctx, "git log"))


@vcs_log.planned_by
async def _plan_log(ctx: Capabilities, args: VcsLogArgs, mode: str) -> CallPlan:
    return _card(ctx, "git log")


@tool(kind="read", read_only=True)
async def vcs_branch(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Show the current git branch and the local branches."""
    backend = await _backend(ctx)
    current = await backend.current_branch()
    branches = await backend.branches()
    head = f"current: {current}" if current else "current: (detached HEAD)"
    return _result(f"{head}\n{branches}".strip(), head)


vcs_branch.described_by(lambda ctx, args: _card(ctx, "git branch"))


@vcs_branch.planned_by
async def _plan_branch(ctx: Capabilities, args: NoArgs, mode: str) -> CallPlan:
    return _card(ctx, "git branch")


@tool(kind="read", read_only=True)
async def vcs_kind(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Say which version control the project uses (git) and its root, or that it uses none."""
    from tether.engine.vcs.vcs_backend import find_backend

    found = await find_backend(ctx.repositories, ctx.cwd)
    if found is None:
        return _result(
            f"none: {ctx.cwd} is in no repository (as found when the session started)", ""
        )
    return _result(f"{found.kind} (root: {found.root})", "")


vcs_kind.described_by(lambda ctx, args: _card(ctx, "Version control"))


@vcs_kind.planned_by
async def _plan_kind(ctx: Capabilities, args: NoArgs, mode: str) -> CallPlan:
    return _card(ctx, "Version control")
