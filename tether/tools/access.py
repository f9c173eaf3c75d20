"""request_directory_access: the model asks the user to open a directory outside the session's
roots to its tools, for reading or for writing (`exec`: running commands there, which can write
too). The grant lasts for the session and is stored with it; a denylisted place is never granted,
nor the file system root or the home directory as a whole."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio

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
