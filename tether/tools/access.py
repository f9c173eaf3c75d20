"""Directories opened to the session's tools beyond its roots.

request_directory_access: the model asks the user to open a directory outside the session's
roots to its tools, for reading or for writing (`exec`: running commands there, which can write
too). The grant lasts for the session and is stored with it; a denylisted place is never granted,
nor the file system root or the home directory as a whole.

new_temporary_workspace: a scratch directory in the system's temporary directory, opened to the
tools for as long as this tether runs, never stored (engine/local/temp_workspaces.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio

from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.engine.workspace import Access, DirGrant
from tether.errors import ToolError

_ACCESS: dict[str, Access] = {"read": "read", "write": "write", "exec": "write"}
_WORDS = {"read": "read", "write": "read and write", "exec": "run commands in (and write)"}


class RequestDirectoryAccessArgs(ToolArgs):
    path: str
    mode: Literal["read", "write", "exec"] = "read"


@tool(kind="other")
async def request_directory_access(
    ctx: Capabilities, args: RequestDirectoryAccessArgs
) -> ToolOutput:
    """Ask the user to open a directory outside the project to your tools, for this session.
    Use it when a task needs files elsewhere (a sibling repository, a shared config); the
    user may refuse.

    Args:
        path: The directory, absolute or relative to the project directory.
        mode: read (read and search), write (also create and change files) or exec (also
            run commands there).
    """
    full = await _target(ctx, args.path)
    ctx.policy.grant(DirGrant(full, _ACCESS[args.mode]))
    return ToolOutput(f"granted: {args.mode} access to {full} for this session")


async def _target(ctx: Capabilities, path: str) -> Path:
    if not path.strip() or "\0" in path:
        raise ToolError("INVALID_ARGS", "path must be a directory's name")
    full = await anyio.to_thread.run_sync(lambda: (ctx.cwd / Path(path).expanduser()).resolve())
    stat = await ctx.fs.stat(full)
    if stat is None or stat.kind != "dir":
        raise ToolError("NOT_A_DIRECTORY", f"{full} is not a directory")
    home = Path.home().resolve()
    if full == Path(full.anchor) or home == full or home.is_relative_to(full):
        # The home directory's parent holds the home directory: it is as broad.
        raise ToolError(
            "TOO_BROAD", f"{full} is too broad to grant; ask for the directory you need"
        )
    entry = ctx.policy.denied_anywhere(full)
    if entry is not None:
        raise ToolError("PATH_DENIED", f"{full} matches the path denylist entry {entry!r}")
    return full


@request_directory_access.planned_by
async def _plan(ctx: Capabilities, args: RequestDirectoryAccessArgs, mode: str) -> CallPlan:
    full = await _target(ctx, args.path)
    return CallPlan(
        title=f"Allow {_WORDS[args.mode]} access to {full}",
        kind="other",
        confirm=True,  # asked in every mode; never covered by an "always" answer elsewhere
        scope=f"{args.mode} {full}",
        target=str(full),
    )


# --- new_temporary_workspace ----------------------------------------------------------------


class NewTemporaryWorkspaceArgs(ToolArgs):
    pass


@tool(kind="other")
async def new_temporary_workspace(ctx: Capabilities, args: NewTemporaryWorkspaceArgs) -> ToolOutput:
    """Create an empty scratch directory in the system's temporary directory, where your tools
    may read, write and run commands for the rest of this session, outside the project. Use
    it for experiments, downloads and throwaway builds; it is deleted, with everything in it,
    when tether exits. The project directory stays the working directory: pass the new path
    explicitly.
    """
    from tether.engine.local import temp_workspaces

    path = temp_workspaces.make(ctx.session_id)
    # This turn's workspace as well: later turns get it from the process's grants.
    ctx.policy.grants = [*ctx.policy.grants, DirGrant(path, "write")]
    text = (
        f"created the temporary workspace {path}: read, write and run commands there for the "
        f"rest of this session; it is deleted when tether exits. The working directory is "
        f"still {ctx.cwd}."
    )
    return ToolOutput(text, [TextOut(text)])


@new_temporary_workspace.planned_by
async def _plan_temporary(
    ctx: Capabilities, args: NewTemporaryWorkspaceArgs, mode: str
) -> CallPlan:
    # An empty private directory of its own changes nothing of the user's: nobody is asked.
    return CallPlan(title="Create a temporary workspace", kind="other")
