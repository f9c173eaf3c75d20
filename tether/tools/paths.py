"""Path resolution for tools: relative to the session cwd, and never outside the session roots."""

from __future__ import annotations

from pathlib import Path

from tether.engine.registry import ToolError
from tether.engine.seam import Capabilities


def resolve(ctx: Capabilities, path: str, *, extra_roots: list[Path] | None = None) -> Path:
    """The absolute, symlink-resolved path; raises OUTSIDE_ROOTS when it escapes every root."""
    if not path:
        raise ToolError("INVALID_ARGS", "path must not be empty")
    p = Path(path)
    full = (p if p.is_absolute() else ctx.cwd / p).resolve()
    for root in [*ctx.roots, *(extra_roots or [])]:
        if full == root.resolve() or full.is_relative_to(root.resolve()):
            return full
    raise ToolError(
        "OUTSIDE_ROOTS",
        f"{path} is outside the session's directories ({', '.join(str(r) for r in ctx.roots)})",
    )


def display(ctx: Capabilities, path: Path) -> str:
    """A path as the user reads it: relative to the cwd when inside it."""
    try:
        return str(path.relative_to(ctx.cwd.resolve()))
    except ValueError:
        return str(path)
