"""Read-only version-control tools (git): vcs_status, vcs_diff, vcs_log, vcs_branch.

git runs as a local process through tether's hardened runner (engine/vcs/), on the repository
the session found when it started: no config of the repository's, the user's or the
environment's can make it run a program (fsmonitor, hooks, filters, diff drivers, pagers,
signatures, transports), and a `.git` that appeared since is never the one it reads.
"""

from __future__ import annotations

from tether.engine.events import Location, TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.errors import TetherError, ToolError
from tether.tools.tool_paths import display, resolve

VCS_MAX_CHARS = 30_000
VCS_TIMEOUT = 30.0
LOG_DEFAULT = 20
LOG_MAX = 200


async def _git(ctx: Capabilities, *args: str) -> str:
    repo = await ctx.repositories.afind(ctx.cwd)
    if repo is None:
        raise ToolError(
            "NOT_A_REPOSITORY",
            f"{ctx.cwd} is not inside a git repository (as found when this session started)",
        )
    try:
        done = await repo.agit(*args, cwd=ctx.cwd, timeout=VCS_TIMEOUT, limit=4 * VCS_MAX_CHARS)
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
    return _result(await _git(ctx, "status", "--short", "--branch"), "nothing to report")


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
    words = ["diff", "--no-ext-diff", "--no-textconv"]
    if args.staged:
        words.append("--cached")
    words += ["--", str(resolve(ctx, args.path)) if args.path is not None else "."]
    # Denylisted files (.env, keys) stay out of a whole-tree diff as they stay out of reads.
    for entry in ctx.policy.denylist:
        words += [f":(exclude,glob,icase)**/{entry}", f":(exclude,glob,icase)**/{entry}/**"]
    which = "staged" if args.staged else "unstaged"
    return _result(await _git(ctx, *words), f"no {which} changes")


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
    count = min(args.max_count, LOG_MAX)
    try:
        text = await _git(
            ctx, "log", f"--max-count={count}", "--date=short", "--format=%h %ad %an: %s"
        )
    except ToolError as exc:
        if "does not have any commits" not in exc.message:
            raise
        text = ""
    return _result(text, "no commits yet")


vcs_log.described_by(lambda ctx, args: _card(ctx, "git log"))


@vcs_log.planned_by
async def _plan_log(ctx: Capabilities, args: VcsLogArgs, mode: str) -> CallPlan:
    return _card(ctx, "git log")


@tool(kind="read", read_only=True)
async def vcs_branch(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Show the current git branch and the local branches."""
    current = await _git(ctx, "branch", "--show-current")
    branches = await _git(ctx, "branch", "--list", "-vv")
    head = f"current: {current}" if current else "current: (detached HEAD)"
    return _result(f"{head}\n{branches}".strip(), head)


vcs_branch.described_by(lambda ctx, args: _card(ctx, "git branch"))


@vcs_branch.planned_by
async def _plan_branch(ctx: Capabilities, args: NoArgs, mode: str) -> CallPlan:
    return _card(ctx, "git branch")
