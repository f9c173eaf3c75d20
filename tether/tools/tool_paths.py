"""Path resolution for tools: the workspace policy (engine/workspace.py) as tool errors, the
file checks every file tool shares, and the cards of calls on one path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tether.engine.events import Location
from tether.engine.registry import CallPlan
from tether.engine.seam import Capabilities, FileStat
from tether.engine.workspace import Access
from tether.errors import PathRefused, ToolError


def spill_root(ctx: Capabilities) -> list[Path]:
    """The session's spill directory: results too large to inline are read back from there."""
    directory = getattr(ctx.spill, "directory", None)
    return [directory] if isinstance(directory, Path) else []


def resolve(
    ctx: Capabilities,
    path: str,
    *,
    access: Access = "read",
    follow_last: bool = True,
    extra_roots: list[Path] | None = None,
) -> Path:
    """The absolute, symlink-resolved path; a ToolError (INVALID_PATH, OUTSIDE_ROOTS,
    PATH_DENIED) when the policy refuses it."""
    try:
        return ctx.policy.resolve(
            ctx.cwd, path, access=access, follow_last=follow_last, extra_read=extra_roots or []
        )
    except PathRefused as exc:
        raise ToolError(exc.code, exc.message) from None


def path_card(
    ctx: Capabilities,
    title: str | Callable[[str], str],
    kind: str,
    full: Path,
    *,
    line: int | None = None,
) -> CallPlan:
    """The card of a planned call on one resolved path: titled `{title} {path}` (or
    `title(path)`), the path as the user reads it; located there; what an "always" answer
    covers is that path."""
    shown = display(ctx, full)
    return CallPlan(
        title=title(shown) if callable(title) else f"{title} {shown}",
        kind=kind,
        locations=[Location(str(full), line)],
        scope=str(full),
        target=shown,
    )


def named(title: str, kind: str, ctx: Capabilities, path: str) -> CallPlan:
    """A card naming the call's path as written, before any check (for a refused call)."""
    where = [Location(str(ctx.cwd / path))] if path else []
    return CallPlan(title=title, kind=kind, locations=where, target=path)


def display(ctx: Capabilities, path: Path) -> str:
    """A path as the user reads it: relative to the cwd when inside it."""
    try:
        return str(path.relative_to(ctx.cwd.resolve())) or "."
    except ValueError:
        return str(path)


async def existing(ctx: Capabilities, full: Path, shown: str) -> FileStat:
    """The stat of a path that must exist."""
    st = await ctx.fs.stat(full)
    if st is None:
        raise ToolError("FILE_NOT_FOUND", f"no such file or directory: {shown}")
    return st


async def regular_file(ctx: Capabilities, full: Path, shown: str) -> FileStat:
    """The stat of a path that must be a regular file (a directory names list_dir)."""
    st = await existing(ctx, full, shown)
    if st.kind == "dir":
        raise ToolError("IS_A_DIRECTORY", f"{shown} is a directory; use list_dir or tree")
    if st.kind != "file":
        raise ToolError(
            "NOT_A_REGULAR_FILE",
            f"{shown} is not a regular file (a FIFO, device or socket); only regular files are "
            "read or written",
        )
    return st
