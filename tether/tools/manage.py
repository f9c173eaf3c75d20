"""Path tools: copy_path, move_path, delete_path (to the system trash unless asked otherwise)."""

from __future__ import annotations

from pathlib import Path

from tether.engine.events import Location, TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities, FileStat
from tether.errors import ToolError
from tether.tools.tool_paths import display, existing, named, resolve


class PathPairArgs(ToolArgs):
    src: str
    dst: str


async def _pair(
    ctx: Capabilities, args: PathPairArgs, *, move: bool
) -> tuple[Path, Path, FileStat]:
    # A move renames the entry itself (a symlink stays a symlink); a copy reads what it names.
    src, dst = args.src, args.dst
    s = resolve(ctx, src, access="write" if move else "read", follow_last=not move)
    d = resolve(ctx, dst, access="write", follow_last=False)
    st = await existing(ctx, s, src)
    if st.kind == "other":
        raise ToolError("NOT_A_REGULAR_FILE", f"{src} is a FIFO, device or socket")
    if await ctx.fs.stat(d) is not None:
        raise ToolError("FILE_EXISTS", f"{dst} already exists; delete or move it first")
    if d == s or d.is_relative_to(s):
        raise ToolError("INVALID_ARGS", f"{dst} is inside {src}")
    return s, d, st


def _pair_card(ctx: Capabilities, verb: str, doing: str, kind: str, s: Path, d: Path) -> CallPlan:
    """The card of a copy or a move: `{verb} a to b`, located at both paths; "always" covers
    that operation from that path to that path, as its option says."""
    both = f"{display(ctx, s)} to {display(ctx, d)}"
    locations = [Location(str(s)), Location(str(d))]
    plan = CallPlan(title=f"{verb} {both}", kind=kind, locations=locations, target=both)
    plan.scope = f"{verb.lower()} {s} to {d}"
    plan.grant_label = f"{doing} {both}"
    return plan


@tool(kind="edit")
async def copy_path(ctx: Capabilities, args: PathPairArgs) -> ToolOutput:
    """Copy a file or a directory (with everything in it) to a new path.

    Args:
        src: The file or directory to copy.
        dst: The new path; it must not exist yet (parents are created).
    """
    s, d, st = await _pair(ctx, args, move=False)
    await ctx.fs.copy(s, d)
    ctx.reads.forget(d)
    what = "directory" if st.kind == "dir" else "file"
    text = f"copied {what} {display(ctx, s)} to {display(ctx, d)}"
    return ToolOutput(text, [TextOut(text)])


@copy_path.planned_by
async def _plan_copy(ctx: Capabilities, args: PathPairArgs, mode: str) -> CallPlan:
    s, d, _ = await _pair(ctx, args, move=False)
    plan = _pair_card(ctx, "Copy", "copying", "edit", s, d)
    plan.confirm, plan.waived_by_mode = mode != "code", mode == "code"
    plan.writes, plan.target = [str(d)], display(ctx, d)
    return plan


@copy_path.described_by
def _describe_copy(ctx: Capabilities, args: PathPairArgs) -> CallPlan:
    return named(f"Copy {args.src} to {args.dst}", "edit", ctx, args.dst)


@tool(kind="move")
async def move_path(ctx: Capabilities, args: PathPairArgs) -> ToolOutput:
    """Move or rename a file or a directory.

    Args:
        src: The file or directory to move.
        dst: The new path; it must not exist yet (parents are created).
    """
    s, d, st = await _pair(ctx, args, move=True)
    await ctx.fs.move(s, d)
    ctx.reads.forget(s)
    ctx.reads.forget(d)
    what = "directory" if st.kind == "dir" else "file"
    text = f"moved {what} {display(ctx, s)} to {display(ctx, d)}"
    return ToolOutput(text, [TextOut(text)])


@move_path.planned_by
async def _plan_move(ctx: Capabilities, args: PathPairArgs, mode: str) -> CallPlan:
    s, d, _ = await _pair(ctx, args, move=True)
    plan = _pair_card(ctx, "Move", "moving", "move", s, d)
    plan.confirm = True
    plan.writes = [str(s), str(d)]
    return plan


@move_path.described_by
def _describe_move(ctx: Capabilities, args: PathPairArgs) -> CallPlan:
    return named(f"Move {args.src} to {args.dst}", "move", ctx, args.src)


class DeletePathArgs(ToolArgs):
    path: str
    permanent: bool = False


@tool(kind="delete")
async def delete_path(ctx: Capabilities, args: DeletePathArgs) -> ToolOutput:
    """Delete a file or a directory (with everything in it) by moving it to the system trash,
    where the user can restore it.

    Args:
        path: The file or directory to delete.
        permanent: Delete it for good instead of trashing it. Only when the user asks for it.
    """
    full, st = await _victim(ctx, args.path)
    permanent = _permanent(ctx, args)
    await ctx.fs.delete(full, permanent=permanent)
    ctx.reads.forget(full)
    what = "directory" if st.kind == "dir" else "file"
    where = "deleted permanently" if permanent else "moved to the system trash"
    text = f"{what} {display(ctx, full)} {where}"
    return ToolOutput(text, [TextOut(text)])


def _permanent(ctx: Capabilities, args: DeletePathArgs) -> bool:
    """For good when the call asks, or when the configuration turned the trash off."""
    return args.permanent or not ctx.trash


async def _victim(ctx: Capabilities, path: str) -> tuple[Path, FileStat]:
    full = resolve(ctx, path, access="write", follow_last=False)
    if any(full == r for r in ctx.policy.roots):
        raise ToolError("INVALID_ARGS", f"{path} is a root of the session; it is not deleted")
    return full, await existing(ctx, full, path)


@delete_path.planned_by
async def _plan_delete(ctx: Capabilities, args: DeletePathArgs, mode: str) -> CallPlan:
    full, st = await _victim(ctx, args.path)
    shown = display(ctx, full) + ("/" if st.kind == "dir" else "")
    permanent = _permanent(ctx, args)
    what = f"{shown} permanently" if permanent else f"{shown} to the system trash"
    return CallPlan(
        title=f"Delete {what}" if permanent else f"Move {what}",
        kind="delete",
        locations=[Location(str(full))],
        confirm=True,
        # "Always" covers this operation (trashing is not deleting for good) on this path,
        # never the folder it is in, and the option says so.
        scope=f"{'delete' if permanent else 'trash'} {full}",
        grant_label=f"deleting {what}" if permanent else f"moving {what}",
        writes=[str(full)],
        target=shown,
    )


@delete_path.described_by
def _describe_delete(ctx: Capabilities, args: DeletePathArgs) -> CallPlan:
    return named(f"Delete {args.path}", "delete", ctx, args.path)
